"""State shared by the bridge modules: the install lock and per-compile symbol tables."""

from __future__ import annotations

import threading

_lock = threading.RLock()

_UNBACKED_KEY = "_dynscalar_unbacked_symbols"
_SYMBOLS_KEY = "_dynscalar_symbols"
_FLOAT_KEY = "_dynscalar_float_symbols"
