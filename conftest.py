"""Test configuration for the doctests under ``dynscalar/`` (tests/conftest.py has the rest).

A docstring example that compiles leaves compiled code in Dynamo's caches, and that code
holds a cleanup hook on a name Dynamo put into the example's globals.  doctest clears those
globals when the example ends; freeing the code later (at the next ``torch._dynamo.reset()``,
say inside ``dynscalar.disabled()``'s example) then fails in torch's ``CleanupHook`` with a
``KeyError``.  So each doctest resets Dynamo while its globals still exist, then clears them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    from _pytest.doctest import DoctestItem

    if not isinstance(item, DoctestItem) or item.runner is None:
        yield
        return
    runner = item.runner
    run = runner.run

    def run_then_reset(test: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return run(test, *args, **{**kwargs, "clear_globs": False})
        finally:
            if "torch._dynamo" in sys.modules:
                sys.modules["torch._dynamo"].reset()
            test.globs.clear()

    runner.run = run_then_reset  # type: ignore[method-assign]
    try:
        yield
    finally:
        del runner.run
