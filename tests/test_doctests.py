"""Every docstring example in ember runs, with the output it shows.

One test per module (``pytest tests/test_doctests.py -k linalg`` runs a few).
Examples see their module's names, as doctest gives them, and those a user has
after the usual imports: ``np``, ``ember``, ``enp`` (ember.numpy) and ``lax``.
Output is compared with doctest's ELLIPSIS (``...`` stands for any text, so an
example may show a float to the digits that matter) and NORMALIZE_WHITESPACE.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

# Modules whose docstrings are not examples to run, and why.
SKIPPED = {
    "ember.__main__": "the environment report's entry point (it runs on import)",
}


# Modules whose examples need an optional dependency: skipped where it is not installed.
NEEDS = {"ember.nn._torch": "torch"}


def _modules() -> list[str]:
    names = ["ember"]
    for info in pkgutil.walk_packages(ember.__path__, "ember."):
        if info.name not in SKIPPED:
            names.append(info.name)
    return sorted(names)


OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class _Finder(doctest.DocTestFinder):
    def _from_module(self, module, object):
        # A namespace's traceback boundary (ember/_traceback.py) is named after the namespace but repeats
        # the docstring of a function whose examples run with the module that defines it.
        wrapped = getattr(object, "__wrapped__", object) if getattr(object, "__ember_boundary__", False) else object
        return getattr(wrapped, "__module__", None) == getattr(object, "__module__", None) and super()._from_module(module, object)


@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples(module_name):
    if module_name in NEEDS:
        pytest.importorskip(NEEDS[module_name])
    module = importlib.import_module(module_name)
    finder = _Finder(exclude_empty=True)
    extras = {"np": np, "ember": ember, "enp": enp, "lax": lax}
    tests = [t for t in finder.find(module, module_name, extraglobs=extras) if t.examples]
    if not tests:
        pytest.skip(f"{module_name} has no docstring examples")
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    failures = []
    for test in tests:
        out = []
        result = runner.run(test, out=out.append, clear_globs=True)
        if result.failed:
            failures.append("".join(out))
    assert not failures, f"{len(failures)} docstring(s) of {module_name} fail:\n" + "\n".join(failures)
