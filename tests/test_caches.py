"""One cache reset, and the mark store it never touches.

``dynscalar._caches.reset_caches()`` empties every module-level cache (once-per-location
warnings, remembered restarts, forced floats, property reads, ...); marks live in the
mark store (``dynscalar._marks``) and survive it.  The store serialises edits under one
lock and holds marked functions weakly.
"""

from __future__ import annotations

import functools
import gc
import subprocess
import sys
import threading
import warnings
import weakref
from typing import Any

import torch

import dynscalar as ds
from dynscalar import _marks
from dynscalar._caches import reset_caches
from dynscalar._diagnostics import DynscalarWarning, warn_once

from .helpers import USER_AOT, CountingBackend


def _warnings_of(action: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught]


def test_a_once_per_location_warning_warns_again_after_reset() -> None:
    key = ("test-caches", "once")

    def warn() -> None:
        warn_once(key, "dynscalar: once per location", DynscalarWarning)

    assert _warnings_of(warn) == ["dynscalar: once per location"]
    assert _warnings_of(warn) == []
    reset_caches()
    assert _warnings_of(warn) == ["dynscalar: once per location"]


def test_reset_empties_every_bridge_cache() -> None:
    from torch._dynamo.symbolic_convert import TensorifyState

    from dynscalar import _attrs
    from dynscalar._bridge import _backends, _floats, _properties, _rebox
    from dynscalar._bridge.stages import aot

    module = torch.nn.Linear(2, 2)
    code = test_reset_empties_every_bridge_cache.__code__
    context = torch._guards.CompileContext(None)
    _floats._specialize_next[context] = {"L['self'].step": "a restart"}
    _rebox.rebox(3, _rebox.key_of(ds.DynamicInt, ds.DynamicSpec()))
    _properties.READS[code] = {"L['self'].p": _properties.PropertyRead("L['self']", "Linear", "p")}
    _attrs.record_property_reads(module, "p", ("self.q",))
    forced = aot._forced_floats
    forced._ops["dynscalar-forced:test"] = ["aten.op"]
    names = TensorifyState.force_specializations
    names.update({"dynscalar-forced:test", "zf_stock"})
    assert _backends._kind_of(torch._dynamo.lookup_backend("aot_eager")) == "python"
    try:
        assert _rebox._MADE and _properties.READS and _attrs.property_reads(module, "p")
        assert _backends._known  # torch's backends, held (not their id()s)
        reset_caches()
        assert not _backends._known
        assert _floats._specialize_next.get(context) is None
        assert not _rebox._MADE
        assert _properties.READS.get(code) is None
        assert _attrs.property_reads(module, "p") is None
        assert forced.ops(object()) == [] and not forced._ops
        # our memory leaves torch's set; stock's own names stay (torch._dynamo.reset's job)
        assert "dynscalar-forced:test" not in names and "zf_stock" in names
    finally:
        names.discard("zf_stock")


def test_a_forced_float_is_tried_symbolically_again_after_reset() -> None:
    """What the forced-float memory changes: after a reset (and Dynamo's), the first compile
    of a float torch cannot keep symbolic warns again, like the first one did."""

    class Clamped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.eps = 0.5

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nan_to_num(x, nan=self.eps)

    def first_compile() -> list[str]:  # a backend that needs torch's float pass
        model = ds.mark_dynamic_attr(Clamped(), "eps")
        compiled = torch.compile(model, backend=CountingBackend(USER_AOT))
        return _warnings_of(lambda: compiled(torch.tensor([float("nan"), 1.0])))

    first = first_compile()
    assert first  # torch forced the marked float: dynscalar warned
    torch._dynamo.reset()
    reset_caches()
    assert first_compile() == first


def test_marks_survive_reset() -> None:
    @ds.dynamic_attrs("rate")
    class Marked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step, self.rate, self.width = 0, 0.5, 3

        def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
            return x * n

    def scale(x: torch.Tensor, t: float) -> torch.Tensor:
        return x * t

    model = ds.mark_dynamic_args(ds.mark_dynamic_attr(Marked(), "step"), "n")
    ds.mark_dynamic_args(scale, "t")
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = ds.mark_dynamic_param_groups(torch.optim.SGD([weight], lr=0.1))
    table = dict(_marks.MARK_TABLE)

    reset_caches()

    assert ds.is_dynamic_attr(model, "step") and ds.is_dynamic_attr(model, "rate")
    assert not ds.is_dynamic_attr(model, "width")
    assert _marks.lookup_arg_mark(Marked.forward.__code__, "n", model) is not None
    assert _marks.lookup_arg_mark(scale.__code__, "t", None) is not None
    assert _marks.lookup_group_mark(optimizer, "lr") is not None
    assert table == _marks.MARK_TABLE


def test_guards_read_the_store_table() -> None:
    assert ds._mark_table is _marks.MARK_TABLE  # type: ignore[attr-defined]


def test_an_auto_dynamic_promotion_survives_reset() -> None:
    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.step

    model = ds.auto_dynamic(Counter())
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    for step in range(3):
        model.step = step
        compiled(torch.ones(2))
    assert _marks.auto_marked(model, "step")
    reset_caches()
    assert _marks.auto_marked(model, "step") and ds.is_dynamic_attr(model, "step")
    assert [r.how for r in ds.explain(model, show=False)] == ["auto_dynamic"]


def _fresh_function() -> Any:
    """A function with its own code object (a nested ``def`` shares its code with every
    other function the enclosing code makes)."""
    namespace: dict[str, Any] = {}
    exec("def scale(x, t):\n    return x * t\n", namespace)
    return namespace["scale"]


def test_a_marked_function_can_be_collected() -> None:
    function = _fresh_function()
    ds.mark_dynamic_args(function, "t")
    assert _marks.function_marks(function.__code__) == {"t": ds.DynamicSpec()}
    function_ref, code_ref = weakref.ref(function), weakref.ref(function.__code__)
    del function
    gc.collect()
    assert function_ref() is None and code_ref() is None


def _mark_and_compile_through_wrappers() -> tuple[weakref.ref[Any], weakref.ref[Any]]:
    function = _fresh_function()

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    compiled = torch.compile(wrapper, backend=CountingBackend("eager"))
    ds.mark_dynamic_args(compiled, "t")
    assert _marks.wrapped_parameter(wrapper.__code__, position=1) == (function.__code__, "t")
    compiled(torch.ones(2), 2.0)
    return weakref.ref(function), weakref.ref(wrapper)


def test_a_function_marked_through_its_wrappers_can_be_collected() -> None:
    function_ref, wrapper_ref = _mark_and_compile_through_wrappers()
    torch._dynamo.reset()
    gc.collect()
    assert function_ref() is None and wrapper_ref() is None


def test_the_store_lock_serialises_marking() -> None:
    module = torch.nn.Module()
    module.step = 0
    done = threading.Event()

    def mark() -> None:
        ds.mark_dynamic_attr(module, "step")
        done.set()

    with _marks.lock:
        thread = threading.Thread(target=mark)
        thread.start()
        assert not done.wait(0.2)  # the edit waits for the lock
        assert not ds.is_dynamic_attr(module, "step")
    thread.join(5)
    assert done.is_set() and ds.is_dynamic_attr(module, "step")


def test_concurrent_function_and_class_marks_lose_no_update() -> None:
    def target(x: Any, **kwargs: Any) -> Any:
        return x

    classes = [type(f"M{i}", (torch.nn.Module,), {}) for i in range(64)]
    threads_n, per_thread = 4, 16
    barrier = threading.Barrier(threads_n)

    def work(k: int) -> None:
        barrier.wait()
        for i in range(k, threads_n * per_thread, threads_n):
            ds.mark_dynamic_args(target, f"p{i}")
            ds.dynamic_attrs(f"a{i}")(classes[i])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = threads_n * per_thread
    assert set(_marks.function_marks(target.__code__) or {}) == {f"p{i}" for i in range(total)}
    assert all(
        _marks.class_marks_of(classes[i]) == {f"a{i}": ds.DynamicSpec()} for i in range(total)
    )


def test_reset_imports_nothing() -> None:
    code = (
        "import sys, dynscalar\n"
        "from dynscalar._caches import reset_caches\n"
        "before = set(sys.modules)\n"
        "reset_caches()\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stderr
