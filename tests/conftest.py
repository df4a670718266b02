"""pytest configuration and fixtures; the helpers the tests share live in ``tests/helpers.py``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

# One inductor cache for the whole session (cold inductor compiles cost ~5-12 s here).
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), "dynscalar-test-inductor")
)

import torch

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `pytest -n 2` (the README's command): one process per core, one torch thread each
    torch.set_num_threads(1)

# imported once, at session start, before any test module or doctest
import dynscalar  # noqa: F401

# Fixture projects are scripts the doctor runs in a subprocess, not test modules (and with
# --doctest-modules, importing them would run them).
collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    """Each test starts from stock Dynamo state and empty dynscalar caches (marks are not
    caches: they stay on the objects the test made)."""
    from dynscalar._caches import reset_caches

    torch._dynamo.reset()
    reset_caches()
    yield
    torch._dynamo.reset()
    reset_caches()
