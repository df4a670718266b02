"""Write-back: an attribute a compiled frame assigns holds what eager would have stored.

Dynamo replays attribute assignments after the compiled graph ran, with plain values
(the graph computes ints and floats, not proxies).  Eager code, though, stores whatever
the Python expression produced, and proxy arithmetic follows one rule
(``dynscalar/_proxy.py``): an int or float result computed from a proxy is a proxy
(``DynamicInt`` for an int, ``DynamicFloat`` for a float); binary and unary operators keep
the operand's ``unbacked``/``strict`` and drop ``min``/``max``; an in-place operator whose
left operand is the proxy (``step += 1``) keeps the whole spec; float results are backed;
the first proxy operand (left, else right) gives the spec; ``int()``, ``float()``,
comparisons, tensor ``.item()`` and literals give plain values.

The bridge evaluates that same rule on the traced graph, when Dynamo generates the
replay code (``SideEffects.codegen_update_mutated``):

* every graph input made from a marked value records its *origin* (proxy class and the
  proxy's own spec, or "plain" for a registry-marked value);
* the FX node of each assigned value is walked back to those origins, operator by
  operator; in-place operators are tagged when traced (:func:`inplace_op_handler`),
  because Dynamo desugars ``+=`` on ints to ``operator.add``;
* when the rule says "proxy", the assigned value is wrapped in :class:`_Rebox`, whose
  reconstruction builds the proxy from the plain result at run time with C calls only
  (:func:`_inline_rebox`; a proxy assigned unchanged is reloaded from where it was read).

It applies to every replay path - a module's instance dict, ``__slots__``, objects with
``__setattr__``, globals - because they all reconstruct the value the same way.  Two
cases the graph cannot tell: ``max``/``min`` of a proxy and a plain value (eager returns
whichever operand wins, known only at run time: the proxy's kind is assumed), and a proxy
that torch turned into a constant at trace time (a NaN/inf ``DynamicFloat``), which is
written back plain.  Both keep eager's value; docs/behaves-like.md lists them.
"""

from __future__ import annotations

import ast
import dis
import math
import operator
from collections.abc import Callable
from typing import Any

from .._proxy import DynamicFloat, DynamicInt, DynamicScalar, _alloc, _set_spec, _set_wrapped
from .._spec import DynamicSpec
from ._state import Origin, peek_state

__all__ = ["codegen_update_mutated_hook", "inplace_op_handler", "rebox"]

_INPLACE = "dynscalar_inplace"  # FX node meta flag: the node came from `a op= b`

_BINARY = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        operator.lshift,
        operator.rshift,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.iadd,
        operator.isub,
        operator.imul,
        operator.itruediv,
        operator.ifloordiv,
        operator.imod,
        operator.ipow,
        operator.ilshift,
        operator.irshift,
        operator.iand,
        operator.ior,
        operator.ixor,
    }
)
_UNARY = frozenset(
    {operator.neg, operator.pos, operator.abs, abs, operator.invert, math.floor, math.ceil}
    | {math.trunc, round}
)
_UNARY_METHODS = frozenset(
    {"__round__", "__floor__", "__ceil__", "__trunc__", "__neg__", "__abs__"}
)


def _selecting() -> frozenset[Any]:
    import torch

    return frozenset({torch.sym_max, torch.sym_min, max, min})


# ----------------------------------------------------------------------------- the rule
def _result_type(node: Any) -> type | None:
    """``int``/``float`` for a node computing a SymInt/SymFloat (or a plain number)."""
    import torch

    value = node.meta.get("example_value", node.meta.get("val"))
    if isinstance(value, (torch.SymInt, int)) and not isinstance(value, bool):
        return int
    if isinstance(value, (torch.SymFloat, float)):
        return float
    return None


def _derived(origin: Origin, result: type | None, same_variable: bool) -> Origin | None:
    """The proxy eager arithmetic builds from ``origin`` (mirrors ``_proxy._derive``)."""
    if origin.proxy is None or result is None:
        return None
    if result is int:
        spec = origin.spec if same_variable else origin.spec.without_range()
        return Origin(origin.where, spec, DynamicInt)
    return Origin(origin.where, origin.spec.for_float(), DynamicFloat)


def eager_origin(
    node: Any, origins: dict[Any, Origin], memo: dict[Any, Origin | None]
) -> Origin | None:
    """What eager code holds for ``node``: a proxy (its origin) or a plain value (None)."""
    import torch

    if node in memo:
        return memo[node]
    memo[node] = None  # cycles cannot happen in an FX graph; this only guards recursion
    found = origins.get(node)
    if found is not None:
        result = found if found.proxy is not None else None
    elif node.op == "call_function" and node.target in _BINARY:
        result = None
        same_variable = bool(node.meta.get(_INPLACE))
        for position, arg in enumerate(node.args[:2]):
            origin = eager_origin(arg, origins, memo) if isinstance(arg, torch.fx.Node) else None
            if origin is not None:  # the first proxy operand decides (left, else reflected)
                result = _derived(origin, _result_type(node), same_variable and position == 0)
                break
    elif (node.op == "call_function" and node.target in _UNARY) or (
        node.op == "call_method" and node.target in _UNARY_METHODS
    ):
        arg = node.args[0] if node.args else None
        origin = eager_origin(arg, origins, memo) if isinstance(arg, torch.fx.Node) else None
        result = _derived(origin, _result_type(node), False) if origin is not None else None
    elif node.op == "call_function" and node.target in _selecting():
        result = None
        for arg in node.args:
            origin = eager_origin(arg, origins, memo) if isinstance(arg, torch.fx.Node) else None
            if origin is not None:
                result = origin  # eager returns the operand itself: assume the proxy wins
                break
    else:
        result = None  # int(), float(), comparisons, tensor .item(), anything else: plain
    memo[node] = result
    return result


# ----------------------------------------------------------------------------- run time
# A compiled call that assigns a proxy attribute builds the proxy right after the graph ran
# (``_inline_rebox``: no Python frame).  ``rebox`` is the same as one Python call, for values
# replayed from a source other than the proxy's ``__wrapped__``: a dict hit on one string
# constant (its hash is cached in the string) for the class and canonical spec, then the
# proxy built as ``_proxy`` builds arithmetic results.
_KINDS: dict[str, type[DynamicScalar]] = {"DynamicInt": DynamicInt, "DynamicFloat": DynamicFloat}
_MADE: dict[str, tuple[type, DynamicSpec]] = {}


def rebox_key(origin: Origin) -> str:
    """The constant the generated code passes to :func:`rebox` for ``origin``."""
    assert origin.proxy is not None
    spec = origin.spec
    return repr((origin.proxy.__name__, spec.unbacked, spec.min, spec.max, spec.strict))


def _made(key: str) -> tuple[type, DynamicSpec]:
    kind, unbacked, lo, hi, strict = ast.literal_eval(key)
    made = _MADE[key] = (_KINDS[kind], DynamicSpec(unbacked, lo, hi, strict).canonical())
    return made


def rebox(value: Any, key: str) -> Any:
    """Run time: the proxy eager would have stored for the plain ``value`` (called by the
    code Dynamo generates; ``key``, from :func:`rebox_key`, is a constant of that code)."""
    made = _MADE.get(key)
    cls, spec = made if made is not None else _made(key)
    kind = type(value)
    if cls is DynamicInt:
        if kind is not int:
            if issubclass(kind, DynamicScalar):  # replayed from its source: the object itself
                return value
            value = int(value)
    elif kind is not float:
        if issubclass(kind, DynamicScalar):
            return value
        value = float(value)
    obj: DynamicScalar = _alloc(cls)
    _set_wrapped(obj, value)
    _set_spec(obj, spec)
    return obj


def _inline_rebox(codegen: Any, inner: Any, cls: type, spec: DynamicSpec) -> None:
    """Emit what :func:`rebox` does, for a value the graph computed, as C calls only::

        obj = _alloc(cls); _set_wrapped(obj, int(<inner>)); obj._self_spec = spec; push obj

    (``float`` for a ``DynamicFloat``; ``int()``/``float()`` of an exact int/float returns
    it unchanged).  A call to ``rebox`` is a Python frame entered through Dynamo's frame
    callback; this is none.  ``__wrapped__`` is stored through its descriptor: wrapt's
    ``__setattr__`` would search every class of the proxy's MRO for the name first.
    """
    from torch._dynamo.bytecode_transformation import (
        create_call_function,
        create_dup_top,
        create_instruction,
        create_rot_n,
        create_swap,
    )

    def load(value: Any) -> Any:  # an object in co_consts, as Dynamo loads its own helpers
        return codegen.create_load_const_unchecked(value)

    convert = int if cls is DynamicInt else float
    codegen.add_push_null(lambda: codegen.append_output(load(_set_wrapped)))  # [set]
    codegen.add_push_null(lambda: codegen.append_output(load(_alloc)))
    codegen.append_output(load(cls))
    codegen.extend_output(create_call_function(1, False))  # [set, obj]
    codegen.append_output(create_dup_top())
    codegen.extend_output(create_rot_n(4))  # [obj, set, obj] (set: callable and NULL)
    codegen.add_push_null(lambda: codegen.append_output(load(convert)))
    codegen(inner)
    codegen.extend_output(create_call_function(1, False))  # [obj, set, obj, value]
    codegen.extend_output(create_call_function(2, False))  # [obj, None]
    codegen.append_output(create_instruction("POP_TOP"))  # [obj]
    codegen.append_output(create_dup_top())
    codegen.append_output(load(spec))
    codegen.extend_output(create_swap(2))  # [obj, spec, obj]
    codegen.append_output(codegen.create_store_attr("_self_spec"))  # [obj]


def _skip_rebox_tracing() -> None:
    # rebox runs inside the code Dynamo generates, with Dynamo's frame callback active:
    # skip_code marks the code object once so Dynamo never traces it.
    from torch._dynamo.eval_frame import skip_code

    skip_code(rebox.__code__)


# ----------------------------------------------------------------------------- codegen
_rebox_variable_class: type | None = None


def _rebox_variable(inner: Any, origin: Origin) -> Any:
    """A VariableTracker that reconstructs as ``rebox(<inner>, <origin's kind and spec>)``."""
    global _rebox_variable_class
    if _rebox_variable_class is None:
        from torch._dynamo.bytecode_transformation import create_call_function
        from torch._dynamo.variables.base import VariableTracker

        class _Rebox(VariableTracker):
            def __init__(self, inner: Any, origin: Origin) -> None:
                super().__init__()
                self.inner = inner
                self.origin = origin

            def reconstruct(self, codegen: Any) -> None:
                source: Any = getattr(self.inner, "source", None)
                if getattr(source, "member", None) == "__wrapped__":
                    # A proxy assigned unchanged (`self.a, self.b = self.b, self.a`): its
                    # value's source is `<proxy>.__wrapped__`.  Eager stores the very
                    # object: reload the proxy itself, not a copy.
                    codegen(source.base)
                    return
                if source is not None:
                    # Any other source: rebox returns a proxy found there unchanged.
                    key = rebox_key(self.origin)
                    _made(key)  # the first call finds it
                    codegen.add_push_null(lambda: codegen.load_import_from(__name__, "rebox"))
                    codegen(self.inner)
                    codegen.append_output(codegen.create_load_const(key))
                    codegen.extend_output(create_call_function(2, False))
                    return
                assert self.origin.proxy is not None
                _inline_rebox(codegen, self.inner, self.origin.proxy, self.origin.spec.canonical())

        _rebox_variable_class = _Rebox
        _skip_rebox_tracing()
    return _rebox_variable_class(inner, origin)


def _origin_of(
    value: Any, origins: dict[Any, Origin], memo: dict[Any, Origin | None]
) -> Origin | None:
    from torch._dynamo.variables.tensor import SymNodeVariable

    if not isinstance(value, SymNodeVariable):
        return None  # constants (literals, specialized values) and everything else: plain
    return eager_origin(value.as_proxy().node, origins, memo)


def codegen_update_mutated_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``SideEffects.codegen_update_mutated(cg)``: re-box assigned proxy values."""
    cg = args[0] if args else kwargs["cg"]
    state = peek_state(getattr(cg.tx.output, "shape_env", None))
    if state is None or not state.origins:
        return wrapped(*args, **kwargs)
    memo: dict[Any, Origin | None] = {}
    replaced: list[tuple[dict[str, Any], str, Any]] = []
    for assigned in instance.store_attr_mutations.values():
        for name, value in list(assigned.items()):
            origin = _origin_of(value, state.origins, memo)
            if origin is not None:
                assigned[name] = _rebox_variable(value, origin)
                replaced.append((assigned, name, value))
    try:
        return wrapped(*args, **kwargs)
    finally:  # the side effects outlive this codegen pass: leave them as Dynamo made them
        for assigned, name, value in replaced:
            assigned[name] = value


# ----------------------------------------------------------------------------- in-place
def _is_inplace(inst: Any) -> bool:
    if inst.opname == "BINARY_OP":
        return bool(dis._nb_ops[inst.arg][0].startswith("NB_INPLACE"))  # type: ignore[attr-defined]
    return bool(inst.opname.startswith("INPLACE_"))  # Python 3.10


def inplace_op_handler(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """Wrap the tracer's ``BINARY_OP`` (3.11+) or an ``INPLACE_*`` (3.10) handler: tag the
    FX node an in-place operator on a symbolic scalar creates (``step += 1``).

    A plain function, not a wrapt wrapper: Dynamo calls handlers through per-class
    ``dispatch_table`` lists as ``table[opcode](translator, inst)``, and ``_install`` puts
    this function both there and on the class.
    """

    def handler(translator: Any, inst: Any) -> Any:
        result = original(translator, inst)
        if _is_inplace(inst) and translator.stack:
            from torch._dynamo.variables.tensor import SymNodeVariable

            top = translator.stack[-1]
            if isinstance(top, SymNodeVariable):
                node = top.as_proxy().node
                if node.op == "call_function" and node.target in _BINARY:
                    node.meta[_INPLACE] = True
        return result

    handler.__name__ = getattr(original, "__name__", "BINARY_OP")
    handler.__wrapped__ = original  # type: ignore[attr-defined]
    return handler
