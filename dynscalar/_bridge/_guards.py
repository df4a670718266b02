"""Guards that tie a compiled graph to the marks and the value types it was compiled for.

Compiled code is cached per code object, with no identity guard on the module: another
instance of the same class, or the same instance after its marks changed, reuses a graph
whenever that graph's guards pass.  So every fact the bridge used to build a graph is
guarded:

* **the mark** of ``owner.name``, as :func:`dynscalar._marks.lookup_mark` finds it:
  the instance marks entry (an identity check on the canonical spec, or on ``None`` for an
  instance that opted out of a class mark), the absence of an entry, or - when the class
  decides - the class-marks epoch (bumped by every ``@dynamic_attrs``).  Installed for
  every int/float attribute of a module, marked or not, so marking, unmarking and
  re-marking after a compile take effect at the next call;
* **a proxy's class and spec**: ``TYPE_MATCH`` on the proxy and an identity check on its
  (canonical) spec, so a ``DynamicInt`` replaced by a float, a ``DynamicFloat`` or a
  proxy with another spec recompiles;
* **the plain value's type**: the graph input is read through a source that yields the
  value itself (``L['self'].step``, or ``L['self'].step.__wrapped__`` for a proxy), and
  ``wrap_symint``/``wrap_symfloat`` put ``TYPE_MATCH`` on that source: an ``int`` graph is
  never reused for ``2.5``, ``np.float64`` or ``"3"``.

All of these are C++ guard-manager checks, evaluated on every call of the compiled code, so
they are built to be cheap there (benchmarks/percall.py measures it):

* the epoch is reached through the alias Dynamo itself installs for module imports in the
  frame's globals (``G['__import_dynscalar']._marks_epoch.value``, what
  ``InstructionTranslatorBase.import_source`` gives): dict and attribute accessors in C++.
  ``ImportSource("dynscalar")`` guards the same object through a Python lambda called on
  every check; it stays the fallback where ``import_source`` is missing;
* the proxy's spec is read with ``object.__getattribute__`` (``GenericAttrSource``), which
  finds the ``_self_spec`` slot without going through the proxy's attribute hook; a plain
  ``AttrSource`` is the fallback.  Both read the same slot: the proxy class (guarded first)
  does not define ``_self_spec`` any other way.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from .._marks import MARKS_KEY

__all__ = ["guard_mark_state", "guard_marks_epoch", "guard_proxy"]


def guard_mark_state(
    tx: Any, owner_source: Any, owner: Any, name: str, key: str = MARKS_KEY
) -> None:
    """Guard the registry's answer for ``owner.name`` (see module docstring).

    ``tx`` is the tracer the guards are built for; ``key`` selects the instance's attribute
    marks (default) or its argument marks.
    """
    from torch._dynamo.guards import GuardBuilder, install_guard
    from torch._dynamo.source import AttrSource, DictGetItemSource

    instance_dict = object.__getattribute__(owner, "__dict__")
    marks = instance_dict.get(key)
    if marks is None:
        _install_once(
            ("absent", owner_source, key),
            lambda: owner_source.make_guard(
                functools.partial(GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT, attr=key)
            ),
        )
    else:
        marks_source = AttrSource(owner_source, key)
        if name in marks:  # the instance decides: a canonical spec, or None (opted out)
            install_guard(DictGetItemSource(marks_source, name).make_guard(GuardBuilder.ID_MATCH))
            return
        install_guard(
            marks_source.make_guard(functools.partial(GuardBuilder.DICT_NOT_CONTAINS, key=name))
        )
    # The class (or, for an argument, the function) decides.  Unmarked ones too: a mark
    # made after a compile must take effect at the next call.
    guard_marks_epoch(tx)


def _dynscalar_module_source(tx: Any) -> Any:
    """A source for the ``dynscalar`` module that guards read in C++ (see module docstring)."""
    import_source = getattr(tx, "import_source", None)
    if import_source is not None:
        try:
            return import_source("dynscalar")  # GlobalSource('__import_dynscalar')
        except Exception:  # noqa: BLE001 - any failure: the lambda-based source below
            pass
    from torch._dynamo.source import ImportSource

    return ImportSource("dynscalar")


def guard_marks_epoch(tx: Any) -> None:
    """Guard the counter bumped by class and function marks (one guard per graph)."""
    from torch._dynamo.guards import GuardBuilder
    from torch._dynamo.source import AttrSource

    def build() -> Any:
        epoch = AttrSource(AttrSource(_dynscalar_module_source(tx), "_marks_epoch"), "value")
        return epoch.make_guard(GuardBuilder.EQUALS_MATCH)

    _install_once(("epoch",), build)


# The epoch guard is asked for by every unmarked int/float attribute a trace reads, an
# instance's "no marks" guard by each of its attributes: hundreds of requests per compile
# of a large model, each a Guard built and handed to Dynamo (``functools.partial`` guards
# are not even deduplicated there: each is a separate check at run time).  So each is
# installed once per guard set, and again whenever that set no longer holds it (Dynamo
# builds a new set when it rolls a trace back, and can clear one).
_installed: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def _install_once(key: Any, build: Callable[[], Any]) -> None:
    from torch._dynamo.guards import install_guard
    from torch._guards import TracingContext

    guards = TracingContext.get().guards_context.dynamo_guards
    memo = _installed.get(guards)
    if memo is None:
        memo = _installed[guards] = {}
    guard = memo.get(key)
    if guard is not None and guard in guards.inner:
        return
    guard = build()
    install_guard(guard, skip=1)
    memo[key] = guard


def guard_proxy(source: Any) -> None:
    """Guard a proxy's class and (canonical) spec, read through ``source``."""
    from torch._dynamo import source as sources
    from torch._dynamo.guards import GuardBuilder, install_guard

    install_guard(source.make_guard(GuardBuilder.TYPE_MATCH))
    # added in torch 2.6; AttrSource reads the same slot through the proxy's hook
    read = getattr(sources, "GenericAttrSource", sources.AttrSource)
    install_guard(read(source, "_self_spec").make_guard(GuardBuilder.ID_MATCH))
