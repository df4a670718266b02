"""Checkpoint support: let ``torch.load(weights_only=True)`` rebuild DynamicInt/DynamicFloat.

Proxies pickle as ``_rebuild(kind, value, unbacked, min, max)``.  ``_rebuild`` is the only
global registered with ``torch.serialization.add_safe_globals``: it can build nothing but a
validated ``DynamicInt`` or ``DynamicFloat``, so loading a checkpoint never runs other code.
"""

from __future__ import annotations

import torch.serialization

from ._proxy import _rebuild

__all__ = ["register_safe_globals"]


def register_safe_globals() -> None:
    """Allow the proxy rebuild function in ``torch.load(..., weights_only=True)``."""
    torch.serialization.add_safe_globals([_rebuild])
