"""dynscalar's logger as one of torch's named logs: ``TORCH_LOGS=dynscalar`` / ``+dynscalar``.

Why it exists: torch routes its logs through a registry of short names
(``torch/_logging/_registrations.py`` calls ``torch._logging._internal.register_log``);
``TORCH_LOGS="dynamo,+inductor"`` and ``torch._logging.set_logs`` look names up there, set
the level (a bare name: INFO, ``+name``: DEBUG, ``-name``: ERROR) and attach torch's
handler and formatter.  Everything dynscalar logs goes to the one ``dynscalar`` logger;
registering that name makes it a log like torch's own.

How it meets ``TORCH_LOGS``: torch parses the variable once, at ``import torch``, which
always happens before this runs (dynscalar imports torch).  A name it does not know but can
import is treated as a module name, so for ``TORCH_LOGS=dynscalar`` torch itself enables the
``dynscalar`` logger (importing dynscalar from inside ``import torch`` if need be) and
attaches its handler.  Registering the alias here afterwards changes none of that; it makes
``dynscalar`` a registered log for what comes later (``set_logs``, which re-applies all
registered logs, and ``torch._logging`` tooling).  Nothing here imports ``torch._dynamo``.
"""

from __future__ import annotations

import logging
import os

__all__ = ["LOG_NAME", "log", "register_torch_log"]

LOG_NAME = "dynscalar"
log = logging.getLogger(LOG_NAME)


def register_torch_log() -> bool:
    """Register ``dynscalar`` as a torch log name; False (nothing changed) if torch moved it.

    Logging is diagnostics only: a torch without this private registry still imports and
    runs dynscalar, and ``TORCH_LOGS=dynscalar`` keeps working through torch's module-name
    path.
    """
    try:
        from torch._logging import _internal
    except ImportError:
        return False
    registry = getattr(_internal, "log_registry", None)
    register = getattr(_internal, "register_log", None)
    if registry is None or register is None:
        return False
    if named_in_torch_logs(os.environ.get("TORCH_LOGS", "")):
        # torch has attached (or, when it is importing dynscalar itself, is about to attach)
        # its handler to our logger; like torch's registered logs, do not also pass records
        # on to the root logger's handlers (each line would print twice).
        log.propagate = False
    try:
        # (setting_name, log_name): torch 2.13-2.15 (torch/_logging/_internal.py).
        register(LOG_NAME, [LOG_NAME])
        return bool(registry.is_log(LOG_NAME))
    except (AttributeError, TypeError):  # a different signature or registry: not ours to fix
        return False


def named_in_torch_logs(setting: str) -> bool:
    """True if a ``TORCH_LOGS`` value names ``dynscalar`` (``dynscalar``, ``+dynscalar``...)."""
    return any(item.strip().lstrip("+-") == LOG_NAME for item in setting.split(","))
