"""Write-back fidelity wherever a value lands.

A compiled call leaves the same objects as eager Python: the same class, value and spec for
values stored into attributes, into lists, tuples and dicts held by attributes (built,
appended to, item-assigned, nested), made by builtins and dunder calls, or picked by
``max``/``min`` among proxies with different specs; values handed on at a graph break or
returned keep their class too.  Each case runs a compiled model next to an eager twin (a deep
copy holding the same proxies), compares outputs and everything reachable from the instance
after every call, and asserts the exact compile count.  ``test_table_*`` checks every row of
the derived table (tests/writeback_table.py) and that docs/writeback.md is current.
"""

from __future__ import annotations

import copy
import math
import operator
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt

from . import writeback_table
from .helpers import CountingBackend

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ["eager", "aot_eager"]


def state(obj: Any) -> Any:
    """Everything reachable from ``obj``: class, value and spec of each scalar."""
    if isinstance(obj, torch.nn.Module):
        items = {k: v for k, v in vars(obj).items() if not k.startswith("_") and k != "training"}
        return {k: state(v) for k, v in items.items() if not callable(v)}
    if type(obj) in (list, tuple):
        return (type(obj).__name__, [state(v) for v in obj])
    if type(obj) is dict:
        return {k: state(v) for k, v in obj.items()}
    if hasattr(obj, "__dict__") and not ds.is_dynamic_scalar(obj):
        return (type(obj).__name__, {k: state(v) for k, v in vars(obj).items()})
    return writeback_table.describe(obj)


class Model(torch.nn.Module):
    def __init__(self, init: Callable[[Any], None], body: Callable[[Any, torch.Tensor], Any]):
        super().__init__()
        init(self)
        self.body = body

    def forward(self, x: torch.Tensor) -> Any:
        return self.body(self, x)


def side_by_side(
    init: Callable[[Any], None],
    body: Callable[[Any, torch.Tensor], Any],
    backend: str,
    calls: int,
    between: Callable[[Any, int], None] | None = None,
) -> int:
    """Run compiled and eager twins ``calls`` times; every output and every reachable value
    equal after every call.  Returns the number of graphs compiled."""
    model = Model(init, body)
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    for i in range(calls):
        if between is not None:
            between(model, i)
            between(eager, i)
        x = torch.arange(3.0) + i
        got, want = compiled(x), eager(x)
        if isinstance(want, torch.Tensor):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        else:
            assert writeback_table.describe(got) == writeback_table.describe(want), f"call {i}"
        assert state(model) == state(eager), f"call {i}"
    return counter.frame_count


# ----------------------------------------------------------------------------- containers
def _cache_init(m: Any) -> None:
    m.pos = DynamicInt(0)
    m.cache = {"next": DynamicInt(0)}


def _cache_body(m: Any, x: torch.Tensor) -> torch.Tensor:
    y = x * m.cache["next"]
    m.cache["next"] = m.pos + 1
    m.pos += 1
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_item_assignment_keeps_the_proxy_and_compiles_once(backend: str) -> None:
    # A proxy written back into a dict item stays a proxy: a plain int there would be
    # specialized, 8 compiles and then eager.
    assert side_by_side(_cache_init, _cache_body, backend, 12) == 1


def _step(m: Any) -> None:
    m.step = DynamicInt(3, max=1000)
    m.hist = []


def _build_list(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.hist = [m.step + 1]
    m.step += 1
    return x + m.step


def _build_tuple(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.pair = (m.step * 2, 0)
    m.step += 1
    return x + m.step


def _append(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.hist.append(m.step)
    m.hist.append(m.step * 2)
    del m.hist[:-2]
    m.step += 1
    return x + m.step


def _nested(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.box = {"h": [m.step - 1, (m.step, 1.5)], "n": {"k": m.step // 2}}
    m.step += 1
    return x + m.step


class Holder:
    def __init__(self) -> None:
        self.v = DynamicInt(0)
        self.items: list[Any] = []


def _object_init(m: Any) -> None:
    _step(m)
    m.objs = [Holder()]


def _object(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.objs[0].v = m.step + 1
    m.objs[0].items = [m.step * 3]
    m.step += 1
    return x + m.step


def _two(m: Any) -> None:
    _step(m)
    m.hist = [DynamicInt(0), 0]  # the same length after every call: no length guard fails


CONTAINERS = {
    "build list": (_step, _build_list),
    "build tuple": (_step, _build_tuple),
    "append": (_two, _append),
    "nested dict/list/tuple": (_step, _nested),
    "object held by a list": (_object_init, _object),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CONTAINERS))
def test_values_stored_into_containers_keep_class_and_spec(case: str, backend: str) -> None:
    init, body = CONTAINERS[case]
    assert side_by_side(init, body, backend, 5) == 1


# ----------------------------------------------------------------------------- builtins
def _a(m: Any) -> None:
    m.a = DynamicInt(3, min=0, max=100)
    m.b = DynamicInt(3)


def _store(expr: Callable[[Any], Any]) -> Callable[[Any, torch.Tensor], torch.Tensor]:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.r = expr(m)
        m.a += 1
        return x * m.a

    return body


BUILTINS: dict[str, Callable[[Any], Any]] = {
    "sum": lambda m: sum([m.a, m.a]),
    "math.prod": lambda m: math.prod([m.a, 2]),
    "pow": lambda m: pow(m.a, 2),
    "a.__add__(1)": lambda m: m.a.__add__(1),
    "a.__radd__(1)": lambda m: m.a.__radd__(1),
    "a.__iadd__(1)": lambda m: m.a.__iadd__(1),
    "a.__invert__()": lambda m: m.a.__invert__(),
    "operator.iadd (keeps the range)": lambda m: operator.iadd(m.a, 1),
    "torch.sym_max (eager: plain)": lambda m: torch.sym_max(m.a, 1),
    "abs": lambda m: abs(m.a),
    "round": lambda m: round(m.a),
    "math.floor": lambda m: math.floor(m.a),
    "int() (plain)": lambda m: int(m.a),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(BUILTINS))
def test_builtins_and_dunder_calls_store_what_eager_stores(case: str, backend: str) -> None:
    # int() of a backed SymInt is the same symbol (no specialization): one graph too
    assert side_by_side(_a, _store(BUILTINS[case]), backend, 4) == 1


def _nothing() -> Any:
    import contextlib

    return contextlib.nullcontext()


@pytest.mark.parametrize("backend", BACKENDS)
def test_pow_of_itself_keeps_the_proxy(backend: str) -> None:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.b = pow(m.b, 1)
        m.b += 1
        return x * m.b

    assert side_by_side(_a, body, backend, 4) == 1


# ----------------------------------------------------------------------------- max / min
SPECS: dict[str, tuple[Callable[[int], Any], Callable[[int], Any]]] = {
    "range vs none": (lambda v: DynamicInt(v, max=100), lambda v: DynamicInt(v)),
    "unbacked vs strict": (
        lambda v: DynamicInt(v, unbacked=True),
        lambda v: DynamicInt(v, strict=True),
    ),
    "float vs strict float": (
        lambda v: DynamicFloat(v + 0.5),
        lambda v: DynamicFloat(v, strict=True),
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pick", ["max", "min", "max(list)", "max + 1"])
@pytest.mark.parametrize("specs", list(SPECS))
def test_max_min_of_proxies_with_different_specs_keep_the_winner(
    specs: str, pick: str, backend: str
) -> None:
    make_p, make_q = SPECS[specs]
    exprs: dict[str, Callable[[Any, Any], Any]] = {
        "max": lambda p, q: max(p, q),
        "min": lambda p, q: min(q, p),
        "max(list)": lambda p, q: max([p, q]),
        "max + 1": lambda p, q: max(p, q) + 1,
    }
    expr = exprs[pick]

    def init(m: Any) -> None:
        m.p, m.q = make_p(3), make_q(5)

    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.m = expr(m.p, m.q)
        return x * m.q

    def between(m: Any, i: int) -> None:  # the winner changes from call to call
        m.p = make_p(3 + 2 * i)

    graphs = side_by_side(init, body, backend, 4, between)
    # one graph serves every value (no float-tensorify pass on a backend that runs the
    # graph as Python code, so no restart to drop a float used only on the Python side)
    assert graphs == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_of_a_proxy_and_a_plain_value_keeps_whichever_wins(backend: str) -> None:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.r = max(m.a, 5)
        m.a += 1
        return x * m.a

    assert side_by_side(_a, body, backend, 5) == 1  # plain 5, 5, then DynamicInt 5, 6, 7


# ----------------------------------------------------------------------------- handed on
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_local_proxy_crossing_a_graph_break_is_not_specialized(backend: str) -> None:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        a = m.a + 1
        torch._dynamo.graph_break()
        m.r = a * 2
        m.a += 1
        return x * a

    # `a` reaches the resumed frame as a proxy: as a plain int it would be specialized
    # there, one graph per value after the break.
    assert side_by_side(_a, body, backend, 6) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_proxy_returned_from_forward_is_a_proxy(backend: str) -> None:
    def body(m: Any, x: torch.Tensor) -> Any:
        m.a += 1
        return m.a * 2

    assert side_by_side(_a, body, backend, 4) == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [-85, 85, -(2**33) - 1])
def test_floor_of_a_floor_division_is_eagers_proxy_for_any_sign(backend: str, value: int) -> None:
    """``math.floor(a // 2)`` hands ``a // 2`` back (an int's floor is the int) and eager
    stores the proxy ``DynamicInt.__floor__`` makes.  torch 2.13's fake run of
    ``math.floor`` on a negative ``FloorDiv`` asserts (stock with ``dynamic=True`` raises
    it): the long fuzzer profile's program 543 met it, the frame fell back to stock and
    stored a plain int."""

    def init(m: Any) -> None:
        m.s = DynamicInt(value)

    def body(m: Any, x: torch.Tensor) -> Any:
        m.s //= 2
        m.u = math.floor(m.s)
        m.c = math.ceil(m.s) + math.trunc(m.s)
        return x + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)  # no safety-net fallback
        assert side_by_side(init, body, backend, 2) == 1


# ----------------------------------------------------------------------------- the table
@pytest.fixture(scope="module")
def table() -> list[writeback_table.Row]:
    return writeback_table.measure(writeback_table.BACKENDS)


@pytest.mark.broad
def test_table_every_row_stores_what_eager_stores(table: list[writeback_table.Row]) -> None:
    differing = [
        (row.statement, row.eager.stored, {b: r.stored for b, r in row.compiled.items()})
        for row in table
        if not row.equal
    ]
    assert not differing


@pytest.mark.broad
def test_table_page_is_current(table: list[writeback_table.Row]) -> None:
    # The page states the exact compile count of every row on every backend, measured on
    # the torch it names; on another release (scripts/compat.sh) the rows are still checked
    # against eager above, and the counts may differ.
    page = (ROOT / "docs" / "writeback.md").read_text()
    if f"torch {torch.__version__}." not in page:
        pytest.skip(f"docs/writeback.md records another torch than {torch.__version__}")
    assert page == writeback_table.render_page(table), (
        "docs/writeback.md is stale: python scripts/render_writeback_table.py"
    )


def test_table_rows_come_from_the_proxy_methods() -> None:
    statements = "\n".join(s for _, s in writeback_table.expressions())
    for name in ("__add__", "__radd__", "__iadd__", "__rpow__", "__floor__", "__round__"):
        assert f".{name}(" in statements
    assert "r = a\nr += 2" in statements
    assert "r = 3 - a" in statements


# ----------------------------------------------------------------------------- int64
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_value_leaving_int64_after_a_restart_stays_a_proxy(backend: str) -> None:
    def init(m: Any) -> None:
        m.step = DynamicInt(2**62)

    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.o = m.step * 2
        return x + m.step * 2

    with pytest.warns(ds.SpecializationWarning) if backend != "eager" else _nothing():
        graphs = side_by_side(init, body, backend, 3)
    assert graphs == (1 if backend == "eager" else 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dunder_call_on_a_proxy_compiled_as_a_constant_stays_a_proxy(backend: str) -> None:
    """``m.s * 2`` leaves int64, so ``s`` is compiled as a constant (a restart); Dynamo runs
    ``m.s.__rsub__(4)`` on the constant itself (``ConstantVariable.call_method``), and the
    value came back a plain ``int`` where eager keeps a ``DynamicInt`` (the long fuzzer
    profile, program 2617)."""

    def init(m: Any) -> None:
        m.s = DynamicInt(2**62)

    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.u = m.s.__rsub__(4)
        m.v = m.s.__sub__(4)
        return x + m.s * 2

    with pytest.warns(ds.SpecializationWarning) if backend != "eager" else _nothing():
        graphs = side_by_side(init, body, backend, 3)
    assert graphs == (1 if backend == "eager" else 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_negative_marked_int_to_a_negative_power_compiles(backend: str) -> None:
    """``t ** -1`` with a marked negative int ``t`` is a float power of a negative base,
    which torch refuses symbolically: the compile failed, the safety net compiled the frame
    as stock, and a proxy written in it came back plain (the long fuzzer profile, programs
    3106 and 3621).  The base is specialized instead (exact; a value guard)."""

    def init(m: Any) -> None:
        m.s = DynamicInt(5)
        m.t = -3
        ds.mark_dynamic_attr(m, "t")

    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        try:
            y = x * (m.t**-1)
        except ZeroDivisionError:
            y = -x
        m.u = m.s.__rsub__(3)
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)  # no safety-net fallback
        warnings.simplefilter("ignore", ds.SpecializationWarning)  # t ** -1 forces t
        graphs = side_by_side(init, body, backend, 3)
    assert graphs == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_floor_division_of_a_proxy_stays_a_proxy(backend: str) -> None:
    """A float ``//`` of a marked value is specialized (torch's symbolic ``floor(a / b)`` is
    not Python's); the constants stand for the proxies eager holds, so ``self.t //= 2`` and
    ``7 // self.t`` stay ``DynamicFloat`` (the first form of the fix wrote plain floats back:
    the long profile's run at adf4bb5)."""

    def init(m: Any) -> None:
        m.t = DynamicFloat(7.5)

    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.t //= 2
        m.u = 7 // m.t if m.t else 0.0
        return x * m.t

    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)  # no safety-net fallback
        warnings.simplefilter("ignore", ds.SpecializationWarning)  # // specializes t
        graphs = side_by_side(init, body, backend, 3)
    assert graphs == 3  # 7.5, 3.0, 1.0: one graph per value, as stock compiles a float


# ----------------------------------------------------------------------------- auto_dynamic
class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.s: Any = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(self.s, bool) or not isinstance(self.s, (int, float)):
            return x * 2
        return x + self.s


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_dynamic_steps_aside_for_a_value_it_would_not_mark(backend: str) -> None:
    model = ds.auto_dynamic(Counter())
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    values: list[Any] = [0, 1, 2, 3, True, "x", None, 4, False]
    for value in values:
        model.s = eager.s = value
        x = torch.arange(3.0)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    # 0 static; 1 promoted, symbolic from then on (1, 2, 3 and 4 share one graph);
    # True, "x", None: one graph each, compiled as unmarked values (False reuses True's:
    # the bool branch never reads the value, only its type).
    assert counter.frame_count == 5
    assert ds.explain(model, show=False)[0].how == "auto_dynamic"


class Adds(Counter):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.s


def test_a_user_mark_still_refuses_a_bool() -> None:
    model = ds.mark_dynamic_attr(Adds(), "s")
    compiled = torch.compile(model, backend="eager")
    compiled(torch.ones(2))
    model.s = True
    with pytest.raises(ds.DynscalarTypeError, match="bool"):
        compiled(torch.ones(2))


# ----------------------------------------------------------------------------- export
class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 5
        self.unused = 7

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.step


def test_non_strict_export_warns_for_each_marked_value_it_specializes() -> None:
    model = ds.mark_dynamic_attr(Scaled(), "step", "unused")
    x = torch.randn(3)
    with pytest.warns(ds.SpecializationWarning, match=r"non-strict\) specializes step") as seen:
        program = torch.export.export(model, (x,))
    assert len(seen) == 1  # `unused` is never read by forward: nothing to say about it
    torch.testing.assert_close(program.module()(x), model(x))


def test_non_strict_export_raises_for_a_strict_mark_before_running() -> None:
    model = ds.mark_dynamic_attr(Scaled(), "step", strict=True)
    with pytest.raises(ds.SpecializationError, match="strict=True on the mark"):
        torch.export.export(model, (torch.randn(3),), strict=False)


def test_strict_export_error_is_catchable_by_the_dynscalar_class() -> None:
    model = ds.mark_dynamic_attr(Scaled(), "step", strict=True)
    with pytest.raises(ds.SpecializationError, match=r"specializes Scaled\.step to 5") as info:
        torch.export.export(model, (torch.randn(3),), strict=True)
    assert isinstance(info.value.__cause__, torch._dynamo.exc.UserError)


# ----------------------------------------------------------------------------- float limit
@pytest.mark.parametrize("backend", BACKENDS)
def test_float_arithmetic_of_a_mark_is_computed_in_pythons_order(backend: str) -> None:
    """torch simplifies symbolic float expressions as real-number algebra (sympy):
    `(t + 1e16) - 1e16` becomes `t`.  dynscalar keeps the arithmetic of marked values in
    Python's order (docs/how-it-works.md, ``_bridge/_python.py``): eager's 0.0.  Stock torch,
    with the same float dynamic, still simplifies (pinned here with the docs)."""

    class Cancels(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.t = DynamicFloat(0.3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * ((self.t + 1e16) - 1e16)

    model = Cancels()
    x = torch.ones(1, dtype=torch.float64)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    for t in (0.3, 0.7):
        model.t = DynamicFloat(t)
        assert compiled(x).item() == model(x).item() == 0.0  # 0.3 + 1e16 rounds to 1e16
    assert counter.frame_count == 1

    def stock(x: torch.Tensor, t: float) -> torch.Tensor:
        return x * ((t + 1e16) - 1e16)

    torch._dynamo.reset()
    with torch._dynamo.config.patch(specialize_float=False):
        compiled = torch.compile(stock, backend=backend, fullgraph=True)
        assert compiled(x, 0.3).item() == 0.0  # the first call specializes
        assert compiled(x, 0.7).item() == 0.7  # then dynamic: simplified to t
    assert stock(x, 0.7).item() == 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_pow_of_a_negative_dynamic_float_is_specialized_not_refused(backend: str) -> None:
    """torch refuses symbolic float powers with a negative base (`SymFloat.__pow__` checks
    `self >= 0`): the compile failed where eager computes `t ** 2` (found by the fuzzer).
    A negative base is specialized instead: exact, one graph per negative value, warned."""
    values = [1.25, 2.5, -1.5, -3.0]

    def init(m: Any) -> None:
        m.s = DynamicFloat(values[0])

    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        m.u = pow(m.s, 2)
        m.s = pow(m.s, 1)
        return x * m.u

    def between(m: Any, i: int) -> None:
        m.s = DynamicFloat(values[i])

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        graphs = side_by_side(init, body, backend, len(values), between)
    assert all(issubclass(w.category, ds.SpecializationWarning) for w in seen)
    if backend == "eager":  # reported once per location: the first run of the module sees it
        assert any("forced to one value (-1.5)" in str(w.message) for w in seen)
    # 1.25 and 2.5 share the symbolic graph; -1.5 and -3.0 one each (no float-tensorify
    # pass runs on a backend that runs the graph as Python code, so no restart either)
    assert graphs == 3


# ----------------------------------------------------------------------------- bools
def _bool_init(m: Any) -> None:
    m.t = DynamicInt(0)
    m.flag = True


def _bool_body(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.low = min(m.t, m.flag)
    m.high = max(m.flag, m.t)
    return x * m.low + m.high


def _bool_between(m: Any, i: int) -> None:
    m.t = DynamicInt((0, 1, 2, -1, 5)[i])


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_min_of_a_marked_value_and_a_bool(backend: str) -> None:
    """``min(step, True)``: Python compares True as 1 and returns one of the two objects
    (the bool or the proxy); Dynamo's ``sym_min(SymInt, bool)`` failed to compile (the long
    fuzzer run's only dynscalar-caused cause).  ``sym_min``/``sym_max`` need no guard, and
    which object eager keeps is decided again after the graph ran: one graph."""
    assert side_by_side(_bool_init, _bool_body, backend, 5, _bool_between) == 1


def _nan_init(m: Any) -> None:
    m.t = DynamicInt(10, max=13)
    m.s = float("nan")
    ds.mark_dynamic_attr(m, "s")


def _nan_body(m: Any, x: torch.Tensor) -> torch.Tensor:
    m.low = min(m.t, m.s)  # NaN never compares smaller: t
    m.high = max(m.s, m.t)  # the first item is NaN: NaN
    m.mid = min([m.t, m.s, 4])
    return x * m.low + m.mid


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_min_of_a_marked_value_and_nan(backend: str) -> None:
    """A NaN compares as Python compares it (every comparison False) instead of failing
    the compile in sympy (the long fuzzer run, seed 0, program 4089)."""
    assert side_by_side(_nan_init, _nan_body, backend, 3) == 1


# ----------------------------------------------------------------------------- long chains
# Write-back computes each value's shadow once and replays each run-time choice once, into
# a local: long chains compile, and the code and the work grow linearly with the values.
def _zero(m: Any) -> None:
    m.v = DynamicInt(0)


def _ten_thousand(m: Any, x: torch.Tensor) -> torch.Tensor:
    v = m.v
    for i in range(10_000):
        v = v + i
    m.v = v
    return x + 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.broad
def test_a_chain_of_ten_thousand_operations_is_written_back(backend: str) -> None:
    assert side_by_side(_zero, _ten_thousand, backend, 3) == 1


def _start(m: Any) -> None:
    m.v = DynamicInt(5)
    m.out = []


def _max_chain(n: int) -> Callable[[Any, torch.Tensor], torch.Tensor]:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        v = m.v
        out = []
        for c in range(n):
            v = max(v, c) + 1
            out.append(v)
        m.out = out
        return x + 1

    return body


def _starts(m: Any, i: int) -> None:
    # the proxy wins every max (5), a plain int from the first one on (-3), and so on
    m.v = DynamicInt((5, -3, 2000, 0)[i])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.broad
def test_a_thousand_max_results_into_a_list(backend: str) -> None:
    # Each value's class is decided at run time: every max and + is replayed after the
    # graph, each once.  Past a depth torch cannot nest (sympy recursion), max compares.
    assert side_by_side(_start, _max_chain(1000), backend, 4, _starts) == 1


def _mixture(n: int) -> Callable[[Any, torch.Tensor], torch.Tensor]:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        v, w = m.v, m.w
        out = []
        for c in range(n):
            k = c % 6
            if k == 0:
                v = max(v, c) + 1
            elif k == 1:
                v = sum([v, w, 1])
            elif k == 2:
                v = pow(v, 1) + min(w, c)
            elif k == 3:
                v = v.__radd__(1)
            elif k == 4:
                v += 2
            else:
                v = min(v, w * c) - 1
            out.append(v)
        m.out, m.last = out, (v, max(w, v))
        if n < 100:
            torch._dynamo.graph_break()  # values handed on to the resumed frame as well
        return x + v

    return body


def _two_proxies(m: Any) -> None:
    m.v = DynamicInt(5)
    m.w = DynamicInt(3, max=10**6)
    m.out = []
    m.last = ()


def _two_starts(m: Any, i: int) -> None:
    m.v = DynamicInt((5, -40, 7)[i])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [30, 300])
@pytest.mark.broad
def test_a_mixture_of_builtins_stores_what_eager_stores(n: int, backend: str) -> None:
    # with a graph break: the frame and the resumed frame, which receives v
    graphs = side_by_side(_two_proxies, _mixture(n), backend, 3, _two_starts)
    assert graphs == (2 if n < 100 else 1)


def test_a_replayed_value_stored_twice_is_one_object() -> None:
    def body(m: Any, x: torch.Tensor) -> torch.Tensor:
        r = max(m.v, 3) + 1
        m.a, m.b = r, [r]
        return x + 1

    model = Model(_start, body)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=CountingBackend("eager"))
    compiled(torch.ones(1)), eager(torch.ones(1))
    assert model.a is model.b[0] and eager.a is eager.b[0]
    assert state(model) == state(eager)


def _generated_instructions(n: int, body: Callable[[int], Any], init: Any) -> int:
    """Instructions of the code Dynamo generates for ``body(n)`` (``EXTENDED_ARG``, which
    operand indices past 255 add, not counted)."""
    import dis

    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    torch._dynamo.reset()
    model = Model(init, body(n))
    torch.compile(model, backend="eager")(torch.ones(1))
    (entry,) = _debug_get_cache_entry_list(Model.forward.__code__)
    return sum(i.opname != "EXTENDED_ARG" for i in dis.get_instructions(entry.code))


@pytest.mark.parametrize(("body", "init"), [(_max_chain, _start), (_mixture, _two_proxies)])
@pytest.mark.broad
def test_the_generated_code_grows_linearly(body: Any, init: Any) -> None:
    """Twice the values, twice the added code and shadows: 100 -> 200 -> 400 values add
    100 and then 200 values' worth (a replay emitting its operands' chains again, or a
    shadow computed again at each use, would add three times as much the second time)."""
    from dynscalar._bridge._writeback import Shadows

    computed: list[int] = []
    original = Shadows._compute

    def counting(self: Any, unit: Any) -> Any:
        computed.append(1)
        return original(self, unit)

    sizes, shadows = [], []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Shadows, "_compute", counting)
        for n in (100, 200, 400):
            computed.clear()
            sizes.append(_generated_instructions(n, body, init))
            shadows.append(len(computed))
    for counts in (sizes, shadows):
        assert 1.9 < (counts[2] - counts[1]) / (counts[1] - counts[0]) < 2.1, counts
