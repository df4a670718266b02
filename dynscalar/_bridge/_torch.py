"""The private torch names the bridge reads, by short name, each one an entry of the table.

The only module of the package that reaches a private torch name: every other module writes
``_torch.AttrSource`` or ``_torch.GuardBuilder.TYPE_MATCH`` (never ``from torch._dynamo...
import``), and the name is resolved here from its :class:`~._table.Private` entry the first
time it is read.  So a torch release that renames or moves one of them is noticed where
every other entry is, when the table is checked (the bridge then stays out, in its degraded
mode, with one warning), and never as an ImportError inside a hook while a user's model
traces.  A short name is the entry's ``alias`` or the first part of its qualified name
(``torch._dynamo.guards:GuardBuilder.TYPE_MATCH`` gives ``GuardBuilder``).

Classes and modules are kept after the first read (the table patches their attributes,
never the classes themselves); functions and other values (Dynamo's config flags, a
function the doctor wraps while it watches) are read again each time.

Examples:
    >>> from dynscalar._bridge import _torch
    >>> _torch.AttrSource.__name__
    'AttrSource'
    >>> _torch.not_in_the_table  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AttributeError: not_in_the_table is not a private torch name of ...
"""

from __future__ import annotations

import types
from typing import Any

from . import _table


def __getattr__(name: str) -> Any:
    entry = _table.named(name)
    if entry is None:
        raise AttributeError(
            f"{name} is not a private torch name of {_table.__name__}: add an entry there first"
        )
    value = entry.root()
    if isinstance(value, (type, types.ModuleType)):
        globals()[name] = value
    return value
