"""Run time: the proxy eager would have stored, built from the plain value the graph made.

A compiled call that assigns a proxy attribute builds the proxy right after the graph ran,
with C calls only (``stages.codegen``'s inline form: no Python frame).  :func:`rebox` is the
same as one Python call, for values replayed from a source other than the proxy's
``__wrapped__``: a dict hit on one string constant (its hash is cached in the string) for
the class and canonical spec, then the proxy built as ``_proxy`` builds arithmetic results.
It is write-back's (``_writeback``) only run-time part, a module of its own because the
generated code imports it by name and Dynamo is kept from tracing it (:func:`skip_tracing`).

Examples:
    >>> import dynscalar as ds
    >>> from dynscalar._bridge._rebox import key_of, rebox
    >>> made = rebox(3, key_of(ds.DynamicInt, ds.DynamicSpec()))
    >>> type(made).__name__, made == 3
    ('DynamicInt', True)
"""

from __future__ import annotations

import ast
from typing import Any

from .. import _caches
from .._proxy import DynamicFloat, DynamicInt, DynamicScalar, _alloc, _set_spec, _set_wrapped
from .._spec import DynamicSpec
from . import _torch

__all__ = ["key_of", "rebox", "resolve", "skip_tracing"]

_KINDS: dict[str, type[DynamicScalar]] = {"DynamicInt": DynamicInt, "DynamicFloat": DynamicFloat}
_MADE: dict[str, tuple[type, DynamicSpec]] = {}  # key -> class, spec (a memo of resolve)
_caches.register(_MADE.clear)


def key_of(cls: type, spec: DynamicSpec) -> str:
    """The constant the generated code passes to :func:`rebox` for a proxy class and spec."""
    return repr((cls.__name__, spec.unbacked, spec.min, spec.max, spec.strict))


def resolve(key: str) -> tuple[type, DynamicSpec]:
    """The proxy class and canonical spec behind ``key`` (remembered for later calls)."""
    kind, unbacked, lo, hi, strict = ast.literal_eval(key)
    made = _MADE[key] = (_KINDS[kind], DynamicSpec(unbacked, lo, hi, strict).canonical())
    return made


def rebox(value: Any, key: str) -> Any:
    """Run time: the proxy eager would have stored for the plain ``value`` (called by the
    code Dynamo generates; ``key``, from :func:`key_of`, is a constant of that code)."""
    made = _MADE.get(key)
    cls, spec = made if made is not None else resolve(key)
    kind = type(value)
    plain = int if cls is DynamicInt else float
    if kind is not plain:
        if issubclass(kind, DynamicScalar):  # replayed from its source: the object itself
            return value
        value = plain(value)
    obj: DynamicScalar = _alloc(cls)
    _set_wrapped(obj, value)
    _set_spec(obj, spec)
    return obj


def skip_tracing() -> None:
    """Keep Dynamo from tracing :func:`rebox`: it runs inside the code Dynamo generates,
    with Dynamo's frame callback active (``skip_code`` marks its code object once)."""
    _torch.skip_code(rebox.__code__)
