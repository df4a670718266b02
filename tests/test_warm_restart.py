"""Warm restarts: a graph with a marked float is saved to and read from AOTAutograd's and
inductor's caches, as stock torch's graph is, and a hit never serves another mark state.

Each process is fresh (the caches are read at the first compile of a process) and shares
one ``TORCHINDUCTOR_CACHE_DIR`` with the next; counters are torch's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import sympy

from tests.helpers import run_python

#: One training step of a Linear + Dropout with ``Dropout.p`` marked, at each value of
#: ``P``; prints, per value, the AOTAutograd and FX graph cache counters after the call, the
#: compile count, and how the output compares with what a dropout at that p gives: the
#: share of zeros and whether every kept value is ``x / (1 - p)`` (a graph compiled for
#: another p scales by another factor).
CHILD = """
import json, os, torch
import dynscalar as ds
from torch._dynamo.utils import counters
from tests.helpers import CountingBackend

torch.manual_seed(0)
torch.set_num_threads(1)
lin = torch.nn.Linear(64, 64)
drop = torch.nn.Dropout(0.1)
ds.mark_dynamic_attr(drop, "p")

def step(x):
    return drop(lin(x))

counter = CountingBackend("inductor")
compiled = torch.compile(step, backend=counter)
rows = []
for p in json.loads(os.environ["P"]):
    drop.p = p
    x = torch.randn(64, 64)
    out = compiled(x)
    out.sum().backward()
    want = lin(x).detach()
    kept = out.detach() != 0
    scaled = torch.allclose(out.detach()[kept], want[kept] / (1 - p), rtol=1e-5, atol=1e-6)
    rows.append({
        "p": p,
        "aot": {k: v for k, v in counters["aot_autograd"].items() if "autograd_cache" in k},
        "fx": {k: v for k, v in counters["inductor"].items() if "fxgraph_cache" in k},
        "compiles": counter.frame_count,
        "zeros": 1 - kept.float().mean().item(),
        "scaled": scaled,
    })
print("ROWS", json.dumps(rows))
"""


def _run(cache: Path, values: list[float]) -> list[dict[str, object]]:
    import os

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), P=json.dumps(values))
    env.pop("TORCH_LOGS", None)
    result = run_python(CHILD, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("ROWS "))
    rows: list[dict[str, object]] = json.loads(line[5:])
    return rows


@pytest.mark.inductor
def test_a_marked_dropout_p_is_saved_and_read_and_each_p_keeps_its_own_graph(
    tmp_path: Path,
) -> None:
    (cold,) = _run(tmp_path, [0.1])
    assert cold["compiles"] == 1 and cold["scaled"]
    assert cold["aot"] == {"autograd_cache_miss": 1, "autograd_cache_saved": 1}
    # A fresh process, another p: the entry is read (no AOT compile), and it scales by the
    # new p (0.5 here, not the 0.1 it was saved with); p == 0 is dropout's other path
    # (ATen returns the input): a graph of its own, not the cached one (one compile: the
    # float that path does not use stays an input, no restart).
    warm, other, zero = _run(tmp_path, [0.5, 0.3, 0.0])
    assert warm["aot"] == {"autograd_cache_hit": 1}
    assert warm["fx"] == {"fxgraph_cache_hit": 2}
    assert warm["compiles"] == 1 and warm["scaled"] and 0.45 < warm["zeros"] < 0.55
    assert other["compiles"] == 1 and other["scaled"] and 0.25 < other["zeros"] < 0.35
    assert zero["compiles"] == 2 and zero["scaled"] and zero["zeros"] == 0
    aot = {"autograd_cache_hit": 1, "autograd_cache_miss": 1, "autograd_cache_saved": 1}
    assert zero["aot"] == aot
    # A third process reads both paths' entries, each for its own p.
    zero, other = _run(tmp_path, [0.0, 0.2])
    assert zero["aot"] == {"autograd_cache_hit": 1} and zero["compiles"] == 1
    assert zero["scaled"] and zero["zeros"] == 0
    assert other["aot"] == {"autograd_cache_hit": 2} and other["compiles"] == 2
    assert other["scaled"] and 0.15 < other["zeros"] < 0.25


def _guard(*symbols: sympy.Symbol) -> SimpleNamespace:
    return SimpleNamespace(expr=SimpleNamespace(free_symbols=set(symbols)))


def test_only_a_float_guard_made_while_aotautograd_traced_keeps_the_entry_out() -> None:
    """A guard Dynamo's trace made is made again by a warm process's trace before the cache
    is read; one AOTAutograd's trace made would be lost on a hit (the entry's guard
    expression covers SymInt inputs only), so the entry is not saved."""
    from dynscalar._bridge.stages.aot import _float_guarded

    p, s = sympy.Symbol("zf0"), sympy.Symbol("s0")
    floats = {p: "drop.p"}
    env = SimpleNamespace(guards=[_guard(p), _guard(s)])  # Dynamo's: dropout's p == 0 path
    assert not _float_guarded(env, floats, 2)
    env.guards.append(_guard(s))  # AOTAutograd's, on an int
    assert not _float_guarded(env, floats, 2)
    env.guards.append(_guard(s, p))  # AOTAutograd's, on the float
    assert _float_guarded(env, floats, 2)
    assert _float_guarded(SimpleNamespace(guards=[_guard(p)]), floats, None)  # not known: all
