"""The bridge: the only package that touches ``torch._dynamo`` and other private torch internals.

``import dynscalar`` imports this module, the table of private names (``_table``), the
namespace that reads them (``_torch``) and the patch mechanism (``_patch``) only: it
registers the ``dynscalar`` log name with torch, wraps the public ``torch.export.export``
(its hook module is imported at the first export), and asks to be called when
``torch._dynamo`` is imported; the rest of the bridge is imported then.  Nothing here
imports ``torch._dynamo`` or runs a kernel.

The map of the bridge's modules, one concern each, is in docs/how-it-works.md ("The bridge,
module by module"); every private torch name it relies on is one entry of ``_table``.
"""

from __future__ import annotations

import logging
import os

from .._diagnostics import BridgeError
from . import _patch, _table, _torch

__all__ = ["LOG_NAME", "named_in_torch_logs", "on_import", "register_torch_log"]

LOG_NAME = "dynscalar"
log = logging.getLogger(LOG_NAME)


def on_import() -> None:
    """What ``import dynscalar`` does to torch: the log name, the export wrapper, and the
    post-import hook that installs the rest of the bridge with ``torch._dynamo``."""
    import wrapt

    register_torch_log()
    wrapt.register_post_import_hook(_on_export_import, "torch.export")
    wrapt.register_post_import_hook(_on_dynamo_import, "torch._dynamo")


def _on_dynamo_import(module: object) -> None:
    from ._install import on_dynamo_import

    on_dynamo_import(module)


def _on_export_import(_module: object) -> None:
    """Wrap ``torch.export.export`` (already imported by ``import torch``) so that a user's
    first export is seen too.  Never raises: where it moved, export keeps torch's behaviour."""
    try:
        _patch.apply_phase("export", lazy=True)
    except Exception as exc:  # noqa: BLE001 - export then behaves as in stock torch
        log.info("torch.export not wrapped: %s", exc)


def register_torch_log() -> bool:
    """Register ``dynscalar`` as a torch log name (``TORCH_LOGS=dynscalar`` / ``+dynscalar``);
    False (nothing changed) if torch moved its registry.

    torch routes its logs through a registry of short names (``register_log`` in
    ``torch._logging._internal``); ``TORCH_LOGS`` and ``torch._logging.set_logs`` look names
    up there, set the level and attach torch's handler.  torch parses ``TORCH_LOGS`` once, at
    ``import torch``; a name it does not know but can import is treated as a module name, so
    ``TORCH_LOGS=dynscalar`` already enables the ``dynscalar`` logger.  Registering the name
    makes it a log like torch's own for what comes later (``set_logs``).  Logging is
    diagnostics only: a torch without this registry still runs dynscalar.
    """
    try:
        _table.check("logs")  # the table's "logs" entries: register_log and log_registry
    except BridgeError:
        return False
    if named_in_torch_logs(os.environ.get("TORCH_LOGS", "")):
        # torch has attached (or, when it is importing dynscalar itself, is about to attach)
        # its handler to our logger; like torch's registered logs, do not also pass records
        # on to the root logger's handlers (each line would print twice).
        log.propagate = False
    try:
        _torch.register_log(LOG_NAME, [LOG_NAME])
        return bool(_torch.log_registry.is_log(LOG_NAME))
    except (AttributeError, TypeError):  # a different registry: not ours to fix
        return False


def named_in_torch_logs(setting: str) -> bool:
    """True if a ``TORCH_LOGS`` value names ``dynscalar`` (``dynscalar``, ``+dynscalar``...)."""
    return any(item.strip().lstrip("+-") == LOG_NAME for item in setting.split(","))
