"""Float expressions of marked values, kept in the order Python computes them.

torch models a symbolic float as a sympy expression, and sympy rewrites ``+``, ``-`` and
``*`` as real-number algebra: ``n * (1 - r)`` becomes ``n - n*r``, ``(t + 1e16) - 1e16``
becomes ``t``, ``t * 0.1 * 3`` becomes ``0.3*t``.  IEEE arithmetic does not follow those
rules, so an expression that differs from the one the user's code computes can give other
numbers.  Guards print the expression (``math.trunc(8.0 - 8.0*L['r'])`` for
``int(8 * (1 - r))``), AOTAutograd keys the symbolic values of its trace by expression
(two values with the same expression become one graph value), and the trace decides each
branch on the hint Python computed: the guard then checks a value the graph never sees.
For ``int(10 * (1 - 0.9))`` Python gives 0 and the simplified expression 1, and the
compile failed with "Guard failed on the same frame it was created".

So every ``+``, ``-``, ``*`` and unary ``-`` whose result is a float computed from a value
the bridge made symbolic builds an opaque function instead (:class:`IeeeAdd`,
:class:`IeeeMul`: ``a - b`` is ``a + (-1 * b)`` and ``-a`` is ``-1 * a``, which IEEE
defines to be the same operations), the way torch already keeps float ``/`` and ``**``
opaque (``FloatTrueDiv``, ``FloatPow``).  sympy cannot rearrange them; with numbers they
compute the Python float operation; printers write them as the Python operation, in
order, parenthesized (``math.trunc((8.0 * (1.0 - L['r'])))``); value-range and
interpreting passes read them as ``add``/``mul`` (``_torch_handler_name``).  A float
expression of values no mark made is left to torch, exactly as without dynscalar.

The hook sits on ``SymNode``'s ``_add``/``_sub``/``_mul``/``_neg``, the one place every
symbolic arithmetic goes through (Dynamo's trace and AOTAutograd's).

**Forced values.**  A guard can replace a marked symbol by its value (``math.log(self.t)``
forces ``t``), and the expressions computed from it afterwards are sympy numbers: sympy
multiplies its floats with arbitrary precision, so ``0.5 * 1e308 * 10`` stayed finite
(Python: ``inf``) and ``v - v >= 0`` was decided ``True`` where ``inf - inf`` is NaN
(the long fuzzer profile, program 4369).  In a compile with marks, float arithmetic on two
numbers is built through the same functions, which compute Python's float operation.

**Comparisons.**  sympy decides relations as real algebra too: ``Ne(e, e)`` is ``False``
for any expression ``e`` and ``Eq(e, e)`` ``True``, a real expression is below ``oo``, and
``Lt(e, nan)`` fails (sympy cannot order NaN).  IEEE decides otherwise where ``e`` is NaN
or infinite: ``v = t * math.inf; v != v`` is True for ``t == 0.0``, and compiled code that
took the static answer ran the other branch, with no guard to send a later value
elsewhere.  So a comparison of the user's code (:func:`run_node_hook`: the operation
Dynamo runs on fake values while it traces, which ends in ``SymNode``'s ``_eq``, ``_ne``,
``_lt``, ``_le``, ``_gt``, ``_ge``) whose operands include a float expression of a value
the bridge made symbolic, other than a bare symbol or a finite number, is built as an
opaque predicate instead (:class:`IeeeEq`, ...): sympy never decides it, value ranges
never bound it (:func:`bound_hook`), with numbers it is Python's comparison, and Dynamo
guards on it where the code branches (the guard prints the Python comparison,
``(L['t'] * math.inf) != (L['t'] * math.inf)``): one graph per path, as for any other
branch.  A bare marked symbol compared with a finite number (``t > 0``) is left to torch:
the symbol stands for a finite float (torch compiles a NaN or infinite float input as a
constant), where sympy's answer is IEEE's.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any

import sympy
from sympy.core.function import Application
from sympy.logic.boolalg import Boolean

from . import _torch
from ._state import peek_state

__all__ = [
    "IeeeAdd",
    "IeeeEq",
    "IeeeGe",
    "IeeeGt",
    "IeeeLe",
    "IeeeLt",
    "IeeeMul",
    "IeeeNe",
    "IeeeNotGe",
    "IeeeNotGt",
    "IeeeNotLe",
    "IeeeNotLt",
    "add_hook",
    "bound_hook",
    "bound_off",
    "eq_hook",
    "ge_hook",
    "gt_hook",
    "le_hook",
    "lt_hook",
    "mul_hook",
    "ne_hook",
    "neg_hook",
    "float_gate",
    "run_node_gate",
    "run_node_hook",
    "sub_hook",
]


class _Ieee(sympy.Function):  # type: ignore[misc]  # sympy is untyped
    """A binary float operation sympy must not rearrange (see module docstring)."""

    is_real = True  # as torch's FloatTrueDiv: comparisons with numbers stay expressions
    _op: Callable[[float, float], float]
    _symbol: str

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
            return sympy.Float(cls._op(float(a), float(b)))
        return None

    def _torch_sympystr(self, printer: Any) -> str:
        """torch's printers (guards, ``ExprPrinter`` subclasses): the Python operation."""
        a, b = self.args
        if isinstance(self, IeeeMul) and a == -1:
            return f"(-{printer._print(b)})"
        if isinstance(self, IeeeAdd) and isinstance(b, IeeeMul) and b.args[0] == -1:
            return f"({printer._print(a)} - {printer._print(b.args[1])})"
        return f"({printer._print(a)} {self._symbol} {printer._print(b)})"


class IeeeAdd(_Ieee):
    """``a + b`` on Python floats."""

    _op = staticmethod(operator.add)
    _symbol = "+"
    _torch_handler_name = "add"


class IeeeMul(_Ieee):
    """``a * b`` on Python floats."""

    _op = staticmethod(operator.mul)
    _symbol = "*"
    _torch_handler_name = "mul"


def _ours(node: Any, *others: Any) -> bool:
    """True when a float result's operands involve a symbol the bridge made."""
    state = peek_state(node.shape_env)
    if state is None:
        return False
    tables = (state.floats, state.backed, state.unbacked)
    for operand in (node, *others):
        for symbol in getattr(operand.expr, "free_symbols", ()):
            if any(symbol in table for table in tables):
                return True
    return False


def _faithful(result: Any, expr: Any) -> Any:
    result._expr = expr
    result._expr_cache = None
    result._expr_ver = -1
    return result


def _binary(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, Any]:
    result = wrapped(*args, **kwargs)
    other = kwargs["other"]
    if result.pytype is not float or not (
        _ours(instance, other) or _numbers_in_marked_compile(instance, other)
    ):
        return result, None
    return result, other


def add_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._add(other)``."""
    result, other = _binary(wrapped, instance, args, kwargs)
    if other is None:
        return result
    return _faithful(result, IeeeAdd(instance.expr, other.expr))


def sub_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._sub(other)``: ``a + (-1 * b)``, the same IEEE operation."""
    result, other = _binary(wrapped, instance, args, kwargs)
    if other is None:
        return result
    return _faithful(result, IeeeAdd(instance.expr, IeeeMul(-1, other.expr)))


def mul_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._mul(other)``."""
    result, other = _binary(wrapped, instance, args, kwargs)
    if other is None:
        return result
    return _faithful(result, IeeeMul(instance.expr, other.expr))


def neg_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._neg()``: ``-1 * a``, the same IEEE operation."""
    result = wrapped(*args, **kwargs)
    if result.pytype is not float or not (
        _ours(instance) or _numbers_in_marked_compile(instance, instance)
    ):
        return result
    return _faithful(result, IeeeMul(-1, instance.expr))


# ----------------------------------------------------------------------------- comparisons
def _python_number(value: Any) -> Any:
    """A sympy number as the Python number it stands for (``oo`` -> ``inf``, ``nan``)."""
    if value.is_Integer:
        return int(value)
    return float(value)


class _IeeeCompare(Application, Boolean):  # type: ignore[misc]  # sympy is untyped
    """A comparison sympy must not decide (see module docstring): with numbers, Python's.

    A boolean of its own (not a ``BooleanFunction``, which sympy's normal forms expand), and
    relational enough that ``Not(p)`` is its negation under IEEE: ``not (a < b)`` is not
    ``a >= b`` when an operand is NaN, so each order comparison has a negated twin.
    """

    is_Relational = True  # sympy's Not, And, Or: negate and compare as relations do
    _op: Callable[[Any, Any], bool]
    _symbol: str
    _negation: str  # the class name of the negation

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
            return sympy.true if cls._op(_python_number(a), _python_number(b)) else sympy.false
        return None

    @property
    def negated(self) -> Any:
        return _BY_NAME[self._negation](*self.args)

    @property
    def canonical(self) -> Any:
        return self

    def _torch_sympystr(self, printer: Any) -> str:
        a, b = self.args
        return f"({printer._print(a)} {self._symbol} {printer._print(b)})"


class _IeeeNot(_IeeeCompare):
    """``not (a <op> b)``: with a NaN operand, true for every order comparison."""

    def _torch_sympystr(self, printer: Any) -> str:
        a, b = self.args
        return f"(not ({printer._print(a)} {self._symbol} {printer._print(b)}))"


def _comparison(
    name: str, op: Callable[[Any, Any], bool], symbol: str, negation: str, negated: bool = False
) -> type[_IeeeCompare]:
    """The class of one comparison (``negated``: of ``not (a <symbol> b)``)."""

    def test(a: Any, b: Any) -> bool:
        return not op(a, b) if negated else op(a, b)

    text = f"not (a {symbol} b)" if negated else f"a {symbol} b"
    namespace = {
        "_op": staticmethod(test),
        "_symbol": symbol,
        "_negation": negation,
        "__doc__": f"``{text}`` on Python numbers.",
        "__module__": __name__,
    }
    return type(name, (_IeeeNot if negated else _IeeeCompare,), namespace)


IeeeEq = _comparison("IeeeEq", operator.eq, "==", "IeeeNe")
IeeeNe = _comparison("IeeeNe", operator.ne, "!=", "IeeeEq")
IeeeLt = _comparison("IeeeLt", operator.lt, "<", "IeeeNotLt")
IeeeLe = _comparison("IeeeLe", operator.le, "<=", "IeeeNotLe")
IeeeGt = _comparison("IeeeGt", operator.gt, ">", "IeeeNotGt")
IeeeGe = _comparison("IeeeGe", operator.ge, ">=", "IeeeNotGe")
IeeeNotLt = _comparison("IeeeNotLt", operator.lt, "<", "IeeeLt", negated=True)
IeeeNotLe = _comparison("IeeeNotLe", operator.le, "<=", "IeeeLe", negated=True)
IeeeNotGt = _comparison("IeeeNotGt", operator.gt, ">", "IeeeGt", negated=True)
IeeeNotGe = _comparison("IeeeNotGe", operator.ge, ">=", "IeeeGe", negated=True)


_COMPARISONS = (
    IeeeEq,
    IeeeNe,
    IeeeLt,
    IeeeLe,
    IeeeGt,
    IeeeGe,
    IeeeNotLt,
    IeeeNotLe,
    IeeeNotGt,
    IeeeNotGe,
)
_BY_NAME: dict[str, type[_IeeeCompare]] = {c.__name__: c for c in _COMPARISONS}
#: the operator torch records for each comparison's FX node
_FX_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "IeeeEq": operator.eq,
    "IeeeNe": operator.ne,
    "IeeeLt": operator.lt,
    "IeeeLe": operator.le,
    "IeeeGt": operator.gt,
    "IeeeGe": operator.ge,
}


def comparison_output(gm: Any) -> Any:
    """The expression of a comparison kept as Python's that ``gm`` returns as a value (the
    condition of a branch on an unbacked value, where no guard can be made), or None.
    Inductor computes a graph's symbolic outputs from their sympy expressions, simplified
    as real algebra: ``(n * nan) == (n * nan)`` came back ``True`` (the long fuzzer
    profile, program 699)."""
    for output in gm.graph.find_nodes(op="output"):
        for value in output.all_input_nodes:
            val = value.meta.get("example_value", value.meta.get("val"))
            expr = getattr(getattr(val, "node", None), "expr", None)
            if isinstance(expr, sympy.Basic) and expr.has(*_COMPARISONS):
                return expr
    return None


def _plain(expr: Any) -> bool:
    """A bare symbol or a finite number: where sympy's answer is IEEE's."""
    if isinstance(expr, sympy.Symbol):
        return True
    return bool(expr.is_number) and bool(expr.is_finite)


Hook = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


def _predicate(node: Any, other: Any, comparison: type[_IeeeCompare]) -> Any:
    """The boolean ``SymNode`` of ``comparison(node, other)``, built as torch builds a
    comparison's result (``sym_node.binary_magic_impl``) but never through a sympy relation,
    which decides ``Ne(e, e)`` and fails on NaN (``Lt(e, nan)``: "Invalid NaN comparison")."""
    op = comparison._op
    hint = None
    if node.hint is not None and other.hint is not None:
        hint = bool(op(node.hint, other.hint))
    fx_node, _ = node.shape_env._create_fx_call_function(
        _FX_OPS[comparison.__name__], (node.fx_node, other.fx_node)
    )
    return type(node)(
        comparison(node.expr, other.expr), node.shape_env, bool, hint, fx_node=fx_node
    )


_local = threading.local()
_USER_COMPARISONS = frozenset(
    {operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge}
)


def float_gate(node: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the hooks on ``SymNode`` arithmetic and comparisons run: only with a float
    operand (they act on float results alone), so int (shape) arithmetic runs torch's
    code after this one check."""
    if node.pytype is float:
        return True
    other = args[0] if args else kwargs.get("other")
    return getattr(other, "pytype", None) is float


def run_node_gate(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether :func:`run_node_hook` runs: for a comparison of the user's program, or in
    a compile that holds a mark (its assertion handling); Dynamo passes its
    ``OutputGraph`` as the tracer."""
    node = args[1] if len(args) > 1 else kwargs.get("node")
    if getattr(node, "target", None) in _USER_COMPARISONS:
        return True
    tracer = args[0] if args else kwargs.get("tracer")
    return peek_state(getattr(tracer, "shape_env", None)) is not None


def run_node_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``torch._dynamo.utils.run_node(tracer, node, args, kwargs, nnmodule)``, which
    runs each operation of the user's program on fake values while Dynamo traces it: a
    comparison run there is the user's (``a < b``, ``v != v``), and only those are kept as
    Python's.  torch compares symbolic floats for its own bookkeeping too
    (``SymNodeVariable.create`` checks a new value against its example value, ``e != e``),
    and there sympy's answer is the one it means."""
    from ._torchs_own import torchs_own

    comparison = getattr(kwargs.get("node"), "target", None) in _USER_COMPARISONS
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + comparison
    try:
        return wrapped(*args, **kwargs)
    except Exception as error:  # the program's own operation failed: torch's to report
        cause = error if isinstance(error, AssertionError) else error.__cause__
        if isinstance(cause, AssertionError):  # torch's own, on a marked int's expression
            _specialize_if_marked(kwargs, cause)
        torchs_own(error)
        raise
    finally:
        _local.depth = depth


def _specialize_if_marked(kwargs: dict[str, Any], error: AssertionError) -> None:
    """An assertion of torch's own, failing while it runs an operation on a marked int's
    symbolic expression: restart with those ints specialized (exact, as stock compiles a
    plain int; a strict mark refuses).  torch's ``Mod`` on numbers asserts a non-negative
    dividend, and ``math.floor((s // 2) * 0.5)`` with ``s == -1`` fails that way
    (``AssertionError(-1)``; stock torch with ``dynamic=True`` fails the same; the long
    fuzzer profile, program 1796).  A user's own error is never an ``AssertionError`` of
    torch's making here; one that is passes on as before."""
    import torch

    from ._restarts import ask_restart

    values = [*kwargs.get("args", ()), *dict(kwargs.get("kwargs") or {}).values()]
    for value in values:
        if not isinstance(value, torch.SymInt | torch.SymFloat):
            continue
        state = peek_state(value.node.shape_env)
        if state is None:
            continue
        symbols = value.node.expr.free_symbols & set(state.backed)
        if symbols:
            ask_restart(
                value.node.shape_env,
                state,
                symbols,
                f"meets an assertion of torch's own on its symbolic expression ({error!r})",
            )


def _numbers_in_marked_compile(node: Any, other: Any) -> bool:
    """Both operands numbers, one NaN or infinite, in a compile with marks: a marked value
    a guard has since replaced by its value (``math.log(self.s)`` forces ``s``, then
    ``self.s + math.nan < 5``).  sympy cannot order NaN ("Invalid NaN comparison");
    the predicate of two numbers is Python's answer."""
    state = peek_state(node.shape_env)
    return (
        state is not None
        and state.marked
        and bool(node.expr.is_number)
        and bool(other.expr.is_number)
    )


def _as_torch(wrapped: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """torch's comparison, called as torch calls it: an error it raises is torch's own,
    not a failure of the hook (``Lt(2.5, nan)``, "Invalid NaN comparison", on values no
    mark made, in a process where an earlier program installed the hooks: the long fuzzer
    profile, program 1721, reported as dynscalar's internal error)."""
    from ._torchs_own import torchs_own

    try:
        return wrapped(*args, **kwargs)
    except Exception as error:
        torchs_own(error)
        raise


def _nan_numbers(node: Any, other: Any) -> bool:
    """Both operands numbers, one NaN: sympy cannot order it and torch's comparison fails
    ("Invalid NaN comparison", a failed compile), marks or not, so Python's answer changes
    no program stock torch compiles.  Met with an unmarked float that automatic dynamic made
    symbolic after a marked one at the same source: ``self.s + math.nan < 6`` (the long
    fuzzer profile, program 1290)."""
    return (
        bool(node.expr.is_number)
        and bool(other.expr.is_number)
        and (node.expr is sympy.nan or other.expr is sympy.nan)
    )


def _comparison_hook(comparison: type[_IeeeCompare]) -> Hook:
    def hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        other = kwargs["other"]
        if (
            not getattr(_local, "depth", 0)
            or (instance.pytype is not float and other.pytype is not float)
            or (_plain(instance.expr) and _plain(other.expr))
            or not (
                _ours(instance, other)
                or _numbers_in_marked_compile(instance, other)
                or _nan_numbers(instance, other)
            )
            or _torch.get_proxy_mode() is not None  # dispatched: comes back here outside it
        ):
            return _as_torch(wrapped, args, kwargs)
        return _predicate(instance, other, comparison)

    hook.__doc__ = f"Around ``SymNode._{comparison.__name__[4:].lower()}(other)``."
    return hook


def bound_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``symbolic_shapes.bound_sympy(expr, ranges)``, the value-range analysis that
    decides comparisons statically: its bounds are real-number bounds (``t * 0.0`` is
    exactly 0), so a boolean holding one of the comparisons above is unknown to it (and
    torch's analysis has no handler for them)."""
    expr = kwargs["expr"]
    if isinstance(expr, Boolean) and expr.has(*_COMPARISONS):
        return _torch.ValueRanges.unknown_bool()
    return wrapped(*args, **kwargs)


#: the same hook where the safety net falls back (a failure here, or a frame compiled as
#: stock): a comparison already built must never reach torch's analysis
bound_off = bound_hook


eq_hook = _comparison_hook(IeeeEq)
ne_hook = _comparison_hook(IeeeNe)
lt_hook = _comparison_hook(IeeeLt)
le_hook = _comparison_hook(IeeeLe)
gt_hook = _comparison_hook(IeeeGt)
ge_hook = _comparison_hook(IeeeGe)
