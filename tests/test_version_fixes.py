"""The bridge's fixes of torch's behaviour on some releases: each says which releases need
it and the upstream change, and a test here fails once the installed torch no longer needs
a fix the bridge still applies (retire it), or needs one the bridge no longer applies."""

from __future__ import annotations

import re

from dynscalar._bridge._table import PRIVATES, Private

from .helpers import run_python

FIXES = [entry for entry in PRIVATES if entry.fixes]


def _applied(entry: Private) -> bool:
    """Whether the bridge patches ``entry`` on the installed torch (an optional entry
    applies where its signature is the one it was written for)."""
    try:
        return entry.found_params() == entry.params
    except (ImportError, AttributeError):
        return False


def test_every_fix_names_its_releases_and_the_upstream_change() -> None:
    assert FIXES, "the table holds no version-specific fix: drop this module"
    for entry in FIXES:
        assert re.search(r"torch 2\.\d+", entry.fixes), entry.name
        assert re.search(r"pytorch(/pytorch)?#\d+", entry.fixes), entry.name
        assert entry.optional or entry.instead_of, f"{entry.name}: a fix applies where needed"


#: stock Dynamo (a process that never imports dynscalar) on ``range()`` of a symbolic float
_RANGE_PROBE = """
import torch
torch._dynamo.config.specialize_float = False
g = torch.compile(lambda x, n: x * len(range(n)), backend="eager", dynamic=True)
try:
    g(torch.ones(2), 2.5)
    print("builds the range")
except TypeError:
    print("raises TypeError")
"""


def test_range_of_a_float_fix_is_applied_exactly_where_torch_needs_it() -> None:
    """torch 2.13's ``call_range`` builds ``range(SymFloat)`` where Python raises."""
    entry = next(e for e in FIXES if e.name == "BuiltinVariable.call_range")
    done = run_python(_RANGE_PROBE)
    assert done.returncode == 0, done.stderr[-3000:]
    stock = done.stdout.strip().splitlines()[-1]
    needed = stock == "builds the range"
    assert stock in ("builds the range", "raises TypeError"), stock
    assert _applied(entry) == needed, (
        f"stock torch {stock}; the bridge {'applies' if _applied(entry) else 'skips'} "
        f"{entry.name}: {'retire the fix' if not needed else 'the fix is needed again'}"
    )
