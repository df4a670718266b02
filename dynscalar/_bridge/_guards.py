"""Guards that tie a compiled graph to the marks and the value types it was compiled for,
and the sources through which guards and graph inputs read a marked value.

Compiled code is cached per code object, with no identity guard on the module: another
instance of the same class, or the same instance after its marks changed, reuses a graph
whenever that graph's guards pass.  So every fact the bridge used to build a graph is
guarded, each by the one entry it was read from, so that a mark change invalidates only
the graphs that read that mark:

* **the mark** of ``owner.name``, as :func:`dynscalar._marks.lookup_mark` finds it: the
  instance marks entry (an identity check on the canonical spec, or on ``None`` for an
  instance that opted out of a class mark) or its absence; then, class by class along
  the MRO, the class's entry of the mark table (``dynscalar._mark_table[key][name]``),
  ``name``'s absence from it, or the class's absence from the table, down to the class
  that decides.  Installed for every int/float attribute of a module, marked or not, so
  marking, unmarking and re-marking after a compile take effect at the next call;
* **an argument's mark**: the module instance's argument marks entry, then the function's
  entry of the mark table (under the key of the code object the mark is looked up by);
* **a param-group mark**: the optimizer's entry (nothing else decides);
* **a proxy's class and spec**: ``TYPE_MATCH`` on the proxy and an identity check on its
  (canonical) spec, so a ``DynamicInt`` replaced by a float, a ``DynamicFloat`` or a
  proxy with another spec recompiles;
* **the plain value's type**: the graph input is read through a source that yields the
  value itself (``L['self'].step``, or ``L['self'].step.real`` for a proxy), and
  ``wrap_symint``/``wrap_symfloat`` put ``TYPE_MATCH`` on that source: an ``int`` graph is
  never reused for ``2.5``, ``np.float64`` or ``"3"``;
* **a proxy's class, only where it shows**: a graph traced from a proxy computes with its
  plain value, so it is also correct for the plain ``int``/``float`` itself; the value is
  guarded to be that plain type or the proxy's class with its spec
  (:func:`guard_proxy_or_plain`, which rejects a bool, a numpy scalar or the other type),
  and only where the compiled code's result depends on the class - a value written back,
  handed on at a graph break or returned as a proxy, a dunder call only the proxy has -
  does write-back guard the class itself (:func:`guard_proxy`, ``TYPE_MATCH``).

Marking class A, function f or optimizer o changes only A's, f's or o's entry: graphs of
other classes, functions and optimizers keep passing their guards, and the same mark made
again changes no entry at all (the store keeps an unchanged dict).

All of these are C++ guard-manager checks, evaluated on every call of the compiled code, so
they are built to be cheap there (benchmarks/percall.py measures it):

* the mark table is reached through the alias Dynamo itself installs for module imports in
  the frame's globals (``G['__import_dynscalar']._mark_table``, what
  ``InstructionTranslatorBase.import_source`` gives): dict and attribute accessors in C++,
  shared by every table guard of a graph.  ``ImportSource("dynscalar")`` guards the same
  object through a Python lambda called on every check; it stays the fallback where
  ``import_source`` is missing;
* keys are ints, so a table check is one dict lookup; a class with no marks costs one
  ``DICT_NOT_CONTAINS`` per graph, however many of its attributes the graph reads;
* the proxy's spec is read with ``object.__getattribute__`` (``GenericAttrSource``), which
  finds the ``_self_spec`` slot without going through the proxy's attribute hook; a plain
  ``AttrSource`` is the fallback.  Both read the same slot: the proxy class (guarded first)
  does not define ``_self_spec`` any other way.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

from .._marks import MARK_TABLE, MARKS_KEY, key_of
from . import _torch
from ._state import lookup_state

__all__ = [
    "PLAIN_MEMBER",
    "guard_class_marks",
    "guard_function_marks",
    "guard_lambda",
    "guard_mark_state",
    "guard_proxy",
    "guard_proxy_or_plain",
    "plain_source",
    "record_for_automatic_dynamic",
    "source_name",
    "swapped_source",
]


# ------------------------------------------------------------------------------------ sources
#: A proxy's plain value is read as ``<source>.real``: ``int.real`` and ``float.real`` are
#: the value itself, and a proxy forwards the attribute to the value it holds.  So the graph
#: input made for a ``DynamicInt`` reads a plain ``int`` found there later just the same
#: (:func:`guard_proxy_or_plain` says which values may be found there).
PLAIN_MEMBER = "real"


def plain_source(source: Any) -> Any:
    """The source of the plain value of the proxy (or plain value) at ``source``."""

    return _torch.AttrSource(source, PLAIN_MEMBER)


def source_name(source: Any) -> str:
    """A source's name (``L['self'].step``): a property in torch 2.13, a method elsewhere."""
    name = source.name() if callable(source.name) else source.name
    return str(name)


@contextlib.contextmanager
def swapped_source(builder: Any, source: Any) -> Iterator[None]:
    """Let ``builder`` read the value through ``source`` for one call, then restore it.

    A proxy is read through ``<source>.real`` (:data:`PLAIN_MEMBER`): guards on that
    source check the plain value's own type, and graph inputs (also inductor's kernel
    arguments) receive the plain value, never the proxy object.
    """
    original = builder.source
    builder.source = source
    builder.name = source.name
    try:
        yield
    finally:
        builder.source = original
        builder.name = original.name


def record_for_automatic_dynamic(builder: Any, plain: int | float) -> None:
    """Record ``plain`` as the value last seen at the builder's own source, as Dynamo does
    for a plain int/float it wraps (``pgo.process_automatic_dynamic``).

    A proxy is read through ``<source>.real``, so Dynamo's record of the frame's
    values (its automatic dynamic) would have nothing for ``<source>``: when a plain value
    arrives there later (``fn(DynamicInt(1))``, then ``fn(2)``), stock torch's rule - a
    value that changed is compiled dynamic - could not see the change, and the plain value
    would cost one static compile more than stock.
    """

    _torch.process_automatic_dynamic(
        builder.tx,
        builder.name,
        _torch.FrameStateSizeEntry.make_scalar(plain),  # floats too
        is_unspecialized_nn_module=builder.source.guard_source.is_unspecialized_nn_module(),
    )


# ------------------------------------------------------------------------------------- guards


def guard_mark_state(
    tx: Any, owner_source: Any, owner: Any, name: str, key: str = MARKS_KEY
) -> bool:
    """Guard the mark store's answer for ``owner.name`` (see module docstring); True when the
    instance's own marks decide it.

    ``tx`` is the tracer the guards are built for; ``key`` selects the instance's attribute
    marks (default: the class marks along the MRO are guarded too when the instance does not
    decide), its argument marks or its param-group marks (the caller guards what decides
    next, if anything).
    """

    instance_dict = object.__getattribute__(owner, "__dict__")
    marks = instance_dict.get(key)
    if marks is None:
        _install_once(
            ("instance-absent", owner_source, key),
            lambda: owner_source.make_guard(
                functools.partial(_torch.GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT, attr=key)
            ),
        )
    else:
        marks_source = _torch.AttrSource(owner_source, key)
        if name in marks:  # the instance decides: a canonical spec, or None (opted out)
            _torch.install_guard(
                _torch.DictGetItemSource(marks_source, name).make_guard(
                    _torch.GuardBuilder.ID_MATCH
                )
            )
            return True
        _torch.install_guard(
            marks_source.make_guard(
                functools.partial(_torch.GuardBuilder.DICT_NOT_CONTAINS, key=name)
            )
        )
    if key == MARKS_KEY:
        # The class decides.  Unmarked ones too: a mark made after a compile must take
        # effect at the next call.
        guard_class_marks(tx, owner_source, type(owner), name)
    return False


def guard_class_marks(tx: Any, owner_source: Any, cls: type, name: str) -> None:
    """Guard the class marks of ``name`` along ``cls``'s MRO, as ``lookup_mark`` reads
    them: each class's table entry until one holds ``name`` (``object`` holds none)."""

    # the MRO read below is the owner's class's: a graph runs only for that class
    _install_once(
        ("type", owner_source), lambda: owner_source.make_guard(_torch.GuardBuilder.TYPE_MATCH)
    )
    for klass in cls.__mro__:
        if klass is not object and _guard_keyed(tx, klass, name):
            return


def guard_function_marks(tx: Any, code: types.CodeType, name: str) -> None:
    """Guard the mark of parameter ``name`` of the function running ``code``: its entry
    of the mark table, or the absence of either."""
    _guard_keyed(tx, code, name)


def _guard_keyed(tx: Any, obj: type | types.CodeType, name: str) -> bool:
    """Guard ``MARK_TABLE[key_of(obj)]``'s answer for ``name``; True when it holds ``name``."""

    key = key_of(obj)
    own = MARK_TABLE.get(key)
    table = _mark_table_source(tx)
    if own is None:
        _install_once(
            ("table-absent", key),
            lambda: table.make_guard(
                functools.partial(_torch.GuardBuilder.DICT_NOT_CONTAINS, key=key)
            ),
        )
        return False
    entry = _torch.DictGetItemSource(table, key)
    if name in own:
        _install_once(
            ("table-mark", key, name),
            lambda: _torch.DictGetItemSource(entry, name).make_guard(_torch.GuardBuilder.ID_MATCH),
        )
        return True
    _install_once(
        ("table-unmarked", key, name),
        lambda: entry.make_guard(
            functools.partial(_torch.GuardBuilder.DICT_NOT_CONTAINS, key=name)
        ),
    )
    return False


def _mark_table_source(tx: Any) -> Any:
    """A source for ``dynscalar._mark_table`` that guards read in C++ (module docstring)."""
    try:
        module = tx.import_source("dynscalar")  # GlobalSource('__import_dynscalar')
    except Exception:  # noqa: BLE001 - none on this torch, or it failed: a lambda-based source
        module = _torch.ImportSource("dynscalar")
    return _torch.AttrSource(module, "_mark_table")


# The "no marks" guards are asked for by every int/float attribute a trace reads: hundreds
# of requests per compile of a large model, each a Guard built and handed to Dynamo
# (``functools.partial`` guards are not even deduplicated there: each is a separate check at
# run time).  So each is installed once per guard set, and again whenever that set no
# longer holds it (Dynamo builds a new set when it rolls a trace back, and can clear one).
def _install_once(key: Any, build: Callable[[], Any]) -> None:
    context = _torch.TracingContext.get()
    guards = context.guards_context.dynamo_guards
    shape_env = getattr(context.fake_mode, "shape_env", None)
    if shape_env is None:  # no compile to remember it in: installed each time
        _torch.install_guard(build(), skip=1)
        return
    lookups = lookup_state(shape_env).lookups
    if lookups.guard_set is not guards:
        lookups.guard_set, lookups.guards = guards, {}
    memo = lookups.guards
    guard = memo.get(key)
    if guard is not None and guard in guards.inner:
        return
    guard = build()
    _torch.install_guard(guard, skip=1)
    memo[key] = guard


def guard_proxy(source: Any) -> None:
    """Guard a proxy's class and (canonical) spec, read through ``source``."""
    _torch.install_guard(source.make_guard(_torch.GuardBuilder.TYPE_MATCH))
    read = _torch.GenericAttrSource(source, "_self_spec")
    _torch.install_guard(read.make_guard(_torch.GuardBuilder.ID_MATCH))


def guard_proxy_or_plain(source: Any, cls: type, spec: Any) -> None:
    """Guard the value at ``source`` to be the plain type of proxy class ``cls`` (``int``
    for ``DynamicInt``, ``float`` for ``DynamicFloat``) or a ``cls`` with the (canonical)
    ``spec``: one Python check (a guard-manager lambda), where :func:`guard_proxy` is two
    C++ checks that also refuse the plain value."""
    from .._proxy import DynamicInt

    plain = int if cls is DynamicInt else float
    read = object.__getattribute__

    def check(value: Any) -> bool:
        kind = type(value)
        return kind is plain or (kind is cls and read(value, "_self_spec") is spec)

    text = f"type({source_name(source)}) is {plain.__name__} or a {cls.__name__} with {spec!r}"
    guard_lambda(source, check, text, ("proxy-or-plain", source))


def guard_lambda(source: Any, check: Callable[[Any], bool], text: str, key: Any) -> None:
    """Guard ``check(<the value at source>)`` (a Python function, called by the C++ guard
    manager on every call of the compiled code); ``text`` is what recompile reasons show,
    ``key`` installs it once per guard set."""
    _install_once(
        key,
        lambda: source.make_guard(functools.partial(_lambda_guard, check=check, text=text)),
    )


def _lambda_guard(builder: Any, guard: Any, check: Callable[[Any], bool], text: str) -> None:
    try:  # the table's doctor entry: the user's line after the text, as Dynamo's guards
        parts = _torch.get_verbose_code_parts(text, guard)
    except (ImportError, AttributeError):
        parts = [text]
    builder.get_guard_manager(guard).add_lambda_guard(check, parts, guard.user_stack)
