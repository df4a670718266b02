"""Where a marked float reaches a torch op: apply the op's rule, or do what stock torch does.

Hooked: ``TorchInGraphFunctionVariable.call_function`` (torch functions) and
``TensorVariable.call_method`` (tensor methods), where Dynamo turns a call into a graph
node.  A call is the bridge's business only when one of its arguments is a SymFloat made
from a dynscalar mark (``_state.is_dynamic_float``); every other call goes to Dynamo as is.

* An op with a rule (``dynscalar.ops.RULES``: the ops whose ``float`` parameter torch
  would force) is traced as the rule's entry for the compile's backend (``_backends``):
  on a ``"python"`` backend its custom op or kernel (eager's own kernels), on inductor its
  tensor form; each only where the exactness matrix admits it for the call's dtype and
  ``requires_grad``.  Otherwise the call goes to Dynamo unchanged, which specializes the
  value as stock torch does, and one ``SpecializationWarning`` names the op and why.
* A Python function of ``torch.nn.functional`` that Dynamo puts in the graph as a whole
  (``F.dropout``, ``F.multi_head_attention_forward``) is traced through, so the float
  reaches the torch op inside it, which the rule above handles.
* Ops whose float is a ``Scalar`` need nothing here: Dynamo traces it, and the AOT
  hooks (``stages.aot``) keep it a Python float on ``"python"`` backends.

``max``/``min`` of a marked value follow Python's rules in ``_python`` (bool and NaN
operands, deep expressions).

A ``math`` function with a marked argument (Dynamo traces them as in-graph functions too)
follows one rule (:func:`_math_call`, forms in ``dynscalar/ops/ops.math_twins.py``): raising for the
trace-time values, it is compiled with them as constants (the compiled call raises eager's
error); with a form, on a ``"python"`` backend, it is traced as that form behind its
domain; otherwise as Dynamo traces it.
"""

from __future__ import annotations

import logging
import math
import operator
import threading
import types
from typing import Any, NamedTuple

import torch

from .. import _caches, ops
from . import _torch
from ._backends import backend_kind
from ._floats import restart_frame
from ._python import max_min_operands
from ._reports import specializing
from ._state import compile_state, is_dynamic_float, is_dynamic_value

log = logging.getLogger("dynscalar")

__all__ = [
    "builtin_call_hook",
    "in_graph_call_hook",
    "numpy_call_hook",
    "tensor_method_hook",
    "watching_forced",
]

_local = threading.local()


def _realize_floats(tx: Any, values: Any) -> bool:
    """True if one of ``values`` is a marked float (a lazy float is realized, which makes
    its SymFloat; nothing else is realized, so no other guards are installed)."""

    found = False
    for value in values:
        if isinstance(value, _torch.LazyVariableTracker):
            if not value.is_realized() and not isinstance(value.peek_value(), float):
                continue
            value = value.realize()
        found = is_dynamic_float(tx, value) or found
    return found


def _traced_through(fn: Any) -> bool:
    """A Python function of torch.nn.functional (its body calls the torch op)."""
    return isinstance(fn, types.FunctionType) and fn.__module__ == "torch.nn.functional"


def _kind(tx: Any) -> str:
    state = compile_state(tx.output.shape_env)
    if state.ops.backend is None:
        state.ops.backend = backend_kind(tx)
    return state.ops.backend


def _examples(values: list[Any], keywords: dict[str, Any]) -> Any:
    """(args, kwargs) of the call's example values; None when an argument has none."""
    try:
        args = [_example_value(v) for v in values]
        kwargs = {k: _example_value(v) for k, v in keywords.items()}
    except _NoExample:
        return None
    return args, kwargs


class _NoExample(Exception):
    """An argument whose trace-time value cannot be read."""


def _example_value(variable: Any) -> Any:
    variable = _realized(variable)
    if isinstance(variable, _torch.TensorVariable):
        return _example(variable)
    if isinstance(variable, _torch.SymNodeVariable):
        return variable.sym_num
    if isinstance(variable, _torch.BaseListVariable):
        return [_example_value(v) for v in variable.items]
    if variable.is_python_constant():
        return variable.as_python_constant()
    raise _NoExample


def _entry(
    rule: Any, name: str, tx: Any, values: list[Any], keywords: dict[str, Any]
) -> tuple[Any, str, dict[str, Any]]:
    """(what to trace for ``name``, '', the keywords the bridge hands it) or (None, why the
    value is specialized, {}).  A ``"python"`` entry is handed the autocast state the call
    is traced under (``autocast``: under ``torch.autocast`` a call has cells of its own,
    and eager's kernel runs under that state) and which inputs require grad
    (``requiring``: ATen picks some kernels by it), where there is one."""

    kind = _kind(tx)
    example = next(  # of the first tensor (not realized: a lazy one is not yet a tensor)
        (
            _example(v)
            for v in [*values, *keywords.values()]
            if isinstance(v, _torch.TensorVariable)
        ),
        None,
    )
    if example is None:
        return None, "none of its arguments is a tensor", {}
    dtype, device = example.dtype, example.device.type
    autocast = ops.custom.autocast_state(device)
    grad = torch.is_grad_enabled() and any(  # grad mode as traced (no_grad: no gradient)
        bool(getattr(_example(v), "requires_grad", False))
        for v in map(_realized, [*values, *keywords.values()])
        if isinstance(v, _torch.TensorVariable)
    )
    if kind == "python":
        ok, why = ops.admission.admitted(rule, name, dtype, grad, "python", device, autocast)
        if not ok:
            return None, why, {}
        entry = ops.python_entry(rule, name)  # defines its ops, which precompute reads
        handed: dict[str, Any] = {} if autocast is None else {"autocast": autocast}
        if not grad:
            return entry, "", handed
        examples = _examples(values, keywords)
        if examples is None:
            return None, "its arguments could not be read before AOTAutograd traces them", {}
        # which inputs get a gradient, told the rule's generic op before AOTAutograd traces
        # its backward (``dynscalar.ops._custom.precompute``)
        ops.custom.precompute(rule, *examples)
        return entry, "", {**handed, "requiring": ops.custom.requiring_for(rule, *examples)}
    if kind == "inductor":
        form = ops.inductor_entry(rule, name)
        if form is None:
            return None, "it has no tensor form for inductor", {}
        others = _marked_outside(rule, tx, values, keywords)
        if others:
            kept = ", ".join(others)
            return None, f"its tensor form for inductor keeps only {kept} symbolic", {}
        # a tensor form is plain torch ops, each cast by its own autocast policy: under
        # autocast, only a cell measured under it admits the form
        ok, why = ops.admission.admitted(rule, name, dtype, grad, "inductor", device, autocast)
        return (form, "", {}) if ok else (None, why, {})
    return None, "the backend is neither inductor nor one that runs the graph as Python code", {}


def _marked_outside(
    rule: Any, tx: Any, values: list[Any], keywords: dict[str, Any]
) -> tuple[str, ...]:
    """The parameters the rule's inductor form keeps symbolic (``rule.inductor_scalars``),
    where a marked float reaches a parameter outside them; () when none does."""
    if rule.inductor_scalars is None:
        return ()

    names = [a.name for a in ops.custom.aten_overload(rule)._schema.arguments]
    bound = [*zip(names, values, strict=False), *keywords.items()]
    if any(
        name not in rule.inductor_scalars and is_dynamic_float(tx, _realized(value))
        for name, value in bound
    ):
        return tuple(rule.inductor_scalars)
    return ()


def _apply(
    rule: Any, name: str, tx: Any, values: list[Any], stock: Any, keywords: dict[str, Any]
) -> Any:
    """The call ``name(*values, **keywords)`` of an op with a rule: traced as the rule's
    entry for the backend where one is admitted, else boxed (inductor) or as ``stock``
    traces it, the value specialized and reported."""
    inside = _in_transform(tx, name, values, keywords, stock)
    if inside is not None:
        return inside
    entry, why, handed = _entry(rule, name, tx, values, keywords)
    if entry is not None:
        log.debug("%s receives a dynamic float: tracing %s", name, entry.__name__)
        constants = {k: _torch.ConstantVariable.create(v) for k, v in handed.items()}
        return _trace(tx, entry, values, {**keywords, **constants})
    kind = _kind(tx)
    if kind == "inductor":
        boxed, refused = _boxed(tx, name, values, keywords)
        if boxed is not None:
            return boxed
        why = f"{why}; {refused}"
    return _specialized(tx, name, values, keywords, stock, why)


def _in_transform(
    tx: Any, name: str, values: list[Any], keywords: dict[str, Any], stock: Any
) -> Any:
    """Inside a functorch transform (``vmap``, ``grad``: per-sample gradients), the call as
    ``stock`` traces it, its marked floats specialized: dynscalar's custom ops have no
    batching rule, and what would choose them runs the call or restarts the frame while
    the transform's levels are live (an admission run draws random samples, which ``vmap``
    refuses; a restart leaves the levels pushed).  None outside a transform."""
    if _torch.peek_interpreter_stack() is None:
        return None
    why = "it is called inside a functorch transform (vmap, grad), which its rule cannot enter"
    return _specialized(tx, name, values, keywords, stock, why)


def _specialized(
    tx: Any, name: str, values: list[Any], keywords: dict[str, Any], stock: Any, why: str
) -> Any:
    """The call as ``stock`` traces it, its marked floats specialized as stock torch does
    and reported (``why``)."""
    log.info("%s receives a dynamic float, specialized as stock torch does: %s", name, why)
    with specializing(name, why):
        if _kind(tx) == "python":
            _guard_values(tx, [*values, *keywords.values()])
        return stock()


def _guard_values(tx: Any, values: list[Any]) -> None:
    """Specialize the marked floats a call receives, as stock torch does (a guard on the
    value, reported by ``_reports`` as this op's specialization).  On a ``"python"``
    backend nothing else would: the float-tensorify pass is kept away from marked floats."""
    for variable in values:
        variable = _realized(variable)
        if is_dynamic_float(tx, variable):
            variable.evaluate_expr(tx.output)


def in_graph_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``TorchInGraphFunctionVariable.call_function(tx, args, kwargs)``."""
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    fn = instance.value
    if _is_math(fn):
        from ._writeback import folded

        result = _math_call(tx, fn, list(call_args), dict(call_kwargs), wrapped, args, kwargs)
        return folded(tx, result, fn, list(call_args), dict(call_kwargs))
    factory = _factory(fn)
    if factory is not None and call_args and _holds_dynamic(tx, call_args[0]):
        log.debug("%s of a dynamic value: traced as torch.scalar_tensor", fn.__name__)
        return _trace(tx, factory, list(call_args), dict(call_kwargs))
    found = ops.rule_for(fn)
    through = found is None and _traced_through(fn)  # torch.nn.functional: the op inside
    name = None if found is not None or through else _callable_name(fn) or _form_overload(fn)
    if found is None and not through and name is None:
        return wrapped(*args, **kwargs)
    if not _realize_floats(tx, [*call_args, *call_kwargs.values()]):
        return wrapped(*args, **kwargs)
    if through:
        return _trace(tx, fn, list(call_args), dict(call_kwargs))

    def stock() -> Any:  # the call as Dynamo makes it
        return wrapped(*args, **kwargs)

    def own() -> Any:  # Dynamo's own handling of the call (None: the op goes in its graph)
        handler = _torch.TorchInGraphFunctionVariable._get_handlers().get(fn)
        return (handler and handler(instance, tx, *call_args, **call_kwargs)) or None

    if found is None:
        assert name is not None  # neither a rule nor traced through: named above
        return _generic(tx, name, list(call_args), dict(call_kwargs), stock, own)
    rule, name = found
    return _apply(rule, name, tx, list(call_args), stock, dict(call_kwargs))


def _form_overload(fn: Any) -> str | None:
    """``"aten::pow.Tensor_Scalar"`` for an ATen overload that has a scalar form."""

    form = ops.forms.form_for(fn) if type(fn).__name__ == "OpOverload" else None
    return form.op if form is not None else None


def _holds_dynamic(tx: Any, variable: Any) -> bool:
    """A marked value, or a list or tuple holding one (at any depth)."""
    variable = _realized(variable)
    if isinstance(variable, _torch.BaseListVariable):
        return any(_holds_dynamic(tx, item) for item in variable.items)
    return is_dynamic_value(tx, variable)


def _factory(fn: Any) -> Any:
    """What to trace for ``torch.tensor``/``torch.as_tensor`` (``ops._factories``)."""

    try:
        return ops.factories.FACTORIES.get(fn)
    except TypeError:  # an unhashable callable
        return None


def _is_math(fn: Any) -> bool:
    """A function of the ``math`` module (Dynamo traces them as in-graph functions)."""
    return isinstance(fn, types.BuiltinFunctionType) and fn.__module__ == "math"


def _math_call(
    tx: Any,
    fn: Any,
    call_args: list[Any],
    call_kwargs: dict[str, Any],
    wrapped: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``math.f(*call_args)`` with a marked argument (``dynscalar.ops._math``): where it
    raises for the trace-time values, compiled with those values as constants (the
    compiled call raises eager's error, as stock torch's constant folding does); on a
    ``"python"`` backend, a function with a form is traced as that form; anything else
    as Dynamo traces it."""

    operands = [_realized(a) for a in call_args]
    if (
        call_kwargs
        or not any(is_dynamic_value(tx, v) for v in operands)
        or not all(_is_number(v) for v in operands)
    ):
        return wrapped(*args, **kwargs)
    if fn in _INT_IDENTITIES and len(operands) == 1 and _is_int(operands[0]):
        # Python: an int's floor, ceil and trunc are the int itself. torch 2.13's fake run
        # of math.floor on a negative FloorDiv (`math.floor(n // 2)`, n < 0) fails with an
        # AssertionError (stock with dynamic=True raises it too); the value handed back is
        # the operand, recorded as the call that made it (write-back: eager's
        # `DynamicInt.__floor__`)
        from ._writeback import handed_back

        return handed_back(tx, operands[0], fn, [call_args[0]])
    hints = [_trace_value(v) for v in operands]
    if all(h is not None for h in hints):
        try:
            fn(*hints)
        except Exception:  # noqa: BLE001 - eager raises for these values: so does the compile
            constants = [
                _torch.ConstantVariable.create(v.evaluate_expr(tx.output))
                if isinstance(v, _torch.SymNodeVariable)
                else v
                for v in operands
            ]
            return wrapped(tx, constants, {})
    form = ops.math_twins.FORMS.get(fn)
    if form is None or _kind(tx) != "python":
        return wrapped(*args, **kwargs)
    compute, domain = form.functions()
    checked = (
        _torch.UserFunctionVariable(domain) if domain else _torch.ConstantVariable.create(None)
    )
    log.debug("math.%s receives a dynamic value: traced as its form", form.name)
    return _trace(
        tx, ops.math_twins.apply, [_torch.UserFunctionVariable(compute), checked, *operands], {}
    )


def numpy_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``NumpyVariable.call_function(tx, args, kwargs)``: ``np.sin(x)`` of one marked
    float, where its ``math`` twin returns numpy's result bit for bit
    (``dynscalar.ops._math.numpy_exact``), is traced as that twin behind its domain and
    handed on as Dynamo represents numpy's result (a 0-d float64 array); anything else as
    Dynamo traces it (stock torch converts the float with ``torch.as_tensor``, which forces
    it to a constant)."""

    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    form = ops.math_twins.numpy_form(instance.value)
    if (
        form is None
        or call_kwargs
        or len(call_args) != 1
        or not _torch.dynamo_config.trace_numpy
        or not _realize_floats(tx, call_args)
    ):
        return wrapped(*args, **kwargs)
    operand = _realized(call_args[0])
    hint = _trace_value(operand)
    compute, domain = form.functions()
    assert domain is not None  # every numpy form has one
    if hint is None or not domain(hint) or not ops.math_twins.numpy_exact(instance.value, hint):
        return wrapped(*args, **kwargs)
    log.debug("np.%s receives a dynamic float: traced as its math twin", form.name)
    functions = [_torch.UserFunctionVariable(compute), _torch.UserFunctionVariable(domain)]
    return _trace(tx, ops.math_twins.to_numpy, [*functions, operand], {})


#: ``math`` functions that return an int argument unchanged
_INT_IDENTITIES = (math.floor, math.ceil, math.trunc)


def _is_int(variable: Any) -> bool:
    return isinstance(variable, _torch.SymNodeVariable) and variable.python_type() is int


def _is_number(variable: Any) -> bool:
    """A traced SymInt/SymFloat, or an int, float or bool constant."""

    if isinstance(variable, _torch.SymNodeVariable):
        return variable.python_type() in (int, float)
    return variable.is_python_constant() and type(variable.as_python_constant()) in (
        int,
        float,
        bool,
    )


def _trace_value(variable: Any) -> Any:
    """The value a traced number has now (None: an unbacked symbol has none)."""

    if isinstance(variable, _torch.SymNodeVariable):
        return variable.sym_num.node.hint
    return variable.as_python_constant()


def tensor_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``TensorVariable.call_method(tx, name, args, kwargs)``."""

    tx, method = kwargs["tx"], kwargs["name"]
    call_args, call_kwargs = kwargs["args"], kwargs["kwargs"]
    found = ops.rule_for_method(method)
    if found is None and method in ops.NATIVE_METHODS:
        return wrapped(*args, **kwargs)
    if not _realize_floats(tx, [*call_args, *call_kwargs.values()]):
        return wrapped(*args, **kwargs)

    def stock() -> Any:  # the call as Dynamo makes it
        return wrapped(*args, **kwargs)

    arguments = [instance, *call_args]
    if found is None:
        return _generic(tx, f"Tensor.{method}", arguments, dict(call_kwargs), stock)
    rule, name = found
    return _apply(rule, name, tx, arguments, stock, dict(call_kwargs))


def _callable_name(fn: Any) -> str | None:
    """``"torch.<name>"`` for a function of the ``torch`` namespace (or ``torch._C._nn``,
    ``torch.nn.functional``'s builtins) that a template can name; None for anything else
    (dynscalar's own custom ops, Python functions, objects)."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name.startswith("__"):
        return None
    for owner, prefix in ((torch, "torch"), (_torch.C_nn, "torch._C._nn")):
        if getattr(owner, name, None) is fn:
            return f"{prefix}.{name}"
    return None


#: callables whose fake call (Dynamo's trace) forced a marked float: traced as
#: ``dynscalar::apply`` from then on (learned per process; the frame is traced again)
_forcing: set[str] = set()
_caches.register(_forcing.clear)


def _generic(
    tx: Any,
    name: str,
    arguments: list[Any],
    keywords: dict[str, Any],
    stock: Any,
    own: Any = lambda: None,
) -> Any:
    """A torch call with a marked value and no rule of its own, on a ``"python"`` backend:
    the call as ``dynscalar::apply`` (``dynscalar.ops._apply``) where torch would force the
    value - inside AOTAutograd (a derivative formula, with a tensor that requires grad) or
    in Dynamo's own fake call (learned the first time: the frame is traced again) - and
    the exactness matrix admits it; the call as Dynamo makes it otherwise."""

    inside = _in_transform(tx, name, arguments, keywords, stock)
    if inside is not None:
        return inside
    kind = _kind(tx)
    if kind == "inductor":
        return _inductor_form(tx, name, arguments, keywords, stock, own)
    if kind != "python":
        return stock()
    call = _described(tx, name, arguments, keywords)
    if call is None:
        return stock()
    if not call.grad and name not in _forcing:
        return _watching(tx, name, stock)

    ok, why = ops.apply.admitted(call.key, call.examples, call.hints, call.grad)
    if ok and call.grad:
        ops.apply.precompute(call.key, call.examples, [s.sym_num for s in call.scalars])
    if not ok:
        log.info("%s receives a dynamic value, kept as Dynamo traces it: %s", name, why)
        with specializing(name, why):
            return stock()
    return _traced_apply(tx, call, call.scalars)


class _Call(NamedTuple):
    """A torch call with a marked value as a template (``dynscalar.ops._apply``): what the
    generic and boxed custom ops, and their admission, need of it."""

    template: Any
    key: str  # the template's key, registered
    tensors: list[Any]  # the traced tensor arguments
    scalars: list[Any]  # the traced marked values
    hints: list[int | float]  # their values when traced (an int for a marked int)
    examples: list[Any]  # the tensors' example (fake) values
    grad: bool  # a tensor needs a gradient, grad mode on


def _described(tx: Any, name: str, arguments: list[Any], keywords: dict[str, Any]) -> Any:
    """The call as a :class:`_Call`, its template registered; None where no template can
    describe it (an argument a template cannot hold, an in-place call)."""

    built = _template(tx, name, arguments, keywords)
    if built is None:
        return None
    template, tensors, scalars = built
    examples = [_example(t) for t in tensors]
    grad = torch.is_grad_enabled() and any(e.requires_grad for e in examples)
    hints = [_hint(v) for v in scalars]
    return _Call(template, ops.apply.register(template), tensors, scalars, hints, examples, grad)


def _inductor_form(
    tx: Any, name: str, arguments: list[Any], keywords: dict[str, Any], stock: Any, own: Any
) -> Any:
    """A call on inductor of an op with a scalar form (``dynscalar.ops._forms``) whose
    tensors require grad: the form traced in its place where the inductor column admits it
    (AOTAutograd would trace the op's autograd formula, which can force the float before
    any graph pass rewrites the op; without gradients the pass does it, ``stages.aot``).  A
    form marked ``dynamo`` is traced without gradients too (inductor's decomposition would
    force the float), unless Dynamo handles the call itself (``own``: torch 2.13 decomposes
    ``_foreach_lerp_`` with a float weight in Dynamo, and the op never reaches AOTAutograd)."""

    values = [_realized(a) for a in arguments]
    named = {k: _realized(v) for k, v in keywords.items()}
    tensors = [
        t
        for v in (*values, *named.values())
        for t in (v.items if isinstance(v, _torch.BaseListVariable) else [v])
        if isinstance(t, _torch.TensorVariable)
    ]
    if name in _forcing_inductor or _int_power(tx, name, values, named, tensors):
        boxed, refused = _boxed(tx, name, arguments, keywords)
        if boxed is not None:
            return boxed
        with specializing(name, f"it forces the value on inductor; {refused}"):
            return stock()
    _watch_inductor(tx, name, arguments, keywords)
    grad = torch.is_grad_enabled() and any(
        bool(getattr(_example(t), "requires_grad", False)) for t in tensors
    )
    candidates = ops.forms.CALLABLES.get(name)
    if candidates is None and "::" in name:
        found = ops.forms.FORMS.get(name)
        if found is not None:
            schema = _forms_target(name)._schema
            candidates = ((name, tuple(a.name for a in schema.arguments)),)
    for op, order in candidates or ():
        form = ops.forms.FORMS[op]
        if not (grad or form.dynamo) or len(values) > len(order):
            continue
        if any(k not in order for k in named):
            continue
        bound = dict(zip(order, values, strict=False)) | named
        moved = [n for n in form.arguments if n in bound and is_dynamic_float(tx, bound[n])]
        target = _forms_target(op)
        schema = target._schema.arguments
        if not moved or not tensors or not _tensors_where_expected(schema, bound):
            continue
        handled = own() if form.dynamo else None
        if handled is not None:
            return handled
        example = _example(tensors[0])
        dtype, device = example.dtype, example.device.type
        ok, why = ops.admission.form_admitted(
            form, dtype, grad, device, ops.custom.autocast_state(device)
        )
        if not ok and form.dynamo:  # the op as Dynamo makes it, as without the form
            return stock()
        if not ok:
            boxed, refused = _boxed(tx, name, arguments, keywords)
            if boxed is not None:
                return boxed
            shown = str(dtype).removeprefix("torch.")
            reason = f"its inductor form is not admitted for {shown} with gradients: {why}"
            with specializing(name, f"{reason}; {refused}"):
                return stock()
        names = tuple(a.name for a in schema if a.name in bound)
        leading = [a.name for a in schema if not a.kwarg_only]
        positional = next(
            (i for i, n in enumerate(names) if i >= len(leading) or n != leading[i]), len(names)
        )
        special = tuple((n, form.special_values(n)) for n in moved if form.special_values(n))
        inplace = (name.endswith("_") and not name.endswith("__")) or name.endswith("__ipow__")
        constants = [form.arguments, special, names, positional, inplace]
        log.debug("%s receives a dynamic float: tracing its form", name)
        return _trace(
            tx,
            ops.forms.traced,
            [
                _torch.VariableTracker.build(tx, target),
                _torch.VariableTracker.build(tx, form.fn),
                *(_torch.ConstantVariable.create(c) for c in constants),
                *(bound[n] for n in names),
            ],
            {},
        )
    return stock()


def _int_power(
    tx: Any, name: str, values: list[Any], named: dict[str, Any], tensors: list[Any]
) -> bool:
    """``tensor ** n`` (or ``n ** tensor``) with a marked int ``n`` that inductor cannot
    compile symbolically (torch 2.13, stock with a dynamic int alike): an integer tensor
    (no lowering of ``pow`` with a SymInt exponent), or a tensor that needs a gradient
    (``pow``'s backward compares the SymInt: "NYI SymInt equality").  Boxed instead:
    eager's kernel with the int as an int."""
    if name != "torch.pow" or not any(
        is_dynamic_value(tx, v) and not is_dynamic_float(tx, v) for v in [*values, *named.values()]
    ):
        return False
    examples = [_example(t) for t in tensors]
    grad = torch.is_grad_enabled() and any(e.requires_grad for e in examples)
    return grad or any(not (e.is_floating_point() or e.is_complex()) for e in examples)


#: callables that forced a marked float on inductor when traced as Dynamo traces them (in
#: Dynamo's fake call, an autograd formula, or torch's float-tensorify pass): traced as
#: ``dynscalar::apply_boxed`` from then on (learned per process; the frame is traced again)
_forcing_inductor: set[str] = set()
_caches.register(_forcing_inductor.clear)


def _watch_inductor(tx: Any, name: str, arguments: list[Any], keywords: dict[str, Any]) -> None:
    """Remember that ``name`` received these marked floats, traced as Dynamo traces it,
    where a template can describe the call: if the compile then forces one of them,
    :func:`learn_forcing` names the call (where the matrix admits it boxed)."""
    symbols = set()
    for variable in [*arguments, *keywords.values()]:
        variable = _realized(variable)
        if is_dynamic_float(tx, variable):
            symbols |= set(variable.sym_num.node.expr.free_symbols)
    if not symbols or name in _forcing_inductor:
        return
    call = _described(tx, name, arguments, keywords)
    if call is not None:
        calls = compile_state(tx.output.shape_env).ops.stock_calls
        calls.setdefault(name, []).append((symbols, call))


def learn_forcing(state: Any, forced: set[Any]) -> list[str]:
    """The calls of this compile, traced as Dynamo traces them, that received one of the
    ``forced`` symbols, are not yet traced boxed, and which the exactness matrix admits
    boxed: from now on they are (the caller traces the frame again).  [] when there is
    none: the value is specialized as stock."""

    names = []
    for name, calls in state.ops.stock_calls.items():
        if name in _forcing_inductor:
            continue
        for symbols, call in calls:
            if not symbols & forced:
                continue
            with ops.custom.outside_modes[
                0
            ]():  # called inside AOTAutograd's trace: real sample calls
                ok, _ = ops.apply.admitted(
                    call.key, call.examples, call.hints, call.grad, boxed=True
                )
            if ok:
                names.append(name)
                break
    _forcing_inductor.update(names)
    return sorted(names)


def _boxable(tx: Any, name: str, arguments: list[Any], keywords: dict[str, Any]) -> tuple[Any, str]:
    """(the :class:`_Call`, '') where the exactness matrix admits it as
    ``dynscalar::apply_boxed`` at the traced values; else (None, why not).  A value at
    which eager's call takes another path (``boxed_paths``) is kept from the boxed graph by
    a predicate guard, and is itself not boxable."""

    call = _described(tx, name, arguments, keywords)
    if call is None:
        return None, "its arguments are not ones a dynscalar::apply call can take"
    ok, why = ops.apply.admitted(call.key, call.examples, call.hints, call.grad, boxed=True)
    if not ok:
        return None, f"eager's kernel as an opaque call is not admitted: {why}"
    paths = ops.apply.boxed_paths(call.key, call.examples, call.hints, call.grad)
    if paths:
        (scalar,) = call.scalars
        sym = scalar.sym_num
        for value in paths:
            if sym == value:  # a predicate guard: this value is a path of its own
                state = compile_state(tx.output.shape_env)
                state.marks.paths.update(sym.node.expr.free_symbols)
                return None, f"eager's call takes another path at {value}"
    return call, ""


def _boxed(tx: Any, name: str, arguments: list[Any], keywords: dict[str, Any]) -> tuple[Any, str]:
    """On inductor: the call as ``dynscalar::apply_boxed`` (``dynscalar.ops._apply``: eager's
    kernel, the numbers handed over as 0-d tensors, float64 for a float and int64 for an
    int, which the kernel receives as an int) where the exactness matrix admits it, and '';
    else (None, why not)."""

    call, why = _boxable(tx, name, arguments, keywords)
    if call is None:
        return None, why
    ops.apply.remember_hints(call.key, call.hints)
    if call.grad:
        ops.apply.precompute(call.key, call.examples, [s.sym_num for s in call.scalars])
    log.debug("%s receives a dynamic value on inductor: eager's kernel, boxed", name)
    boxes = [
        _trace(
            tx,
            torch.scalar_tensor,
            [s],
            {"dtype": _torch.ConstantVariable.create(ops.apply.box_dtype(s.sym_num))},
        )
        for s in call.scalars
    ]
    return _traced_apply(tx, call, boxes, ops.apply.boxed_op()), ""


def _forms_target(op: str) -> Any:
    """The ``OpOverload`` a form's ``op`` names (``"aten::pow.Tensor_Scalar"``)."""
    namespace, _, rest = op.partition("::")
    packet, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")


def _tensors_where_expected(schema: Any, bound: dict[str, Any]) -> bool:
    """Every argument the schema types ``Tensor`` holds a traced tensor (``Tensor?``: or
    None), so the candidate overload is the one the call reaches."""
    for argument in schema:
        value = bound.get(argument.name)
        kind = str(argument.type)
        if kind == "Tensor" and not isinstance(value, _torch.TensorVariable):
            return False
        if (
            kind == "Optional[Tensor]"
            and value is not None
            and not isinstance(value, _torch.TensorVariable)
            and not (value.is_python_constant() and value.as_python_constant() is None)
        ):
            return False
    return True


def _watching(tx: Any, name: str, stock: Any) -> Any:
    """Trace the call as Dynamo does; if its fake call forces a marked value, remember the
    callable and trace the frame again (it then goes through ``dynscalar::apply``)."""
    previous = getattr(_local, "watch", None)
    forced: list[Any] = []
    _local.watch = forced
    try:
        result = stock()
    finally:
        _local.watch = previous
    if forced:
        _forcing.add(name)
        log.info("%s forces a dynamic value in its fake call; tracing the frame again", name)
        restart_frame()
    return result


def watching_forced(symbols: Any) -> bool:
    """Called by the specialization report: True (and recorded) when the values are forced
    inside a call :func:`_watching` is tracing, which will be traced again instead."""
    watch = getattr(_local, "watch", None)
    if watch is None:
        return False
    watch.append(symbols)
    return True


def _example(variable: Any) -> Any:
    return variable.as_proxy().node.meta.get("example_value")


def _hint(variable: Any) -> int | float:
    """A traced marked value's trace-time value, an int for an int (a call receives a
    marked int as an int, as in eager)."""

    return ops.apply.traced_number(variable.sym_num)


def _template(tx: Any, name: str, arguments: list[Any], keywords: dict[str, Any]) -> Any:
    """(Template, tensor variables, scalar variables) for the call, or None when one of
    its arguments is neither a tensor, a marked value, a list of tensors nor a constant."""

    if _writes_inputs(name) or "out" in keywords:
        return None  # a custom op may not write its inputs: the call stays Dynamo's
    tensors: list[Any] = []
    scalars: list[Any] = []

    def slot(variable: Any) -> tuple[Any, ...] | None:
        variable = _realized(variable)
        if isinstance(variable, _torch.TensorVariable):
            tensors.append(variable)
            return ("tensor", len(tensors) - 1)
        if isinstance(variable, _torch.SymNodeVariable):
            if not is_dynamic_value(tx, variable):
                return None
            scalars.append(variable)
            return ("scalar", len(scalars) - 1)
        if isinstance(variable, _torch.BaseListVariable):
            items = [_realized(i) for i in variable.items]
            if items and all(isinstance(i, _torch.TensorVariable) for i in items):
                start = len(tensors)
                tensors.extend(items)
                return ("tensors", start, len(items))
        if variable.is_python_constant():
            try:
                value = variable.as_python_constant()
                hash(value)
            except Exception:  # noqa: BLE001 - not a constant a template can hold
                return None
            return ("constant", value)
        return None

    slots = [slot(a) for a in arguments]
    named = {k: slot(v) for k, v in keywords.items()}
    if any(s is None for s in [*slots, *named.values()]) or not tensors or not scalars:
        return None
    # the call runs under the autocast state it is traced under (on its tensors' device)
    autocast = ops.custom.autocast_state(_example(tensors[0]).device.type)
    args, kwargs = tuple(slots), tuple(sorted(named.items()))
    template = ops.apply.Template(name, args, kwargs, "tensor", autocast)  # type: ignore[arg-type]
    out = _out_kind(tx, template, tensors, scalars)
    if out is None:
        return None
    return ops.apply.Template(name, template.args, template.kwargs, out, autocast), tensors, scalars


def _writes_inputs(name: str) -> bool:
    """An in-place call: ``Tensor.mul_``, ``torch.relu_``, ``Tensor.__imul__``."""
    short = name.rpartition(".")[2]
    if short.startswith("__") and short.endswith("__"):
        return short.startswith("__i")
    return short.endswith("_")


def _out_kind(tx: Any, template: Any, tensors: list[Any], scalars: list[Any]) -> str | None:
    """What the call returns, from a fake run: ``"tensor"``, ``"tuple"``, ``"list"``, or
    None (anything else: not a template's call)."""
    try:
        with tx.output.fake_mode:
            out = template.call([_example(t) for t in tensors], [_hint(s) for s in scalars])
    except Exception:  # noqa: BLE001 - torch refuses it: Dynamo will say how
        return None
    if isinstance(out, torch.Tensor):
        return "tensor"
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        return "tuple" if isinstance(out, tuple) else "list"
    return None


def _traced_apply(tx: Any, call: _Call, scalars: list[Any], op: Any = None) -> Any:
    """``call`` as the generic custom op (``op``: the boxed one, ``scalars`` 0-d tensors),
    handed which of its tensors require grad where one does (ATen picks kernels by it)."""

    op = op or ops.apply.op()
    requiring = [bool(e.requires_grad) for e in call.examples] if call.grad else []
    keywords = {"requiring": _torch.ConstantVariable.create(requiring)} if any(requiring) else {}
    result = _torch.VariableTracker.build(tx, op).call_function(
        tx,
        [
            _torch.ConstantVariable.create(call.key),
            _torch.ListVariable(list(call.tensors), mutation_type=_torch.ValueMutationNew()),
            _torch.ListVariable(list(scalars), mutation_type=_torch.ValueMutationNew()),
        ],
        keywords,
    )
    template = call.template
    items = list(result.items)
    if template.out == "tensor":
        return items[0]
    if template.out == "tuple":
        return _torch.TupleVariable(items)
    return _torch.ListVariable(items, mutation_type=_torch.ValueMutationNew())


def _realized(variable: Any) -> Any:
    if isinstance(variable, _torch.LazyVariableTracker):
        return variable.realize()
    return variable


def _trace(tx: Any, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Trace ``target(*args, **kwargs)``: a Python function is inlined (as Dynamo inlines
    its own polyfills), a custom op becomes a graph node."""
    if isinstance(target, types.FunctionType):
        return tx.inline_user_function_return(_torch.UserFunctionVariable(target), args, kwargs)

    return _torch.VariableTracker.build(tx, target).call_function(tx, args, kwargs)


# ----------------------------------------------------------------------------- max/min
def builtin_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: ``max``/``min`` operands,
    and ``value ** tensor``/``tensor ** value`` as ``torch.pow`` (the generic rule)."""
    if instance.fn is max or instance.fn is min:
        return max_min_operands(wrapped, instance.fn, args, kwargs)
    if instance.fn in _POWERS:
        tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
        if len(call_args) == 2 and not call_kwargs and _tensor_and_value(tx, call_args):

            def stock() -> Any:
                return wrapped(*args, **kwargs)

            return _generic(tx, "torch.pow", list(call_args), {}, stock)
    return wrapped(*args, **kwargs)


_POWERS = frozenset({pow, operator.pow})


def _tensor_and_value(tx: Any, operands: Any) -> bool:
    """One operand a tensor, the other a marked value (``beta ** step_tensor``)."""

    kinds = [_realized(v) for v in operands]
    return any(isinstance(v, _torch.TensorVariable) for v in kinds) and any(
        is_dynamic_value(tx, v) for v in kinds
    )
