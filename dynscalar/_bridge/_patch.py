"""The one patch mechanism: a torch function wrapped, the wrapper running the table's hooks.

The table (``_table``) says which functions are wrapped, with which hooks and when; this
module does the wrapping, for the installer and ``disabled()`` (``_install``), the degraded
mode and the doctor's watcher: :func:`wrap` puts a ``wrapt.FunctionWrapper`` around
torch's function, calling the entry's wrapper function (:func:`hook_of`, one frame per
call), and :func:`unwrap` puts torch's original back.  One switch, :data:`DISABLED`,
turns every wrapper off inside ``dynscalar.disabled()``: nothing is taken out and put
back.  The wrapper runs the hooks under the safety net (``_safety``), which decides what
runs where dynscalar failed; this module then runs it.  Hooks are named by module and
function (``"_module:function"``) and their modules imported here, once.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _table
from ._table import Phase, Private

__all__ = [
    "APPLIED",
    "DISABLED",
    "PHASES",
    "Hook",
    "Patch",
    "apply",
    "apply_phase",
    "by_name",
    "hook_function",
    "hook_of",
    "run",
    "unwrap",
    "wrap",
]

Hook = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


@dataclass
class Patch:
    """One applied wrapper: where it sits, torch's original and the wrapper itself."""

    entry: Private
    owner: Any
    attribute: str
    original: Any
    wrapper: Any


#: Every full-bridge patch applied in this process, in order (they stay in place).
APPLIED: list[Patch] = []
#: phase -> True (checked and applied) or the BridgeError saying why not.
PHASES: dict[str, Any] = {}
#: While > 0 (inside ``disabled()``), a full-bridge wrapper calls torch's function itself,
#: or the entry's hook for that case (``disabled_hook``, else ``degraded_hook``).
DISABLED = [0]


def hook_function(path: str) -> Hook:
    """The hook ``"_module:function"`` of ``dynscalar._bridge`` (imports that module)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)  # type: ignore[no-any-return]


class _Resolved:
    """A hook path's module, imported once (at install, or at the first call where the
    phase is applied lazily); its function is read from the module at each call, one
    attribute lookup, so the function a module holds now is the one that runs."""

    __slots__ = ("module", "name", "path")

    def __init__(self, path: str, lazy: bool) -> None:
        self.path = path
        self.module: Any = None
        self.name = path.partition(":")[2]
        if not lazy:
            self.function()  # a missing hook fails here, at install

    def function(self) -> Hook:
        if self.module is None:
            module = self.path.partition(":")[0]
            self.module = importlib.import_module(f"{__package__}.{module}")
        return getattr(self.module, self.name)  # type: ignore[no-any-return]


def by_name(entry: Private, hook: Hook) -> Hook:
    """``hook`` receiving every argument of the call by ``entry``'s parameter names (in
    ``kwargs``; ``args`` is empty), so a hook reads ``kwargs["tx"]``, calls
    ``wrapped(**kwargs)``, and a torch signature that changes is one edit: the entry's."""

    def named(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if args:
            kwargs = entry.bind(args, kwargs)
        return hook(wrapped, instance, (), kwargs)

    if any(name.startswith("*") for name in entry.params or ()):
        return hook  # ``*args``: its values have no names; the hook reads them as passed
    return named


def hook_of(entry: Private, lazy: bool = False) -> Hook:
    """The wrapper function for ``entry``: one frame per call.  It binds the call's
    arguments by the entry's parameter names and runs, inside ``disabled()``, the entry's
    hook for that case (:attr:`~._table.Private.inside_disabled`) or torch's function
    alone; else its hook (its ``wrapped`` is torch's function, whose errors are noted as
    torch's: ``_torchs_own.by_torch``) inside the safety net, which says what runs instead
    where some compile is turned off (``_safety.off_path``) and for a failure
    (``_safety.handle``).  Hook modules are imported once (``lazy``: at the first call)."""
    assert entry.hook is not None, f"{entry.name} has no hook"
    hook = _Resolved(entry.hook, lazy)
    inside = _Resolved(entry.inside_disabled, lazy) if entry.inside_disabled else None
    starred = any(name.startswith("*") for name in entry.params or ())
    names = tuple(entry.params or ())
    if names[:1] == ("self",):
        names = names[1:]
    net: list[Any] = []  # the safety net's module and ``by_torch``, imported at the first call
    gate: Any = _Resolved(entry.gate, lazy).function() if entry.gate else None

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if (DISABLED[0] and inside is None) or (
            gate is not None and not gate(instance, args, kwargs)
        ):
            return wrapped(*args, **kwargs)  # torch's function alone, as if never wrapped
        if args and not starred:
            if len(args) > len(names):
                raise TypeError(f"{entry.name} takes {len(names)} arguments, {len(args)} given")
            kwargs = {**dict(zip(names, args, strict=False)), **kwargs}
            args = ()
        if DISABLED[0]:
            assert inside is not None
            return inside.function()(wrapped, instance, args, kwargs)
        if not net:
            from . import _safety
            from ._torchs_own import by_torch

            net.extend((_safety, by_torch))
        safety, by_torch = net
        if safety.OFF.held:  # some compile is turned off: this one, perhaps
            instead = safety.off_path(entry)
            if instead is not safety.NOT_OFF:
                return run(instead, wrapped, instance, args, kwargs)
        function = getattr(hook.module, hook.name) if hook.module is not None else hook.function()
        try:  # what torch's function raises is torch's (``_safety``)
            return function(by_torch(wrapped), instance, args, kwargs)
        except Exception as error:  # noqa: BLE001 - the net decides (it re-raises the rest)
            return run(safety.handle(entry, error), wrapped, instance, args, kwargs)

    return wrapper


def run(
    path: str | None, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """The call as the hook ``path`` makes it (None: torch's function alone)."""
    if path is None:
        return wrapped(*args, **kwargs)
    return hook_function(path)(wrapped, instance, args, kwargs)


def wrap(entry: Private, hook: Hook) -> Patch:
    """Replace ``entry``'s function with a ``wrapt.FunctionWrapper`` calling ``hook`` (which
    decides itself what runs inside ``disabled()``: one on/off mechanism)."""
    import wrapt

    owner, attribute = entry.resolve()
    original = vars(owner)[attribute]
    wrapper = wrapt.FunctionWrapper(original, hook)
    setattr(owner, attribute, wrapper)
    return Patch(entry, owner, attribute, original, wrapper)


def unwrap(patch: Patch) -> bool:
    """Put torch's original back; False (left alone) if someone replaced the wrapper since."""
    if vars(patch.owner).get(patch.attribute) is not patch.wrapper:
        return False
    setattr(patch.owner, patch.attribute, patch.original)
    return True


def apply(
    entries: list[Private], lazy: bool = False, hook: Callable[[Private], Hook] | None = None
) -> list[Patch]:
    """Wrap every entry, or none: a failure half-way undoes the ones already wrapped.
    Each entry's wrapper function is ``hook(entry)``, by default :func:`hook_of`."""
    done: list[Patch] = []
    try:
        for entry in entries:
            done.append(wrap(entry, hook(entry) if hook else hook_of(entry, lazy)))
    except BaseException:
        for patch in reversed(done):
            unwrap(patch)
        raise
    return done


def apply_phase(phase: Phase, lazy: bool = False) -> bool:
    """Check and apply ``phase`` once; False (``PHASES[phase]`` says why) when it moved."""
    from .._diagnostics import BridgeError

    if phase not in PHASES:
        try:
            APPLIED.extend(apply(_table.check(phase), lazy))
        except BridgeError as exc:
            PHASES[phase] = exc
        else:
            PHASES[phase] = True
    return PHASES[phase] is True
