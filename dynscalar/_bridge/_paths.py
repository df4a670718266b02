"""User paths: Dynamo's name for a value, spelled the way the user's code reaches it.

Dynamo names every value it reads by a *source*, printed as an expression over the compiled
frame's locals ``L`` and globals ``G``: ``L['self']._modules['drop'].p``,
``L['self'].__dict__['_modules']['drop'].p`` (the form it uses once forward writes an
attribute), ``G['cfg'].scale``, ``L['fn']._modules['1'].step`` (a compiled
``nn.Sequential``), ``L['self'].param_groups[0]['lr']`` (a compiled ``opt.step``),
``L['kwargs']['temperature']``; its own messages strip the scope (``fn._modules['1'].step``).
Warnings, logs, errors and the doctor name the value by the path the user writes instead:
``model.drop.p``, ``model[1].step``, ``opt.param_groups[0]['lr']``, ``temperature``.

:func:`user_path` is that translation. It reads the source text only (no torch internals);
given the frame's objects it names the root as the call site does: the variable bound to the
compiled module or optimizer there (``opt``), else ``model`` for a module and ``optimizer``
for an optimizer reached as ``self``/``fn``.

Examples:
    >>> user_path("L['self'].__dict__['_modules']['drop'].p")
    'model.drop.p'
    >>> user_path("fn._modules['1'].step")
    'model[1].step'
    >>> user_path("L['kwargs']['temperature']")
    'temperature'
"""

from __future__ import annotations

import ast
import keyword
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol, TypeVar

import torch

__all__ = [
    "ParsedSource",
    "Step",
    "call_site_frame",
    "innermost_user",
    "is_library_file",
    "name_at_call_site",
    "parse_source",
    "render_step",
    "root_name",
    "user_path",
]

#: Roots Dynamo gives the compiled object itself: a method's ``self``, and ``fn`` in the
#: wrapper ``torch.compile(module)`` compiles.
IMPLICIT_ROOTS = ("self", "fn")
_CHILD_DICTS = ("_modules", "_parameters", "_buffers")  # nn.Module's storage of children


@dataclass(frozen=True)
class Step:
    """One step from a root to a value: a child module, an attribute or an item."""

    kind: str  # "module" (child module by name), "attr" or "item"
    key: str | int
    #: the source of the object the step is taken from (``L['self']._modules['drop']``)
    container: str


@dataclass(frozen=True)
class ParsedSource:
    """A source as a root and steps: ``L['self']._modules['drop'].p`` is the local
    ``self``, then the child module ``drop``, then the attribute ``p``."""

    scope: str  # "L" (a local of the compiled frame), "G" (a global) or "" (a bare name)
    root: str
    steps: tuple[Step, ...]

    @property
    def root_source(self) -> str:
        return f"{self.scope}[{self.root!r}]" if self.scope else self.root


def parse_source(source: str) -> ParsedSource | None:
    """``source`` as a root and steps; None when it is not a chain of names and constant
    keys (a call such as ``len(L['args'])``, an operator).

    ``x._modules['k']``, ``x.__dict__['_modules']['k']`` (and ``_parameters``,
    ``_buffers``) are the child ``k`` of ``x``; ``x.__dict__['k']`` is the attribute ``k``;
    a trailing ``.__wrapped__`` (the plain value inside a ``DynamicInt``) is the value itself.

    Examples:
        >>> p = parse_source("L['self']._modules['blocks']._modules['0'].p")
        >>> [(s.kind, s.key) for s in p.steps]
        [('module', 'blocks'), ('module', '0'), ('attr', 'p')]
    """
    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Attribute) and node.attr == "__wrapped__":
        node = node.value
    steps: list[tuple[str, str | int, ast.expr]] = []  # kind, key, the container's node
    while True:
        if isinstance(node, ast.Name):
            scope, root = "", node.id
            break
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("L", "G")
        ):
            key = node.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            scope, root = node.value.id, key.value
            break
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr, node.value))
            node = node.value
            continue
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)):
            return None
        key_value = node.slice.value
        if not isinstance(key_value, (str, int)) or isinstance(key_value, bool):
            return None
        inner, owner, store = node.value, node.value, None
        # x._modules['k'] (and _parameters, _buffers): child k of x; x.__dict__['k']:
        # attribute k of x
        if isinstance(inner, ast.Attribute) and inner.attr in (*_CHILD_DICTS, "__dict__"):
            owner, store = inner.value, inner.attr
        # x.__dict__['_modules']['k']: the same child, read through the instance dict
        elif (
            isinstance(inner, ast.Subscript)
            and isinstance(inner.slice, ast.Constant)
            and inner.slice.value in _CHILD_DICTS
            and isinstance(inner.value, ast.Attribute)
            and inner.value.attr == "__dict__"
        ):
            owner, store = inner.value.value, inner.slice.value
        kind = "item" if store is None else "module" if store == "_modules" else "attr"
        steps.append((kind, key_value, owner))
        node = owner
    steps.reverse()
    return ParsedSource(
        scope, root, tuple(Step(kind, key, ast.unparse(expr)) for kind, key, expr in steps)
    )


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def render_step(
    expr: str,
    kind: str,
    key: str | int,
    container: Any = None,
    *,
    quote: Callable[[str], str] = repr,
) -> str:
    """``expr`` followed by one step, as user code writes it.

    A child module is ``expr.name``, or ``expr[i]`` where the container is indexed by position
    (``nn.Sequential``, ``nn.ModuleList``; without the container: any all-digit name), or
    ``expr['k']`` in an ``nn.ModuleDict``; an attribute that is not a
    name is ``getattr(expr, 'k')``; an item is ``expr[key]``. ``quote`` spells string keys
    (``repr`` in messages, double quotes in the doctor's code).

    Examples:
        >>> render_step("model", "module", "0")
        'model[0]'
        >>> render_step("opt.param_groups[0]", "item", "lr")
        "opt.param_groups[0]['lr']"
    """
    text = str(key)
    if kind == "module":
        if text.isdigit() and (
            container is None or isinstance(container, (torch.nn.Sequential, torch.nn.ModuleList))
        ):
            return f"{expr}[{int(text)}]"
        if isinstance(container, torch.nn.ModuleDict):
            return f"{expr}[{quote(text)}]"
        if _is_name(text):
            return f"{expr}.{text}"
        return f"{expr}.get_submodule({quote(text)})"
    if kind == "attr":
        return f"{expr}.{text}" if _is_name(text) else f"getattr({expr}, {quote(text)})"
    index = quote(key) if isinstance(key, str) else repr(key)
    return f"{expr}[{index}]"


def root_name(parsed: ParsedSource, obj: Any = None, caller: FrameType | None = None) -> str:
    """How the user's code names the root of ``parsed`` (``obj``: the root object).

    A global keeps its name. A local is named by the variable bound to ``obj`` (or to the
    ``torch.compile`` wrapper of it) in the call site's frame ``caller``; without one,
    ``self``/``fn`` of a module is ``model`` and of an optimizer ``optimizer``.
    """
    if parsed.scope == "G":
        return parsed.root
    if obj is None:
        return "model" if parsed.root in IMPLICIT_ROOTS else parsed.root
    found = name_at_call_site(caller, obj)
    if found is not None:
        return found[0]
    if parsed.root in IMPLICIT_ROOTS:  # the compiled object itself
        if isinstance(obj, torch.nn.Module):
            return "model"
        if isinstance(obj, torch.optim.Optimizer):
            return "optimizer"
    return parsed.root


def user_path(
    source: str,
    *,
    f_locals: Mapping[str, Any] | None = None,
    caller: FrameType | None = None,
) -> str:
    """The path the user's code writes for Dynamo's ``source`` (``source`` itself when it is
    not a chain of names).

    ``f_locals``: the compiled frame's locals (to tell a module from an optimizer and find
    the call site's name for it); ``caller``: the call site's frame. Without them, ``self``
    and ``fn`` are called ``model``.

    Examples:
        >>> user_path("L['self']._modules['blocks']._modules['0'].drop.p")
        'model.blocks[0].drop.p'
        >>> user_path("G['cfg'].scale")
        'cfg.scale'
    """
    parsed = parse_source(source)
    if parsed is None:
        return source
    steps = parsed.steps
    if parsed.root == "kwargs" and steps and steps[0].kind == "item":
        # the compiled frame's **kwargs: the keyword argument's own name
        expr = str(steps[0].key)
        steps = steps[1:]
    else:
        obj = f_locals.get(parsed.root) if f_locals is not None and parsed.scope != "G" else None
        expr = root_name(parsed, obj, caller)
    for step in steps:
        expr = render_step(expr, step.kind, step.key)
    return expr


# ----------------------------------------------------------------------------- call sites
#: torch's package folder and dynscalar's (this file's grandparent folder)
_LIBRARY_DIRS = tuple(
    os.path.normcase(folder) + os.sep
    for folder in (
        os.path.dirname(os.path.abspath(str(torch.__file__))),
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
)


def is_library_file(filename: str) -> bool:
    """Whether ``filename`` belongs to torch or dynscalar (never the user's line)."""
    return os.path.normcase(os.path.abspath(filename)).startswith(_LIBRARY_DIRS)


class _Located(Protocol):
    @property
    def filename(self) -> str: ...


LocatedT = TypeVar("LocatedT", bound=_Located)


def innermost_user(frames: Iterable[LocatedT]) -> LocatedT | None:
    """The last of ``frames`` (outermost first, each with a ``filename``: a traceback's
    ``FrameSummary``, a traced line) whose file is not torch's or dynscalar's."""
    return next((f for f in reversed(list(frames)) if not is_library_file(f.filename)), None)


def _generated(filename: str) -> bool:
    """Code without a file that is not the user's: Dynamo's and FX's generated code."""
    return filename.startswith("<") and not (
        filename in ("<stdin>", "<string>") or filename.startswith("<ipython-input")
    )


def call_site_frame(start: FrameType | None = None) -> FrameType | None:
    """The innermost frame outside torch and dynscalar: the user's call of the compiled
    function while Dynamo compiles it (the prompt's ``<stdin>`` included)."""
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    while frame is not None and (
        is_library_file(frame.f_code.co_filename) or _generated(frame.f_code.co_filename)
    ):
        frame = frame.f_back
    return frame


def name_at_call_site(caller: FrameType | None, obj: Any) -> tuple[str, bool] | None:
    """(name, through a wrapper): a variable of ``caller`` bound to ``obj``, else to a
    ``torch.compile`` wrapper of it (``compiled = torch.compile(model)``: ``compiled``,
    True); None when there is none."""
    if caller is None:
        return None
    wrapped: tuple[str, bool] | None = None
    for items in (_local_items(caller), list(caller.f_globals.items())):
        for name, value in items:
            if name.startswith("_"):
                continue
            if value is obj:
                return name, False
            if wrapped is None and _orig_mod(value) is obj:
                wrapped = (name, True)
    return wrapped


def _local_items(frame: FrameType) -> list[tuple[str, Any]]:
    """The (name, value) pairs of ``frame``'s locals, read without keeping them alive.

    Before Python 3.13, ``frame.f_locals`` of a function frame is a snapshot stored in the
    frame: it would hold every local of the user's frame (a model the code deletes after the
    compiled call) until that frame reads its locals again or returns.  The snapshot is
    emptied after reading unless something else holds it (``d = locals()`` in that frame);
    the frame's own variables are not touched (CPython refreshes the snapshot from them
    before any write-back, as for a trace function)."""
    snapshot = frame.f_locals
    items = list(snapshot.items())
    function_frame = snapshot is not frame.f_globals
    # references: the frame's, ``snapshot`` and getrefcount's argument
    if sys.version_info < (3, 13) and function_frame and sys.getrefcount(snapshot) <= 3:
        snapshot.clear()
    return items


def _orig_mod(value: Any) -> Any:
    try:
        return object.__getattribute__(value, "__dict__").get("_modules", {}).get("_orig_mod")
    except (AttributeError, TypeError):
        return None
