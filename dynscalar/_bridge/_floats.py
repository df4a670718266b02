"""Marked floats as SymFloat graph inputs, and the AOT passes that keep them exact."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import pathlib
from collections.abc import Iterator
from typing import Any

from .. import _caches
from .._diagnostics import (
    DynamicFloatSpecializedError,
    SpecializationWarning,
    warn_once,
)
from .._proxy import DynamicFloat, DynamicScalar
from .._spec import DynamicSpec
from . import _torch
from ._backends import backend_kind
from ._forced import ForcedFloats, used_float_symbols
from ._guards import guard_proxy_or_plain
from ._reports import at_line, passthrough, refuse, remember, user_location
from ._restarts import (
    forget_restarts,
    guard_int64,
    ints_in_floats,
    specialize_ints_and_restart,
    unbacked_in_floats,
)
from ._safety import on_abandon
from ._sources import plain_source, source_name, swapped_source
from ._state import CompileState, Origin, compile_state, peek_state

log = logging.getLogger("dynscalar")

__all__ = [
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


def wrap_float(builder: Any, value: Any, spec: DynamicSpec, where: str, label: str) -> Any:
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
        compile_state(builder.tx.output.shape_env).read_through.add(source)
    # VariableBuilder.wrap_symfloat returns a constant unless both are off; the patch is
    # scoped to this one call and restored on exit.
    config = _torch.dynamo_config.patch(specialize_float=False, assume_static_by_default=False)
    with swapped_source(builder, source), config:
        var = builder.wrap_symfloat(plain)
    sym = getattr(var, "sym_num", None)  # ConstantVariable for NaN/inf: no symbol
    if isinstance(sym, torch.SymFloat):
        shape_env = builder.tx.output.shape_env
        state = compile_state(shape_env)
        if state.backend is None:
            state.backend = backend_kind(builder.tx)
        read_at = user_location()
        for s in sym.node.expr.free_symbols:
            state.floats[s] = where
            state.read_at[s] = read_at
            remember(shape_env, s, where, spec, label)
            _forced_floats.on_wrap(s, _memory_key(builder, source))
        state.origins[var.as_proxy().node] = (
            Origin(where, value.spec, DynamicFloat, position)
            if proxied
            else Origin(where, spec, None)
        )
    elif not math.isfinite(plain):
        # torch compiles a NaN or infinite float as a constant (exact); the compile still
        # holds a mark, so int()/round() of it raise Python's error (_builtins)
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


def _scalar_tensor_prepass(gm: Any, shape_env: Any, fake_mode: Any) -> int:
    """``scalar_tensor(f(s))`` -> ``mul.Tensor(scalar_tensor(1.0), f(s))`` for our float symbols.

    Dynamo returns a float computed in the graph (``self.scale = self.scale * 0.9``) as
    ``torch.scalar_tensor(sym, dtype=float64)`` + ``.item()`` in bytecode (``PyCodegen.__call__``
    on a float ``SymNodeVariable``).  The tensorify pass has no rule for ``scalar_tensor``, so
    the final sweep of ``tensorify_python_scalars`` burns the value in with ``guard_scalar``.
    ``mul.Tensor`` with a SymFloat operand is lowered by the pass, and ``x * 1.0 == x``
    exactly (NaN, inf, -0.0).
    """
    import torch

    state = peek_state(shape_env)
    ours = state.floats if state is not None else None
    if not ours:
        return 0
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
    return _finished(gm, count)


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


def _finished(gm: Any, count: int) -> int:
    """Check and regenerate ``gm`` after ``count`` rewrites (none: untouched)."""
    if count:
        gm.graph.lint()
        gm.recompile()
    return count


def _tensor_twins_prepass(gm: Any, ours: dict[Any, str], fake_mode: Any) -> int:
    """Rewrite ops that take one of the bridge's floats as a ``Scalar`` to their twin that
    takes a 0-d tensor (``clamp`` -> ``clamp.Tensor``), where ``dynscalar.ops._pairs``
    admits the twin for the input's dtype: the float becomes ``mul.Tensor(scalar_tensor(1.0,
    dtype=D), f)``, which the pass lowers.  Other such ops are left to the pass, which
    specializes the float as it does for stock torch."""
    import torch

    from ..ops._pairs import admitted, overloads, pair_for

    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        pair = pair_for(node.target) if node.op == "call_function" else None
        if pair is None:
            continue
        schema = node.target._schema
        names = [a.name for a in schema.arguments]
        values = dict(zip(names, node.args, strict=False)) | dict(node.kwargs)
        moved = [
            n
            for n in pair.arguments
            if isinstance(values.get(n), torch.fx.Node)
            and isinstance(sym := values[n].meta.get("val"), torch.SymFloat)
            and any(s in ours for s in sym.node.expr.free_symbols)
        ]
        tensor = next(
            (
                v
                for v in values.values()
                if isinstance(v, torch.fx.Node) and isinstance(v.meta.get("val"), torch.Tensor)
            ),
            None,
        )
        if not moved or tensor is None:
            continue
        with _torch.unset_fake_temporarily():  # the matrix runs real kernels, not fake ones
            dtype = admitted(pair, tensor.meta["val"].dtype)
        if dtype is None:
            continue
        twin = overloads(pair)[1]
        with graph.inserting_before(node):
            new_values = dict(values)
            for name in moved:
                kwargs = {"dtype": dtype}
                new_values[name] = _float_as_tensor(graph, fake_mode, values[name], kwargs)
            twin_names = [a.name for a in twin._schema.arguments]
            replacement = graph.call_function(twin, tuple(new_values.get(n) for n in twin_names))
            replacement.meta.update(node.meta)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        count += 1
    return _finished(gm, count)


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

    ours = set(state.floats) | set(state.backed) | set(state.unbacked)
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
    added = {str(s) for s in state.floats} - names
    names.update(added)
    try:
        yield
    finally:
        names.difference_update(added)
        for node, val, target in hidden:
            node.meta["val"] = val
            node.target = target


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


def _unsupported_uses(gm: Any, ours: dict[Any, str]) -> list[str]:
    """Ops taking a SymFloat over our symbols that the pass cannot lower (error text only)."""
    import torch

    found = set()
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        table = _torch.SUPPORTED_OPS if node.op == "call_function" else _torch.SUPPORTED_METHOD_OPS
        if node.target in table or not hasattr(node.meta.get("val"), "dtype"):
            continue
        for a in (*node.args, *node.kwargs.values()):
            v = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
            if isinstance(v, torch.SymFloat) and any(s in ours for s in v.node.expr.free_symbols):
                found.add(str(node.target))
                break
    return sorted(found)


def tensorify_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    gm, shape_env, fake_mode = kwargs["gm"], kwargs["shape_env"], kwargs["fake_mode"]
    state = peek_state(shape_env)
    if state is not None:
        guard_int64(gm, shape_env, state)  # may restart with an overflowing int specialized
    ours = state.floats if state is not None else None

    if state is not None and state.backend == "python":
        # The graph runs as Python code: every op receives a marked value (and every float
        # computed from one) as the Python number it is at run time, exactly as eager code
        # hands it over.  Nothing of the bridge's is turned into a tensor or specialized;
        # a float of stock torch's own in the same graph takes the pass as usual.
        try:
            if not _only_ours(gm, state.floats):
                with _kept_from_pass(gm, state):
                    wrapped(*args, **kwargs)
        finally:
            _forced_floats.on_success(state.floats)
            forget_restarts()
        return None
    if not ours:
        try:
            result = wrapped(*args, **kwargs)
        except _torch.TensorifyScalarRestartAnalysis:
            raise
        except Exception as exc:
            # e.g. `(step + 0.5) % 1.0` of a marked int: the pass cannot lower the float `%`
            # either; compile the ints such floats come from as constants (_restarts)
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

    _scalar_tensor_prepass(gm, shape_env, fake_mode)
    _tensor_twins_prepass(gm, ours, fake_mode)
    ops = _unsupported_uses(gm, ours)
    used = used_float_symbols(gm, shape_env)
    n_guards = len(shape_env.guards)

    try:
        result = wrapped(*args, **kwargs)
    except _torch.TensorifyScalarRestartAnalysis:
        # Not a specialization by itself: torch also restarts to drop a float input the graph
        # never uses (FreeU-style `if self.a and self.b:`).  The compile after the restart
        # tells, by its guards (reported below, or before its backend compiles when the
        # restarted trace never reaches this pass: ``compile_hook``).  What it forced
        # while the graph used it is remembered for later compiles, as torch remembers its
        # own floats (_forced).
        _forced_floats.on_restart(ours, used, ops)
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
    # This compile's restarts are over: the names torch keeps for them are ours to manage
    # (_forced), torch's own are left as they are.
    _forced_floats.on_success(ours)
    forget_restarts()
    assert state is not None  # `ours` came from it
    _report_value_guards(shape_env, state, ops)
    return result


def _refuse_if_strict(state: Any, baked: set[Any], ops: list[str]) -> None:
    """A ``strict=True`` mark torch would bake in: :class:`DynamicFloatSpecializedError`."""
    strict = sorted(
        state.floats[s]
        for s in baked
        if (spec := state.backed.get(s, ("", None))[1]) and spec.strict
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


def _report_value_guards(shape_env: Any, state: CompileState, ops: list[str]) -> None:
    """Warn for our floats that end up guarded by value (``Eq(s, 0.5)``) by torch itself.

    User code that forces a value is reported where it happens (``_reports``); what is left
    are torch's own specializations, e.g. after the tensorify pass restarted analysis with
    the value specialized (torch >= 2.15 does that where 2.13/2.14 baked the value in).
    """
    specialized = _value_guarded(shape_env, state.floats, alone=False)
    for s in sorted(specialized - state.reported, key=str):
        _warn_specialized(state, s, ops)


def compile_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``OutputGraph.call_user_compiler(gm, example_inputs)``: before the backend
    runs, warn for marked floats torch already guards by value (a float its float-tensorify
    pass could not lower in an earlier try, which the restarted trace specializes before the
    graph reaches the pass, so :func:`tensorify_hook` never sees it)."""

    shape_env = getattr(instance, "shape_env", None)
    state = peek_state(shape_env)
    if state is not None and state.floats:
        for symbol in sorted(_value_guarded(shape_env, state.floats, alone=True), key=str):
            if (
                _torch.TensorifyState.should_specialize(str(symbol))
                and symbol not in state.reported
            ):
                _warn_specialized(state, symbol, [])
    return wrapped(*args, **kwargs)


def cache_save_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``AOTAutogradCache.save(key, entry, remote)``: no entry for a compile that
    guards one of the bridge's floats by value.  An entry's guard expression covers its
    SymInt inputs only (``generate_guards_expression`` prunes the guards to them), so a value
    guard on a float - added when the backward compiles, as nn.CELU's ``alpha`` on inductor -
    would be lost, and the entry, holding the value baked in, loaded for every value."""

    context = _torch.TracingContext.try_get()
    shape_env = getattr(getattr(context, "fake_mode", None), "shape_env", None)
    state = peek_state(shape_env)
    if state is not None and _value_guarded(shape_env, state.floats, alone=False):
        log.info("AOTAutograd cache entry not saved: a marked float is guarded by value")
        return None
    return wrapped(*args, **kwargs)


def _warn_specialized(state: CompileState, s: Any, ops: list[str]) -> None:
    """One ``SpecializationWarning`` (``strict=True``: the error) for the marked float
    ``s`` that torch specializes after its float-tensorify pass."""
    state.reported.add(s)
    label = state.labels.get(s, state.floats[s])
    filename, lineno, line = state.read_at.get(s, ("<unknown>", 0, ""))
    at = f" (read at {at_line(filename, lineno, line)})" if lineno else ""
    log.info("%s specialized by torch after the float-tensorify pass", label)
    forced_by = ops or _forced_floats.ops(s)  # after a restart: what the first try saw
    used = (
        f"is used by {', '.join(forced_by)}, which torch.compile cannot keep symbolic "
        "and dynscalar has no decomposition for"
        if forced_by
        else "is used where torch.compile needs a constant (a size, such as topk's k, or "
        "an op that takes a Python float and has no dynscalar decomposition)"
    )
    message = (
        f"dynscalar: {label}{at} {used}; torch specializes it (exact results, one compile "
        "per value). Unmark it if it rarely changes, or pass that op a 0-d tensor if the "
        "call is in your code."
    )
    spec = state.backed.get(s, ("", None))[1]
    refuse(
        message,
        spec is not None and spec.strict,
        once=("tensorify", label, filename, lineno, *forced_by),
        location=(filename, lineno) if lineno else None,
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
# they add, e.g. _restarts' int64 guards, and of dynscalar's version).  A stock graph never
# computes that key, so it never reads an entry the bridge stored, and the bridge never
# reads one stock torch stored; an entry under the bridge's key
# was written by a compile that went through tensorify_hook (a compile that would bake a
# value raises there and stores nothing).  Inductor's FX graph cache is keyed after the
# pass and needs nothing.  Where torch's key function is not the one this was written for
# (the table's optional ``autograd_cache_key`` entry), such graphs bypass the AOTAutograd
# cache instead (``check_cacheable_hook``; the safe fallback: a cold AOT compile).


def _cache_key_component() -> str:
    global _key_component
    if _key_component is None:
        from .. import __version__

        digest = hashlib.sha256(__version__.encode())
        for path in sorted(pathlib.Path(__file__).parent.glob("*.py")):  # the whole bridge
            digest.update(path.read_bytes())
        _key_component = f"-dynscalar-floats-{digest.hexdigest()[:20]}"
    return _key_component


_key_component: str | None = None


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
        if state is not None and any(s in state.floats for s in memo.node.expr.free_symbols):
            return True
    return False


def cache_key_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``autograd_cache_key(mod, ...)``: a key of the bridge's own for its graphs."""
    mod = kwargs["mod"]
    ours = _has_dynamic_float_input(getattr(mod, "gm", mod))  # a GmWrapper holds .gm
    key, debug_lines = wrapped(*args, **kwargs)
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
    wrapped(*args, **kwargs)
    gm = kwargs["gm"]
    if _has_dynamic_float_input(gm):
        raise _torch.BypassAOTAutogradCache("dynscalar: graph has a dynamic float input")
