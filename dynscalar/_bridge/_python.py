"""Python's operators on symbolic values: what compiled code computes, or raises, is Python's.

Named for the language whose rules it keeps: every function here answers "what does
Python compute (or raise) for this operator on these values?", where Dynamo's trace,
sympy's algebra or torch's symbolic forms would compute something else.  The rules for
Python operators on marked values live here and nowhere else; torch ops taking a float
are op rules (``dynscalar.ops``, ``_ops``), and what eager *stores* afterwards is
write-back's (``_writeback``, which applies the rules of the last section and records the
constants they make as the proxies eager holds).

**IEEE order** (hooks on ``SymNode``'s ``_add``/``_sub``/``_mul``/``_neg``, the one place every
symbolic arithmetic goes through, Dynamo's trace and AOTAutograd's).  torch models a
symbolic float as a sympy expression, and sympy rewrites ``+``, ``-`` and ``*`` as
real-number algebra: ``n * (1 - r)`` becomes ``n - n*r``, ``(t + 1e16) - 1e16`` becomes
``t``, ``t * 0.1 * 3`` becomes ``0.3*t``.  IEEE arithmetic does not follow those rules, so
an expression that differs from the one the user's code computes can give other numbers.
Guards print the expression (``math.trunc(8.0 - 8.0*L['r'])`` for ``int(8 * (1 - r))``),
AOTAutograd keys the symbolic values of its trace by expression (two values with the same
expression become one graph value), and the trace decides each branch on the hint Python
computed: the guard then checks a value the graph never sees.  For ``int(10 * (1 - 0.9))``
Python gives 0 and the simplified expression 1, and the compile failed with "Guard failed
on the same frame it was created".  So every ``+``, ``-``, ``*`` and unary ``-`` whose
result is a float computed from a value the bridge made symbolic builds an opaque function
instead (:class:`IeeeAdd`, :class:`IeeeMul`: ``a - b`` is ``a + (-1 * b)`` and ``-a`` is
``-1 * a``, which IEEE defines to be the same operations), the way torch already keeps
float ``/`` and ``**`` opaque (``FloatTrueDiv``, ``FloatPow``).  sympy cannot rearrange
them; with numbers they compute the Python float operation; printers write them as the
Python operation, in order, parenthesized (``math.trunc((8.0 * (1.0 - L['r'])))``);
value-range and interpreting passes read them as ``add``/``mul``
(``_torch_handler_name``).  A float expression of values no mark made is left to torch,
exactly as without dynscalar.

*Forced values.*  A guard can replace a marked symbol by its value (``math.log(self.t)``
forces ``t``), and the expressions computed from it afterwards are sympy numbers: sympy
multiplies its floats with arbitrary precision, so ``0.5 * 1e308 * 10`` stayed finite
(Python: ``inf``) and ``v - v >= 0`` was decided ``True`` where ``inf - inf`` is NaN
(the long fuzzer profile, program 4369).  In a compile with marks, float arithmetic on two
numbers is built through the same functions, which compute Python's float operation.

**IEEE comparisons.**  sympy decides relations as real algebra too: ``Ne(e, e)`` is
``False`` for any expression ``e`` and ``Eq(e, e)`` ``True``, a real expression is below
``oo``, and ``Lt(e, nan)`` fails (sympy cannot order NaN).  IEEE decides otherwise where
``e`` is NaN or infinite: ``v = t * math.inf; v != v`` is True for ``t == 0.0``, and
compiled code that took the static answer ran the other branch, with no guard to send a
later value elsewhere.  So a comparison of the user's code (:func:`run_node_hook`: the
operation Dynamo runs on fake values while it traces, which ends in ``SymNode``'s ``_eq``,
``_ne``, ``_lt``, ``_le``, ``_gt``, ``_ge``) whose operands include a float expression of a
value the bridge made symbolic, other than a bare symbol or a finite number, is built as
an opaque predicate instead (:class:`IeeeEq`, ...): sympy never decides it, value ranges
never bound it (:func:`bound_hook`), with numbers it is Python's comparison, and Dynamo
guards on it where the code branches (the guard prints the Python comparison,
``(L['t'] * math.inf) != (L['t'] * math.inf)``): one graph per path, as for any other
branch.  A bare marked symbol compared with a finite number (``t > 0``) is left to torch:
the symbol stands for a finite float (torch compiles a NaN or infinite float input as a
constant), where sympy's answer is IEEE's.

**Where Python raises** (hooks on ``BuiltinVariable``).  ``range(x)`` with a float ``x``
raises ``TypeError`` in Python.  Dynamo 2.13 (``call_range`` in ``variables/builtin.py``)
guards a ``SymFloat`` argument to its current value and builds the range anyway: with a
dynamic float (``range(self.t % 3)`` where ``t`` is a ``DynamicFloat``, or a plain float
that automatic dynamic made symbolic) compiled code loops ``int(t % 3)`` times where eager
raises.  :func:`range_hook` raises eager's ``TypeError`` inside the traced program (an
observed exception: the frame runs eagerly and raises it).  Installed only on torch 2.13's
``call_range(self, tx, *args)``: torch 2.14 converts the arguments with ``pynumber_index``,
which raises the same ``TypeError``.

``int(x)`` and ``round(x)`` of a float that is NaN or infinite raise ``ValueError`` /
``OverflowError`` in Python.  Dynamo 2.13 evaluates them on the constant (torch compiles a
NaN or infinite float as one) or on the symbol's hint (``n * (1 - r)`` overflowing for a
huge ``r``) and fails with ``InternalTorchDynamoError`` / ``TorchRuntimeError`` instead.
In a compile that holds a marked value :func:`python_raises_hook` raises Python's
exception inside the traced program, as for ``range``; a compile without marks is left to
torch.

Division by zero: ``w / w_sum``, ``//``, ``%``, ``divmod`` and their in-place forms, with a
marked value (or one computed from it) as an operand, raise ``ZeroDivisionError`` in Python
where the divisor is zero (``pow``: a zero base with a negative exponent).  Dynamo traces
the division into the graph, which raised at run time, outside the user's ``try``
(schedulefree's ``try: c = w / w_sum except ZeroDivisionError: c = 0`` in its first steps).
The hook asks the question Python asks, on the symbolic divisor (``w_sum == 0``): a guarded
predicate, like the user's own ``if`` (one graph per path), and where it holds raises
Python's exception, with Python's message, inside the traced program, where the user's
``except`` catches it.  An unbacked divisor has no value to ask about (its mark promises no
guards): left to torch.

**max and min** (:func:`max_min_operands`, called by ``_ops``' hook on builtins), where
Dynamo cannot take the operands as they are:

* a bool operand: Dynamo's fake call of ``torch.sym_max(SymInt, bool)`` fails where Python
  compares; the bool is passed as the int it equals;
* a NaN operand: resolved as Python's comparisons resolve it (sympy refuses to compare);
* an operand whose expression is already :data:`DEEP` levels high: compared as Python does
  instead of nesting further (:func:`_select`), so chains of ``max(v, c) + 1`` never reach
  sympy's recursion limit.

**Operators Dynamo would trace otherwise** (applied by write-back's recorder,
``_writeback``, which owns the proxies' side of them):

* ``pow`` with a negative dynamic float base (:func:`negative_power_operands`): torch
  refuses the symbolic power; the float is specialized, as stock torch would;
* a float ``//`` or ``divmod`` of a marked value (:func:`floor_division_operands`):
  torch's symbolic form is not Python's; the operands are specialized;
* ``~`` of an int, traced as ``-a - 1``, and a dunder traced as the operator it stands for
  (:func:`call_operator`, :func:`operator_for`).

Examples:
    >>> import operator
    >>> operator_for("__radd__") == (operator.add, True)
    True
"""

from __future__ import annotations

import builtins
import math
import operator
import threading
from collections.abc import Callable
from typing import Any

import sympy
from sympy.core.function import Application
from sympy.logic.boolalg import Boolean

from .._proxy import DynamicScalar
from . import _torch
from ._floats import ask_restart
from ._state import compile_state, is_dynamic_value, peek_state, realized
from ._torchs_own import torchs_own

__all__ = [
    "DEEP",
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
    "USER_COMPARISONS",
    "add_hook",
    "bound_hook",
    "call_operator",
    "comparison_output",
    "eq_hook",
    "floor_division_operands",
    "ge_hook",
    "gt_hook",
    "le_hook",
    "lt_hook",
    "max_min_operands",
    "mul_hook",
    "ne_hook",
    "neg_hook",
    "negative_power_operands",
    "operator_for",
    "python_raises_hook",
    "range_hook",
    "run_node_hook",
    "sub_hook",
]


# ------------------------------------------------------------------------------------------- shared
#: builtins that raise ZeroDivisionError for a zero base and a negative exponent, and that
#: torch refuses for a negative symbolic float base
_POWERS = frozenset({operator.pow, operator.ipow, pow})
Hook = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


def _state_of(tx: Any) -> Any:
    """What the bridge made symbolic in ``tx``'s compile (None: nothing was marked)."""
    return peek_state(getattr(tx.output, "shape_env", None))


def _any_marked(state: Any, symbols: Any) -> bool:
    """True when one of ``symbols`` is a symbol a mark made in ``state``'s compile."""
    tables = (state.marks.floats, state.marks.backed, state.marks.unbacked)
    return any(symbol in table for symbol in symbols for table in tables)


def _made_from_mark(tx: Any, sym: Any) -> bool:
    """A symbolic value made from a mark, as it was made: a guard the trace installed
    since (``Eq(s, 0)`` after a first division by zero) can have replaced the symbol by a
    number in its current expression, and torch then fails on ``7 // 0`` itself."""
    state = _state_of(tx)
    if state is None:
        return False
    made = getattr(getattr(getattr(sym, "node", None), "_expr", None), "free_symbols", ())
    return _any_marked(state, made)


def _number(variable: Any) -> tuple[Any, Any] | None:
    """(the symbolic value or None, its Python value) of an int/float operand; None for
    anything else (a tensor, an unbacked symbol without a value)."""
    import torch

    if isinstance(variable, _torch.SymNodeVariable):
        sym = variable.sym_num
        hint = sym.node.hint if isinstance(sym, torch.SymInt | torch.SymFloat) else None
        return (sym, hint) if type(hint) in (int, float) else None
    if variable.is_python_constant():
        value = variable.as_python_constant()
        return (None, value) if type(value) in (int, float, bool) else None
    return None


# --------------------------------------------------------------------------------------- IEEE order
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
    return any(
        _any_marked(state, getattr(operand.expr, "free_symbols", ())) for operand in (node, *others)
    )


def _arithmetic_hook(build: Callable[[Any, Any], Any], doc: str) -> Hook:
    """The hook around one ``SymNode`` arithmetic method: a float result computed from a
    value the bridge made gets the expression ``build(a, b)`` of the operands' expressions
    (``_neg`` has no ``other``: ``b`` is ``a``)."""

    def hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        other = kwargs.get("other", instance)
        if result.pytype is not float or not (
            _ours(instance, other) or _numbers_in_marked_compile(instance, other)
        ):
            return result
        result._expr = build(instance.expr, other.expr)
        result._expr_cache = None
        result._expr_ver = -1
        return result

    hook.__doc__ = doc
    return hook


add_hook = _arithmetic_hook(IeeeAdd, "Around ``SymNode._add(other)``.")
sub_hook = _arithmetic_hook(
    lambda a, b: IeeeAdd(a, IeeeMul(-1, b)),
    "Around ``SymNode._sub(other)``: ``a + (-1 * b)``, the same IEEE operation.",
)
mul_hook = _arithmetic_hook(IeeeMul, "Around ``SymNode._mul(other)``.")
neg_hook = _arithmetic_hook(
    lambda a, _: IeeeMul(-1, a), "Around ``SymNode._neg()``: ``-1 * a``, the same IEEE operation."
)


# -------------------------------------------------------------------------------------- comparisons
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
    _op: Callable[[Any, Any], Any]  # the operator (torch records it for the FX node)
    _negated: bool  # ``not (a <op> b)``: with a NaN operand, true for every order comparison
    _symbol: str
    _negation: str  # the class name of the negation

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
            holds = bool(cls._op(_python_number(a), _python_number(b)))
            return sympy.true if holds != cls._negated else sympy.false
        return None

    @property
    def negated(self) -> Any:
        return _BY_NAME[self._negation](*self.args)

    @property
    def canonical(self) -> Any:
        return self

    def _torch_sympystr(self, printer: Any) -> str:
        a, b = self.args
        text = f"({printer._print(a)} {self._symbol} {printer._print(b)})"
        return f"(not {text})" if self._negated else text


_BY_NAME: dict[str, type[_IeeeCompare]] = {}


def _comparison(
    name: str, op: Callable[[Any, Any], bool], symbol: str, negation: str, negated: bool = False
) -> type[_IeeeCompare]:
    """The class of one comparison (``negated``: of ``not (a <symbol> b)``)."""
    text = f"not (a {symbol} b)" if negated else f"a {symbol} b"
    namespace = {
        "_op": staticmethod(op),
        "_negated": negated,
        "_symbol": symbol,
        "_negation": negation,
        "__doc__": f"``{text}`` on Python numbers.",
        "__module__": __name__,
    }
    made = _BY_NAME[name] = type(name, (_IeeeCompare,), namespace)
    return made


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
_COMPARISONS = tuple(_BY_NAME.values())


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


def _predicate(node: Any, other: Any, comparison: type[_IeeeCompare]) -> Any:
    """The boolean ``SymNode`` of ``comparison(node, other)``, built as torch builds a
    comparison's result (``sym_node.binary_magic_impl``) but never through a sympy relation,
    which decides ``Ne(e, e)`` and fails on NaN (``Lt(e, nan)``: "Invalid NaN comparison")."""
    op = comparison._op
    hint = None
    if node.hint is not None and other.hint is not None:
        hint = bool(op(node.hint, other.hint)) != comparison._negated
    fx_node, _ = node.shape_env._create_fx_call_function(op, (node.fx_node, other.fx_node))
    return type(node)(
        comparison(node.expr, other.expr), node.shape_env, bool, hint, fx_node=fx_node
    )


_local = threading.local()
USER_COMPARISONS = frozenset(c._op for c in _COMPARISONS)


def run_node_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``torch._dynamo.utils.run_node(tracer, node, args, kwargs, nnmodule)``, which
    runs each operation of the user's program on fake values while Dynamo traces it: a
    comparison run there is the user's (``a < b``, ``v != v``), and only those are kept as
    Python's.  torch compares symbolic floats for its own bookkeeping too
    (``SymNodeVariable.create`` checks a new value against its example value, ``e != e``),
    and there sympy's answer is the one it means."""
    comparison = getattr(kwargs.get("node"), "target", None) in USER_COMPARISONS
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

    values = [*kwargs.get("args", ()), *dict(kwargs.get("kwargs") or {}).values()]
    for value in values:
        if not isinstance(value, torch.SymInt | torch.SymFloat):
            continue
        state = peek_state(value.node.shape_env)
        if state is None:
            continue
        symbols = value.node.expr.free_symbols & set(state.marks.backed)
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


eq_hook = _comparison_hook(IeeeEq)
ne_hook = _comparison_hook(IeeeNe)
lt_hook = _comparison_hook(IeeeLt)
le_hook = _comparison_hook(IeeeLe)
gt_hook = _comparison_hook(IeeeGt)
ge_hook = _comparison_hook(IeeeGe)


# ------------------------------------------------------------------------------ where Python raises
#: builtins that raise ZeroDivisionError for a zero second operand
_DIVISIONS = frozenset(
    {
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.itruediv,
        operator.ifloordiv,
        operator.imod,
        divmod,
    }
)


def range_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``BuiltinVariable.call_range(tx, *args)``."""

    tx, *call_args = args
    for arg in call_args:
        if isinstance(arg, _torch.SymNodeVariable) and arg.python_type() is float:
            _torch.raise_observed_exception(
                TypeError, tx, args=["'float' object cannot be interpreted as an integer"]
            )
    return wrapped(*args, **kwargs)


def _non_finite(tx: Any, arg: Any) -> float | None:
    """The value of a float ``arg`` that is NaN or infinite, in a compile holding a marked
    value (None otherwise)."""
    import torch

    if _state_of(tx) is None:
        return None
    if isinstance(arg, _torch.SymNodeVariable):
        sym = arg.sym_num
        value = sym.node.hint if isinstance(sym, torch.SymFloat) else None
    elif arg.is_python_constant():
        value = arg.as_python_constant()
    else:
        return None
    if type(value) is float and not math.isfinite(value):
        return value
    return None


def _raise_conversion(tx: Any, value: float) -> None:
    if value != value:
        _torch.raise_observed_exception(
            ValueError, tx, args=["cannot convert float NaN to integer"]
        )
    _torch.raise_observed_exception(
        OverflowError, tx, args=["cannot convert float infinity to integer"]
    )


def _holds(operand: tuple[Any, Any], test: Any) -> bool:
    """``test`` of the operand's value: on a symbolic value a guarded predicate (the path
    the trace takes), on a constant Python's answer."""
    sym, value = operand
    return bool(test(sym if sym is not None else value))


def _marked(tx: Any, variable: Any) -> bool:
    """A traced symbolic value made from a mark (:func:`_made_from_mark`)."""
    return isinstance(variable, _torch.SymNodeVariable) and _made_from_mark(tx, variable.sym_num)


def _symbolic_zero(fn: Any, divisor: Any) -> bool:
    """An unmarked symbolic divisor that is 0 now, in a process where dynscalar traces: torch
    divides the fake values and the compile fails (``TorchRuntimeError``: "Dynamo failed to
    run FX node ... ZeroDivisionError": its hint is computed by dividing), so asking
    Python's question instead changes no program stock torch compiles.  Met where a marked
    value's graph guards ``n != 0`` and a plain 0 then compiles with automatic dynamic (the
    long fuzzer profile, program 1666)."""
    import torch

    if fn in _POWERS or not isinstance(divisor, _torch.SymNodeVariable) or _unbacked(divisor):
        return False
    sym = divisor.sym_num
    return isinstance(sym, torch.SymInt | torch.SymFloat) and sym.node.hint == 0


def _unbacked(variable: Any) -> bool:
    """A symbolic value with an unbacked symbol in it (no value to guard on)."""
    if not isinstance(variable, _torch.SymNodeVariable):
        return False
    unbacked = (_torch.SymT.UNBACKED_INT, _torch.SymT.UNBACKED_FLOAT)
    symbols = variable.sym_num.node.expr.free_symbols
    return any(_torch.symbol_is_type(s, unbacked) for s in symbols)


def _zero_division(tx: Any, fn: Any, call_args: Any) -> None:
    """Raise Python's ``ZeroDivisionError`` in the traced program where ``fn`` of the
    operands raises it in Python (see the module docstring); else return."""
    if len(call_args) != 2:
        return
    left, right = (realized(a) for a in call_args)
    if not (_marked(tx, left) or _marked(tx, right) or _symbolic_zero(fn, right)):
        return
    divisor = left if fn in _POWERS else right
    if _unbacked(divisor):
        # no guard can be made: Python's question asked as the user's own ``if`` would be,
        # which on an unbacked value is a graph break (or, with fullgraph, a clear error)
        zero = _torch.ConstantVariable.create(0)
        asked = _torch.BuiltinVariable(operator.eq).call_function(tx, [divisor, zero], {})
        if isinstance(asked, _torch.SymNodeVariable):
            asked.evaluate_expr(tx.output)
        return  # decided without a guard (a range without 0): torch divides
    a, b = _number(left), _number(right)
    if a is None or b is None:
        return
    try:
        fn(a[1], b[1])
    except ZeroDivisionError as error:
        message: str | None = str(error)
    except Exception:  # noqa: BLE001 - other errors (overflow): Dynamo's own handling
        return
    else:
        message = None
    if fn in _POWERS:
        raises = _holds(a, lambda v: v == 0) and _holds(b, lambda v: v < 0)
    else:
        raises = _holds(b, lambda v: v == 0)
    if raises and message is not None:
        _torch.raise_observed_exception(ZeroDivisionError, tx, args=[message])


def python_raises_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: where Python raises for
    the values, the traced program raises it too: ``int(x)`` and ``round(x)`` (without
    ``ndigits``, which returns a float and NaN/inf in Python too) of a NaN or infinite
    float, and division by zero.

    Not a hook on ``call_int``/``call_round`` themselves: Dynamo keeps the handlers it
    builds for a builtin in a class-level cache that holds those methods as first seen.
    """
    fn = instance.fn
    if fn is int or fn is round:
        tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
        if len(call_args) == 1 and not call_kwargs:
            value = _non_finite(tx, realized(call_args[0]))
            if value is not None:
                _raise_conversion(tx, value)
    elif (fn in _DIVISIONS or fn in _POWERS) and not kwargs["kwargs"]:
        _zero_division(kwargs["tx"], fn, kwargs["args"])
    return wrapped(*args, **kwargs)


# -------------------------------------------------------------------------------------- max and min
def max_min_operands(wrapped: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``max(step, True)`` / ``min(step, nan)`` with a marked ``step``: Dynamo's fake call of
    ``torch.sym_max(SymInt, bool)`` (or with NaN) fails to compile where Python compares.
    The bool is passed as the int it equals (the value and every comparison are the same;
    which object eager returns is decided again at write-back, ``_writeback``); a NaN is
    resolved as Python's comparisons resolve it.  An operand whose expression is already
    deep is compared instead (:func:`_select`)."""

    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    items = list(call_args)
    if len(items) == 1 and isinstance(items[0], _torch.BaseListVariable):  # min([s, t, 4])
        items = list(items[0].items)
    if call_kwargs or len(items) < 2 or not any(is_dynamic_value(tx, a) for a in items):
        return wrapped(*args, **kwargs)
    if any(_is_nan_constant(a) for a in items):
        # every comparison with NaN is False: Python keeps the first item when it is NaN,
        # and never picks a NaN that comes later (sympy refuses to compare with NaN)
        if _is_nan_constant(items[0]):
            return items[0]
        items = [a for a in items if not _is_nan_constant(a)]
        if len(items) == 1:  # min(t, nan) is t: traced as min(t, t), a call Dynamo records
            items = [items[0], items[0]]
    operands = [
        _torch.ConstantVariable.create(int(a.value)) if _is_bool_constant(a) else a for a in items
    ]
    if _too_deep(tx, items):
        return _select(tx, fn, items)
    return wrapped(tx, operands, {})


#: The height of a symbolic expression past which ``max``/``min`` compare instead of
#: nesting: sympy walks expressions recursively (``Expr.is_number``: two Python frames a
#: level), and ``max(v, c) + 1`` repeated adds two levels each time: from ~150 repetitions
#: stock torch's own dynamic ints fail with ``RecursionError``, and long before that every
#: new expression costs time in proportion to its height.
DEEP = 48


def _too_deep(tx: Any, items: list[Any]) -> bool:
    """True when one operand's expression is at least :data:`DEEP` high and every operand
    is a backed symbolic number or an int/float constant (so each comparison can be
    decided, statically or by a guard)."""

    deep = False
    heights = compile_state(tx.output.shape_env).python.heights
    for item in items:
        if isinstance(item, _torch.SymNodeVariable):
            node = getattr(item.sym_num, "node", None)
            if node is None or node.hint is None:  # unbacked: no comparison is decidable
                return False
            deep = deep or _height(node.expr, heights) >= DEEP
        elif not (item.is_python_constant() and type(item.as_python_constant()) in (int, float)):
            return False
    return deep


def _height(expr: Any, memo: dict[Any, int]) -> int:
    """The height of the sympy expression ``expr`` (an atom: 1), walked without recursion."""
    stack = [expr]
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        pending = [arg for arg in top.args if arg not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        memo[top] = 1 + max((memo[arg] for arg in top.args), default=0)
    return memo[expr]


def _select(tx: Any, fn: Any, items: list[Any]) -> Any:
    """``max``/``min`` as Python computes them: the first item, replaced by each later one
    that compares greater (``max``) or smaller (``min``).  Each comparison is traced as the
    user's ``if`` would be: decided statically where it can be, else a guard on the
    predicate (never on a value).  Returns the winning operand itself, which write-back
    then stores as it is (``CompileState.writeback.selected``): the very object eager returns."""

    compare = _torch.BuiltinVariable(operator.gt if fn is max else operator.lt)
    best = items[0]
    for item in items[1:]:
        result: Any = compare.call_function(tx, [item, best], {})
        if result.is_python_constant():
            wins = bool(result.as_python_constant())
        else:
            wins = bool(result.evaluate_expr(tx.output))
        if wins:
            best = item
    compile_state(tx.output.shape_env).writeback.selected = best
    return best


def _is_nan_constant(variable: Any) -> bool:
    value = variable.value if isinstance(variable, _torch.ConstantVariable) else None
    return type(value) is float and value != value


def _is_bool_constant(variable: Any) -> bool:
    return isinstance(variable, _torch.ConstantVariable) and type(variable.value) is bool


# ----------------------------------------------------------------------- operators traced otherwise
def negative_power_operands(fn: Any, operands: Any) -> tuple[int, ...]:
    """The positions of the operands of ``pow(t, 2)`` to trace as the constants they hold,
    where ``t`` is a dynamic float that is negative now (empty: the call as it is).  Torch
    refuses symbolic float powers with a negative base (``SymFloat.__pow__`` checks
    ``self >= 0`` to avoid complex results; ``__rpow__`` checks the base when the exponent
    is symbolic), and the compile fails where eager Python computes the power.  The float
    is specialized instead (exact, a value guard: one compile per such value, reported as
    a specialization)."""
    import torch

    if fn not in _POWERS or len(operands) < 2:
        return ()
    symbolic = _torch.SymNodeVariable
    base, exponent = realized(operands[0]), realized(operands[1])

    def negative(variable: Any) -> bool:
        if isinstance(variable, symbolic):
            hint = getattr(getattr(variable.sym_num, "node", None), "hint", None)
            return hint is not None and hint < 0
        value = variable.as_python_constant() if variable.is_python_constant() else None
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0

    def float_symbol(variable: Any) -> bool:
        return isinstance(variable, symbolic) and isinstance(variable.sym_num, torch.SymFloat)

    if negative(base) and (float_symbol(base) or float_symbol(exponent)):
        return (0,) if isinstance(base, symbolic) else (1,)
    if (
        negative(base)
        and negative(exponent)
        and (isinstance(base, symbolic) or isinstance(exponent, symbolic))
    ):
        # an int to a negative int power is a float: the same refusal (``t ** -1`` with a
        # negative marked int ``t``; the long fuzzer profile, programs 2617, 3106, 3621)
        return tuple(i for i, v in ((0, base), (1, exponent)) if isinstance(v, symbolic))
    return ()


#: builtins whose float form torch computes as ``floor(a / b)``
_FLOOR_DIVISIONS = frozenset({operator.floordiv, operator.ifloordiv, divmod})


def floor_division_operands(tx: Any, fn: Any, operands: Any) -> tuple[int, ...]:
    """The positions of the operands of a float ``//`` (or ``divmod``) with a marked value
    to trace as the constants they hold: each symbolic one (empty: the call as it is).

    torch defines ``a // b`` on a symbolic float as ``floor(a / b)``
    (``SymFloat.__floordiv__``), which is not Python's: ``4 // 0.1`` is ``39.0`` in Python
    (the remainder is computed first, ``fmod``) and ``floor(4 / 0.1)`` is ``40.0``.  Dynamo's
    trace and AOTAutograd's graph both compute torch's form (the long fuzzer profile,
    programs 965 and 3059: wrong numbers on aot_eager).  Python's algorithm has no exact
    symbolic form, so the operands are specialized (a guard on each value, as stock torch
    compiles every float; reported as a specialization) and the result is Python's, on
    constants that stand for the proxies eager holds (``self.t //= 2`` stays a
    ``DynamicFloat``: write-back's side, ``_writeback``).  A zero divisor is left
    to the division-by-zero rule (:func:`python_raises_hook`), which asks ``b == 0``
    without specializing; an unbacked operand has no value."""
    import torch

    if fn not in _FLOOR_DIVISIONS or len(operands) != 2:
        return ()
    symbolic = _torch.SymNodeVariable
    values = [realized(v) for v in operands]
    syms = [v.sym_num for v in values if isinstance(v, symbolic)]
    if not syms or not any(_made_from_mark(tx, s) for s in syms):
        return ()
    numbers = [n[1] for n in map(_number, values) if n is not None]
    kinds = [type(n) for n in numbers]
    if len(numbers) != 2 or not set(kinds) <= {int, float} or float not in kinds:
        return ()  # not a float division (or no value to read: unbacked, a tensor)
    if numbers[1] == 0:
        return ()  # Python raises ZeroDivisionError: the zero rule's question
    if not all(isinstance(s, torch.SymInt | torch.SymFloat) for s in syms):
        return ()
    return tuple(i for i, v in enumerate(values) if isinstance(v, symbolic))


def operator_for(name: str) -> tuple[Any, bool] | None:
    """(function, reflected) that Python's operator syntax calls for the dunder ``name``:
    ``__add__`` -> ``operator.add``, ``__radd__`` -> ``operator.add`` reflected,
    ``__iadd__`` -> ``operator.iadd``, ``__neg__`` -> ``operator.neg``, ``__floor__`` ->
    ``math.floor`` ... (None for other names)."""
    if not (name.startswith("__") and name.endswith("__")) or not hasattr(DynamicScalar, name):
        return None
    core = name[2:-2]
    for candidate, reflected in ((core, False), (core[1:], core.startswith("r"))):
        for module in (operator, math, builtins):
            function = getattr(module, candidate, None) or getattr(module, candidate + "_", None)
            if callable(function) and not isinstance(function, type):
                if module is builtins and candidate not in ("divmod", "pow", "round", "abs"):
                    continue
                if candidate.startswith("i") and reflected:
                    continue
                return function, reflected
    return None


def call_operator(tx: Any, function: Any, operands: list[Any]) -> Any:
    """Trace ``function(*operands)``; ``~`` on an int as ``-a - 1`` (Dynamo 2.13 cannot
    trace ``operator.invert`` on a SymInt and gives up on the whole frame)."""
    if function is operator.invert and len(operands) == 1:
        (operand,) = operands
        if isinstance(operand, _torch.SymNodeVariable) and operand.python_type() is int:
            negated = call_operator(tx, operator.neg, [operand])
            return call_operator(tx, operator.sub, [negated, _torch.ConstantVariable.create(1)])
    return _torch.VariableTracker.build(tx, function).call_function(tx, operands, {})
