"""torch.export with marked scalars: a mark is specialized with a warning (``strict=True``
marks raise), in strict and in non-strict export, and a dynscalar error is catchable by
its public class.

* **Strict export** traces with Dynamo: the ``stages.build`` hook specializes each marked value it
  meets (``stages.build._specialize_for_export``).  torch.export re-raises errors from tracing as
  its own ``UserError``; the hook below re-raises the dynscalar error it wraps instead (the
  ``UserError`` is its ``__cause__``), so ``except dynscalar.SpecializationError`` works.
* **Non-strict export** (torch's default) runs ``forward`` in Python on fake tensors: a
  marked value is just its plain value there and becomes a constant of the exported
  program, and dynscalar never sees it.  Before exporting, the hook looks for the marked
  scalars the export can read (module attributes read by a ``forward`` of the tree, by
  name; proxy arguments) and warns for each (``strict=True``: raises before running).
"""

from __future__ import annotations

import types
from typing import Any

from ..._proxy import DynamicScalar
from .._reports import dynscalar_error_in, refuse

__all__ = ["export_hook"]


def _names_read(code: types.CodeType) -> set[str]:
    """Attribute and global names a code object (and the functions nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _marked_reads(module: Any, args: Any, kwargs: Any) -> list[tuple[str, Any, Any]]:
    """(where, plain value, spec) of each marked scalar non-strict export would read."""
    import torch

    from ... import explain
    from ..._attrs import compiled_original

    found: list[tuple[str, Any, Any]] = []
    if isinstance(module, torch.nn.Module):
        reads: dict[str, set[str]] = {}
        for path, sub in compiled_original(module).named_modules():
            forward = getattr(type(sub), "forward", None)
            code = getattr(forward, "__code__", None)
            reads[path] = _names_read(code) if code is not None else set()
        for record in explain(module, show=False):
            plain = getattr(record.value, "value", record.value)
            number = isinstance(plain, (int, float)) and not isinstance(plain, bool)
            if number and record.attribute in reads.get(record.module, set()):
                path = f"{record.module}." if record.module else ""
                where = f"{record.cls}.{record.attribute}"
                found.append((f"{path}{record.attribute} ({where})", plain, record.spec))
    arguments = list(enumerate(args or ())) + list((kwargs or {}).items())
    for key, value in arguments:
        if isinstance(value, DynamicScalar):
            found.append((f"argument {key!r}", value.value, value.spec))
    return found


def export_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``torch.export.export(mod, args, kwargs=None, *, strict=False, ...)``."""
    if kwargs.get("strict", False):
        try:
            return wrapped(*args, **kwargs)
        except Exception as exc:
            found = dynscalar_error_in(exc)
            if found is None or found is exc:
                raise
            raise found from exc
    module, call_args = kwargs.get("mod"), kwargs.get("args", ())
    call_kwargs = kwargs.get("kwargs")
    for where, plain, spec in _marked_reads(module, call_args, call_kwargs):
        message = (
            f"dynscalar: torch.export (non-strict) specializes {where} to {plain!r}; the "
            "exported program is valid for this value only. Pass the value as a tensor input "
            "(or an int input with torch.export dynamic_shapes) to keep it dynamic."
        )
        refuse(message, spec.strict, once=None, stacklevel=3, in_dynamo=False)
    return wrapped(*args, **kwargs)
