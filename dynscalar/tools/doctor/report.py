"""The doctor's report as text (for people) and as JSON (for tools and CI)."""

from __future__ import annotations

import json
import math
import os
import textwrap
from typing import Any

from .fixes import culprit_fix, fix_blocks, script_names
from .records import Culprit, DoctorReport, PathTaken

__all__ = ["WIDTH", "format_json", "format_report"]


def _relative(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if relative.startswith(os.pardir) else relative


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


#: the longest line of the report (a code block of the docs shows 80 characters)
WIDTH = 80


def _counts(recompiles: int, eager_calls: int, function: str) -> str:
    """``8 recompiles of Net.forward, 27 more calls run eagerly at the limit``."""
    parts = [f"{_plural(recompiles, 'recompile')} of {function}"] if recompiles else []
    if eager_calls:
        of = "" if recompiles else f" of {function}"
        parts.append(f"{_plural(eager_calls, 'more call')}{of} run eagerly at the limit")
    return ", ".join(parts)


def _headline(name: str, counts: str) -> list[str]:
    """``name counts`` on one line, or the counts on the next where that is too long."""
    line = f"{name} {counts}"
    return [line] if len(line) <= WIDTH else [name, f"      {counts}"]


def _wrapped(text: str, indent: str) -> list[str]:
    """``text`` in lines of at most :data:`WIDTH` characters, never breaking ``p == 0``."""
    kept = text.replace(" == ", "\0==\0").replace(" != ", "\0!=\0")
    lines = textwrap.wrap(kept, width=WIDTH, initial_indent=indent, subsequent_indent=indent)
    return [line.replace("\0", " ") for line in lines]


def _where_and_note(where: tuple[str, int, str] | None, note: str | None) -> list[str]:
    """The lines under a culprit or a path: the line of code that uses it, then its note."""
    lines = []
    if where is not None:
        filename, lineno, code = where
        lines.append(f"      {_relative(filename)}:{lineno}: {code}")
    if note is not None:
        lines += _wrapped(note, "      ")
    return lines


def _found(report: DoctorReport) -> str:
    """What the scalars caused, counted as ``TORCH_LOGS=recompiles`` lists recompiles (one
    per recompile, whatever number of scalars changed for it): ``5 Python scalars caused 15
    of 16 recompiles and 54 more calls run eagerly at the limit:``."""
    if not report.culprits:
        return "no recompiles were caused by Python scalars."
    recompiles, eager = report.culprit_recompiles, report.culprit_eager_calls
    parts = []
    if recompiles:
        parts.append(f"{recompiles} of {_plural(report.recompiles, 'recompile')}")
    if eager:
        parts.append(f"{_plural(eager, 'more call')} run eagerly at the limit")
    return f"{_plural(len(report.culprits), 'Python scalar')} caused {' and '.join(parts)}:"


def _instances(record: Culprit | PathTaken) -> tuple[str, list[str]]:
    """How user code reaches a culprit or a path: its path; for several instances of one
    class, their number, and a line with the paths (the first two and the last)."""
    if isinstance(record, Culprit):
        paths = [path for path, _ in record.instances]
    else:
        paths = list(record.instances)
    if not paths:
        return record.path or "", []
    shown = paths if len(paths) <= 3 else [paths[0], paths[1], "...", paths[-1]]
    return f"{len(paths)} instances", _wrapped(", ".join(shown), "      ")


def format_report(report: DoctorReport) -> str:
    """The doctor's report as text."""
    culprits = report.culprits
    found = _found(report)
    if report.crash is not None:
        lines = [
            f"dynscalar doctor: {report.script} stopped with {report.crash} "
            f"(exit code {report.exit_code}).",
            *_wrapped(f"Before that, {found}", ""),
        ]
    else:
        lines = _wrapped(f"dynscalar doctor: {found}", "")
    if culprits:
        lines.append("")
    for culprit in culprits:
        shown, instances = _instances(culprit)
        detail = f", {shown}" if shown else ""
        lines += _headline(
            f"  {culprit.scalar} ({culprit.type}{detail}):",
            _counts(culprit.recompiles, culprit.eager_calls, culprit.function),
        )
        lines += instances
        if culprit.reads is not None:
            lines.append(f"      reads {culprit.reads}")
        lines += _where_and_note(culprit.where, culprit.note)
    counted = sum(c.recompiles for c in culprits), sum(c.eager_calls for c in culprits)
    if counted != (report.culprit_recompiles, report.culprit_eager_calls):
        # a recompile with two culprits is listed under both
        lines.append("  (a recompile with several of these causes is counted under each)")
    if report.paths:
        # counted as TORCH_LOGS=recompiles lists them: one recompile, whatever number of
        # scalars took another path in it
        taken, eager = report.path_recompiles, report.path_eager_calls
        what = " and ".join(
            text
            for text in (
                _plural(taken, "recompile") if taken else "",
                f"{_plural(eager, 'call')} run eagerly at the limit" if eager else "",
            )
            if text
        )
        lines += [
            "",
            f"{what} took another path of a dynamic scalar (by design: nothing to fix):",
            "",
        ]
        for path in report.paths:
            shown, instances = _instances(path)
            detail = f", {shown}" if shown else ""
            lines += _headline(
                f"  {path.scalar} ({path.type}{detail}):",
                _counts(path.recompiles, path.eager_calls, path.function),
            )
            lines += instances
            each = " (and the same guard of each instance)" if instances else ""
            lines.append(f"      `{path.guard}` no longer held{each}")
            lines += _where_and_note(path.where, path.note)
        counted = sum(p.recompiles for p in report.paths), sum(p.eager_calls for p in report.paths)
        if counted != (taken, eager):
            lines.append("  (a recompile with several of these paths is counted under each)")
    notes = [
        f"{function} reached torch._dynamo.config.{limit_type}"
        f"{'' if limit is None else f' ({limit})'}:\n  its last recompile and every later call "
        "needing one ran eagerly;\n  "
        + (
            "why later ones missed was not read."
            if function in report.unread
            else "the doctor read why each missed."
        )
        for function, (limit_type, limit) in report.limits.items()
    ]
    if report.other_recompiles or report.other_eager_calls:
        what = " and ".join(
            text
            for text in (
                _plural(report.other_recompiles, "more recompile")
                if report.other_recompiles
                else "",
                f"{_plural(report.other_eager_calls, 'call')} run eagerly at the limit"
                if report.other_eager_calls
                else "",
            )
            if text
        )
        notes.append(
            f"{what} had other causes (tensor shapes or other guards);\n"
            "  TORCH_LOGS=recompiles shows them."
        )
    if notes:
        lines += ["", *notes]
    if culprits:
        for block in fix_blocks(report):
            lines += ["", f"Fix: {block.placement}:", ""]
            lines += [f"    {line}" for line in block.code]
            if block.notes:
                lines += ["", *(f"  {line}" for line in block.notes)]
        lines += ["", "Then run the doctor again to check:", f"    {report.rerun}"]
    if report.notes:
        more = f" (and {len(report.notes) - 1} more)" if len(report.notes) > 1 else ""
        lines += ["", f"dynscalar doctor could not read everything: {report.notes[0]}{more}"]
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return repr(value)


def _where_json(where: tuple[str, int, str] | None) -> dict[str, Any] | None:
    """A culprit's or path's line of code as JSON: ``file``, ``line`` and ``code``."""
    return None if where is None else {"file": where[0], "line": where[1], "code": where[2]}


def format_json(report: DoctorReport) -> str:
    """The doctor's report as JSON, for tools and CI."""
    bound = script_names(report.script)
    data = {
        "script": report.script,
        "args": report.args,
        "exit_code": report.exit_code,
        "crash": report.crash,
        "recompiles": report.recompiles,
        "other_recompiles": report.other_recompiles,
        "eager_calls": report.eager_calls,
        "other_eager_calls": report.other_eager_calls,
        "path_recompiles": report.path_recompiles,
        "path_eager_calls": report.path_eager_calls,
        "scalars": [
            {
                "scalar": c.scalar,
                "kind": c.kind,
                "type": c.type,
                "path": c.path,
                "reads": c.reads,
                "function": c.function,
                "source": c.source,
                "where": _where_json(c.where),
                "recompiles": c.recompiles,
                "eager_calls": c.eager_calls,
                "values": [_jsonable(v) for v in c.values],
                "instances": [path for path, _ in c.instances],
                "fix": culprit_fix(c, bound),
                "note": c.note,
            }
            for c in report.culprits
        ],
        "paths": [
            {
                "scalar": p.scalar,
                "type": p.type,
                "path": p.path,
                "function": p.function,
                "source": p.source,
                "guard": p.guard,
                "instances": list(p.instances),
                "where": _where_json(p.where),
                "recompiles": p.recompiles,
                "eager_calls": p.eager_calls,
                "values": [_jsonable(v) for v in p.values],
                "note": p.note,
            }
            for p in report.paths
        ],
        "limits": {
            function: {"limit": limit_type, "value": value, "read": function not in report.unread}
            for function, (limit_type, value) in report.limits.items()
        },
        "fixes": [
            {
                "where": block.placement,
                "code": "\n".join(block.code),
                "notes": " ".join(block.notes) or None,
                "replaces": None
                if block.call is None
                else {
                    "file": block.call.filename,
                    "line": block.call.lineno,
                    "code": block.call.statement,
                },
            }
            for block in fix_blocks(report)
        ],
        "rerun": report.rerun,
        "notes": report.notes,
    }
    return json.dumps(data, indent=2)
