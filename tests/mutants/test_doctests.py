"""The examples in the docstrings of the mutants modules run and pass."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["rule_schema", "engine", "generate", "compile_gate", "pool_table", "rule_check"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"mutagym.mutants.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module.__name__}"
    assert result.attempted > 0
