"""gpucheck's output folder: everything a run learns is on disk as soon as it is known.

On a lent GPU machine only the ``--out`` folder comes back, and a device call may be killed
at its time limit, so ``Output`` writes as it goes: ``environment.json`` first (versions,
device, installed packages), ``gpucheck.log`` (every progress line, appended and flushed as
printed), ``gpucheck-<date>-<commit>.json`` (the results, rewritten after every stage, smoke
check and target) and ``tests/shard-<i>.log`` (each pytest shard's output, written by the
shard itself).

Example:
    >>> import json, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> out = Output(folder, {"date": "2026-01-02T03:04:05+00:00", "commit": "abc"}, echo=False)
    >>> out.say("hello"); out.save({"smoke": []})
    >>> sorted(os.listdir(folder))
    ['environment.json', 'gpucheck-20260102T030405-abc.json', 'gpucheck.log']
    >>> open(os.path.join(folder, "gpucheck.log")).read()
    'hello\\n'
"""

from __future__ import annotations

import json
import os
import sys

from ..serialization.files import atomic_write

__all__ = ["Output", "installed_packages"]


def installed_packages():
    """``{distribution: version}`` of every installed Python package."""
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            found[name] = dist.version
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))


class Output:
    """The ``--out`` folder of one gpucheck run (see the module docstring)."""

    def __init__(self, folder, environment, echo=True):
        self.folder, self.echo = folder, echo
        os.makedirs(folder, exist_ok=True)
        stamp = environment["date"][:19].replace(":", "").replace("-", "")
        self.json_path = os.path.join(folder, f"gpucheck-{stamp}-"
                                              f"{environment.get('commit', 'unknown')[:10]}.json")
        self.tests_dir = os.path.join(folder, "tests")
        self.log_path = os.path.join(folder, "gpucheck.log")
        open(self.log_path, "w").close()  # noqa: SIM115  (a fresh log a run)
        self.write_json("environment.json",
                        {**environment, "packages": installed_packages()})

    def say(self, line):
        """Print ``line`` (to stderr) and append it to ``gpucheck.log`` at once."""
        if self.echo:
            print(line, file=sys.stderr, flush=True)
        self.note(line)

    def note(self, line):
        """Append ``line`` to ``gpucheck.log`` only (what is starting: the last line of a log
        cut short says what hung)."""
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def write_json(self, name, value):
        """``value`` as JSON in the folder's file ``name``, written atomically."""
        text = json.dumps(value, indent=2, default=str).encode()
        atomic_write(os.path.join(self.folder, name), lambda stream: stream.write(text))

    def save(self, results):
        """Rewrite the results JSON (after each stage, check and target)."""
        self.write_json(os.path.basename(self.json_path), results)
