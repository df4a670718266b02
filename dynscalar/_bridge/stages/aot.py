"""AOT: the backend's compile of a graph holding marked values (the float phase, restarts,
AOTAutograd's cache), under the safety net.

Marked floats as SymFloat graph inputs, and the AOT passes that keep them exact.

Examples:
    >>> from dynscalar._bridge.stages import aot
    >>> aot.backend_compile_hook.__name__
    'backend_compile_hook'
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import operator
import pathlib
from collections.abc import Iterator
from typing import Any

from ... import _caches
from ..._diagnostics import (
    DynamicFloatSpecializedError,
    SpecializationWarning,
    warn_once,
)
from ..._proxy import DynamicFloat, DynamicScalar
from ..._spec import DynamicSpec
from ...ops import admission, forms
from .. import _safety, _torch
from .._backends import backend_kind
from .._floats import (
    ForcedFloats,
    forget_restarts,
    guard_int64,
    ints_in_floats,
    restart_frame,
    specialize_ints_and_restart,
    unbacked_in_floats,
    used_float_symbols,
)
from .._guards import guard_proxy_or_plain, plain_source, source_name, swapped_source
from .._ops import learn_forcing
from .._paths import is_library_file
from .._reports import (
    Label,
    at_line,
    passthrough,
    record_specialized,
    refuse,
    remember,
    user_location,
)
from .._state import CompileState, Origin, compile_state, peek_state
from .._torchs_own import torchs_own
from .._turned_off import on_abandon

log = logging.getLogger("dynscalar")

__all__ = [
    "backend_compile_hook",
    "backend_compile_off",
    "cache_key_hook",
    "cache_save_hook",
    "check_cacheable_hook",
    "compile_hook",
    "tensorify_hook",
    "wrap_float",
]

#: what torch's tensorify pass forced of the bridge's floats, remembered as stock remembers
_forced_floats = ForcedFloats()
_caches.register(_forced_floats.forget)
on_abandon(_forced_floats.abandon)


def _memory_key(builder: Any, source: Any) -> str:
    """A marked float's identity across compiles: the compiled frame's code and its source."""
    code = builder.tx.output.root_tx.f_code
    name = source_name(source)
    return f"dynscalar-forced:{code.co_filename}:{code.co_firstlineno}:{code.co_name}:{name}"


def wrap_float(builder: Any, value: Any, spec: DynamicSpec, where: str, label: Label) -> Any:
    """A marked float as a backed SymFloat (unbacked specs never get here: check_float)."""
    import torch

    proxied = isinstance(value, DynamicScalar)
    plain = float(value.__wrapped__) if proxied else float(value)
    position = source = builder.source
    if proxied:
        # Next call must hold a plain float or a DynamicFloat with this spec; the plain float
        # is read as `<source>.real`: a plain AttrSource, so guards (GetAttrGuardAccessor) and
        # the graph-arg fetch `torch._as_tensor_fullprec(L['v'].real)` both work, for the
        # proxy and for a plain float found there later.
        guard_proxy_or_plain(source, type(value), value._self_spec)
        source = plain_source(source)
        compile_state(builder.tx.output.shape_env).marks.read_through.add(source)
    # VariableBuilder.wrap_symfloat returns a constant unless both are off; the patch is
    # scoped to this one call and restored on exit.
    config = _torch.dynamo_config.patch(specialize_float=False, assume_static_by_default=False)
    with swapped_source(builder, source), config:
        var = builder.wrap_symfloat(plain)
    sym = getattr(var, "sym_num", None)  # ConstantVariable for NaN/inf: no symbol
    if isinstance(sym, torch.SymFloat):
        shape_env = builder.tx.output.shape_env
        state = compile_state(shape_env)
        if state.ops.backend is None:
            state.ops.backend = backend_kind(builder.tx)
        read_at = user_location()
        for s in sym.node.expr.free_symbols:
            state.marks.floats[s] = where
            state.marks.read_at[s] = read_at
            remember(
                shape_env,
                s,
                where,
                spec,
                label,
                source_name(position),
                builder.tx.output.root_tx.f_code,
            )
            _forced_floats.on_wrap(s, _memory_key(builder, source))
        state.writeback.origins[var.as_proxy().node] = (
            Origin(where, value.spec, DynamicFloat, position)
            if proxied
            else Origin(where, spec, None)
        )
    elif not math.isfinite(plain):
        # torch compiles a NaN or infinite float as a constant (exact); the compile still
        # holds a mark, so int()/round() of it raise Python's error (_python)
        compile_state(builder.tx.output.shape_env)
    else:
        log.info("%s (value %r) kept constant by torch", label, plain)
        # wrap_symfloat still returns a constant under inductor cudagraphs, its killswitch,
        # constant sources or functorch grad tracking: exact, but one compile per value.
        warn_once(
            ("constant-float", where),
            f"dynscalar: torch specialized the dynamic float {label} to {plain!r} (it does so "
            "under inductor CUDA graphs, mode='reduce-overhead', and inside torch.func "
            "transforms); results are exact but each new value recompiles.",
            SpecializationWarning,
        )
    log.debug("%s -> %s (value %r)", label, type(var).__name__, plain)
    return var


def _scalar_tensor_prepass(gm: Any, ours: dict[Any, str], fake_mode: Any) -> int:
    """``scalar_tensor(f(s))`` -> ``mul.Tensor(scalar_tensor(1.0), f(s))`` for our float symbols.

    Dynamo returns a float computed in the graph (``self.scale = self.scale * 0.9``) as
    ``torch.scalar_tensor(sym, dtype=float64)`` + ``.item()`` in bytecode (``PyCodegen.__call__``
    on a float ``SymNodeVariable``).  The tensorify pass has no rule for ``scalar_tensor``, so
    the final sweep of ``tensorify_python_scalars`` burns the value in with ``guard_scalar``.
    ``mul.Tensor`` with a SymFloat operand is lowered by the pass, and ``x * 1.0 == x``
    exactly (NaN, inf, -0.0).  Returns the number of rewrites.
    """
    import torch

    aten = torch.ops.aten
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.scalar_tensor.default:
            continue
        arg = node.args[0] if node.args else None
        sym = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        out = node.meta.get("val")
        if not isinstance(sym, torch.SymFloat) or out is None:
            continue
        free = sym.node.expr.free_symbols
        if not free or not all(_torch.symbol_is_type(s, _torch.SymT.FLOAT) for s in free):
            continue
        if not any(s in ours for s in free) or out.dtype not in (torch.float32, torch.float64):
            continue
        with graph.inserting_before(node):
            prod = _float_as_tensor(graph, fake_mode, arg, dict(node.kwargs))
        node.replace_all_uses_with(prod)
        graph.erase_node(node)
        count += 1
    return count


def _float_as_tensor(graph: Any, fake_mode: Any, value: Any, kwargs: dict[str, Any]) -> Any:
    """``mul.Tensor(scalar_tensor(1.0, **kwargs), value)``: the SymFloat node ``value`` as a
    0-d tensor the float-tensorify pass lowers (``x * 1.0 == x`` exactly: NaN, inf, -0.0),
    inserted where ``graph`` inserts now."""
    import torch

    aten = torch.ops.aten
    one = graph.call_function(aten.scalar_tensor.default, (1.0,), kwargs)
    product = graph.call_function(aten.mul.Tensor, (one, value))
    with fake_mode:
        one.meta["val"] = aten.scalar_tensor.default(1.0, **kwargs)
        product.meta["val"] = aten.scalar_tensor.default(1.0, **kwargs)
    return product


class _GraphOps:
    """``torch.ops`` for a form (``dynscalar.ops._forms``): each call adds a node to the
    graph where it inserts now, its ``val`` computed on fake tensors; an op returning a list
    gives a list of ``getitem`` nodes, as AOTAutograd's graphs hold them."""

    def __init__(self, graph: Any, fake_mode: Any, path: tuple[str, ...] = ()) -> None:
        self._graph, self._fake_mode, self._path = graph, fake_mode, path

    def __getattr__(self, name: str) -> Any:
        return _GraphOps(self._graph, self._fake_mode, (*self._path, name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        target: Any = torch.ops
        for part in self._path:
            target = getattr(target, part)

        def val(a: Any) -> Any:
            return a.meta["val"]

        node = self._graph.call_function(target, args, kwargs)
        with self._fake_mode:
            out = target(*torch.fx.node.map_arg(args, val), **torch.fx.node.map_arg(kwargs, val))
        node.meta["val"] = out
        if not isinstance(out, (list, tuple)):
            return node
        items = []
        for i, item in enumerate(out):
            getitem = self._graph.call_function(operator.getitem, (node, i))
            getitem.meta["val"] = item
            items.append(getitem)
        return items


def _marked_argument(value: Any, ours: dict[Any, str]) -> bool:
    """An FX node computing a SymFloat from the bridge's floats only."""
    import torch

    sym = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    if not isinstance(sym, torch.SymFloat):
        return False
    free = sym.node.expr.free_symbols
    floats = [s for s in free if _torch.symbol_is_type(s, _torch.SymT.FLOAT)]
    return bool(floats) and all(s in ours for s in floats)


def _first_tensor(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        return next((t for t in map(_first_tensor, value) if t is not None), None)
    return None


def _is_joint(gm: Any) -> bool:
    """A joint forward-backward graph (AOTAutograd's, when something requires grad)."""
    return any(n.op == "placeholder" and n.name.startswith("tangents") for n in gm.graph.nodes)


def _special_value(
    node: Any, form: Any, where: dict[str, Any], moved: list[str], state: CompileState
) -> bool:
    """Where a moved float equals a value at which the op takes another path (``pow(x,
    2.0)``), give the op that value itself, as stock does: True when it did.  Asking is a
    predicate guard (``Ne(e, 2.0)``, or ``Eq(e, 2.0)`` for that one path), never a value
    guard for the other values; the path's pin is no specialization to report."""
    if len(moved) != 1 or not form.special_values(moved[0]):
        return False
    kind, at = where[moved[0]]
    value = node.args[at] if kind == "args" else node.kwargs[at]
    sym = value.meta["val"]
    for special in form.special_values(moved[0]):
        if sym == special:  # a guard on the predicate
            if kind == "args":
                node.update_arg(at, special)
            else:
                node.update_kwarg(at, special)
            state.marks.paths.update(
                s for s in sym.node.expr.free_symbols if s in state.marks.floats
            )
            return True
    return False


def _scalar_forms_prepass(
    gm: Any, ours: dict[Any, str], fake_mode: Any, refused: dict[str, str]
) -> int:
    """Rewrite each op that takes one of the bridge's floats as a ``Scalar`` the pass cannot
    lower into its form (``dynscalar.ops._forms``: the same computation with the float a
    0-d tensor operand), where the inductor column admits the form for the op's dtype and
    gradient mode.  The 0-d tensor is ``mul.Tensor(scalar_tensor(1.0, dtype=C), f)``, ``C``
    the op's computation dtype: the pass lowers it to the float in ``C`` (the value ATen's
    kernels compute with); a plain number the form also takes as a tensor is
    ``scalar_tensor(v, dtype=C)``.  Other such ops are left to the pass, which specializes
    the float as it does for stock torch.  Returns the number of rewrites."""
    import torch

    state = peek_state(fake_mode.shape_env)
    assert state is not None  # `ours` came from it
    graph = gm.graph
    grad = _is_joint(gm)
    ops = _GraphOps(graph, fake_mode)
    count = 0
    for node in list(graph.nodes):
        form = forms.form_for(node.target) if node.op == "call_function" else None
        if form is None:
            continue
        where = forms.slots(node.target, node.args, node.kwargs)
        values = {n: node.args[i] if k == "args" else node.kwargs[i] for n, (k, i) in where.items()}
        moved = [n for n in form.arguments if _marked_argument(values.get(n), ours)]
        out = _first_tensor(node.meta.get("val"))
        if not moved or out is None or not out.dtype.is_floating_point:
            continue
        admitted, why = admission.form_admitted(form, out.dtype, grad, out.device.type)
        if not admitted:
            dtype = str(out.dtype).removeprefix("torch.")
            mode = "with gradients" if grad else "without gradients"
            refused[str(node.target)] = (
                f"its inductor form is not admitted for {dtype} {mode}: {why}"
            )
            continue
        users = list(node.users)
        if isinstance(node.meta["val"], (list, tuple)) and not all(
            u.target is operator.getitem for u in users
        ):
            continue
        compute = forms.computation_dtype(out.dtype)

        def as_tensor(value: Any, dtype: Any = compute, device: Any = out.device) -> Any:
            if not isinstance(value, torch.fx.Node):  # a plain number beside the float
                return ops.aten.scalar_tensor.default(value, dtype=dtype, device=device)
            return _float_as_tensor(graph, fake_mode, value, {"dtype": dtype, "device": device})

        def is_scalar(value: Any) -> bool:
            if isinstance(value, torch.fx.Node):
                return isinstance(value.meta.get("val"), (torch.SymFloat, torch.SymInt))
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        if _special_value(node, form, where, moved, state):
            count += 1
            continue
        with graph.inserting_before(node):
            args, kwargs = forms.with_tensors(
                form, node.target, node.args, node.kwargs, as_tensor, is_scalar
            )
            result = form.apply(ops, *args, **kwargs)
        if isinstance(result, list):
            for user in users:
                user.replace_all_uses_with(result[user.args[1]])
                graph.erase_node(user)
        else:
            node.replace_all_uses_with(result)
        graph.erase_node(node)
        count += 1
    return count


def _dynscalar_item(tensor: Any) -> Any:
    """``.item()`` of a marked float's input tensor, while the pass must not see it as one."""
    import torch

    return torch.ops.aten._local_scalar_dense.default(tensor)


@contextlib.contextmanager
def _kept_from_pass(gm: Any, state: CompileState) -> Iterator[None]:
    """Run torch's float-tensorify pass on ``gm`` for stock torch's floats only.

    The pass reads a float as symbolic from its node's ``val`` (a SymFloat) and from the
    ``.item()`` node that makes it; it specializes every float symbol it did not turn into
    a tensor.  So, for the duration of the pass, the nodes computing the bridge's floats
    carry their trace-time value instead of the SymFloat, the ``.item()`` of a marked float
    is a call the pass does not recognize, and the bridge's symbols are among the names the
    pass treats as already specialized.  Everything is put back afterwards, whatever the
    pass does (a restart included): at run time those nodes compute the Python floats.
    """
    import torch

    ours = set(state.marks.floats) | set(state.marks.backed) | set(state.marks.unbacked)
    local_scalar = torch.ops.aten._local_scalar_dense.default
    hidden: list[tuple[Any, Any, Any]] = []
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if not isinstance(val, torch.SymFloat) or not (val.node.expr.free_symbols & ours):
            continue
        hint = val.node.hint
        if hint is None:  # nothing to stand in for it: the pass sees it as usual
            continue
        hidden.append((node, val, node.target))
        node.meta["val"] = float(hint)
        if node.target is local_scalar:
            node.target = _dynscalar_item
    names = _torch.TensorifyState.force_specializations
    added = {str(s) for s in state.marks.floats} - names
    names.update(added)
    try:
        yield
    finally:
        names.difference_update(added)
        for node, val, target in hidden:
            node.meta["val"] = val
            node.target = target


@contextlib.contextmanager
def _unused_kept(
    ours: dict[Any, str], used: set[Any], paths: Any, computed: set[Any]
) -> Iterator[None]:
    """A marked float the graph never computes with (``Dropout.p`` in eval mode: only its
    path guards read it, or a path pinned it, ``p == 0``) stays a graph input through
    torch's float-tensorify pass.  The pass specializes every float symbol it did not turn
    into a tensor, and restarts the trace to drop such an input: a second backend compile
    where stock, which never made the constant an input, compiles once.  For the pass's
    duration those symbols are among the names it treats as already specialized (it
    erases their unused ``.item()``); the graph keeps the input, and Dynamo's guards read
    the value as before."""
    names = _torch.TensorifyState.force_specializations
    unused = {s for s in ours if s not in used or (s in paths and s not in computed)}
    added = {str(s) for s in unused} - names
    names.update(added)
    try:
        yield
    finally:
        names.difference_update(added)


def _only_ours(gm: Any, ours: dict[Any, str]) -> bool:
    """True when every float symbol of the graph's inputs is one the bridge made (no
    float of stock torch's own, which the pass must see as stock torch does)."""
    import torch

    local_scalar = torch.ops.aten._local_scalar_dense.default
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not local_scalar:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.SymFloat):
            continue
        for s in val.node.expr.free_symbols:
            if _torch.symbol_is_type(s, _torch.SymT.FLOAT) and s not in ours:
                return False
    return True


def _unsupported_uses(
    gm: Any, ours: dict[Any, str], refused: dict[str, str], symbols: set[Any]
) -> list[str]:
    """Ops that take a SymFloat over our symbols where the pass cannot lower it (a keyword,
    a list, an op it has no rule for): error text only, each with why its scalar form was
    not used (``refused``) where it has one; the symbols they take are added to
    ``symbols``."""
    import torch

    found = set()
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        val = node.meta.get("val")
        if not hasattr(val, "dtype") and not isinstance(val, (list, tuple)):
            continue  # arithmetic on the symbols themselves, not an op's use
        table = _torch.SUPPORTED_OPS if node.op == "call_function" else _torch.SUPPORTED_METHOD_OPS
        lowered = node.target in table
        uses = [(a, True) for a in node.args] + [(a, False) for a in node.kwargs.values()]
        for value, positional in uses:
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                v = item.meta.get("val") if isinstance(item, torch.fx.Node) else None
                if not isinstance(v, torch.SymFloat):
                    continue
                if lowered and positional and item is value:
                    continue
                if any(s in ours for s in v.node.expr.free_symbols):
                    symbols.update(s for s in v.node.expr.free_symbols if s in ours)
                    name = str(node.target)
                    why = refused.get(name)
                    found.add(f"{name} ({why})" if why else name)
    return sorted(found)


def tensorify_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    gm, shape_env, fake_mode = kwargs["gm"], kwargs["shape_env"], kwargs["fake_mode"]
    state = peek_state(shape_env)
    if state is not None:
        guard_int64(gm, shape_env, state)  # may restart with an overflowing int specialized
    ours = state.marks.floats if state is not None else None

    if state is not None and state.ops.backend == "python":
        # The graph runs as Python code: every op receives a marked value (and every float
        # computed from one) as the Python number it is at run time, exactly as eager code
        # hands it over.  Nothing of the bridge's is turned into a tensor or specialized;
        # a float of stock torch's own in the same graph takes the pass as usual.
        try:
            if not _only_ours(gm, state.marks.floats):
                with _kept_from_pass(gm, state):
                    wrapped(*args, **kwargs)
        finally:
            _forced_floats.on_success(state.marks.floats)
            forget_restarts()
        return None
    if not ours:
        try:
            result = wrapped(*args, **kwargs)
        except _torch.TensorifyScalarRestartAnalysis:
            raise
        except Exception as exc:
            # e.g. `(step + 0.5) % 1.0` of a marked int: the pass cannot lower the float `%`
            # either; compile the ints such floats come from as constants (_floats)
            involved = ints_in_floats(gm, state) if state is not None else set()
            unbacked = unbacked_in_floats(gm, state) if state is not None else []
            if state is not None and unbacked and not involved:
                # an unbacked int has no value to specialize on: a clear error, not torch's
                raise passthrough(
                    DynamicFloatSpecializedError(
                        f"dynscalar: unbacked {', '.join(unbacked)} is turned into a float "
                        "used by an operation torch's float-tensorify pass cannot compile "
                        f"symbolically ({type(exc).__name__}: {exc}); an unbacked value "
                        "cannot be specialized instead. Mark it backed (the default), or "
                        "convert with float() outside the compiled code."
                    )
                ) from exc
            if state is None or not involved:
                raise
            specialize_ints_and_restart(
                shape_env,
                state,
                involved,
                "is turned into a float used by an operation torch's float-tensorify pass "
                f"cannot compile symbolically ({type(exc).__name__}: {exc})",
            )
        forget_restarts()
        return result

    assert state is not None  # `ours` came from it
    refused: dict[str, str] = {}
    if _scalar_tensor_prepass(gm, ours, fake_mode) + _scalar_forms_prepass(
        gm, ours, fake_mode, refused
    ):
        gm.graph.lint()
        gm.recompile()
    forced: set[Any] = set()
    ops = _unsupported_uses(gm, ours, refused, forced)
    forced |= _not_paths(state, _value_guarded(shape_env, ours, alone=False))
    if forced and learn_forcing(state, forced):
        # a torch call traced as Dynamo traces it forced the value (its autograd formula,
        # an argument the pass cannot lower): trace the frame again with those calls
        # boxed (eager's kernel in a custom op taking the float as a 0-d tensor)
        log.info("marked floats forced on inductor; tracing the frame again with calls boxed")
        restart_frame()
    used = used_float_symbols(gm, shape_env)
    n_guards = len(shape_env.guards)

    try:
        with _unused_kept(ours, used, state.marks.paths, used_float_symbols(gm, shape_env, False)):
            result = wrapped(*args, **kwargs)
    except _torch.TensorifyScalarRestartAnalysis:
        # Not a specialization by itself: torch also restarts to drop a float input the graph
        # never uses (FreeU-style `if self.a and self.b:`).  The compile after the restart
        # tells, by its guards (reported below, or before its backend compiles when the
        # restarted trace never reaches this pass: ``compile_hook``).  What it forced
        # while the graph used it is remembered for later compiles, as torch remembers its
        # own floats (_floats).
        _forced_floats.on_restart(ours, used - state.marks.paths, ops, state.marks.paths)
        raise
    except Exception as exc:
        # e.g. a float `%` (TensorReferenceAnalysis has no python_mod in torch 2.13): do what
        # the pass does for a float it cannot lower - specialize it and restart the analysis.
        # Exact results, one compile per value; the next compile reports the value guard.
        log.info(
            "float-tensorify failed (%s: %s); specializing %s",
            type(exc).__name__,
            exc,
            sorted(set(ours.values())),
        )
        for symbol in ours:
            _torch.TensorifyState.specialize(str(symbol))
        _forced_floats.on_restart(ours, set(ours), ops)
        raise _torch.TensorifyScalarRestartAnalysis from exc
    baked = {s for g in shape_env.guards[n_guards:] for s in g.expr.free_symbols if s in ours}
    if baked:
        # torch 2.13/2.14 guard such a value inside the pass and keep the compiled code
        # (pytorch#194976: inductor bakes the value in).  Do what torch >= 2.15 does and
        # what stock torch does for a float it sees change: specialize and restart the
        # analysis, so the value is a constant Dynamo guards.  strict=True refuses.
        _refuse_if_strict(state, baked, ops)
        for symbol in baked:
            _torch.TensorifyState.specialize(str(symbol))
        _forced_floats.on_restart(baked, set(baked), ops)
        raise _torch.TensorifyScalarRestartAnalysis
    # Reported while the compile's restarts are known (a path's pin they dropped is none);
    # then they are over: the names torch keeps for them are ours to manage (_floats),
    # torch's own are left as they are.
    _report_value_guards(shape_env, state, ops)
    _forced_floats.on_success(ours)
    forget_restarts()
    return result


def _refuse_if_strict(state: Any, baked: set[Any], ops: list[str]) -> None:
    """A ``strict=True`` mark torch would bake in: :class:`DynamicFloatSpecializedError`."""
    strict = sorted(
        state.marks.floats[s]
        for s in baked
        if (spec := state.marks.backed.get(s, ("", None))[1]) and spec.strict
    )
    if strict:
        raise DynamicFloatSpecializedError(
            f"dynscalar: dynamic float {', '.join(strict)} is used by "
            f"{', '.join(ops) or 'an operation'}, which torch.compile cannot keep symbolic "
            "together with its other uses; it would be compiled as a constant (one compile per "
            "value) and the mark says strict=True. Pass the value as a 0-d tensor for that op "
            "(e.g. x.clamp(max=torch.tensor(scale))), or drop strict=True."
        )


def _value_guarded(shape_env: Any, floats: Any, alone: bool) -> set[Any]:
    """The symbols of ``floats`` that a guard of ``shape_env`` compares with a number
    (``Eq(s, 0.5)``); ``alone``: only where the symbol is one side of the comparison (not
    ``Eq(trunc(8 * (1 - s)), 1)``, a size computed from it)."""
    import sympy

    found: set[Any] = set()
    for guard in shape_env.guards:
        expr = guard.expr
        if isinstance(expr, sympy.Eq) and any(side.is_number for side in expr.args):
            symbols = expr.args if alone else expr.free_symbols
            found.update(s for s in symbols if s in floats)
    return found


def _not_paths(state: CompileState, symbols: set[Any]) -> set[Any]:
    """``symbols`` without those a path pinned (``p == 0``, a form's special value): in
    this attempt (``state.marks.paths``), or in the one a restart dropped them from."""
    return {s for s in symbols if s not in state.marks.paths and not _forced_floats.is_path(s)}


def _report_value_guards(shape_env: Any, state: CompileState, ops: list[str]) -> None:
    """Warn for our floats that end up guarded by value (``Eq(s, 0.5)``) by torch itself.

    User code that forces a value is reported where it happens (``_reports``); what is left
    are torch's own specializations, e.g. after the tensorify pass restarted analysis with
    the value specialized (torch >= 2.15 does that where 2.13/2.14 baked the value in).
    """
    specialized = _not_paths(state, _value_guarded(shape_env, state.marks.floats, alone=False))
    for s in sorted(specialized - state.marks.reported, key=str):
        _warn_specialized(state, s, ops)


def compile_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``OutputGraph.call_user_compiler(gm, example_inputs)``: before the backend
    runs, warn for marked floats torch already guards by value (a float its float-tensorify
    pass could not lower in an earlier try, which the restarted trace specializes before the
    graph reaches the pass, so :func:`tensorify_hook` never sees it)."""

    shape_env = getattr(instance, "shape_env", None)
    state = peek_state(shape_env)
    if state is not None and state.marks.floats:
        # the first graph of the frame: the guards so far are Dynamo's
        if state.aot.traced_guards is None and shape_env is not None:
            state.aot.traced_guards = len(shape_env.guards)
        guarded = _not_paths(state, _value_guarded(shape_env, state.marks.floats, alone=True))
        for symbol in sorted(guarded, key=str):
            if (
                _torch.TensorifyState.should_specialize(str(symbol))
                and symbol not in state.marks.reported
            ):
                _warn_specialized(state, symbol, [])
    return wrapped(*args, **kwargs)


def cache_save_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``AOTAutogradCache.save(key, entry, remote)``: no entry for a compile whose
    AOT trace guarded one of the bridge's floats.  An entry's guard expression covers its
    SymInt inputs only (``generate_guards_expression`` prunes the guards to them), and a hit
    skips the AOT trace that adds such guards to Dynamo's, so a guard on a float made while
    AOTAutograd traced would be lost and the entry loaded for every value: a value guard
    (nn.CELU's ``alpha`` when its backward compiles) with the value baked in, or a
    predicate (inductor decomposes ``lerp(weight)`` into the formula of one side of
    ``weight >= 0.5``) with that side's formula.  A guard Dynamo's trace made (dropout's
    ``p == 0`` path, a user's ``if p > 0``) is made again by the warm process's trace,
    before the cache is read, so a compile whose float guards all come from it keeps its
    entry, as does one whose floats are unguarded."""

    context = _torch.TracingContext.try_get()
    shape_env = getattr(getattr(context, "fake_mode", None), "shape_env", None)
    state = peek_state(shape_env)
    if state is not None and _float_guarded(shape_env, state.marks.floats, state.aot.traced_guards):
        log.info(
            "AOTAutograd cache entry not saved: a guard made by AOTAutograd reads a marked float"
        )
        return None
    return wrapped(*args, **kwargs)


def _float_guarded(shape_env: Any, floats: Any, traced: int | None) -> bool:
    """Some guard of ``shape_env`` after its first ``traced`` (all when unknown) reads one of
    ``floats`` (a value or a predicate)."""
    guards = shape_env.guards[traced or 0 :]
    return any(s in floats for guard in guards for s in guard.expr.free_symbols)


def _warn_specialized(state: CompileState, s: Any, ops: list[str]) -> None:
    """One ``SpecializationWarning`` (``strict=True``: the error) for the marked float
    ``s`` that torch specializes after its float-tensorify pass, naming the op inside
    torch that forced it and a fix for code as it is written; filed for the doctor."""
    state.marks.reported.add(s)
    label = state.marks.label(s)
    filename, lineno, line = state.marks.read_at.get(s, ("<unknown>", 0, ""))
    at = f" (read at {at_line(filename, lineno, line)})" if lineno else ""
    log.info("%s specialized by torch after the float-tensorify pass", label)
    forced_by = ops or _forced_floats.ops(s)  # after a restart: what the first try saw
    used = (
        f"reaches {', '.join(forced_by)}, which inductor cannot take symbolically"
        if forced_by
        else "is used where torch.compile needs a constant (a size, such as topk's k, or "
        "an op that takes a Python float and has no dynscalar form)"
    )
    advice = _advice(label, filename)
    message = (
        f"dynscalar: {label}{at} {used}; this compile guards on its value, as stock torch "
        f"does (exact results, a graph per value). {advice}"
    )
    record_specialized(state, [s], f"{used}. {advice}")
    spec = state.marks.backed.get(s, ("", None))[1]
    refuse(
        message,
        spec is not None and spec.strict,
        once=("tensorify", label, filename, lineno, *forced_by),
        location=(filename, lineno) if lineno else None,
    )


def _advice(label: str, filename: str) -> str:
    """A fix for a float inductor specializes, for code as the user wrote it."""
    if "param_groups" in label:
        return (
            "backend='aot_eager' keeps it dynamic for every op; on inductor, create the "
            "optimizer with a tensor hyperparameter where it takes one (lr=torch.tensor(...))."
        )
    if is_library_file(filename):
        return "backend='aot_eager' keeps it dynamic for every op."
    return (
        "Pass that op a 0-d tensor on that line (torch.tensor(value) keeps it dynamic), or "
        "compile with backend='aot_eager', which keeps it dynamic for every op."
    )


# The AOTAutograd cache and graphs with a dynscalar float input.  The AOTAutograd cache key
# is computed on the Dynamo graph with placeholder names normalized
# (autograd_cache.py, sanitize_gm_for_cache / normalize_placeholder_names), so a marked
# float's graph has the same key as stock torch's automatic-dynamic graph for the same
# unmarked float.  Stock torch can store an entry with the value baked in there
# (pytorch#194976), and a hit would skip the tensorify pass and tensorify_hook.
#
# So such graphs get a key of their own: torch's key plus a component that only the bridge
# adds (a hash of the bridge's files, which hold the passes run on them and the guards
# they add, e.g. _floats' int64 guards, of the op rules and scalar forms with their
# admitted inductor cells, which decide what the graph computes, and of dynscalar's
# version).  A stock graph never
# computes that key, so it never reads an entry the bridge stored, and the bridge never
# reads one stock torch stored; an entry under the bridge's key
# was written by a compile that went through tensorify_hook (a compile that would bake a
# value raises there and stores nothing).  Inductor's FX graph cache is keyed after the
# pass and needs nothing.  Where torch's key function is not the one this was written for
# (the table's optional ``autograd_cache_key`` entry), such graphs bypass the AOTAutograd
# cache instead (``check_cacheable_hook``; the safe fallback: a cold AOT compile).


@functools.cache
def _cache_key_component() -> str:
    from ... import __version__

    digest = hashlib.sha256(__version__.encode())
    package = pathlib.Path(__file__).parents[2]
    # the bridge, and the op rules and forms with their admitted cells: what decides
    # the graph an entry holds
    files = [*package.glob("_bridge/**/*.py"), *package.glob("ops/*.py")]
    for path in sorted([*files, package / "ops" / "admitted.json"]):
        if path.exists():
            digest.update(path.read_bytes())
    return f"-dynscalar-floats-{digest.hexdigest()[:20]}"


def _has_dynamic_float_input(gm: Any) -> bool:
    """A placeholder whose fake tensor's .item() is one of the bridge's float symbols."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            break
        ev = node.meta.get("example_value")
        memo = getattr(ev, "item_memo", None)
        if memo is None:
            continue
        state = peek_state(ev.fake_mode.shape_env)
        if state is not None and any(s in state.marks.floats for s in memo.node.expr.free_symbols):
            return True
    return False


def cache_key_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``autograd_cache_key(mod, ...)``: a key of the bridge's own for its graphs."""
    mod = kwargs["mod"]
    ours = _has_dynamic_float_input(getattr(mod, "gm", mod))  # a GmWrapper holds .gm
    try:
        key, debug_lines = wrapped(*args, **kwargs)
    except _torch.BypassAOTAutogradCache as error:
        raise torchs_own(error) from None  # torch's own verdict on the graph (stock's too)
    if not ours:
        return key, debug_lines
    component = _cache_key_component()
    return key + component, [
        *debug_lines,
        f"[dynscalar] graph with a dynamic float input: key component {component}",
    ]


def check_cacheable_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    try:
        wrapped(*args, **kwargs)
    except _torch.BypassAOTAutogradCache as error:
        raise torchs_own(error) from None  # torch's own verdict on the graph (stock's too)
    gm = kwargs["gm"]
    if _has_dynamic_float_input(gm):
        # a deliberate verdict, not a failure: the net lets it through (on torch 2.15 the
        # check sees the float input before the float-tensorify pass turned it into a tensor)
        raise torchs_own(
            _torch.BypassAOTAutogradCache("dynscalar: graph has a dynamic float input")
        )


Args = tuple[Any, ...]
Kwargs = dict[str, Any]
_CALL = ("gm", "example_inputs")  # OutputGraph.call_user_compiler's parameters


def backend_compile_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``OutputGraph.call_user_compiler(gm, example_inputs)``, two concerns in this order:

    1. the safety net (``_safety``): a backend failing on a graph with marked values has
       the frame traced again as stock, a comparison algebra would decide otherwise than
       Python turns the compile off;
    2. the float phase (:func:`compile_hook`): marked floats torch already guards by value are
       warned; then the backend compiles.
    """

    def floats(*a: Any, **k: Any) -> Any:
        named = {**dict(zip(_CALL, a, strict=False)), **k} if a else k
        return compile_hook(wrapped, instance, (), named)

    return _safety.backend_compile_hook(floats, instance, args, kwargs)


def backend_compile_off(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``OutputGraph.call_user_compiler`` in a frame the net turned off (``_safety``)."""
    return _safety.backend_compile_off(wrapped, instance, args, kwargs)
