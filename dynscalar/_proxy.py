"""DynamicInt / DynamicFloat: wrapt proxies that behave like the int/float they hold.

A proxy is what a user hands to model code.  Eager behaviour is the plain value's; the
only differences a user can observe are ``type()`` (the proxy class) and ``repr``
(``DynamicInt(7)``).  Arithmetic results are proxies again, so "dynamic" survives
``step + 1`` or ``step / 2``.  Proxies are immutable like ints: in-place operators
return new objects.

Spec propagation:

* binary and unary operators: the result keeps ``unbacked`` but drops ``min``/``max``
  (a range describes one variable, not values derived from it);
* in-place operators (``step += 1``): the result is "the same variable", so it keeps the
  whole spec.  This is also what compiled write-back does.

Where a proxy cannot behave like its value (C code that checks for an exact ``int`` or
``float``: ``json.dumps``, ``torch.tensor(x)``, ...), docs/behaves-like.md says so, with the
reason and the workaround; tests/test_conformance.py pins each case.

This module never imports torch (``__torch_function__`` only calls what torch hands it).
Dynamo learns about proxies in the bridge, ``dynscalar/_bridge/``.
"""

from __future__ import annotations

import inspect
import math
import numbers
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeGuard, overload

import wrapt

from ._diagnostics import DynscalarTypeError, DynscalarValueError
from ._spec import DynamicSpec

__all__ = ["DynamicFloat", "DynamicInt", "DynamicScalar", "is_dynamic_scalar", "mark_dynamic"]


# Eager cost matters: every arithmetic result is a new proxy.
#
# * Construction: wrapt's ``BaseObjectProxy.__init__`` probes the wrapped value for
#   ``__module__``/``__doc__`` (C) or ``__qualname__``/``__annotations__`` (pure Python); on an
#   int each missing attribute raises and swallows an AttributeError.  A proxy needs none of
#   that: allocate it, store the value through the ``__wrapped__`` descriptor and the spec
#   through its slot descriptor.
# * Reading: a Python subclass of wrapt's C proxy inherits ``__getattr__``, so CPython gives it
#   ``slot_tp_getattr_hook`` for every attribute read.  That hook is fast only when the
#   class's ``__getattribute__`` is ``object.__getattribute__``; with wrapt's own C
#   ``__getattribute__`` every read (``self.__wrapped__``, Dynamo's guards on
#   ``_self_spec``, torch's lookup of ``__torch_function__``) builds and calls a
#   method-wrapper.  ``DynamicScalar`` therefore uses ``object.__getattribute__``; names not
#   found on the proxy still go to wrapt's ``__getattr__`` (the wrapped value), exactly as
#   wrapt's hook does.  See ``DynamicScalar.__getattribute__`` for the two names wrapt's
#   hook treated specially.
#
_WRAPPED = next(
    (
        k.__dict__["__wrapped__"]
        for k in wrapt.BaseObjectProxy.__mro__
        if "__wrapped__" in k.__dict__
    ),
    None,
)
_alloc = wrapt.BaseObjectProxy.__new__
_set_wrapped: Callable[[Any, Any], None]
if _WRAPPED is not None and hasattr(_WRAPPED, "__set__"):
    _set_wrapped = _WRAPPED.__set__
else:
    _set_wrapped = wrapt.BaseObjectProxy.__init__


def _new(cls: type[DynamicScalar], value: int | float, spec: DynamicSpec) -> Any:
    """Build a proxy without validation (values derived from an already valid proxy)."""
    obj = _alloc(cls)
    _set_wrapped(obj, value)
    obj._self_spec = spec
    return obj


def _derive(result: Any, spec: DynamicSpec, same_variable: bool = False) -> Any:
    """Wrap an arithmetic result so that it stays dynamic."""
    kind = type(result)
    if kind is int:
        return _new(DynamicInt, result, spec if same_variable else spec.without_range())
    if kind is float:
        return _new(DynamicFloat, result, spec.for_float())
    if kind is tuple:  # divmod
        return tuple(_derive(item, spec) for item in result)
    return result


# Operators inline ``_derive``'s common case (an int or float result) and read the proxy
# with plain attribute syntax (fast, see above): each Python call saved is a measurable
# share of the cost (benchmarks/eager.py).
def _binary(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[Any, Any], Any]:
    """``self <op> other`` (``other <op> self`` where ``reflected``) as a proxy."""

    def method(self: DynamicScalar, other: Any) -> Any:
        if type(other) in _PROXY_TYPES:
            other = other.__wrapped__
        result = op(other, self.__wrapped__) if reflected else op(self.__wrapped__, other)
        kind = type(result)
        obj: DynamicScalar
        if kind is int:
            spec = self._self_spec
            if spec.min is not None or spec.max is not None:
                spec = spec.without_range()
            obj = _alloc(DynamicInt)
        elif kind is float:
            spec = self._self_spec
            if spec.unbacked or spec.min is not None or spec.max is not None:
                spec = spec.for_float()
            obj = _alloc(DynamicFloat)
        else:
            return _derive(result, self._self_spec)
        _set_wrapped(obj, result)
        obj._self_spec = spec
        return obj

    method.__name__ = f"__{'r' if reflected else ''}{op.__name__.strip('_')}__"
    return method


def _inplace(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def method(self: DynamicScalar, other: Any) -> Any:
        if type(other) in _PROXY_TYPES:
            other = other.__wrapped__
        result = op(self.__wrapped__, other)
        kind = type(result)
        if kind is int:  # the same variable: the whole spec stays
            obj = _alloc(DynamicInt)
            _set_wrapped(obj, result)
            obj._self_spec = self._self_spec
            return obj
        return _derive(result, self._self_spec, same_variable=True)

    method.__name__ = f"__i{op.__name__.strip('_')}__"
    return method


def _unary(op: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def method(self: DynamicScalar) -> Any:
        return _derive(op(self.__wrapped__), self._self_spec)

    method.__name__ = f"__{op.__name__.strip('_')}__"
    return method


class DynamicScalar(wrapt.BaseObjectProxy):  # type: ignore[type-arg]
    """Common base of ``DynamicInt`` and
    ``DynamicFloat`` (not instantiated directly).

    Examples:
        >>> isinstance(DynamicInt(3), DynamicScalar) or is_dynamic_scalar(DynamicInt(3))
        True
    """

    __slots__ = ("_self_spec",)
    _self_spec: DynamicSpec

    # CPython's fast attribute path for classes with ``__getattr__`` (see the comment at the
    # top of this module).  Names the proxy does not have still reach wrapt's ``__getattr__``
    # and so the wrapped value.  wrapt's C hook also forwards ``__doc__`` (kept: see
    # ``_InstanceDoc``) and ``__module__``, which here reads the proxy class's module (through
    # wrapt's hook it reaches the int, which raises AttributeError).  With wrapt's
    # pure-Python proxy this changes nothing.
    __getattribute__ = object.__getattribute__

    # wrapt calls this hook after ``__wrapped__`` is assigned, and looks it up on every
    # assignment (when it is missing, the lookup raises and swallows two AttributeErrors).
    # Proxies are immutable and need no fix-up: ``tuple`` is a C-level no-op callable.
    __wrapped_setattr_fixups__ = staticmethod(tuple)

    # Guards and graph inputs read a proxy's plain value as ``<source>.real``
    # (``_bridge/_guards.PLAIN_MEMBER``) on every call of compiled code.  Through the
    # missing-name path above that read raised and swallowed an AttributeError each time
    # (a formatted message); here it is a C-level read of ``__wrapped__``: the same value,
    # since ``int.real`` and ``float.real`` are the value itself.
    real = property(operator.attrgetter("__wrapped__"))

    # ------------------------------------------------------------------ spec access
    @property
    def spec(self) -> DynamicSpec:
        """The ``DynamicSpec`` this value is traced with."""
        return self._self_spec

    @property
    def value(self) -> int | float:
        """The plain Python value held by the proxy."""
        return self.__wrapped__  # type: ignore[no-any-return]

    @property
    def __object_proxy__(self) -> Callable[[Any], Any]:  # type: ignore[override]
        # wrapt builds in-place results through this hook; keep class and spec.
        spec = self._self_spec
        return lambda value: _derive(value, spec, same_variable=True)

    # ------------------------------------------------------------------ arithmetic
    __add__ = _binary(operator.add)
    __sub__ = _binary(operator.sub)
    __mul__ = _binary(operator.mul)
    __truediv__ = _binary(operator.truediv)
    __floordiv__ = _binary(operator.floordiv)
    __mod__ = _binary(operator.mod)
    __divmod__ = _binary(divmod)
    __lshift__ = _binary(operator.lshift)
    __rshift__ = _binary(operator.rshift)
    __and__ = _binary(operator.and_)
    __xor__ = _binary(operator.xor)
    __or__ = _binary(operator.or_)

    __radd__ = _binary(operator.add, reflected=True)
    __rsub__ = _binary(operator.sub, reflected=True)
    __rmul__ = _binary(operator.mul, reflected=True)
    __rtruediv__ = _binary(operator.truediv, reflected=True)
    __rfloordiv__ = _binary(operator.floordiv, reflected=True)
    __rmod__ = _binary(operator.mod, reflected=True)
    __rdivmod__ = _binary(divmod, reflected=True)
    __rlshift__ = _binary(operator.lshift, reflected=True)
    __rrshift__ = _binary(operator.rshift, reflected=True)
    __rand__ = _binary(operator.and_, reflected=True)
    __rxor__ = _binary(operator.xor, reflected=True)
    __ror__ = _binary(operator.or_, reflected=True)

    __iadd__ = _inplace(operator.add)
    __isub__ = _inplace(operator.sub)
    __imul__ = _inplace(operator.mul)
    __itruediv__ = _inplace(operator.truediv)
    __ifloordiv__ = _inplace(operator.floordiv)
    __imod__ = _inplace(operator.mod)
    __ilshift__ = _inplace(operator.lshift)
    __irshift__ = _inplace(operator.rshift)
    __iand__ = _inplace(operator.and_)
    __ixor__ = _inplace(operator.xor)
    __ior__ = _inplace(operator.or_)

    __neg__ = _unary(operator.neg)
    __pos__ = _unary(operator.pos)
    __abs__ = _unary(operator.abs)
    __invert__ = _unary(operator.invert)
    __trunc__ = _unary(math.trunc)
    __floor__ = _unary(math.floor)
    __ceil__ = _unary(math.ceil)

    def __pow__(self, other: Any, modulo: Any = None) -> Any:
        if type(other) in _PROXY_TYPES:
            other = other.__wrapped__
        if modulo is None:
            result = pow(self.__wrapped__, other)
        else:
            result = pow(self.__wrapped__, other, operator.index(modulo))
        return _derive(result, self._self_spec)

    def __rpow__(self, other: Any, modulo: Any = None) -> Any:
        # Before Python 3.14, three-argument ``pow(2, proxy, 5)`` never calls __rpow__ (it
        # only asks the base), see docs/behaves-like.md; 3.14 passes ``modulo`` here.
        if modulo is None:
            result = pow(other, self.__wrapped__)
        else:
            result = pow(other, self.__wrapped__, operator.index(modulo))
        return _derive(result, self._self_spec)

    def __ipow__(self, other: Any) -> Any:  # type: ignore[override,misc]  # as wrapt's stub
        if type(other) in _PROXY_TYPES:
            other = other.__wrapped__
        return _derive(pow(self.__wrapped__, other), self._self_spec, same_variable=True)

    def __round__(self, ndigits: SupportsIndex | None = None) -> Any:
        return _derive(round(self.__wrapped__, ndigits), self._self_spec)

    # ------------------------------------------------------------------ identity-ish
    def __bytes__(self) -> bytes:
        # wrapt's C proxy calls PyObject_Bytes(wrapped), which refuses ints; ``bytes(n)``
        # means "n zero bytes", and a float raises TypeError as it does for the plain value.
        return bytes(self.__wrapped__)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self._self_spec.kwargs().items())
        return f"{type(self).__name__}({self.__wrapped__!r}{extra})"

    def __copy__(self) -> Any:
        return self  # immutable, like int

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        spec = self._self_spec
        return (
            _rebuild,
            (type(self).__name__, self.__wrapped__, spec.unbacked, spec.min, spec.max)
            + ((True,) if spec.strict else ()),  # older pickles have no strict field
        )

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return self.__reduce__()

    # ------------------------------------------------------------------ torch / numpy
    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        # torch's argument parser only accepts exact Python numbers where it wants a
        # Number/float/int (``torch.full(size, x)``, ``t.pow(x)``, ``clamp(max=x)``), but
        # it hands any argument that defines __torch_function__ to this hook: call the
        # function again with the plain values.
        # Every torch call that receives a proxy pays for this: ``_unwrap_items`` inlined.
        plain = []
        for item in args:
            kind = type(item)
            if kind in _PROXY_TYPES:
                item = item.__wrapped__
            elif kind is tuple or kind is list or kind is dict:
                item = _unwrap(item)
            elif kind not in _LEAF_TYPES and issubclass(kind, DynamicScalar):
                item = item.__wrapped__
            plain.append(item)
        if kwargs:
            return func(*plain, **{k: _unwrap(v) for k, v in kwargs.items()})
        return func(*plain)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        import numpy

        return numpy.asarray(self.__wrapped__, dtype=dtype)


# Type checkers see DynamicInt as an int and DynamicFloat as a float, with arithmetic that
# keeps the kind (dynscalar/_proxy_typing.pyi); at run time the base is DynamicScalar itself.
if TYPE_CHECKING:
    from ._proxy_typing import FloatLike, IntLike
else:
    IntLike = FloatLike = DynamicScalar


class DynamicInt(IntLike):
    """An ``int`` that ``torch.compile`` traces as a symbolic graph input (SymInt).

    Behaves like the int it holds in eager mode; arithmetic keeps it dynamic.  A
    ``DynamicScalar`` (a wrapt proxy) at run time; type checkers
    treat it as an ``int``.

    Args:
        value: the integer (any ``numbers.Integral`` except ``bool``), within int64.
        unbacked: trace as an unbacked symbol (no guards at all; branching on it is a
            graph break).  Default: backed (guards only where control flow needs them).
        min: inclusive lower bound; with ``max`` it becomes the symbol's value range.
        max: inclusive upper bound.
        strict: raise ``SpecializationError`` instead of
            warning when code forces the value to a constant (``range(x)``, list indexing,
            ``str(x)``; ``python -m dynscalar specializations`` lists them for your torch).

    Examples:
        >>> step = DynamicInt(0)
        >>> step += 1
        >>> step, step * 2, step / 2
        (DynamicInt(1), DynamicInt(2), DynamicFloat(0.5))
    """

    __slots__ = ()

    def __init__(
        self,
        value: int,
        *,
        unbacked: bool = False,
        min: int | None = None,  # noqa: A002 - mirrors torch's mark_dynamic(min=, max=)
        max: int | None = None,  # noqa: A002
        strict: bool = False,
    ) -> None:
        where = f"DynamicInt({value!r})"
        spec = DynamicSpec.build(unbacked=unbacked, min=min, max=max, strict=strict, where=where)
        plain = spec.check_int(coerce_int(value, where), where)
        _set_wrapped(self, plain)
        _set_spec(self, spec)


class DynamicFloat(FloatLike):
    """A ``float`` that ``torch.compile`` traces as a symbolic graph input (SymFloat).

    A ``DynamicScalar`` at run time; type checkers treat it as a
    ``float``.

    Args:
        value: the number (a ``float``, or a ``numbers.Real`` converted to float; not ``bool``).
        unbacked: must stay False: torch brings floats in as 0-d tensors whose value is always
            known, so an unbacked float is refused with ``ValueError``.
        strict: raise ``SpecializationError`` instead of
            warning when code forces the value to a constant.

    Examples:
        >>> t = DynamicFloat(0.5)
        >>> t * 2, t > 0.25
        (DynamicFloat(1.0), True)
    """

    __slots__ = ()

    def __init__(self, value: float, *, unbacked: bool = False, strict: bool = False) -> None:
        where = f"DynamicFloat({value!r})"
        spec = DynamicSpec.build(unbacked=unbacked, strict=strict, where=where)
        plain = coerce_float(value, where)
        spec.check_float(plain, where)  # floats cannot be unbacked: refused here, not at compile
        _set_wrapped(self, plain)
        _set_spec(self, spec)


_PROXY_TYPES: frozenset[type] = frozenset({DynamicInt, DynamicFloat})

# ``inspect.signature(DynamicInt)`` (IDE and notebook signature help) follows the class's
# ``__wrapped__`` member, wrapt's descriptor, and fails; a class-level ``__signature__`` is
# read first: the constructor's parameters, as ``__init__`` declares them.
for _proxy_cls in (DynamicInt, DynamicFloat):
    _init = inspect.signature(_proxy_cls.__init__, eval_str=True)
    _proxy_cls.__signature__ = _init.replace(  # type: ignore[union-attr]
        parameters=list(_init.parameters.values())[1:], return_annotation=inspect.Signature.empty
    )


class _InstanceDoc:
    """``__doc__`` of a proxy class: its docstring on the class, the wrapped value's on an
    instance (what wrapt's C ``__getattribute__`` returned; its pure-Python proxy does the
    same with a property its metaclass installs).  A data descriptor, so it is found before
    the class's docstring by ``object.__getattribute__``."""

    __slots__ = ("doc",)

    def __init__(self, doc: str | None) -> None:
        self.doc = doc

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self.doc
        return instance.__wrapped__.__doc__

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__wrapped__.__doc__ = value  # as wrapt: forwarded (an int refuses it)


if type(DynamicScalar) is type:  # wrapt's C extension (the pure-Python proxy has a metaclass)
    for _cls in (DynamicScalar, DynamicInt, DynamicFloat):
        _cls.__doc__ = _InstanceDoc(_cls.__doc__)  # type: ignore[assignment]
_set_spec: Callable[[Any, DynamicSpec], None] = DynamicScalar.__dict__["_self_spec"].__set__


def is_dynamic_scalar(value: object) -> TypeGuard[DynamicScalar]:
    """True for a ``DynamicInt`` or ``DynamicFloat``.

    ``isinstance(x, int)`` sees the wrapped value, so it cannot tell a proxy from an int.

    Examples:
        >>> is_dynamic_scalar(DynamicInt(1)), is_dynamic_scalar(1)
        (True, False)
    """
    return issubclass(type(value), DynamicScalar)


@overload
def mark_dynamic(
    value: int,
    *,
    unbacked: bool = ...,
    min: int | None = ...,
    max: int | None = ...,
    strict: bool = ...,
) -> DynamicInt: ...
@overload
def mark_dynamic(value: float, *, unbacked: bool = ..., strict: bool = ...) -> DynamicFloat: ...
def mark_dynamic(value: Any, **spec: Any) -> DynamicInt | DynamicFloat:
    """Return ``value`` as a dynamic scalar: int -> DynamicInt, float -> DynamicFloat.

    The scalar twin of ``torch._dynamo.mark_dynamic``.  ``spec`` is ``unbacked``, and for
    ints ``min``/``max``.

    Examples:
        >>> mark_dynamic(3), mark_dynamic(0.5)
        (DynamicInt(3), DynamicFloat(0.5))
    """
    plain = value.__wrapped__ if is_dynamic_scalar(value) else value
    if isinstance(plain, bool):
        raise DynscalarTypeError(
            "dynscalar.mark_dynamic: bool values are not dynamic scalars; a flag selects code "
            "paths, so each value compiles once anyway. Keep it a plain bool."
        )
    if _is_tensor(plain):
        raise DynscalarTypeError(
            "dynscalar.mark_dynamic: got a torch.Tensor. For dynamic tensor shapes use "
            "torch._dynamo.mark_dynamic(tensor, dim); dynscalar.mark_dynamic is for Python "
            "int/float values."
        )
    if isinstance(plain, int):
        return DynamicInt(plain, **spec)
    if isinstance(plain, float):
        return DynamicFloat(plain, **spec)
    raise DynscalarTypeError(
        f"dynscalar.mark_dynamic: expected an int or float, got {type(plain).__name__}. "
        "Only Python scalars can be marked; use torch._dynamo.mark_dynamic for tensors."
    )


def _is_tensor(value: object) -> bool:
    return any(
        c.__name__ == "Tensor" and c.__module__.startswith("torch") for c in type(value).__mro__
    )


def coerce_int(value: object, where: str) -> int:
    """Return the plain int in ``value`` or raise a ``TypeError`` saying what to use instead."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise DynscalarTypeError(
            f"{where}: bool values are not dynamic scalars; a flag selects code paths, so "
            "each value compiles once anyway. Keep it a plain bool, or use an int."
        )
    if is_dynamic_scalar(value):
        value = value.__wrapped__
    if _is_tensor(value):
        raise DynscalarTypeError(
            f"{where}: got a torch.Tensor; tensors are already graph inputs. Use "
            "torch._dynamo.mark_dynamic(tensor, dim) for dynamic shapes."
        )
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        raise DynscalarTypeError(f"{where}: got a float; use DynamicFloat for float values.")
    raise DynscalarTypeError(
        f"{where}: expected an int, got {type(value).__name__}. Convert it with int() first "
        "if it is a number."
    )


def coerce_float(value: object, where: str) -> float:
    """Return the plain float in ``value`` or raise a ``TypeError`` saying what to use instead."""
    if type(value) is float:
        return value
    if isinstance(value, bool):
        raise DynscalarTypeError(
            f"{where}: bool values are not dynamic scalars; keep it a plain bool."
        )
    if is_dynamic_scalar(value):
        value = value.__wrapped__
    if _is_tensor(value):
        raise DynscalarTypeError(
            f"{where}: got a torch.Tensor; tensors are already graph inputs. Use "
            "torch._dynamo.mark_dynamic(tensor, dim) for dynamic shapes."
        )
    if isinstance(value, numbers.Real):
        return float(value)
    raise DynscalarTypeError(
        f"{where}: expected a float, got {type(value).__name__}. Convert it with float() first "
        "if it is a number."
    )


def _unwrap(value: Any) -> Any:
    """Replace proxies (also inside lists, tuples and dicts) by their plain values."""
    kind = type(value)
    if kind in _PROXY_TYPES:
        return value.__wrapped__
    if kind is tuple or kind is list:
        return kind(_unwrap_items(value))
    if kind is dict:
        return {key: _unwrap(item) for key, item in value.items()}
    if kind not in _LEAF_TYPES and issubclass(kind, DynamicScalar):
        return value.__wrapped__
    return value


def _unwrap_items(values: tuple[Any, ...] | list[Any]) -> list[Any]:
    """``_unwrap`` of each item; the loop is inlined because torch calls it on every crossing."""
    out = []
    for item in values:
        kind = type(item)
        if kind in _PROXY_TYPES:
            item = item.__wrapped__
        elif kind is tuple or kind is list or kind is dict:
            item = _unwrap(item)
        elif kind not in _LEAF_TYPES and issubclass(kind, DynamicScalar):
            item = item.__wrapped__
        out.append(item)
    return out


_LEAF_TYPES = frozenset({int, float, bool, str, type(None)})


def _rebuild(
    kind: str,
    value: int | float,
    unbacked: bool,
    lo: int | None,
    hi: int | None,
    strict: bool = False,
) -> Any:
    """Unpickle a proxy.  Only the two proxy kinds can be built; nothing else runs.

    This is the one global ``torch.load(weights_only=True)`` may call, so it trusts nothing:
    ``kind`` must name a proxy class, ``value`` must be an exact int (DynamicInt) or float
    (DynamicFloat), and the spec goes through the same validation as ``DynamicInt(...)``.
    The value itself is restored as it was, even where arithmetic or ``+=`` moved it outside
    int64 or outside ``min``/``max``: unpickling reproduces the object, and the compiled
    path rejects such a value exactly as it would have rejected the original.
    """
    where = f"dynscalar: unpickling {kind!r}"
    spec = DynamicSpec.build(unbacked=unbacked, min=lo, max=hi, strict=strict, where=where)
    if kind == "DynamicInt" and type(value) is int:
        return _new(DynamicInt, value, spec)
    if kind == "DynamicFloat" and type(value) is float and not (spec.has_range or spec.unbacked):
        return _new(DynamicFloat, value, spec)
    raise DynscalarValueError(
        f"{where}: cannot rebuild a proxy from value {value!r} "
        f"({type(value).__name__}, min={lo!r}, max={hi!r}); the data is not a pickled "
        "DynamicInt or DynamicFloat."
    )
