"""The docs' examples run as tests (doctest on the Markdown pages and on module docstrings)."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import hybridgpu

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md"))
MODULES = ["hybridgpu"] + sorted(
    m.name for m in pkgutil.walk_packages(hybridgpu.__path__, "hybridgpu.")
    if not m.name.endswith("__main__"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_markdown_examples_run(page):
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{page.name}: {result.failed} failing examples"


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} failing examples"
