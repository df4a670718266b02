"""The safety net: a failure inside any dynscalar hook compiles the frame as stock torch does.

For every hook of the bridge's table (``dynscalar._bridge._table.PRIVATES``) a program that
runs it is compiled with the hook made to fail (``RuntimeError("injected")``).  Each must
give eager's results (every call is compared with an eager twin), one ``DynscalarWarning``
naming the hook, and - for a hook that runs while Dynamo traces - exactly the compile count
stock torch gives (measured inside ``dynscalar.disabled()``, which ``tests/test_disabled.py``
checks against a process that never imports dynscalar); a backend pass's hook falls back
to torch's own pass on the graph Dynamo traced, never more graphs than stock.  With a
``strict=True`` mark the failure is raised instead.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import dynscalar as ds
from dynscalar._bridge import _table

from .helpers import CountingBackend

Outcome = tuple[int, list[Any]]


# ----------------------------------------------------------------------------- programs
class Step(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x * self.step


class Ranged(Step):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.step % 3):
            x = x + 1
        return x


class Branch(Step):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.step % 2 == 0:
            return x + 1
        return x - 1


class Sums(Step):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total = sum([self.step, 1])
        return x + self.step.__add__(1)


class Returns(Step):
    def forward(self, x: torch.Tensor) -> Any:
        return x + 1, self.step + 1


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mul(self.scale) + self.scale


class Sine(Scaled):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * np.sin(self.scale)


class Affine(Scaled):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (-self.scale + self.scale * 2 - 0.5)


class Compared(Scaled):
    """Every comparison of a float expression of the marked value (kept as Python's)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.scale * 2.0
        w = self.scale + 1.0
        for outcome in (v == w, v != w, v < w, v <= w, v > w, v >= w):
            x = x + 1 if outcome else x - 1
        return x


class Sized(Scaled):
    """A size and a count computed from a marked float."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[: int(self.scale * 4) + 1] * round(self.scale * 4)


class Dunder(Step):
    """A dunder call on a constant (``ConstantVariable.call_method``) in a marked compile."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.step * (3).__rsub__(5)


class Property(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.count = 1

    @property
    def step(self) -> int:
        return self.count

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.step


class Unbacked(Step):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.step > 2:
            return x + 1
        return x - 1


def _run(
    make: Callable[[], torch.nn.Module],
    names: tuple[str, ...],
    values: list[Any],
    backend: Any = "aot_eager",
    spec: dict[str, Any] | None = None,
    setter: str | None = None,
) -> Outcome:
    """Compile ``make()`` with ``names`` marked and call it once per value (set on
    ``setter``, default the first name) beside an eager twin; (graphs, outputs)."""
    torch.manual_seed(0)
    model = make()
    twin = copy.deepcopy(model)
    ds.mark_dynamic_attr(model, *names, **(spec or {}))
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 6)
    outs = []
    for value in values:
        for target in (model, twin):
            setattr(target, setter or names[0], value)
        torch.manual_seed(1)
        got = compiled(x)
        torch.manual_seed(1)
        want = twin(x)
        for g, w in zip(
            got if isinstance(got, tuple) else (got,),
            want if isinstance(want, tuple) else (want,),
            strict=True,
        ):
            if isinstance(w, torch.Tensor):
                assert torch.equal(g, w)
            else:
                assert (g == w and type(g) is type(w)) or int(g) == w
        outs.append(got)
    return counter.frame_count, outs


def _dropout() -> Outcome:
    return _run(lambda: torch.nn.Dropout(0.1), ("p",), [0.1, 0.2, 0.3])


PROGRAMS: dict[str, Callable[[], Outcome]] = {
    "stages.build:wrap_hook": lambda: _run(Step, ("step",), [1, 2, 3]),
    "stages.symbolic:evaluate_sym_node_hook": lambda: _run(Ranged, ("step",), [1, 2, 3]),
    "stages.symbolic:unbacked_branch_hook": lambda: _run(Branch, ("step",), [1, 2, 3]),
    "stages.symbolic:data_dependent_hook": lambda: _run(
        Unbacked, ("step",), [1, 2, 3], spec={"unbacked": True}
    ),
    "stages.build:size_constraint_hook": lambda: _run(
        Unbacked, ("step",), [1, -2, 3], spec={"unbacked": True}
    ),
    "_ops:in_graph_call_hook": _dropout,
    "_ops:tensor_method_hook": lambda: _run(Scaled, ("scale",), [0.5, 0.25, 0.75]),
    "_ops:builtin_call_hook": lambda: _run(Step, ("step",), [1, 2, 3]),
    "_ops:numpy_call_hook": lambda: _run(Sine, ("scale",), [0.5, 0.25, 0.75]),
    "_writeback:builtin_call_hook": lambda: _run(Step, ("step",), [1, 2, 3]),
    "_python:range_hook": lambda: _run(Ranged, ("step",), [1, 2, 3]),
    "_properties:property_get_hook": lambda: _run(Property, ("step",), [1, 2, 3], setter="count"),
    "_properties:builder_call_hook": lambda: _run(Property, ("step",), [1, 2, 3], setter="count"),
    "stages.codegen:codegen_update_mutated_hook": lambda: _run(Step, ("step",), [1, 2, 3]),
    "stages.codegen:codegen_suffix_hook": lambda: _run(Returns, ("step",), [1, 2, 3]),
    "_writeback:symnode_method_hook": lambda: _run(Sums, ("step",), [1, 2, 3]),
    "_writeback:record_call_hook": lambda: _run(Sums, ("step",), [1, 2, 3]),
    "_writeback:constant_method_hook": lambda: _run(Dunder, ("step",), [1, 2, 3]),
    "stages.aot:tensorify_hook": lambda: _run(Scaled, ("scale",), [0.5, 0.25, 0.75]),
    "_python:add_hook": lambda: _run(Affine, ("scale",), [0.5, 0.25, 0.75]),
    "_python:sub_hook": lambda: _run(Affine, ("scale",), [0.5, 0.25, 0.75]),
    "_python:mul_hook": lambda: _run(Affine, ("scale",), [0.5, 0.25, 0.75]),
    "_python:neg_hook": lambda: _run(Affine, ("scale",), [0.5, 0.25, 0.75]),
    **{
        f"_python:{op}_hook": lambda: _run(Compared, ("scale",), [0.5, 1.0, 1.5])
        for op in ("eq", "ne", "lt", "le", "gt", "ge", "bound", "run_node")
    },
    "_python:python_raises_hook": lambda: _run(Sized, ("scale",), [0.5, 0.25, 0.75]),
    "_safety:backend_compile_hook": lambda: _run(Step, ("step",), [1, 2, 3]),
    "stages.aot:compile_hook": lambda: _run(Scaled, ("scale",), [0.5, 0.25, 0.75]),
}

#: hooks a compile reaches only on inductor with its caches on (measured separately)
INDUCTOR_ONLY = {
    "stages.aot:cache_key_hook",
    "stages.aot:cache_save_hook",
    "stages.aot:check_cacheable_hook",
}
#: hooks that run outside any compile (their failure calls torch's function directly)
OUTSIDE_COMPILE = {
    "stages.export:export_hook",
    "stages.build:compile_start_hook",
    "_state:reset_hook",
}


def _concerns(stage_hook: str) -> list[str]:
    """The hooks of rules a stage's hook calls (``"_ops:builtin_call_hook"``, or one of the
    stage module's own), read from its source: a program fails each of them where it
    runs, under the stage's table entry; a stage hook calling none is failed itself."""
    module, _, name = stage_hook.partition(":")
    stage = importlib.import_module(f"dynscalar._bridge.{module}")
    source = inspect.getsource(getattr(stage, name))
    found = []
    for alias, value in vars(stage).items():
        if inspect.ismodule(value) and value.__name__.startswith("dynscalar._bridge."):
            rule = value.__name__.removeprefix("dynscalar._bridge.")
            found += [f"{rule}:{n}" for n in re.findall(rf"\b{alias}\.(\w+_hook)\(", source)]
    found += [
        f"{module}:{n}"
        for n in re.findall(r"(?<![.\w])(\w+_hook)\(", source)
        if n != name and callable(getattr(stage, n, None))
    ]
    return found or [stage_hook]


#: rule -> the table entry whose stage hook calls it
ENTRY_OF = {
    concern: entry for entry in _table.PRIVATES if entry.hook for concern in _concerns(entry.hook)
}


def test_every_hook_of_the_table_has_a_program() -> None:
    missing = set(ENTRY_OF) - set(PROGRAMS) - INDUCTOR_ONLY - OUTSIDE_COMPILE
    assert not missing, f"add a program for {sorted(missing)}"


def test_every_rule_a_stage_composes_is_found() -> None:
    """The two targets where several concerns meet: each concern is failed on its own."""
    found = {c for c, e in ENTRY_OF.items() if e.name == "BuiltinVariable.call_function"}
    assert found == {
        "_writeback:builtin_call_hook",
        "_ops:builtin_call_hook",
        "_python:python_raises_hook",
    }
    found = {c for c, e in ENTRY_OF.items() if e.name == "OutputGraph.call_user_compiler"}
    assert found == {"_safety:backend_compile_hook", "stages.aot:compile_hook"}


def _inject(monkeypatch: pytest.MonkeyPatch, hook: str) -> None:
    module, _, name = hook.partition(":")
    owner = importlib.import_module(f"dynscalar._bridge.{module}")
    assert callable(getattr(owner, name))

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(owner, name, failing)


@pytest.mark.parametrize("hook", sorted(PROGRAMS))
def test_a_failing_hook_compiles_as_stock_torch_does(
    hook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = ENTRY_OF[hook]
    if entry.optional and entry.found_params() != entry.params:
        pytest.skip(f"{entry.name} is an optional entry this torch does not need (not patched)")
    with ds.disabled(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.DynscalarWarning)
        stock_graphs, stock_outputs = PROGRAMS[hook]()
    torch._dynamo.reset()
    _inject(monkeypatch, hook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs, outputs = PROGRAMS[hook]()
    failures = [
        str(w.message)
        for w in caught
        if issubclass(w.category, ds.DynscalarWarning) and "internal error" in str(w.message)
    ]
    assert len(failures) == 1, failures
    assert entry.name in failures[0] and "injected" in failures[0]
    if entry.phase == "dynamo":  # the frame is traced again with dynscalar off: stock
        assert graphs == stock_graphs
    else:  # a backend pass: torch's own pass on what Dynamo traced, no extra graph
        assert graphs <= stock_graphs
    assert len(outputs) == len(stock_outputs)


class Stores(torch.nn.Module):
    """Values made from proxies, stored in a dict, a list and the attribute itself."""

    def __init__(self, s: Any, t: Any) -> None:
        super().__init__()
        self.s, self.t = s, t

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.extra = {"k": self.s * 2, "f": self.t / 2}
        self.h = [self.s + 1]
        self.s += 1
        return x * self.s + self.t


#: the hooks on ``SymNode`` arithmetic and comparisons (IEEE order, ``_python``)
_FLOAT_PHASE = {
    f"_python:{op}_hook"
    for op in ("add", "sub", "mul", "neg", "eq", "ne", "lt", "le", "gt", "ge", "bound", "run_node")
}

#: hooks whose failure leaves write-back's recording and codegen in place
_NOT_WRITEBACK = [
    hook
    for hook in sorted(PROGRAMS)
    if not hook.startswith("_writeback:")
    and not hook.startswith(("stages.aot:", "stages.codegen:"))
    and hook not in _FLOAT_PHASE
    and hook != "_safety:backend_compile_hook"
]


@pytest.mark.parametrize("hook", _NOT_WRITEBACK)
def test_a_frame_compiled_as_stock_stores_what_eager_stores(
    hook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame the net compiles as stock still stores eager's classes: write-back's
    recording and codegen run there in the form they have inside ``disabled()``.  Before,
    the stock compile stored plain ints and floats where eager keeps ``DynamicInt`` and
    ``DynamicFloat`` (``self.extra = {'k': self.s * 2}``: the dict write-back regression)."""
    _inject(monkeypatch, hook)
    model, twin = Stores(ds.DynamicInt(3), ds.DynamicFloat(0.5)), Stores(3, 0.5)
    twin.s, twin.t = ds.DynamicInt(3), ds.DynamicFloat(0.5)
    compiled = torch.compile(model, backend=CountingBackend("eager"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.DynscalarWarning)
        for _ in range(2):
            assert torch.equal(compiled(torch.ones(3)), twin(torch.ones(3)))
    for got, want in [
        (model.extra["k"], twin.extra["k"]),
        (model.extra["f"], twin.extra["f"]),
        (model.h[0], twin.h[0]),
        (model.s, twin.s),
    ]:
        assert type(got) is type(want) and got == want and got.spec is want.spec


def test_a_failing_hook_raises_for_a_strict_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    _inject(monkeypatch, "_ops:in_graph_call_hook")
    with (
        warnings.catch_warnings(),
        pytest.raises(Exception, match=r"internal error.*strict=True") as info,
    ):
        warnings.simplefilter("ignore", ds.DynscalarWarning)  # the failure's own warning
        _run(lambda: torch.nn.Dropout(0.1), ("p",), [0.1], spec={"strict": True})
    chain = []
    error: BaseException | None = info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(e, ds.BridgeError) for e in chain) or "BridgeError" in str(info.value)


def test_a_failing_export_hook_exports_as_stock_torch_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _inject(monkeypatch, "stages.export:export_hook")
    model = ds.mark_dynamic_attr(Step(), "step")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = torch.export.export(model, (torch.ones(3),))
    assert any("internal error" in str(w.message) for w in caught)
    assert torch.equal(program.module()(torch.ones(3)), Step()(torch.ones(3)))


def test_a_failing_reset_hook_resets_torch_as_stock_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = CountingBackend("eager")
    compiled = torch.compile(Step(), backend=counter)
    compiled(torch.ones(3))
    _inject(monkeypatch, "_state:reset_hook")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compiler.reset()
    assert sum("internal error" in str(w.message) for w in caught) == 1
    compiled(torch.ones(3))
    assert counter.frame_count == 2  # torch's reset ran: the frame compiled again


def _symbolic_float_refused(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
    """A backend that cannot take a symbolic float (``.item()`` of a float input)."""
    if any(n.op == "call_method" and n.target == "item" for n in gm.graph.nodes):
        raise NotImplementedError("NYI symbolic float")
    return gm.forward


def test_a_backend_failing_on_a_marked_value_compiles_as_stock_torch_does() -> None:
    """The backend refuses the graph dynscalar made (a symbolic float): the frame is traced
    again as stock torch does (the value a constant), one warning naming the error as the
    backend's (not an internal error of dynscalar's), eager's numbers."""
    model, twin = Scaled(), Scaled()
    ds.mark_dynamic_attr(model, "scale")
    counter = CountingBackend(_symbolic_float_refused)
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.equal(compiled(x), twin(x))
    failures = [str(w.message) for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert len(failures) == 1 and "NYI symbolic float" in failures[0], failures
    assert (
        "the backend raised NotImplementedError: NYI symbolic float (its own error)"
        in (failures[0])
    )
    assert "internal error" not in failures[0] and "Please report" not in failures[0]
    assert counter.frame_count == 2  # the refused attempt, then the constant graph
    # a second value: stock torch makes the changed float symbolic itself (automatic
    # dynamic), and the backend refuses that too: the same failure as stock's, not hidden
    model.scale = twin.scale = 0.25
    with warnings.catch_warnings(), pytest.raises(Exception, match="NYI symbolic float"):
        warnings.simplefilter("ignore", ds.DynscalarWarning)
        compiled(x)


def test_a_backend_failing_without_marked_values_fails_as_in_stock() -> None:
    model = Scaled()
    compiled = torch.compile(model, backend=_always_failing, fullgraph=True)
    with pytest.raises(Exception, match=r"the backend's own failure"):
        compiled(torch.ones(3))


def _always_failing(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
    raise RuntimeError("the backend's own failure")
