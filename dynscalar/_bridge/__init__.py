"""The bridge: the only package that touches ``torch._dynamo`` and other private torch internals.

Why it exists: Dynamo decides how to trace a Python value in ``VariableBuilder._wrap``.
Exact ``int`` attributes of a module become constants guarded by value (one compile per
value), and a wrapt proxy is not an exact type at all, so stock Dynamo fails on it
("No constant base type found in MRO").  The bridge wraps ``_wrap`` and, for a
``DynamicInt``/``DynamicFloat`` or a registry-marked attribute, asks Dynamo for a symbolic
graph input instead.  docs/how-it-works.md tells the whole story.

One module per concern, each readable on its own:

* ``_checks``: the private names and signatures relied on, verified before patching;
* ``_install``: lazy, idempotent installation (a post-import hook on ``torch._dynamo``),
  and the degraded fallback when internals moved;
* ``_wrap``: the ``_wrap`` hook - which values become symbolic, and with which spec;
* ``_sources``: how guards and graph inputs read a marked value;
* ``_ints`` / ``_floats``: SymInt and SymFloat inputs (floats also patch the AOT passes);
* ``_writeback``: attributes assigned in compiled code keep eager's class and spec;
* ``_reports``: specialization warnings and errors at the user's line;
* ``_state``: the lock and the per-compile tables shared by the above.
"""

from __future__ import annotations

from ._checks import BridgeError, check_float_internals, check_internals
from ._install import install, install_fallback, is_installed, on_dynamo_import

__all__ = [
    "BridgeError",
    "check_float_internals",
    "check_internals",
    "install",
    "install_fallback",
    "is_installed",
    "on_dynamo_import",
]
