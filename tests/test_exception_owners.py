"""Exceptions keep their owner: what torch, the user's code or the user's backend raises
inside a function dynscalar wraps reaches the program as stock torch raises or handles it,
never as dynscalar's internal error, marked or not.

The programs (``tests/exception_owners.py``) run in three fresh processes: stock (never
imports dynscalar), imported with nothing marked, and marked.  Before (a7a362c), with
``import dynscalar`` alone, lightly's DINO loss warned "an internal error in its hook on
autograd_cache.autograd_cache_key ... Please report this" (torch's own ``AttributeError``,
which stock catches: a cache bypass), and torch's key function ran a second time; marked,
a raising user backend was reported as an internal error of the hook on
``ConvertFrameAssert.__call__``, which then compiled the frame a second time (4 backend
calls where stock makes 1), and inductor's lowering error for ``int_tensor ** n`` was
reported as dynscalar's internal error.  Now the table's wrapper notes what torch's
function raised (``_torchs_own.by_torch``) and the safety net leaves it to torch's caller.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import run_interpreter

pytestmark = pytest.mark.inductor


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    found = {}
    for mode in ("stock", "unmarked", "marked"):
        done = run_interpreter("-m", "tests.exception_owners", mode)
        assert done.returncode == 0, done.stderr[-3000:]
        found[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["stock"].pop("dynscalar imported") is False
    assert found["unmarked"].pop("dynscalar imported") is True
    assert found["marked"].pop("dynscalar imported") is True
    return found


def _ours(report: dict[str, Any]) -> list[str]:
    return [w for w in report["warnings"] if "dynscalar" in w.lower()]


def test_importing_dynscalar_changes_nothing(runs: dict[str, dict[str, Any]]) -> None:
    """Every program, imported and unmarked, equals stock: outputs, the error that reaches
    it, warnings (none of dynscalar's), graphs and torch's cache bypasses."""
    assert runs["unmarked"] == runs["stock"]
    dino = runs["stock"]["dino"]
    assert dino["graphs"] == 2 and dino["cache_bypass"] == 2 and dino["error"] is None


def test_a_cache_key_torch_cannot_compute_stays_a_silent_bypass(
    runs: dict[str, dict[str, Any]],
) -> None:
    """DINO's centre update, marked momentum: torch's key raises, torch bypasses its cache
    for every graph as stock does, nothing is reported; one graph for the three values
    (stock: 2, its automatic dynamic after the first change); eager's numbers (checked
    in the process)."""
    marked, stock = runs["marked"]["dino"], runs["stock"]["dino"]
    assert marked["error"] is None and not _ours(marked)
    assert marked["graphs"] == 1 and marked["cache_bypass"] == 1
    assert marked["outputs"] == pytest.approx(stock["outputs"], rel=1e-5)


def test_a_raising_user_backend_raises_as_in_stock(runs: dict[str, dict[str, Any]]) -> None:
    """The user's backend raises: the same ``BackendCompilerFailed`` reaches the program,
    nothing is reported.  Marked, the backend is called twice (the graph with the mark
    symbolic, then the stock graph the net traces when a backend refuses a marked graph);
    before, 4 times (the whole compile ran again)."""
    marked, stock = runs["marked"]["user_backend"], runs["stock"]["user_backend"]
    assert stock["error"][0] == "BackendCompilerFailed"
    assert "the user's backend refuses every graph" in stock["error"][1]
    assert marked["error"] == stock["error"] and not _ours(marked)
    assert (stock["graphs"], marked["graphs"]) == (1, 2)


def test_a_lowering_error_stock_meets_is_not_met_marked(runs: dict[str, dict[str, Any]]) -> None:
    """``int_tensor ** n``: inductor cannot lower a symbolic int exponent (stock fails on
    the second value, when automatic dynamic makes ``n`` symbolic; imported and unmarked,
    the same error, see above).  Marked, the call is eager's kernel boxed (an int64 box):
    one graph, eager's int64 numbers (the scenario compares them), no warning."""
    marked, stock = runs["marked"]["int_pow"], runs["stock"]["int_pow"]
    assert stock["error"][0] == "InductorError" and "aten::pow()" in stock["error"][1]
    assert marked["error"] is None and not _ours(marked)
    assert marked["outputs"] == [[0, 1, 8, 27, 64], [0, 1, 16, 81, 256]]
    assert (stock["graphs"], marked["graphs"]) == (2, 1)
