#!/usr/bin/env python3
"""The MXNet side's results, kept per test file: MXNet 1.9.1 does not change between runs, so
a file whose results are kept is not run on MXNet again.

  mxcache.py has CACHE FILE.py                 exit 0 when CACHE holds FILE's results
  mxcache.py store CACHE FINAL_DIR RUN_DIR FILE.py...
      keep FINAL_DIR/<file>.jsonl (after re-runs) and RUN_DIR/<file>.log of each FILE whose
      run is sound: it recorded test results and pytest did not stop at collection
  mxcache.py load CACHE FINAL_DIR RUN_DIR FILE.py...
      copy the kept results of each FILE that has none in FINAL_DIR (the cached files)

The key is the folder: run.sh names it after the tag and the seed (SCRATCH/mx_cache/REF-SEED).
"""
import json
import os
import shutil
import sys

BROKEN = ("error during collection", "errors during collection", "ERROR collecting")


def _stem(fname):
    if not fname.endswith(".py") or os.sep in fname:
        raise SystemExit(f"mxcache: expected a test file name like test_x.py, got {fname!r}")
    return fname[:-3]


def _sound(jsonl, log):
    """A run that recorded at least one test outcome and did not fail to collect."""
    if not os.path.exists(jsonl):
        return False
    outcomes = 0
    with open(jsonl) as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            outcomes += rec.get("when") in ("call", "setup", "killed")
    text = ""
    if os.path.exists(log):
        with open(log, errors="replace") as fh:
            text = fh.read()
    return outcomes > 0 and not any(b in text for b in BROKEN)


def has(cache, fname):
    stem = _stem(fname)
    return _sound(os.path.join(cache, stem + ".jsonl"), os.path.join(cache, stem + ".log"))


def store(cache, final_dir, run_dir, files):
    os.makedirs(cache, exist_ok=True)
    for fname in files:
        stem = _stem(fname)
        jsonl = os.path.join(final_dir, stem + ".jsonl")
        log = os.path.join(run_dir, stem + ".log")
        if _sound(jsonl, log):
            shutil.copyfile(jsonl, os.path.join(cache, stem + ".jsonl"))
            shutil.copyfile(log, os.path.join(cache, stem + ".log"))
        else:
            print(f"mxcache: not keeping the MXNet side of {fname} (no results, or it failed "
                  f"to collect; see {log})", file=sys.stderr)


def load(cache, final_dir, run_dir, files):
    os.makedirs(final_dir, exist_ok=True)
    os.makedirs(run_dir, exist_ok=True)
    for fname in files:
        stem = _stem(fname)
        if os.path.exists(os.path.join(final_dir, stem + ".jsonl")) or not has(cache, fname):
            continue
        shutil.copyfile(os.path.join(cache, stem + ".jsonl"),
                        os.path.join(final_dir, stem + ".jsonl"))
        shutil.copyfile(os.path.join(cache, stem + ".log"), os.path.join(run_dir, stem + ".log"))


def main(argv):
    if len(argv) >= 3 and argv[0] == "has":
        return 0 if has(argv[1], argv[2]) else 1
    if len(argv) >= 4 and argv[0] in ("store", "load"):
        (store if argv[0] == "store" else load)(argv[1], argv[2], argv[3], argv[4:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
