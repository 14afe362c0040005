"""nox sessions: ``tests`` (the README's test command), ``bench`` (pytest-benchmark, JSON saved
under benchmarks/results/), ``lint`` (ruff)."""

from __future__ import annotations

import datetime
import subprocess

import nox

nox.options.sessions = ["lint", "tests"]


@nox.session
def tests(session):
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def bench(session):
    session.install("-e", ".[test]")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or "unknown"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    session.run("python", "-m", "pytest", "benchmarks", "--benchmark-enable",
                "--benchmark-only", f"--benchmark-json=benchmarks/results/{stamp}-{commit}.json",
                *session.posargs)


@nox.session
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "src", "tests", "benchmarks", "examples", "noxfile.py")
