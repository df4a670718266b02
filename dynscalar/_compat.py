"""Torch version flags and feature detection, defined once.

Versions are compared as tuples of release numbers (``"2.10" >= "2.8"`` is False as
strings); pre-release and local tags are dropped (``2.15.0a0+git1234`` is ``(2, 15, 0)``).
Nothing here imports ``torch._dynamo``.
"""

from __future__ import annotations

import re

import torch

__all__ = [
    "MIN_TORCH",
    "TORCH_SUPPORTED",
    "TORCH_VERSION",
    "release",
]


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: ``"2.13.0+cpu"`` -> ``(2, 13, 0)``."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


#: The installed torch release, without pre-release or local tags (``2.13.0+cpu`` -> ``2.13.0``).
TORCH_VERSION = ".".join(map(str, release(torch.__version__)))

#: Oldest torch whose Dynamo internals the bridge was written and verified against.
MIN_TORCH = "2.13.0"

TORCH_SUPPORTED = release(TORCH_VERSION) >= release(MIN_TORCH)
