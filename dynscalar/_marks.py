"""The mark store: where every mark lives, the lock that serialises edits, and lookups.

Every kind of mark is kept and found here; the public API modules (``_attrs`` for
attributes and classes, ``_args`` for arguments, ``_optim`` for optimizer groups,
``_auto`` for ``auto_dynamic``) validate and explain, then call this module.  The bridge
asks this module what is marked, and guards the storage keys and the mark table below.

Where marks live:

* **attributes** (``mark_dynamic_attr``, ``auto_dynamic``): on the instance,
  ``module.__dict__[MARKS_KEY]`` (``{name: spec}``, ``None`` for an instance that opted out
  of a class mark), so ``copy.deepcopy``, ``pickle`` and ``torch.save`` keep them and
  nothing global keeps a module alive;
* **classes** (``@dynamic_attrs``): in :data:`MARK_TABLE`, under the class's key
  (:func:`key_of`), inherited along the MRO; an entry dies with its class;
* **a module's forward arguments** (``mark_dynamic_args(module, ...)``): on the instance,
  ``module.__dict__[ARG_MARKS_KEY]``;
* **a function's arguments** (``mark_dynamic_args(fn, ...)``, ``@dynamic_args``): in
  :data:`MARK_TABLE`, under the key of the function's code object, with the decorator
  wrappers that lead to it (held weakly): a marked function that is garbage collected takes
  its marks along;
* **optimizer hyperparameters** (``mark_dynamic_param_groups``): on the optimizer,
  ``optimizer.__dict__[GROUP_MARKS_KEY]`` (per-parameter state entries under
  ``STATE_MARKS_KEY``), and on every optimizer it holds that holds the
  same param-group dicts (:func:`group_holders`: a wrapper's base optimizer), so the marks
  follow the dicts whichever optimizer compiled code reads them through;
* **auto_dynamic's snapshot** and the names it promoted to marks: on the instance,
  under ``AUTO_KEY`` and ``PROMOTED_KEY``.

Edits are copy-on-write under one lock: readers (Dynamo, at trace time) never lock and
always see a whole dict, and two threads marking the same object never lose an update.
An edit that leaves the marks as they were stores nothing (the same mark made again
changes nothing a guard reads).

Every mark is guarded by the entry it is read from, so a mark change invalidates only the
graphs that read that mark: an instance's marks dict entry (``module.__dict__[MARKS_KEY]
[name]``), and for marks kept by key, ``MARK_TABLE[key][name]`` - the class's or the
code object's entry - or the absence of ``key`` from the table.  ``dynscalar._mark_table``
is :data:`MARK_TABLE`: guards read ``dynscalar._mark_table[key][name]``.

Examples:
    >>> import torch
    >>> from dynscalar import DynamicSpec as ds_spec, _marks, mark_dynamic_attr
    >>> m = torch.nn.Linear(2, 2); m.step = 0
    >>> _ = mark_dynamic_attr(m, "step")
    >>> _marks.lookup_mark(m, "step") == ds_spec()
    True
"""

from __future__ import annotations

import itertools
import threading
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from ._caches import ObjectKeyed
from ._spec import DynamicSpec

__all__ = [
    "ARG_MARKS_KEY",
    "AUTO_KEY",
    "GROUP_MARKS_KEY",
    "MARKS_KEY",
    "MARK_TABLE",
    "PROMOTED_KEY",
    "STATE_MARKS_KEY",
    "Marks",
    "arg_marks_made",
    "auto_marked",
    "auto_snapshot",
    "class_marks_of",
    "class_own_marks",
    "edit_class_marks",
    "edit_function_marks",
    "edit_marks",
    "function_marks",
    "group_holders",
    "instance_marks",
    "key_of",
    "lock",
    "lookup_arg_mark",
    "lookup_group_mark",
    "lookup_state_mark",
    "lookup_mark",
    "promote",
    "start_auto",
    "unwrap_function",
    "wrapped_parameter",
]

MARKS_KEY = "_dynscalar_marks"
ARG_MARKS_KEY = "_dynscalar_arg_marks"
GROUP_MARKS_KEY = "_dynscalar_group_marks"
STATE_MARKS_KEY = "_dynscalar_state_marks"  # per-parameter state entries (state[p][name])
AUTO_KEY = "_dynscalar_auto"
PROMOTED_KEY = "_dynscalar_auto_promoted"  # names auto_dynamic marked (for explain)

#: name -> spec; ``None`` records an instance's opt-out of a class mark
Marks = dict[str, DynamicSpec | None]


#: Serialises every edit of every mark (readers never take it: edits replace whole dicts).
lock = threading.Lock()

#: Marks kept by key rather than on an instance: a class's own ``@dynamic_attrs`` marks and
#: a function's argument marks, each under the int key of the class or code object
#: (:func:`key_of`), ``{name: spec}``.  ``dynscalar._mark_table`` is this dict (never
#: rebound): compiled code guards ``MARK_TABLE[key][name]`` (an identity check on the
#: canonical spec), or that ``key`` or ``name`` is absent.  Values hold no user object;
#: an entry is dropped when its class or code object is garbage collected.
MARK_TABLE: dict[int, dict[str, DynamicSpec]] = {}

# class or code object -> its key in MARK_TABLE, weakly and by identity: given the first
# time a mark or a guard needs it, never reused (a guard compiled for a key stays about
# that object).  Not a WeakKeyDictionary: code objects compare by value, so a function
# defined again from the same source (a re-run notebook cell) would share the first one's
# key, and the first one's finalizer would drop the marks of the one still alive.
_keys: ObjectKeyed[object, int] = ObjectKeyed()
_next_key = itertools.count(1)
# keys whose object drops its MARK_TABLE entry when it is collected (weakref.finalize)
_finalized: set[int] = set()

# code of a decorator's wrapper (``wrapper(self, *args, **kwargs)``, functools.wraps) ->
# the function it wraps: Dynamo may compile the wrapper, whose frame holds the marked
# arguments in ``args``/``kwargs``.  Weak on both sides (a wrapper never keeps a
# function), and by identity (code objects compare by value).
_wrappers: ObjectKeyed[types.CodeType, weakref.ref[types.FunctionType]] = ObjectKeyed()


# ----------------------------------------------------------------------------- keys
def key_of(obj: type | types.CodeType) -> int:
    """The key of a class or code object in :data:`MARK_TABLE` (given on first use).

    Examples:
        >>> class Plain:
        ...     pass
        >>> key_of(Plain) == key_of(Plain)
        True
    """
    key = _keys.get(obj)
    if key is None:
        with lock:
            key = _key_locked(obj)
    return key


def _key_locked(obj: type | types.CodeType) -> int:
    key = _keys.get(obj)
    if key is None:
        key = _keys[obj] = next(_next_key)
    return key


def _own(obj: type | types.CodeType) -> dict[str, DynamicSpec] | None:
    """The marks :data:`MARK_TABLE` holds for ``obj`` (None: none), giving it no key."""
    key = _keys.get(obj)
    return None if key is None else MARK_TABLE.get(key)


def _store_locked(obj: type | types.CodeType, marks: dict[str, DynamicSpec]) -> None:
    """Store ``marks`` as ``obj``'s entry of :data:`MARK_TABLE` (none when empty), unless
    they equal what is there: then the entry, and every guard on it, stays as it is."""
    key = _key_locked(obj)
    if marks == (MARK_TABLE.get(key) or {}):
        return
    if not marks:
        del MARK_TABLE[key]
        return
    MARK_TABLE[key] = marks
    if key not in _finalized:  # the entry dies with the class or code object
        _finalized.add(key)
        weakref.finalize(obj, _forget, key).atexit = False


def _forget(key: int) -> None:
    """Drop a collected object's entry (a finalizer: runs without the lock, and needs none -
    an edit of the same entry holds the object, so it cannot run meanwhile)."""
    MARK_TABLE.pop(key, None)
    _finalized.discard(key)


# ----------------------------------------------------------------------------- edits
def edit_marks(
    instance_dict: dict[str, Any], edit: Callable[[Marks], None], key: str = MARKS_KEY
) -> None:
    """Apply ``edit`` to a copy of an instance's marks under ``key`` and store the copy,
    under the lock.

    A fresh dict each time the marks change: copies of the object made earlier keep their
    own marks.  An edit that changes nothing stores nothing (an instance without marks
    does not get an empty dict).  ``key`` selects attribute (default), argument
    (``ARG_MARKS_KEY``) or param-group (``GROUP_MARKS_KEY``) marks.

    Examples:
        >>> state: dict = {}
        >>> edit_marks(state, lambda marks: marks.update(step=DynamicSpec()))
        >>> list(state[MARKS_KEY])
        ['step']
    """
    with lock:
        old = instance_dict.get(key)
        marks = dict(old or {})
        edit(marks)
        if marks == (old or {}):
            return
        instance_dict[key] = marks
        if key == ARG_MARKS_KEY and marks:
            _arg_marks_made[0] = True


def edit_class_marks(cls: type, edit: Callable[[dict[str, DynamicSpec]], None]) -> None:
    """Apply ``edit`` to a copy of the marks ``cls`` itself holds and store it, under the
    lock.

    Examples:
        >>> class Plain:
        ...     pass
        >>> edit_class_marks(Plain, lambda marks: marks.update(step=DynamicSpec()))
        >>> list(class_marks_of(Plain))
        ['step']
    """
    with lock:
        own = dict(_own(cls) or {})
        edit(own)
        _store_locked(cls, own)


def edit_function_marks(
    code: types.CodeType, edit: Callable[[dict[str, DynamicSpec]], None]
) -> None:
    """Apply ``edit`` to a copy of the argument marks of the function running ``code``
    and store it, under the lock.

    Examples:
        >>> def scale(x, t):
        ...     return x * t
        >>> edit_function_marks(scale.__code__, lambda marks: marks.update(t=DynamicSpec()))
        >>> list(function_marks(scale.__code__))
        ['t']
    """
    with lock:
        marks = dict(_own(code) or {})
        edit(marks)
        _store_locked(code, marks)
        if marks:
            _arg_marks_made[0] = True


#: whether an argument mark was ever made in this process (compiles without one never look
#: for marked values in calling frames)
_arg_marks_made = [False]


def arg_marks_made() -> bool:
    """True once any function or module argument mark was made in this process.

    Examples:
        >>> isinstance(arg_marks_made(), bool)
        True
    """
    return _arg_marks_made[0]


def start_auto(instance_dict: dict[str, Any], snapshot: dict[str, int | float]) -> None:
    """Begin ``auto_dynamic`` on one instance: its scalars as they are now, and an (empty)
    marks dict from the start, so a promotion while Dynamo traces edits that dict and the
    guards already installed for the instance's other attributes ("no mark for width")
    stay true.

    Examples:
        >>> state: dict = {}
        >>> start_auto(state, {"step": 0})
        >>> state[AUTO_KEY], state[MARKS_KEY]
        ({'step': 0}, {})
    """
    with lock:
        instance_dict[AUTO_KEY] = snapshot
        instance_dict[MARKS_KEY] = dict(instance_dict.get(MARKS_KEY) or {})


def promote(instance_dict: dict[str, Any], name: str, spec: DynamicSpec) -> None:
    """Mark attribute ``name`` of an instance for ``auto_dynamic`` (a mark like any other,
    remembered as promoted for ``explain``).

    Examples:
        >>> state: dict = {}
        >>> promote(state, "step", DynamicSpec())
        >>> list(state[MARKS_KEY]), state[PROMOTED_KEY]
        (['step'], {'step'})
    """
    with lock:
        marks = dict(instance_dict.get(MARKS_KEY) or {})
        marks[name] = spec
        instance_dict[MARKS_KEY] = marks
        instance_dict[PROMOTED_KEY] = {*instance_dict.get(PROMOTED_KEY, ()), name}


# ----------------------------------------------------------------------------- lookups
def _instance_dict(owner: object) -> dict[str, Any] | None:
    try:
        return object.__getattribute__(owner, "__dict__")  # type: ignore[no-any-return]
    except AttributeError:
        return None


def instance_marks(owner: object, key: str = MARKS_KEY) -> Mapping[str, Any] | None:
    """The marks ``owner`` itself holds under ``key`` (None: it holds none).

    Examples:
        >>> class Plain:
        ...     pass
        >>> instance_marks(Plain()) is None
        True
    """
    instance_dict = _instance_dict(owner)
    return None if instance_dict is None else instance_dict.get(key)


def class_own_marks(cls: type) -> dict[str, DynamicSpec] | None:
    """The marks ``cls`` itself holds (``@dynamic_attrs`` on it), not inherited ones.

    Examples:
        >>> class_own_marks(object) is None
        True
    """
    return _own(cls)


def class_marks_of(cls: type) -> dict[str, DynamicSpec]:
    """Class-level marks of ``cls``, merged along the MRO (subclasses win).

    Examples:
        >>> class_marks_of(object)
        {}
    """
    merged: dict[str, DynamicSpec] = {}
    for klass in reversed(cls.__mro__):
        own = _own(klass)
        if own:
            merged.update(own)
    return merged


def lookup_mark(owner: object, name: str) -> DynamicSpec | None:
    """The spec for attribute ``owner.name``: instance mark, else class mark, else None.

    Examples:
        >>> class Plain:
        ...     step = 0
        >>> lookup_mark(Plain(), "step") is None
        True
    """
    instance_dict = _instance_dict(owner)
    if instance_dict is None:
        return None
    marks = instance_dict.get(MARKS_KEY)
    if marks is not None and name in marks:
        return marks[name]  # type: ignore[no-any-return]
    for klass in type(owner).__mro__:
        own = _own(klass)
        if own is not None and name in own:
            return own[name]
    return None


def function_marks(code: types.CodeType) -> dict[str, DynamicSpec] | None:
    """The argument marks of the function running ``code`` (None: none).

    Examples:
        >>> function_marks((lambda n: n).__code__) is None
        True
    """
    return _own(code)


def lookup_arg_mark(code: types.CodeType, name: str, self_obj: object) -> DynamicSpec | None:
    """The mark of parameter ``name`` of the frame running ``code`` (``self_obj``: its
    ``self``): the instance's argument marks first, then the function's.

    Examples:
        >>> lookup_arg_mark((lambda n: n).__code__, "n", None) is None
        True
    """
    if self_obj is not None:
        marks = instance_marks(self_obj, ARG_MARKS_KEY)
        if marks and name in marks:
            return marks[name]  # type: ignore[no-any-return]
    found = _own(code)
    return found.get(name) if found else None


def lookup_group_mark(optimizer: object, key: str) -> DynamicSpec | None:
    """The mark of param-group ``key`` of ``optimizer``, if any.

    Examples:
        >>> class Opt:
        ...     pass
        >>> lookup_group_mark(Opt(), "lr") is None
        True
    """
    marks = instance_marks(optimizer, GROUP_MARKS_KEY)
    return marks.get(key) if marks else None


def lookup_state_mark(optimizer: object, name: str) -> DynamicSpec | None:
    """The mark of the per-parameter state entry ``optimizer.state[p][name]``, if any.

    Examples:
        >>> class Opt:
        ...     pass
        >>> lookup_state_mark(Opt(), "step") is None
        True
    """
    marks = instance_marks(optimizer, STATE_MARKS_KEY)
    return marks.get(name) if marks else None


def _groups_of(owner: object) -> list[Any] | None:
    """``owner.param_groups`` as stored in its instance dict (None: it stores none; a
    ``param_groups`` property, such as Lookahead's, is not run)."""
    instance_dict = _instance_dict(owner)
    groups = None if instance_dict is None else instance_dict.get("param_groups")
    return groups if isinstance(groups, list) else None


def group_holders(
    owner: object, groups: list[Any] | None = None, depth: int = 3
) -> list[tuple[tuple[str, ...], object]]:
    """The objects ``owner`` holds (its instance attributes, recursively, ``depth`` levels)
    that hold one of the param-group dicts ``groups`` (default: ``owner``'s own) in their
    own ``param_groups``: a wrapper optimizer's base optimizer (SAM's ``base_optimizer``,
    Lookahead's ``optimizer``).  Each with the attribute path that leads to it.

    Only instance dicts are read: no property or ``__getattr__`` of the user's runs.

    Examples:
        >>> class Base:
        ...     def __init__(self, groups):
        ...         self.param_groups = groups
        >>> class Wrapper:
        ...     def __init__(self, base):
        ...         self.base_optimizer = base
        ...         self.param_groups = base.param_groups
        >>> base = Base([{"lr": 0.1}])
        >>> [(path, holder is base) for path, holder in group_holders(Wrapper(base))]
        [(('base_optimizer',), True)]
    """
    wanted = {id(group) for group in (groups if groups is not None else _groups_of(owner) or ())}
    found: list[tuple[tuple[str, ...], object]] = []
    if not wanted:
        return found
    seen = {id(owner)}

    def visit(obj: object, path: tuple[str, ...], levels: int) -> None:
        instance_dict = _instance_dict(obj)
        if not instance_dict or levels == 0:
            return
        for name, value in list(instance_dict.items()):
            if id(value) in seen or not isinstance(name, str):
                continue
            held = _groups_of(value)
            if held is None or not any(id(group) in wanted for group in held):
                continue
            seen.add(id(value))
            found.append(((*path, name), value))
            visit(value, (*path, name), levels - 1)

    visit(owner, (), depth)
    return found


def auto_snapshot(owner: object) -> dict[str, int | float] | None:
    """``auto_dynamic``'s snapshot of ``owner``'s scalars (None: not under auto_dynamic).

    Examples:
        >>> class Plain:
        ...     pass
        >>> auto_snapshot(Plain()) is None
        True
    """
    instance_dict = _instance_dict(owner)
    return None if instance_dict is None else instance_dict.get(AUTO_KEY)


def auto_marked(owner: object, name: str) -> bool:
    """True when ``owner.name``'s mark was made by ``auto_dynamic`` (not by the user).

    Examples:
        >>> class Plain:
        ...     step = 0
        >>> auto_marked(Plain(), "step")
        False
    """
    instance_dict = _instance_dict(owner)
    return instance_dict is not None and name in instance_dict.get(PROMOTED_KEY, ())


# ----------------------------------------------------------------------------- wrappers
def unwrap_function(function: Any) -> types.FunctionType | None:
    """The innermost Python function of a ``__wrapped__`` chain (through methods and
    ``torch.compile`` wrappers); the wrappers on the way are remembered (weakly) as leading
    to it.

    Examples:
        >>> import functools
        >>> def inner(x, n):
        ...     return x
        >>> @functools.wraps(inner)
        ... def outer(*args, **kwargs):
        ...     return inner(*args, **kwargs)
        >>> unwrap_function(outer) is inner
        True
    """
    chain: list[types.FunctionType] = []
    seen = 0
    while function is not None and seen < 10:
        inner = getattr(function, "__func__", function)
        if isinstance(inner, types.FunctionType):
            chain.append(inner)
        function = getattr(function, "_torchdynamo_orig_callable", None) or getattr(
            function, "__wrapped__", None
        )
        seen += 1
    if not chain:
        return None
    innermost = chain[-1]
    if len(chain) > 1:
        with lock:
            for wrapper in chain[:-1]:
                _wrappers[wrapper.__code__] = weakref.ref(innermost)
    return innermost


def _wrapped_by(code: types.CodeType) -> types.FunctionType | None:
    ref = _wrappers.get(code)
    return ref() if ref is not None else None


def _closure_target(code: types.CodeType, closure: Any) -> types.FunctionType | None:
    """For a forwarding wrapper made by a closure (``def inner(*args, **kwargs): return
    fn(*args, **kwargs)``: torch.compile's ``wrap_inline`` around ``@torch.no_grad()``
    functions, most decorators), the marked function its cell ``fn`` leads to."""
    if not closure or code.co_argcount or code.co_kwonlyargcount:
        return None
    for cell in closure:
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if not callable(content) or isinstance(content, type):
            continue
        inner = unwrap_function(content)
        if inner is not None and _own(inner.__code__):
            return inner
    return None


def _closure_leads_to(closure: Any, function: types.FunctionType) -> bool:
    """Whether one of a wrapper frame's cells holds ``function`` (through ``__wrapped__``)."""
    for cell in closure:
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        wraps = callable(content) and not isinstance(content, type)
        if wraps and unwrap_function(content) is function:
            return True
    return False


def wrapped_parameter(
    code: types.CodeType,
    position: int | None = None,
    keyword: str | None = None,
    closure: Any = None,
) -> tuple[types.CodeType, str] | None:
    """In a wrapper's frame, the wrapped function's parameter behind ``args[position]`` or
    ``kwargs[keyword]``: ``(the wrapped function's code, parameter name)``.

    The wrapper is assumed to pass its named parameters first, then ``*args`` in order
    (``def wrapper(self, *args, **kwargs): return fn(self, *args, **kwargs)``); it is
    found through the ``__wrapped__`` chain of what was marked, or, for a ``(*args,
    **kwargs)`` wrapper, through its ``closure`` (the frame's cells).

    Examples:
        >>> wrapped_parameter((lambda *args: None).__code__, position=0) is None
        True
    """
    inner = _wrapped_by(code)
    if inner is not None and closure and not _closure_leads_to(closure, inner):
        # wrapper code is shared by every function a decorator wraps (torch.compile's
        # `compile_wrapper` too): this frame's cells wrap another function
        inner = None
    inner = inner or _closure_target(code, closure)
    if inner is None:
        return None
    if keyword is not None:
        return inner.__code__, keyword
    named = inner.__code__.co_varnames[: inner.__code__.co_argcount]
    index = code.co_argcount + (position or 0)
    return (inner.__code__, named[index]) if index < len(named) else None
