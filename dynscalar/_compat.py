"""Torch version flags and feature detection, defined once.

Versions are compared with ``packaging.version.Version`` (``"2.10" >= "2.8"`` is False
as strings).  Nothing here imports ``torch._dynamo``.
"""

from __future__ import annotations

import torch
from packaging.version import Version

__all__ = [
    "MIN_TORCH",
    "TENSORIFY_RESTARTS_INSTEAD_OF_BAKING",
    "TESTED_TORCH",
    "TORCH_SUPPORTED",
    "TORCH_VERSION",
]

#: The installed torch release, without local tags (``2.13.0+cpu`` -> ``2.13.0``).
TORCH_VERSION = Version(Version(torch.__version__).base_version)

#: Oldest torch whose Dynamo internals the bridge was written and verified against.
MIN_TORCH = Version("2.13.0")

#: Releases the test suite has been run on.
TESTED_TORCH = (Version("2.13.0"), Version("2.14.1"), Version("2.15.0"))

TORCH_SUPPORTED = TORCH_VERSION >= MIN_TORCH

# torch 2.15 fixed pytorch#194976 in the float-tensorify pass: a float it cannot lower is
# specialized through a restart (exact, one compile per value) instead of being baked into
# the graph, and clamp_min/clamp_max became lowerable.
TENSORIFY_RESTARTS_INSTEAD_OF_BAKING = TORCH_VERSION >= Version("2.15.0")  # noqa: SIM300
