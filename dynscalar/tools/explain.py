"""The table ``str(dynscalar.explain(obj))`` prints: one row per dynamic scalar.

Examples:
    >>> import torch, dynscalar
    >>> m = torch.nn.Linear(2, 2); m.step = 0
    >>> print(render(dynscalar.explain(dynscalar.mark_dynamic_attr(m, "step"), show=False)))
    module           attribute  value  how                spec
    ---------------  ---------  -----  -----------------  ------
    <root> (Linear)  step       0      mark_dynamic_attr  backed
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._explain import Explanation

__all__ = ["render"]


def render(explanation: Explanation) -> str:
    """The records as aligned columns (module, attribute, value, how, spec; "reads" where a
    record has one), or one line saying there are none."""
    if not explanation:
        return f"dynscalar: no dynamic scalars in this {explanation.subject}."
    first = "module" if explanation.subject == "module tree" else "object"
    rows: list[tuple[str, ...]] = [(first, "attribute", "value", "how", "spec", "reads")]
    for r in explanation:
        spec = ", ".join(f"{k}={v}" for k, v in r.spec.kwargs().items()) or "backed"
        path = f"{r.module or '<root>'} ({r.cls})"
        rows.append((path, r.attribute, repr(r.value), r.how, spec, r.reads))
    if not any(r.reads for r in explanation):
        rows = [row[:5] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)
