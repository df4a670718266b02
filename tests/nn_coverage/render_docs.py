"""docs/nn-coverage.md from the nn-coverage JSON: a pure function of the JSON."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    ROOT,
    package_relative,
    read_json,
    row,
    source_name,
    table,
    template,
)

JSON_PATH = Path(__file__).parent / "published" / "nn-coverage.json"
PAGE_PATH = ROOT / "docs" / "nn-coverage.md"
BACKENDS = ("eager", "aot_eager", "inductor")
#: torch.testing.assert_close's default for float32, the inductor tolerance unless stock
#: inductor needs more on a row.
FLOAT32_DEFAULT = (1.3e-6, 1e-5)
SIGMAS = 6.0  # binomial standard deviations / standard errors a random row may be off
#: a difference of stock inductor from eager this large is a wrong value, not rounding
WRONG = 1e-3


def compiled_once(result: dict[str, Any]) -> bool:
    """No graph compiled after the first value of each path (a restart within a call is one
    compile; a path is one of the values at which the op's kernel computes otherwise, such
    as pow's special exponents on inductor, or all the others)."""
    calls = result["per_call"]
    first = result.get("new_path") or [i == 0 for i in range(len(calls))]
    return (
        not result["error"]
        and bool(calls)
        and all(first[i] or calls[i] == calls[i - 1] for i in range(1, len(calls)))
    )


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    return f"{x:.1e}"


def _inductor_tol(tol: dict[str, Any]) -> str:
    if tol["source"].startswith("float32 default"):
        return "float32 default" + (" (stock wrong)" if "wrong" in tol["source"] else "")
    return f"{_tol(tol['rtol'], tol['atol'])} (stock inductor)"


def _tol(rtol: float, atol: float) -> str:
    return "exact" if rtol == 0 and atol == 0 else f"rtol {rtol:g}, atol {atol:g}"


def _compiles(entry: dict[str, Any], where: str, backend: str) -> str:
    r = entry[where].get(backend)
    if r is None:
        return "-"
    if r["error"]:
        return "error"
    text = str(r["compiles"])
    calls = r["per_call"]
    if r["compiles"] > 1 and compiled_once(r):
        # all on the first call: a restart, not a recompile; else one path after another
        text += "*" if calls[-1] == calls[0] else "†"
    return text + ("" if r["equal"] else " (**≠**)")


def _diff(entry: dict[str, Any], backend: str) -> str:
    r = entry["backends"].get(backend)
    if r is None or r["error"]:
        return "-"
    m = r["max_abs"]
    if entry["kind"] == "mean":
        return f"{r['stat']:.1f} SE"
    parts = [_fmt(m["output"]), _fmt(m["grad"])]
    if m["buffer"]:
        parts.append(_fmt(m["buffer"]))
    text = " / ".join(parts)
    if entry["kind"] == "dropout":
        text += f"; {r['stat']:.1f} sd"
    return text


def _name(entry: dict[str, Any]) -> str:
    attrs = ", ".join(f"`{a}`" for a in entry["attrs"])
    return f"`{entry['module']}` {attrs} ({entry['mode']})"


def render(data: dict[str, Any], source: str = "") -> str:
    """The Markdown page, a pure function of the JSON (re-rendering is byte-identical);
    ``source``: how the page cites the JSON (default: the published one)."""
    source = source or source_name(JSON_PATH)
    rows = data["rows"]
    backends = data["config"]["backends"]
    m = data["machine"]
    n = len(rows)

    def once(where: str, backend: str) -> int:
        return sum(1 for e in rows if backend in e[where] and compiled_once(e[where][backend]))

    equal = sum(1 for e in rows if all(r["equal"] for r in e["backends"].values()))
    # Rows re-measured with `--merge` are recorded in the JSON's "partial_runs"; the page
    # shows the result, not the history of the measurement.
    lines = [
        *template("nn-coverage-head", source=source, m=m),
        *template("nn-coverage-summary", n=n, values=len(rows[0]["values"]) if rows else 4),
    ]

    def per_path(backend: str) -> str:
        found = sum(
            1
            for e in rows
            if backend in e["backends"]
            and compiled_once(e["backends"][backend])
            and sum(e["backends"][backend].get("new_path") or [True]) > 1
        )
        return f" ({found} of them once per path: `†` below)" if found else ""

    for backend in backends:
        share = f" ({100 * once('backends', backend) / n:.0f}%)" if n else ""
        lines.append(
            f"- **{backend}**: {once('backends', backend)} of {n} rows compile once{share}"
            + per_path(backend)
            + (
                f"; stock torch, unmarked: {once('stock', backend)} of {n}."
                if any(backend in e["stock"] for e in rows)
                else "."
            )
        )
    if any("aot_eager" in e["stock"] for e in rows) and "aot_eager" not in backends:
        lines.append(f"- stock torch on aot_eager, unmarked: {once('stock', 'aot_eager')} of {n}.")
    lines.append(
        f"- **Equal to eager** within the row's tolerance on every backend: {equal} of {n} rows."
    )
    wrong = [
        e
        for e in rows
        if "inductor" in e["stock"] and max(e["stock"]["inductor"]["max_abs"].values()) >= WRONG
    ]
    if wrong:
        names = "; ".join(
            f"{_name(e)}, max |Δ| {_fmt(max(e['stock']['inductor']['max_abs'].values()))}"
            for e in wrong
        )
        lines.append(template("nn-coverage-wrong", names=names)[0])
    lines += ["", "Rows that are not *dynamic, equal*:", ""]
    others = [e for e in rows if e["status"] != "dynamic, equal"]
    if not others:
        lines.append("- none.")
    for e in others:
        results = e["backends"]
        counts = ", ".join(f"{b} {r['compiles']}" for b, r in results.items())
        reasons = [f"compiles: {counts}"]
        for backend, r in results.items():
            if r["error"]:
                reasons.append(f"{backend}: {r['error']}")
            elif not r["equal"]:
                reasons.append(f"{backend}: {'; '.join(r['failures'][:2])}")
        warned = sorted({w.split(";")[0] for r in results.values() for w in r["warnings"]})
        reasons += [f"warned: “{w}”" for w in warned]
        if e["note"]:
            reasons.append(e["note"])
        # warnings name files by absolute path: the page names them by package
        text = package_relative("; ".join(reasons))
        lines.append(f"- {_name(e)}: **{e['status']}**; {text}.")
    lines += [
        "",
        *template(
            "nn-coverage-reading",
            sigmas=SIGMAS,
            stat_calls=data["config"]["stat_calls"],
            rtol=FLOAT32_DEFAULT[0],
            atol=FLOAT32_DEFAULT[1],
            wrong=WRONG,
        ),
    ]
    for e in rows:
        lines.append(
            row(
                _name(e),
                ", ".join(f"{v:g}" for v in e["values"]),
                " / ".join(_compiles(e, "stock", b) for b in ("aot_eager", "inductor")),
                " / ".join(_compiles(e, "backends", b) for b in BACKENDS),
                e["status"] if e["status"] == "dynamic, equal" else f"**{e['status']}**",
            )
        )
    lines += template("nn-coverage-differences")
    for e in rows:
        ind = e.get("inductor_tolerance")
        diffs = _diff(e, "aot_eager"), _diff(e, "inductor"), _tol(*e["tolerance"])
        lines.append(row(_name(e), *diffs, "-" if ind is None else _inductor_tol(ind)))
    notes = [e for e in rows if e["note"]]
    if notes:
        lines += ["", "Notes:", ""]
        lines += [f"- {_name(e)}: {e['note']}." for e in notes]
    used = sorted({e["op"] for e in rows if e["op"] in data["tolerances"]})
    tolerances = (
        (f"`{op}`", *(f"{v:g}" for v in data["tolerances"][op][:2]), data["tolerances"][op][2])
        for op in used
    )
    if used:
        lines += ["", "## Tolerances", "", *table("op | rtol> | atol> | why", tolerances)]
    lines.append("")
    return "\n".join(lines)


def write(path: Path, docs: Path) -> list[Path]:
    """docs/nn-coverage.md from the JSON at ``path``."""
    (docs / "nn-coverage.md").write_text(render(read_json(path), source_name(path)))
    return [docs / "nn-coverage.md"]
