"""When the table's patches go in and out: at ``import torch._dynamo``, before the first
frame compiles, in degraded mode, and around ``dynscalar.disabled()``.

A phase is checked whole before any of it is applied, and applied whole or not at all
(``_patch.apply``).  Whatever goes wrong at ``import torch._dynamo``, dynscalar degrades
to specializing its marks (exact results, one compile per value) with one
:class:`~dynscalar.BridgeUnavailableWarning`, and the import itself never fails.
"""

from __future__ import annotations

import contextlib
import logging
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .._diagnostics import BridgeError, BridgeUnavailableWarning, warn_once
from . import _patch, _table, _torch
from ._patch import Patch
from ._state import lock
from ._table import Phase

log = logging.getLogger("dynscalar")

__all__ = [
    "disabled",
    "ensure_phase",
    "floats_pending",
    "install",
    "install_fallback",
    "is_installed",
    "on_dynamo_import",
    "phase_problem",
]

_degraded: list[Patch] = []  # the table's degraded hooks, while in place
_degraded_by_disabled = False  # whether disabled() put them there (and takes them out)


def is_installed() -> bool:
    """True once the bridge is installed into Dynamo in this process (even while disabled)."""
    return _patch.PHASES.get("dynamo") is True


def install() -> None:
    """Install the bridge into Dynamo (idempotent, thread-safe, all or nothing).

    Called automatically when ``torch._dynamo`` is imported; calling it by hand is only
    needed to surface a :class:`~dynscalar.BridgeError` early.
    """
    with lock:
        if is_installed():
            return
        patches = _patch.apply(_table.check("dynamo"))
        try:
            _skip_proxy_frames()
        except BaseException:
            for patch in reversed(patches):
                _patch.unwrap(patch)
            raise
        _patch.APPLIED.extend(patches)
        _patch.PHASES["dynamo"] = True
        _lend_torch_helpers()
        from .._compat import TORCH_VERSION

        log.info("dynscalar bridge installed into torch %s", TORCH_VERSION)


def _lend_torch_helpers() -> None:
    """Give ``dynscalar.ops`` the private torch helpers it needs: leaving the dispatch
    modes AOTAutograd traces under, to ask meta tensors which inputs get a gradient; and
    announcing its random ops to torch's common-subexpression pass, which must not merge
    two draws into one (it knows random ops by a list of packets, not by their tag)."""

    from ..ops import custom

    custom.outside_modes[0] = _torch._disable_current_modes
    custom.autograd_on[0] = _autograd_on
    custom.random_defined[0] = _never_merged
    for packet in custom.random_ops():
        _never_merged(packet)


def _autograd_on() -> Any:
    """Autograd's dispatch keys included again (a custom op's kernel runs below them): the
    ATen call inside records autograd as eager's call does."""
    key = _torch.DispatchKey
    excluded = _torch._dispatch_tls_local_exclude_set()
    for functionality in (key.AutogradFunctionality, key.ADInplaceOrView):
        excluded = excluded.remove(functionality)
    return _torch._ForceDispatchKeyGuard(_torch._dispatch_tls_local_include_set(), excluded)


def _never_merged(packet: Any) -> None:
    """Add a random op's packet to the ops AOTAutograd's CSE pass leaves alone."""
    listed = _torch.rand_ops
    if not any(p is packet for p in listed):
        listed.append(packet)


def ensure_phase(phase: Phase) -> bool:
    """Check and apply ``phase`` once; False when its internals moved
    (:func:`phase_problem` says why)."""
    with lock:
        return _patch.apply_phase(phase)


def floats_pending(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """The gate of the hook on ``ConvertFrameAssert.__call__`` (``stages.build``): only
    until the float phase is checked."""
    return "floats" not in _patch.PHASES


def phase_problem(phase: Phase) -> str | None:
    """Why ``phase`` could not be applied (None: it is)."""
    return None if ensure_phase(phase) else str(_patch.PHASES[phase])


def install_fallback() -> bool:
    """When the full bridge cannot be installed: specialize proxies instead of crashing.

    Stock Dynamo fails on a wrapt proxy ("No constant base type found in MRO"), so a
    proxy must still be turned into its plain value: the table's degraded hooks do that.
    Returns False if even those internals moved.
    """
    with lock:
        if _degraded or is_installed():
            return True
        try:
            _degraded.extend(_apply_degraded())
        except Exception:  # noqa: BLE001 - anything: no fallback, and the caller says so
            return False
        return True


def _apply_degraded(inside_disabled: bool = False) -> list[Patch]:
    """Wrap the entries that have a degraded hook (``inside_disabled``: also those with a
    hook of their own for ``disabled()``, which then takes the place of the degraded one)."""

    def path(entry: _table.Private) -> str | None:
        return entry.inside_disabled if inside_disabled else entry.degraded_hook

    entries = [e for e in _table.by_phase("dynamo") if path(e) is not None]
    for entry in entries:
        if entry.params is not None and entry.found_params() != entry.params:
            raise BridgeError(f"{entry.name} moved")

    def hook(entry: _table.Private) -> _patch.Hook:
        return _patch.by_name(entry, _patch.hook_function(path(entry) or ""))

    return _patch.apply(entries, hook=hook)


def _skip_proxy_frames() -> None:
    """Never compile a proxy's own methods as frames of their own.

    When a compiled function falls back to eager for good ("Skipping the function and
    falling back to eager"), Python runs it with Dynamo's frame callback still active, and
    every Python frame it calls is a candidate for compilation - including a proxy's
    ``__torch_function__`` and operators.  Those are dynscalar internals with nothing to
    gain from compiling, and torch 2.13 compiles ``__torch_function__`` without a guard on
    its ``func`` argument: the graph built for ``tensor + proxy`` would be reused for
    ``tensor * proxy``.  ``skip_code`` marks each code object once (the frame runs as
    plain Python); traced code never calls them (the bridge turns proxies into symbolic
    values before any method is looked up).  The marks concern proxies only, so they
    stay inside :func:`disabled`.
    """

    from .. import _proxy

    def functions_of(namespace: Mapping[str, Any]) -> list[Any]:
        found = []
        for value in namespace.values():
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            if isinstance(value, property):
                found += [f for f in (value.fget, value.fset, value.fdel) if f is not None]
            elif isinstance(value, types.FunctionType):
                found.append(value)
        return found

    functions = functions_of(vars(_proxy))
    for cls in (_proxy.DynamicScalar, _proxy.DynamicInt, _proxy.DynamicFloat):
        functions += functions_of(vars(cls))
    for function in functions:
        if function.__module__ == _proxy.__name__:
            _torch.skip_code(function.__code__)


def on_dynamo_import(_module: object) -> None:
    """Post-import hook for ``torch._dynamo``: install, or warn once why not.

    Never raises: ``import torch._dynamo`` must not fail because dynscalar is imported.
    """
    from .._compat import TORCH_VERSION

    try:
        install()
    except Exception as exc:  # noqa: BLE001 - any failure degrades, with the reason
        reason = (
            str(exc)
            if isinstance(exc, BridgeError)
            else f"dynscalar: installing the bridge into torch {TORCH_VERSION} failed "
            f"({type(exc).__name__}: {exc}). Please report this with your torch version."
        )
        degraded = install_fallback()
        log.info("dynscalar bridge not installed (%s); fallback active: %s", reason, degraded)
        warn_once(
            ("bridge",),
            f"{reason} dynscalar marks will be specialized like plain values (one compile "
            "per value); eager behaviour is unchanged."
            + (
                ""
                if degraded
                else " DynamicInt/DynamicFloat values cannot be compiled at all "
                "on this torch: pass int(x)/float(x) to compiled code."
            ),
            BridgeUnavailableWarning,
            stacklevel=3,
        )


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run torch.compile as if dynscalar were not installed (``dynscalar.disabled``).

    Every wrapper calls torch's function itself, except two kinds
    (``Private.inside_disabled``): the degraded hook on ``VariableBuilder._wrap`` (a proxy is read
    as its plain value, and remembered as a proxy) and write-back's recording and codegen
    hooks (``Private.disabled_hook``), which act only in compiles that read a proxy: what
    such a compile stores is what eager stores."""
    global _degraded_by_disabled
    dynamo = _torch.dynamo  # the bridge installs itself first if Dynamo was not imported yet

    with lock:
        _patch.DISABLED[0] += 1
        if _patch.DISABLED[0] == 1:
            dynamo.reset()
            if not is_installed() and not _degraded:
                with contextlib.suppress(Exception):  # proxies then fail as in stock torch
                    _degraded.extend(_apply_degraded(inside_disabled=True))
                    _degraded_by_disabled = True
    try:
        yield
    finally:
        with lock:
            _patch.DISABLED[0] -= 1
            if _patch.DISABLED[0] == 0:
                if _degraded_by_disabled:
                    for patch in reversed(_degraded):
                        _patch.unwrap(patch)
                    _degraded.clear()
                    _degraded_by_disabled = False
                dynamo.reset()
