"""``python -m dynscalar doctor SCRIPT [ARGS...]``: which Python scalars cause recompiles.

Runs the user's script unchanged (as ``__main__``, with its own ``sys.argv``), then reads
Dynamo's record of guard failures (``torch._dynamo.utils.guard_failures``, kept while
``torch._dynamo.config.report_guard_failures`` is on, the default).  A guard of the form
``<source> == <number>`` that failed is a scalar whose new value forced a recompile; each
distinct compiled version it invalidated counts once.
"""

from __future__ import annotations

import re
import runpy
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ScalarRecompiles", "find_scalar_recompiles", "format_report", "run_doctor"]

_REASON = re.compile(
    r"^(?P<compile_id>\d+/\d+): (?P<source>[A-Za-z_][\w.\[\]'\"]*) == "
    r"(?P<value>-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|nan|inf))\s*(?:#|$)"
)


@dataclass
class ScalarRecompiles:
    """One scalar whose changing value made Dynamo recompile a function."""

    function: str  # qualified name of the compiled function, e.g. "Trainer.forward"
    location: str  # file:line of the function
    source: str  # how the function reads it: "self.iteration", "n"
    invalidated: set[str] = field(default_factory=set)  # compile ids whose guard it failed
    values: list[str] = field(default_factory=list)

    @property
    def recompiles(self) -> int:
        return len(self.invalidated)

    @property
    def suggestion(self) -> str:
        """The line to add so the scalar is traced symbolically."""
        if self.source.startswith("self."):
            owner, _, attr = self.source[len("self.") :].rpartition(".")
            target = f"model.{owner}" if owner else "model"
            return f'dynscalar.mark_dynamic_attr({target}, "{attr}")'
        return f"pass dynscalar.mark_dynamic({self.source}) as the argument {self.source!r}"

    @property
    def scalar(self) -> str:
        cls = self.function.rpartition(".")[0]
        if self.source.startswith("self.") and cls:
            return f"{cls}.{self.source[len('self.') :]}"
        return f"{self.function}({self.source})"


def find_scalar_recompiles(guard_failures: dict[Any, list[str]]) -> list[ScalarRecompiles]:
    """Group Dynamo's guard-failure reasons by the scalar that failed them."""
    found: dict[tuple[Any, str], ScalarRecompiles] = {}
    for code, reasons in guard_failures.items():
        qualname = getattr(code, "co_qualname", getattr(code, "co_name", "?"))
        location = f"{getattr(code, 'co_filename', '?')}:{getattr(code, 'co_firstlineno', 0)}"
        for reason in reasons:
            for part in str(reason).splitlines()[0].split("; "):
                match = _REASON.match(part.strip())
                if match is None:
                    continue
                key = (code, match["source"])
                record = found.setdefault(
                    key, ScalarRecompiles(qualname, location, match["source"])
                )
                if match["compile_id"] not in record.invalidated:
                    record.invalidated.add(match["compile_id"])
                    record.values.append(match["value"])
    return sorted(found.values(), key=lambda r: (-r.recompiles, r.scalar))


def format_report(records: list[ScalarRecompiles]) -> str:
    """The doctor's table, or one line when no scalar caused a recompile."""
    if not records:
        return "dynscalar doctor: no recompiles were caused by Python scalars."
    rows = [("scalar", "where", "recompiles", "add this (model = your module instance)")]
    rows += [(r.scalar, r.location, str(r.recompiles), r.suggestion) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    header = f"dynscalar doctor: {len(records)} scalar(s) caused recompiles:"
    return "\n".join([header, *lines])


def run_doctor(script: str, args: list[str]) -> int:
    """Run ``script`` with ``args`` as ``__main__``; print the report; return its exit code."""
    import dynscalar  # noqa: F401  (bridge hook in place before the script imports torch)

    saved_argv = sys.argv
    sys.argv = [script, *args]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved_argv
        failures: dict[Any, list[str]] = {}
        if "torch._dynamo" in sys.modules:
            from torch._dynamo.utils import guard_failures

            failures = dict(guard_failures)
        print(format_report(find_scalar_recompiles(failures)), file=sys.stderr, flush=True)
    return code
