"""A torch whose internals moved: import works, eager unchanged, one warning, no crash."""

from __future__ import annotations

from .helpers import run_python

SIMULATE_MOVED_INTERNAL = """
import warnings
import dataclasses
import dynscalar, dynscalar._bridge._install as bridge, dynscalar._bridge._table as table
# Simulate a torch release where wrap_symint changed its signature.
entry = next(p for p in table.PRIVATES if p.target.endswith(":VariableBuilder.wrap_symint"))
moved = dataclasses.replace(entry, params=("self", "value", "dynamism"))
table.PRIVATES = tuple(moved if p is entry else p for p in table.PRIVATES)
import torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.layer = torch.nn.Linear(3, 3); self.step = 0; self.scale = 0.5
    def forward(self, x):
        self.step += 1
        return self.layer(x) * self.step * self.scale

torch.manual_seed(0)
models = [M(), dynscalar.mark_dynamic_attr(M(), "step"), M()]
models[2].step = dynscalar.DynamicInt(0)
models[2].scale = dynscalar.DynamicFloat(0.5)  # must stay 0.5 (never int() -> 0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for model in models:
        torch._dynamo.reset()
        eager = M(); eager.load_state_dict(model.state_dict())
        graphs = []
        compiled = torch.compile(model, backend=lambda gm, _: graphs.append(gm) or gm.forward)
        for _ in range(4):
            x = torch.randn(2, 3)
            torch.testing.assert_close(compiled(x), eager(x))
        assert int(model.step) == eager.step == 4
        assert len(graphs) == 4, len(graphs)  # specialized: one graph per step value
ours = [w for w in caught if issubclass(w.category, dynscalar.BridgeUnavailableWarning)]
assert len(ours) == 1, [str(w.message) for w in caught]
assert "changed VariableBuilder.wrap_symint" in str(ours[0].message), ours[0].message
assert "specialized like plain values" in str(ours[0].message)
assert not bridge.is_installed()
print("ok")
"""


def test_moved_internal_degrades_to_specialization() -> None:
    result = run_python(SIMULATE_MOVED_INTERNAL)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip() == "ok"


SIMULATE_MOVED_FLOAT_INTERNAL = """
import warnings
import dataclasses
import dynscalar, dynscalar._bridge._table as table
# Simulate a torch release where the float-tensorify pass changed its signature.
entry = next(p for p in table.PRIVATES if p.target.endswith(":tensorify_python_scalars"))
moved = dataclasses.replace(entry, params=("gm", "shape_env"))
table.PRIVATES = tuple(moved if p is entry else p for p in table.PRIVATES)
import torch

def f(x, t):
    return x * t

counter = []
compiled = torch.compile(f, backend=lambda gm, _: counter.append(gm) or gm.forward)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for t in (0.5, 0.75, 1.25):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x, dynscalar.DynamicFloat(t)), f(x, t), rtol=0, atol=0)
ours = [str(w.message) for w in caught if issubclass(w.category, dynscalar.DynscalarWarning)]
assert len(ours) == 1 and "internals moved" in ours[0] and "f(t)" in ours[0], ours
print("graphs", len(counter))
strict = torch.compile(f, backend="eager")
try:
    strict(torch.randn(3), dynscalar.DynamicFloat(0.5, strict=True))
except Exception as exc:
    assert "strict=True" in str(exc), exc
    print("strict raises")
"""


def test_moved_float_internal_compiles_floats_as_stock_does() -> None:
    """A dynamic float never turns into an error when the float path cannot be installed:
    it is compiled as an unmarked float (stock: static, then automatic dynamic), warned
    once; a strict=True mark raises."""
    result = run_python(SIMULATE_MOVED_FLOAT_INTERNAL)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "graphs 2" in result.stdout and "strict raises" in result.stdout, result.stdout
