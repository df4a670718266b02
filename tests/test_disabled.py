"""``dynscalar.disabled()``: torch.compile inside it is stock torch (compile counts, guards)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest
import torch
import wrapt

import dynscalar
from benchmarks.harness import applied_patches
from dynscalar._bridge import _install, _patch

from .helpers import CountingBackend, run_python

# A seed model whose step changes every call: stock torch compiles once per value until
# recompile_limit (8), then runs the frame eagerly.
MODEL = """
import torch

class Seed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(3, 3)
        self.step = 0
        self.scale = 0.5

    def forward(self, x):
        self.step += 1
        self.scale = self.scale * 0.9
        return self.layer(x) * self.step * self.scale
"""


# Graphs after each call, the guards of every cached version and the outputs; the same
# code runs here and in a process that never imports dynscalar.
RUN = """
def run(model, calls):
    import copy
    import re
    import torch
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    from torch._dynamo.testing import CompileCounterWithBackend

    def numbers(m):
        return {k: v for k, v in vars(m).items() if type(v) in (int, float)}

    eager = copy.deepcopy(model)  # every call is compared with an eager twin
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(model, backend=counter)
    counts, outputs = [], []
    for i in range(calls):
        x = torch.full((2, 3), float(i))
        out = compiled(x)
        torch.testing.assert_close(out, eager(x), rtol=0, atol=0)
        assert numbers(model) == numbers(eager), (numbers(model), numbers(eager))
        outputs.append(out.tolist())
        counts.append(counter.frame_count)
    entries = _debug_get_cache_entry_list(type(model).forward.__code__)
    def normal(part):  # object ids and global names differ from process to process
        return re.sub(r"___\\d+", "___N", re.sub(r"\\b\\d{6,}\\b", "<id>", part))

    guards = [
        sorted(normal(p) for p in entry.guard_manager.code_parts if "check_global_state" not in p)
        for entry in entries
    ]
    return counts, guards, outputs
"""


def _run(model: torch.nn.Module, calls: int) -> tuple[list[int], list[list[str]], list[Any]]:
    namespace: dict[str, Any] = {}
    exec(RUN, namespace)
    return namespace["run"](model, calls)  # type: ignore[no-any-return]


def _stock(calls: int) -> dict[str, Any]:
    """The same run in a process that never imports dynscalar."""
    code = (
        MODEL
        + RUN
        + textwrap.dedent(
            f"""
            import json, sys
            counts, guards, outputs = run(Seed(), {calls})
            assert "dynscalar" not in sys.modules
            print(json.dumps({{"counts": counts, "guards": guards, "outputs": outputs}}))
            """
        )
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _seed() -> torch.nn.Module:
    namespace: dict[str, Any] = {"__name__": "__main__"}  # the class's name in guards
    exec(MODEL, namespace)
    return namespace["Seed"]()  # type: ignore[no-any-return]


def test_marked_model_inside_disabled_is_stock_torch() -> None:
    calls = 10
    stock = _stock(calls)
    assert stock["counts"][-1] == 8  # stock: one graph per value up to recompile_limit

    marked = dynscalar.mark_dynamic_attr(_seed(), "step", "scale")
    counts, _, _ = _run(marked, 3)  # compiled with dynscalar first: the block must undo it
    assert counts == [1, 1, 1]
    torch._dynamo.reset()

    marked = dynscalar.mark_dynamic_attr(_seed(), "step", "scale")
    with dynscalar.disabled():
        counts, guards, outputs = _run(marked, calls)
    assert counts == stock["counts"]
    assert guards == stock["guards"]
    assert outputs == stock["outputs"]  # the same model, weights and inputs: equal to stock
    assert marked.step == calls and dynscalar.is_dynamic_attr(marked, "step")

    # marks work again afterwards, and disabled() reset what it compiled
    counts, _, _ = _run(marked, 5)
    assert counts == [1, 1, 1, 1, 1]


def test_every_patch_is_off_inside_and_back_after() -> None:
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))  # the bridge is installed
    assert _install.ensure_phase("floats")
    before = {(id(owner), name): vars(owner)[name] for owner, name in applied_patches()}
    patched = {p.entry.name for p in _patch.APPLIED}
    assert {"VariableBuilder._wrap", "graph_compile.tensorify_python_scalars"} <= patched
    assert "export.export" in patched
    export_entry = next(p.entry for p in _patch.APPLIED if p.entry.name == "export.export")
    # the wrapper the table makes for it, around a probe standing for torch's function
    probe = wrapt.FunctionWrapper(lambda: "torch", _patch.hook_of(export_entry))
    # the hook each wrapper runs inside disabled() (None: torch's function itself)
    inside = {p.entry.name: p.entry.inside_disabled for p in _patch.APPLIED}

    with dynscalar.disabled():
        # proxies, which stock Dynamo cannot trace, are read as their plain value, and
        # write-back records and rebuilds what compiles reading one store; a reset of
        # torch's state resets dynscalar's caches too; every other wrapper calls torch's
        # function itself
        assert {name for name, hook in inside.items() if hook} == {
            "_dynamo.reset",
            "BuiltinVariable.call_function",
            "ConstantVariable.call_method",
            "OutputGraph.codegen_suffix",
            "PolyfilledFunctionVariable.call_function",
            "SideEffects.codegen_update_mutated",
            "SymNodeVariable.call_method",
            "VariableBuilder._wrap",
        }
        assert inside["VariableBuilder._wrap"] == "stages.build:wrap_degraded"
        assert probe() == "torch"  # torch's function alone: the export hook is not called
        with dynscalar.disabled():  # nested: still off
            assert probe() == "torch"
        assert probe() == "torch"

    after = {(id(owner), name): vars(owner)[name] for owner, name in applied_patches()}
    assert after == before  # the same wrappers, never taken out


def test_proxy_inside_disabled_compiles_like_its_plain_value() -> None:
    def f(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * n

    with dynscalar.disabled():
        counter = CountingBackend("eager")
        compiled = torch.compile(f, backend=counter)
        for n in (2, 3, 4):
            x = torch.ones(2)
            torch.testing.assert_close(compiled(x, dynscalar.DynamicInt(n)), f(x, n))
        plain = CountingBackend("eager")
        torch._dynamo.reset()
        compiled = torch.compile(f, backend=plain)
        for n in (2, 3, 4):
            compiled(torch.ones(2), n)
    # stock torch: a constant, then automatic dynamic after the second value
    assert counter.frame_count == plain.frame_count == 2


def test_a_wrapper_someone_put_over_ours_is_bypassed() -> None:
    from torch._dynamo.variables.builder import VariableBuilder

    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))
    ours = vars(VariableBuilder)["_wrap"]
    calls: list[int] = []

    def theirs(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        calls.append(1)
        return wrapped(*args, **kwargs)

    wrapt.wrap_function_wrapper(VariableBuilder, "_wrap", theirs)
    try:
        marked = dynscalar.mark_dynamic_attr(_seed(), "step", "scale")
        with dynscalar.disabled():
            counts, _, _ = _run(marked, 3)
        assert counts == [1, 2, 3]  # our hook passed straight through: one graph per value
        assert calls
    finally:
        VariableBuilder._wrap = ours  # type: ignore[method-assign]
    counts, _, _ = _run(marked, 3)
    assert counts == [1, 1, 1]


@pytest.mark.parametrize("depth", [1, 2])
def test_marks_work_after_nested_blocks(depth: int) -> None:
    import contextlib

    marked = dynscalar.mark_dynamic_attr(_seed(), "step", "scale")
    with contextlib.ExitStack() as stack:
        for _ in range(depth):
            stack.enter_context(dynscalar.disabled())
        counts, _, _ = _run(marked, 3)
        assert counts == [1, 2, 3]
    counts, _, _ = _run(marked, 4)
    assert counts == [1, 1, 1, 1]


# ----------------------------------------------------------------------------- proxies
def _held(value: Any) -> Any:
    """Class, value and spec of a number (lists and tuples item by item)."""
    if type(value) in (list, tuple):
        return (type(value).__name__, [_held(item) for item in value])
    spec = value.spec if dynscalar.is_dynamic_scalar(value) else None
    return (type(value).__name__, value, spec)


class Holder(torch.nn.Module):
    """Proxies written back every way a compiled step can leave them: attributes (``+=``,
    ``*``), a list and tuple held by an attribute, a value handed on at a graph break, a
    return value."""

    def __init__(self, proxies: bool) -> None:
        super().__init__()
        self.step: Any = dynscalar.DynamicInt(0, max=100) if proxies else 0
        self.scale: Any = dynscalar.DynamicFloat(1.0, strict=True) if proxies else 1.0
        self.log: list[Any] = []

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, Any]:
        self.step += 1
        self.scale = self.scale * 0.5
        self.log = [self.step, self.step * 2, (self.scale, max(self.step, 2))]
        a = self.step + 1
        torch._dynamo.graph_break()
        self.after = a
        return x * a, a


def _steps(model: Holder, calls: int, backend: str) -> int:
    """Run ``model`` compiled next to an eager twin; every output and stored number equal
    (class, value, spec) after every call.  Returns the graphs compiled."""
    import copy

    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    for i in range(calls):
        x = torch.full((2,), float(i))
        (got, got_step), (want, want_step) = compiled(x), eager(x)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        assert _held(got_step) == _held(want_step), f"call {i}"
        stored = ("step", "scale", "log", "after")
        assert [_held(getattr(model, k)) for k in stored] == [
            _held(getattr(eager, k)) for k in stored
        ], f"call {i}"
    return counter.frame_count


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_inside_disabled_a_compiled_step_leaves_proxies_as_eager_does(backend: str) -> None:
    with dynscalar.disabled():
        plain = _steps(Holder(proxies=False), 4, backend)
        torch._dynamo.reset()
        model = Holder(proxies=True)
        inside = _steps(model, 4, backend)
    # each value compiled as the plain value it holds: as many graphs as stock torch
    assert inside == plain
    assert type(model.step) is dynscalar.DynamicInt and model.step.spec.max == 100
    after = _steps(model, 5, backend)  # the marks hold again: the frame and the resumed one
    assert after == 2


def test_inside_disabled_a_proxy_argument_is_returned_as_eager_returns_it() -> None:
    def f(x: torch.Tensor, n: Any) -> tuple[torch.Tensor, Any]:
        return x * n, n + 1

    with dynscalar.disabled():
        counter = CountingBackend("eager")
        compiled = torch.compile(f, backend=counter)
        for n in (2, 3, 4):  # a constant, then automatic dynamic (a SymInt) as for a plain n
            x = torch.ones(2)
            (got, got_n), (want, want_n) = compiled(x, dynscalar.DynamicInt(n)), f(x, n + 0)
            torch.testing.assert_close(got, want)
            assert type(got_n) is dynscalar.DynamicInt and got_n == want_n
    assert counter.frame_count == 2
