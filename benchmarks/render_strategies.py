"""docs/benchmarks.md, docs/comparison.md and their figures from strategies/arguments JSONs
(the first strategies run is the main one; each further run becomes its own section)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import PUBLISHED as FOLDER
from benchmarks.harness import (
    marked,
    pyplot,
    read_json,
    replace_block,
    row,
    save_figure,
    source_name,
    span,
    table,
    template,
    words,
)

PLOTS = ("total_time.png", "cumulative_time.png")
# The published runs, main run first: what the committed pages are rendered from.
PUBLISHED = (
    FOLDER / "full-inductor-200.json",
    FOLDER / "schedule-inductor-200.json",
    FOLDER / "arguments-aot_eager.json",
)
ARGUMENTS = "arguments"  # the "kind" of a benchmarks.arguments JSON

WORDS = words("strategies")  # reader-facing names and notes: templates/strategies.json
NAMES: dict[str, Any] = WORDS["names"]
NAMES_BY_WORKLOAD: dict[str, Any] = WORDS["names_by_workload"]
WHAT: dict[str, Any] = WORDS["what"]
LIMITS: dict[str, Any] = WORDS["limits"]
WHAT_BY_WORKLOAD: dict[str, Any] = WORDS["what_by_workload"]
WORKLOAD_TITLES: dict[str, Any] = WORDS["workload_titles"]
CHANGES: dict[str, Any] = WORDS["changes"]
SCHEDULE_NOTES: dict[str, Any] = WORDS["schedule_notes"]
ARGUMENT_LIMITS: dict[str, Any] = WORDS["argument_limits"]
COLORS: dict[str, Any] = WORDS["colors"]
DYNSCALAR = ("ds_proxy", "ds_registry", "ds_decorator")


def label(strategy: str, workload: str | None = None) -> str:
    """The reader-facing name of a strategy on a workload."""
    return NAMES_BY_WORKLOAD.get(workload or "", {}).get(strategy) or NAMES.get(strategy, strategy)


def name(strategy: str, row: dict[str, Any] | None = None) -> str:
    workload = (row or {}).get("workload")
    if strategy in NAMES or strategy in NAMES_BY_WORKLOAD.get(workload or "", {}):
        return label(strategy, workload)
    return (row or {}).get("label", strategy)


def cell(strategy: str, row: dict[str, Any] | None = None) -> str:
    """The name for a table cell: may wrap after an underscore, so the table fits 1280 px."""
    return name(strategy, row).replace("_", "_<wbr>")


def _machine(data: dict[str, Any]) -> str:
    m, c = data["machine"], data["config"]
    threads = c.get("threads") or m["torch_threads"]
    return (
        f"{m['cpu']}, {m['cores']} cores ({threads} torch thread{'s' if threads != 1 else ''}), "
        f"torch "
        f"{m['torch']}, Python {m['python']}; backend `{c['backend']}`, {c['steps']} steps per "
        f"run, one cold run per strategy, each in a fresh process with a fresh inductor cache; "
        f"load average at start {m['loadavg_start'][0]:.2f}"
        + (f", at the end {m['loadavg_end'][0]:.2f}." if m.get("loadavg_end") else ".")
    )


def _times(r: dict[str, Any]) -> str:
    text = f"compiled {r['compiles']} time{'s' if r['compiles'] != 1 else ''}"
    return text + (", then ran eagerly" if r["fell_back_to_eager"] else "")


def _rows(data: dict[str, Any], workload: str) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in data["results"] if r["workload"] == workload}


def _workload_summary(data: dict[str, Any], workload: str, what: str, note: str = "") -> str | None:
    steps = data["config"]["steps"]
    rows = _rows(data, workload)
    stock, ours = rows.get("stock"), [rows[s] for s in DYNSCALAR if s in rows]
    if not stock or not ours:
        return None
    totals = [r["total_s"] for r in ours]
    compiles = sorted({r["compiles"] for r in ours})
    per_path = compiles == [data["workloads"][workload]["control_paths"]]
    changes = CHANGES.get(workload, "whose step counter changes on every call")
    marked = "the values" if workload in CHANGES else "the counter"
    return (
        f"- **{what}** {changes} ({steps} steps{note}): stock "
        f"`torch.compile` {_times(stock)} and took **{stock['total_s']:.0f} s**; with "
        f"{marked} marked by dynscalar it compiled "
        f"{'once' if compiles == [1] else ' or '.join(map(str, compiles)) + ' times'}"
        f"{' (once per code path)' if per_path else ''} and took **{span(totals)} s**, "
        f"{stock['total_s'] / max(totals):.1f}-{stock['total_s'] / min(totals):.1f}x less."
    )


SUMMARY_WORKLOADS = (
    ("train", "Training a transformer block"),
    ("schedule", "Training with a dropout and label-smoothing schedule"),
    ("pointwise", "A pointwise-heavy block (inference)"),
)


def _wrong(data: dict[str, Any]) -> list[str]:
    return [
        f"{name(r['strategy'], r)} on {r['workload']}"
        for r in data["results"]
        if not r["equal_to_eager"]
    ]


def _lead(data: dict[str, Any], sections: tuple[dict[str, Any], ...]) -> list[str]:
    """Two sentences before the findings: what happens to a changing scalar, and the gain."""
    ratios = []
    for run in (data, *sections):
        for workload, _ in SUMMARY_WORKLOADS:
            rows = _rows(run, workload)
            stock, ours = rows.get("stock"), [rows[s] for s in DYNSCALAR if s in rows]
            if stock and ours:
                ratios += [stock["total_s"] / r["total_s"] for r in ours]
    if not ratios:
        return []
    same = (
        "" if any(_wrong(run) for run in (data, *sections)) else ", with the same results as eager"
    )
    return template("benchmarks-lead", lo=min(ratios), hi=max(ratios), same=same)


def summary(data: dict[str, Any], sections: tuple[dict[str, Any], ...] = ()) -> list[str]:
    """The plain-words findings, each number taken from the run (or a separate run)."""
    out = _lead(data, sections)
    for workload, what in SUMMARY_WORKLOADS:
        for run, note in ((data, ""), *((d, ", separate run") for d in sections)):
            line = _workload_summary(run, workload, what, note)
            if line:
                out.append(line)
    seed = _rows(data, "seed")
    compiled = [r for s, r in seed.items() if r["compiles"]]
    if compiled and "eager" in seed:
        first, eager_ms = (
            span([r["first_call_s"] for r in compiled]),
            seed["eager"]["steady_median_ms"],
        )
        out.append(WORDS["summary_seed"].format(first=first, eager=eager_ms))
    wrong = _wrong(data) + [w for d in sections for w in _wrong(d)]
    stochastic = any(
        i.get("stochastic") for d in (data, *sections) for i in d["workloads"].values()
    )
    if wrong:
        out.append("- **Wrong numbers:** " + ", ".join(wrong) + ".")
    else:
        out.append(WORDS["summary_correct"] + (WORDS["summary_dropout"] if stochastic else "."))
    return [*out, WORDS["summary_noise"]]


def _compiles_cell(r: dict[str, Any]) -> str:
    text = str(r["compiles"])
    if r.get("restarts"):
        text += f" (+{r['restarts']} restart{'s' if r['restarts'] != 1 else ''})"
    return text + (", then eager" if r["fell_back_to_eager"] else "")


def _yes(equal: bool) -> str:
    return "yes" if equal else "**NO**"


def _table(
    rows: dict[str, dict[str, Any]],
    strategies: list[str],
    not_applicable: dict[str, str] | None = None,
    workload: str | None = None,
) -> list[str]:
    head = (
        "strategy | compiles> | first call (s)> | total (s)> | steady (ms/step)> | equal to eager"
    )
    out = table(head)
    for s in strategies:
        if s in (not_applicable or {}):
            out.append(row(cell(s, {"workload": workload}), "n/a", "", "", "", ""))
            continue
        if s not in rows:
            continue
        r = rows[s]
        times = f"{r['first_call_s']:.1f}", f"{r['total_s']:.1f}", f"{r['steady_median_ms']:.3f}"
        out.append(row(cell(s, r), _compiles_cell(r), *times, _yes(r["equal_to_eager"])))
    return out


def _targets(data: dict[str, Any]) -> list[str]:
    """The targets: one row per target, one column per workload, met by how many."""
    workloads = list(data["workloads"])
    by_target: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for t in data["targets"]:
        by_target.setdefault(t["target"], {}).setdefault(t["workload"], []).append(t)
    out = table(" | ".join(["target", *workloads]))
    for target, per in by_target.items():
        cells = []
        for w in workloads:
            ts = per.get(w, [])
            met = sum(t["status"] == "PASS" for t in ts)
            values = [t["value"] for t in ts if isinstance(t["value"], (int, float))]
            shown = (
                ""
                if not values or isinstance(values[0], bool)
                else " ("
                + ", ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in values)
                + ")"
            )
            cells.append(f"{met} of {len(ts)}{shown}" if ts else "-")
        shown_target = target.replace("oracle", "tensor buffer")
        out.append(row(shown_target, *cells))
    return out


def targets_block(runs: list[tuple[dict[str, Any], str]]) -> str:
    """The targets benchmarks.strategies checks, per published run, for benchmarks/README.md:
    met by how many of the three dynscalar strategies (`DynamicInt` value,
    `mark_dynamic_attr`, `@dynamic_attrs`), with the measured values."""
    lines: list[str] = []
    for data, source in runs:
        if is_arguments(data) or not data.get("targets"):
            continue
        firsts = [r["first_call_s"] for r in data["results"] if r["compiles"]]
        lines += [f"`{source}` (met by how many of the three dynscalar strategies):", ""]
        steps = data["config"]["steps"]
        lines += [
            *_targets(data),
            *template("targets-note", lo=min(firsts), hi=max(firsts), steps=steps),
        ]
    return marked("strategy-targets", "\n".join(lines))


def _stochastic_checks(data: dict[str, Any], workload: str) -> list[str]:
    """How a workload with dropout in training is checked, and each strategy's results."""
    c = data["config"]
    rows = _rows(data, workload)
    probe = next((r["dropout_probe"] for r in rows.values() if "dropout_probe" in r), None)
    draws = probe["draws"] if probe else 64
    out = template(
        "stochastic-checks",
        steps=c["steps"],
        rtol=c["rtol"],
        atol=c["atol"],
        update_rtol=c["update_rtol"],
        windows=min(c["loss_windows"], max(1, c["steps"] // 3)),
        seeds=c["reference_seeds"],
        dof=c["reference_seeds"] - 1,
        z=c["loss_z"],
        draws=draws,
    )
    for s in data["config"]["strategies"]:
        r = rows.get(s)
        if r is None or "loss_check" not in r:
            continue
        exact = f"{r['max_abs_diff']:.1e}" + ("" if r["eval_equal"] else " **(NO)**")
        zs = (f"{r[k]['max_abs_z']:.1f}" for k in ("loss_check", "dropout_probe"))
        out.append(row(cell(s, r), exact, *zs))
    return out


def _loads(data: dict[str, Any], workload: str) -> list[str]:
    """The load average each strategy's process started under, when the run recorded it."""
    rows = [r for r in data["results"] if r["workload"] == workload and "loadavg_start" in r]
    if not rows:
        return []
    return [
        "Load average (1 minute) when each strategy's process started: "
        + ", ".join(f"{name(r['strategy'], r)} {r['loadavg_start']:.1f}" for r in rows)
        + ".",
        "",
    ]


def _section(data: dict[str, Any], source: str, workload: str) -> list[str]:
    """A workload measured in a separate run: its own machine line, table, checks, targets."""
    info = data["workloads"][workload]
    strategies = data["config"]["strategies"]
    na = info.get("not_applicable", {})
    what = WHAT_BY_WORKLOAD.get(workload, {})
    rows = _rows(data, workload)
    title = WORKLOAD_TITLES.get(workload, workload)
    lines = [
        *template(
            "section",
            title=title,
            workload=workload,
            info=info,
            machine=_machine(data),
            source=source,
        ),
        *_loads(data, workload),
        *table(
            "strategy | what it is here",
            (
                (
                    cell(s, {"workload": workload}),
                    f"n/a: {na[s]}" if s in na else what.get(s, WHAT.get(s, "")),
                )
                for s in strategies
            ),
        ),
        "",
        *_table(rows, strategies, na, workload),
        "",
    ]
    if any(r.get("restarts") for r in rows.values()):
        restarted = ", ".join(
            f"{name(s, r)} {r['restarts']}" for s, r in rows.items() if r.get("restarts")
        )
        lines += template("restarts", restarted=restarted)
    if info.get("stochastic"):
        lines += [*_stochastic_checks(data, workload), ""]
        lines += [f"![{title}: {WORDS['schedule_alt']}](img/{workload}.png)", ""]
    return lines


def is_arguments(data: dict[str, Any]) -> bool:
    """Whether a JSON is a benchmarks.arguments run (the comparison page's own section)."""
    return data.get("kind") == ARGUMENTS


def render_benchmarks(
    data: dict[str, Any], source: str, sections: tuple[tuple[dict[str, Any], str], ...] = ()
) -> str:
    sections = tuple(s for s in sections if not is_arguments(s[0]))
    strategies = data["config"]["strategies"]
    lines = [
        "# Benchmarks",
        "",
        WORDS["benchmarks_intro"] + (WORDS["benchmarks_intro_floats"] if sections else "."),
        "",
        "## Summary",
        "",
        *summary(data, tuple(d for d, _ in sections)),
        "",
        "**Machine:** " + _machine(data),
        "",
        *template(
            "benchmarks-reproduce",
            sources=f"`{source}`" + "".join(f" and `{src}`" for _, src in sections) + ".",
        ),
        *(row(cell(s), WHAT.get(s, "")) for s in strategies),
        "",
        *template("benchmarks-legend"),
        "",
    ]
    for workload, info in data["workloads"].items():
        lines += [
            f"## {WORKLOAD_TITLES.get(workload, workload)}",
            "",
            f"`{workload}`: {info['description']}; {info['control_paths']} control path(s), "
            "the compiles a perfectly dynamic counter needs.",
            "",
            *_table(_rows(data, workload), strategies, info.get("not_applicable"), workload),
            "",
        ]
        if info.get("stochastic"):
            lines += [*_stochastic_checks(data, workload), ""]
            lines += [f"![{WORKLOAD_TITLES.get(workload, workload)}](img/{workload}.png)", ""]
    for extra, extra_source in sections:
        for workload in extra["workloads"]:
            lines += _section(extra, extra_source, workload)
    return "\n".join(lines)


def render_comparison(
    data: dict[str, Any], source: str, sections: tuple[tuple[dict[str, Any], str], ...] = ()
) -> str:
    names = list(data["workloads"])
    by = {(r["workload"], r["strategy"]): r for r in data["results"]}
    arguments = [(d, src) for d, src in sections if is_arguments(d)]
    sections = tuple(s for s in sections if not is_arguments(s[0]))
    strategies = [s for s in data["config"]["strategies"] if s != "eager"]
    paths = ", ".join(f"{n} {data['workloads'][n]['control_paths']}" for n in names)
    lines = template("comparison-head", paths=paths, names=" / ".join(names))
    wrong = []
    for s in strategies:
        rows = [by[(n, s)] for n in names if (n, s) in by]
        cells = " / ".join(map(_compiles_cell, rows))
        wrong += [f"{name(s, r)} on {r['workload']}" for r in rows if not r["equal_to_eager"]]
        lines.append(row(cell(s, rows[0]), cells, LIMITS.get(s, "")))
    lines += [
        "",
        (
            "Every strategy returned the same numbers as eager."
            if not wrong
            else "**Wrong numbers:** " + ", ".join(wrong) + "."
        ),
        *template("comparison-buffer"),
    ]
    for extra, extra_source in sections:
        for workload, info in extra["workloads"].items():
            lines += _comparison_section(extra, extra_source, workload, info)
    lines += template("comparison-beyond", machine=_machine(data), source=source)
    for run, run_source in arguments:
        lines += _arguments_section(run, run_source)
    return "\n".join(lines)


def _comparison_section(
    data: dict[str, Any], source: str, workload: str, info: dict[str, Any]
) -> list[str]:
    rows = _rows(data, workload)
    na = info.get("not_applicable", {})
    title = WORKLOAD_TITLES.get(workload, workload)
    lines = template(
        "comparison-section",
        title=title,
        workload=workload,
        info=info,
        c=data["config"],
        source=source,
    )
    for s in data["config"]["strategies"]:
        if s == "eager":
            continue
        if s in na:
            lines.append(row(cell(s, {"workload": workload}), "n/a", na[s]))
        elif s in rows:
            r = rows[s]
            note = SCHEDULE_NOTES.get(s, "") if workload == "schedule" else LIMITS.get(s, "")
            if not r["equal_to_eager"]:
                note = "**wrong numbers**; " + note
            lines.append(row(cell(s, r), _compiles_cell(r), note))
    lines.append("")
    return lines


# ----------------------------------------------------------------------------- arguments


def _argument_row(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "error"
    return _compiles_cell(r) + ("" if r["equal_to_eager"] else " **wrong**")


def _stock_arguments(data: dict[str, Any], by: dict[tuple[str, str], Any]) -> list[str]:
    """One sentence on stock torch.compile's extra compiles for arguments, from the run."""
    stock = [by.get((case, "stock")) for case in data["cases"]]
    if not all(r and "error" not in r for r in stock):
        return []
    extra = {
        r["compiles"] - data["cases"][r["case"]]["control_paths"] for r in stock if r is not None
    }
    if extra != {1}:
        return []
    return [WORDS["stock_arguments"]]


def _arguments_section(data: dict[str, Any], source: str) -> list[str]:
    """The comparison page's section on function arguments, from an arguments run."""
    c, m = data["config"], data["machine"]
    cases = list(data["cases"])
    by = {(r["case"], r["strategy"]): r for r in data["results"]}
    names = data["names"]

    def cell_name(s: str) -> str:  # may wrap after "_" and before "(": the tables fit 1280 px
        return str(names[s]).replace("_", "_<wbr>").replace("(", "<wbr>(")

    lines = template("arguments-head", c=c)
    for case, info in data["cases"].items():
        shown = ", ".join(map(str, info["values"]))
        lines.append(WORDS["argument_case"].format(case=case, info=info, shown=shown))
    lines += ["", WORDS["arguments_equal"], *_stock_arguments(data, by), ""]
    lines += table(" | ".join(["strategy", "torch", *(f"{c}>" for c in cases), "equal to eager"]))
    errors, wrong = [], []
    for s in c["strategies"]:
        rows = [by.get((case, s)) for case in cases]
        version = next((r["torch"] for r in rows if r and "torch" in r), "?").split("+")[0]
        errors += [(s, r) for r in rows if r and "error" in r]
        bad = [r["case"] for r in rows if r and "error" not in r and not r["equal_to_eager"]]
        wrong += [f"{names[s]} on {case}" for case in bad]
        ok = [r for r in rows if r and "error" not in r]
        same = "**NO**" if bad else ("yes" if ok else "-")
        lines.append(row(cell_name(s), version, *map(_argument_row, rows), same))
    lines.append("")
    for s, r in errors:
        message = r["error"].splitlines()[-1].split(" (unhinted")[0]
        lines.append(f"*error* ({names[s]}, `{r['case']}`): `{message}`")
        lines.append("")
    for s in c["strategies"]:  # a mark that changed nothing: as many compiles as stock
        for case, info in data["cases"].items():
            r, stock = by.get((case, s)), by.get((case, "stock"))
            if s == "stock" or not r or not stock or "error" in r or "error" in stock:
                continue
            if r["compiles"] == stock["compiles"] > info["control_paths"]:
                lines += [WORDS["as_stock"].format(name=names[s], case=case, n=r["compiles"]), ""]
    if wrong:
        lines += ["**Wrong numbers:** " + ", ".join(wrong) + ".", ""]
    how = ((cell_name(s), data["what"][s], ARGUMENT_LIMITS.get(s, "")) for s in c["strategies"])
    lines += table("strategy | how | limits", how)
    lines += template("arguments-times", cases=" / ".join(f"`{case}`" for case in cases))
    for s in c["strategies"]:
        rows = [by.get((case, s)) for case in cases]
        first = " / ".join(
            f"{r['first_call_s']:.2f}" if r and "error" not in r else "-" for r in rows
        )
        steady = " / ".join(
            f"{r['steady_median_us']:.0f}" if r and "error" not in r else "-" for r in rows
        )
        lines.append(row(cell_name(s), first, steady))
    versions = sorted({r["torch"] for r in data["results"] if "torch" in r})
    load = m["loadavg_start"][0]
    end = f", at the end {m['loadavg_end'][0]:.2f}" if m.get("loadavg_end") else ""
    noisy = WORDS["arguments_noisy"] if load > 0.5 else ". "
    versions_text = " and ".join(versions)
    return lines + template(
        "arguments-machine",
        m=m,
        c=c,
        torch=versions_text,
        load=load,
        end=end,
        noisy=noisy,
        source=source,
    )


# ----------------------------------------------------------------------------- plots


def _pyplot() -> Any:
    return pyplot(**{"font.size": 9, "xtick.labelsize": 9, "ytick.labelsize": 9})


def _timeline(
    ax: Any, rows: dict[str, Any], shown: Sequence[str], steps: int, zoom: int = 0
) -> None:
    """Cumulative time after each step (from 0), a line per strategy; ``zoom``: the first
    ``zoom`` steps only, a marker per step, no labels."""
    for s in shown:
        points = [0.0, *itertools.accumulate(rows[s]["step_times_s"])]
        style = {"color": COLORS.get(s, "#4c72b0"), "linewidth": 2}
        style |= {"linestyle": "--" if s == "stock" else "-"}
        if zoom:
            ax.plot(range(zoom + 1), points[: zoom + 1], marker=".", **style)
        else:
            ax.plot(range(len(points)), points, label=_compiled(name(s, rows[s]), rows[s]), **style)
    ax.set(xlim=(0, zoom or steps), xlabel="step", ylabel="cumulative wall time (s)")
    ax.set_ylim(bottom=0)


def _compiled(label: str, r: dict[str, Any], sep: str = ": ") -> str:
    plural = "" if r["compiles"] == 1 else "s"
    return f"{label}{sep}{r['compiles']} compile{plural}" + (
        ", then eager" if r["fell_back_to_eager"] else ""
    )


def plot_total_time(data: dict[str, Any], path: Path) -> None:
    """Small multiples, one row per workload: first call and the rest, stacked, from 0."""
    plt = _pyplot()
    from matplotlib.patches import Patch

    workloads = list(data["workloads"])
    strategies = [s for s in data["config"]["strategies"] if s != "eager"]
    fig, axes = plt.subplots(
        len(workloads), 1, figsize=(6.8, 2.75 * len(workloads) + 0.9), squeeze=False
    )
    ys = list(range(len(strategies)))
    for ax, workload in zip(axes[:, 0], workloads, strict=True):
        rows = _rows(data, workload)
        first = [rows[s]["first_call_s"] if s in rows else 0 for s in strategies]
        rest = [
            rows[s]["total_s"] - rows[s]["first_call_s"] if s in rows else 0 for s in strategies
        ]
        ax.barh(ys, first, color="#c8c8c8")
        ax.barh(ys, rest, left=first, color="#4c72b0")  # one colour: the legend's
        top = max(f + r for f, r in zip(first, rest, strict=True))
        for y, s in ((y, s) for y, s in zip(ys, strategies, strict=True) if s in rows):
            text = _compiled(f" {rows[s]['total_s']:.0f} s", rows[s], ", ")
            ax.annotate(text, (rows[s]["total_s"], y), va="center", fontsize=9)
        ax.set_xlim(0, top * 2.1)  # room for the longest note
        ax.set_yticks(ys, [name(s) for s in strategies], fontsize=9.5)
        ax.invert_yaxis()
        ax.set_title(WORKLOAD_TITLES.get(workload, workload), fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds")
    legend = [
        Patch(color="#c8c8c8", label="first call (the cold compile)"),
        Patch(color="#4c72b0", label="all later steps, recompiles included"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=2, fontsize=9.5, frameon=False)
    fig.suptitle(
        f"Total time for {data['config']['steps']} steps, one cold run per strategy\n"
        f"{data['machine']['cpu']}, {data['machine']['cores']} cores, "
        f"torch {data['machine']['torch']}, {data['config']['backend']}",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def plot_cumulative(data: dict[str, Any], path: Path, workload: str | None = None) -> None:
    """Cumulative time per step for four strategies: the first steps, and the whole run."""
    plt = _pyplot()
    workload = workload or (
        "train" if "train" in data["workloads"] else list(data["workloads"])[-1]
    )
    rows = _rows(data, workload)
    shown = [s for s in ("stock", "unspec_int", "oracle", "ds_registry") if s in rows]
    shown = shown or list(rows)
    steps = data["config"]["steps"]
    zoom = min(steps, 12)
    fig, (near, whole) = plt.subplots(2, 1, figsize=(6.8, 7.4))
    _timeline(near, rows, shown, steps, zoom)
    _timeline(whole, rows, shown, steps)
    near.set_title(f"first {zoom} steps: the compiles", fontsize=10)
    whole.set_title(f"all {steps} steps", fontsize=10)
    for ax in (near, whole):
        ax.grid(alpha=0.3)
    whole.legend(fontsize=9, loc="lower right")
    ours = [rows[s]["total_s"] for s in DYNSCALAR if s in rows]
    fig.suptitle(
        f"{WORKLOAD_TITLES.get(workload, workload)}, one cold run per strategy"
        + (f"\n(every dynscalar variant: {span(ours)} s in total)" if ours else ""),
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path)


def plot_schedule(data: dict[str, Any], path: Path, workload: str = "schedule") -> None:
    """A stochastic workload: cumulative time per strategy, and each strategy's training loss
    (moving mean) over the eager runs with other random streams."""
    plt = _pyplot()
    rows = _rows(data, workload)
    steps = data["config"]["steps"]
    fig, (timing, losses) = plt.subplots(2, 1, figsize=(6.8, 7.6))
    shown = [s for s in data["config"]["strategies"] if s in rows and s != "eager"]
    _timeline(timing, rows, shown, steps)
    timing.set_title("time", fontsize=10)
    timing.legend(fontsize=9, loc="center right")
    width = max(1, steps // 20)

    def smooth(values: list[float]) -> list[float]:
        return [
            sum(values[max(0, i - width + 1) : i + 1]) / len(values[max(0, i - width + 1) : i + 1])
            for i in range(len(values))
        ]

    for i, run in enumerate(data.get("references", {}).get(workload, {}).get("losses", [])):
        losses.plot(
            range(1, len(run) + 1),
            smooth(run),
            color="#bbbbbb",
            linewidth=1,
            label="eager, other random streams" if i == 0 else None,
        )
    for s in shown:
        if "losses" in rows[s]:
            losses.plot(
                range(1, len(rows[s]["losses"]) + 1),
                smooth(rows[s]["losses"]),
                color=COLORS.get(s, "#4c72b0"),
                linewidth=1.2,
            )
    losses.set(
        xlim=(1, steps), xlabel="step", ylabel=f"training loss ({width}-step mean; axis cut)"
    )
    losses.set_title("training loss: compiled runs among eager runs", fontsize=10)
    losses.legend(fontsize=9, loc="upper right")
    for ax in (timing, losses):
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"{WORKLOAD_TITLES.get(workload, workload)}, one cold run per strategy;\n"
        f"{data['config']['backend']}, torch {data['machine']['torch']}",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path)


def write_plots(data: dict[str, Any], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    total, cumulative = folder / PLOTS[0], folder / PLOTS[1]
    plot_total_time(data, total)
    plot_cumulative(data, cumulative)
    return [total, cumulative, *write_section_plots(data, folder)]


def write_section_plots(data: dict[str, Any], folder: Path) -> list[Path]:
    """``<workload>.png`` for each stochastic workload of a run (none for an arguments run)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for workload, info in data.get("workloads", {}).items():
        if info.get("stochastic"):
            plot_schedule(data, folder / f"{workload}.png", workload)
            written.append(folder / f"{workload}.png")
    return written


def load_runs(paths: list[Path]) -> list[tuple[dict[str, Any], str]]:
    """Each JSON with the name the pages cite it by."""
    return [(read_json(p), source_name(p)) for p in paths]


def write(paths: list[Path], docs: Path, readme: Path, plots: bool = True) -> list[Path]:
    """docs/benchmarks.md, docs/comparison.md, the README's targets and (``plots``) the
    figures, from the runs at ``paths``: the main run is the first that is not an
    arguments run, the rest are sections in their order."""
    runs = load_runs(paths)
    main = next((i for i, (d, _) in enumerate(runs) if not is_arguments(d)), None)
    if main is None:
        raise SystemExit("give a strategies run too: the pages are rendered around it")
    (data, source), sections = runs[main], tuple(runs[:main] + runs[main + 1 :])
    (docs / "benchmarks.md").write_text(render_benchmarks(data, source, sections))
    (docs / "comparison.md").write_text(render_comparison(data, source, sections))
    readme.write_text(replace_block(readme.read_text(), targets_block(runs)))
    written = [docs / "benchmarks.md", docs / "comparison.md", readme]
    if plots:
        written += write_plots(data, docs / "img")
        for extra, _ in sections:
            written += write_section_plots(extra, docs / "img")
    return written
