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
    shared_cores,
    source_name,
    span,
    table,
    template,
    words,
)

# The published runs, main run first: what the committed pages are rendered from.
PUBLISHED = (
    FOLDER / "full-inductor-200.json",
    FOLDER / "schedule-inductor-200.json",
    FOLDER / "arguments-aot_eager.json",
)

WORDS = words("strategies")  # reader-facing names and notes: templates/strategies.json
NAMES: dict[str, Any] = WORDS["names"]
NAMES_BY_WORKLOAD: dict[str, Any] = WORDS["names_by_workload"]
WHAT: dict[str, Any] = WORDS["what"]
LIMITS: dict[str, Any] = WORDS["limits"]
COLORS: dict[str, Any] = WORDS["colors"]
DYNSCALAR = ("ds_proxy", "ds_registry", "ds_decorator")
SUMMARY_WORKLOADS = (
    ("train", "Training a transformer block"),
    ("schedule", "Training with a dropout and label-smoothing schedule"),
    ("pointwise", "A pointwise-heavy block (inference)"),
)


def label(strategy: str, workload: str | None = None) -> str:
    """The reader-facing name of a strategy on a workload."""
    return NAMES_BY_WORKLOAD.get(workload or "", {}).get(strategy) or NAMES.get(strategy, strategy)


def name(strategy: str, row: dict[str, Any] | None = None) -> str:
    """``label`` on the row's workload; the row's own label for a strategy the words lack."""
    workload = (row or {}).get("workload")
    if strategy in NAMES or strategy in NAMES_BY_WORKLOAD.get(workload or "", {}):
        return label(strategy, workload)
    return (row or {}).get("label", strategy)


def cell(strategy: str, row: dict[str, Any] | None = None) -> str:
    """The name for a table cell: may wrap after an underscore, so the table fits 1280 px."""
    return name(strategy, row).replace("_", "_<wbr>")


def _title(workload: str) -> str:
    return str(WORDS["workload_titles"].get(workload, workload))


def _n(count: int, word: str) -> str:
    """``count word``, the word plural unless the count is 1."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _machine(data: dict[str, Any]) -> str:
    m, c = data["machine"], data["config"]
    threads = c.get("threads") or m["torch_threads"]
    return (
        f"{m['cpu']}, {m['cores']} cores ({_n(threads, 'torch thread')}), torch "
        f"{m['torch']}, Python {m['python']}; backend `{c['backend']}`, {c['steps']} steps per "
        f"run, one cold run per strategy, each in a fresh process with a fresh inductor cache"
        + (WORDS["arguments_noisy"].rstrip() if shared_cores(m) else ".")
    )


def _rows(data: dict[str, Any], workload: str) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in data["results"] if r["workload"] == workload}


def summary(data: dict[str, Any], sections: tuple[dict[str, Any], ...] = ()) -> list[str]:
    """The plain-words findings, each number taken from the run (or a separate run), after
    two sentences: what happens to a changing scalar, and the gain."""
    runs = (data, *sections)
    ratios, out = [], []
    for workload, what in SUMMARY_WORKLOADS:
        for run in runs:
            rows = _rows(run, workload)
            stock, ours = rows.get("stock"), [rows[s] for s in DYNSCALAR if s in rows]
            if not stock or not ours:
                continue
            ratios += [stock["total_s"] / r["total_s"] for r in ours]
            totals = [r["total_s"] for r in ours]
            compiles = sorted({r["compiles"] for r in ours})
            per_path = compiles == [run["workloads"][workload]["control_paths"]]
            changes = WORDS["changes"].get(workload, "whose step counter changes on every call")
            note = "" if run is data else ", separate run"
            stock_then = ", then ran eagerly" if stock["fell_back_to_eager"] else ""
            out.append(
                f"- **{what}** {changes} ({run['config']['steps']} steps{note}): stock "
                f"`torch.compile` compiled {_n(stock['compiles'], 'time')}{stock_then} and took "
                f"**{stock['total_s']:.0f} s**; with "
                f"{'the values' if workload in WORDS['changes'] else 'the counter'} marked by "
                f"dynscalar it compiled "
                f"{'once' if compiles == [1] else ' or '.join(map(str, compiles)) + ' times'}"
                f"{' (once per code path)' if per_path else ''} and took **{span(totals)} s**, "
                f"{stock['total_s'] / max(totals):.1f}-{stock['total_s'] / min(totals):.1f}x less."
            )
    wrong = [
        f"{name(r['strategy'], r)} on {r['workload']}"
        for run in runs
        for r in run["results"]
        if not r["equal_to_eager"]
    ]
    if ratios:
        same = "" if wrong else ", with the same results as eager"
        out = [*template("benchmarks-lead", lo=min(ratios), hi=max(ratios), same=same), *out]
    seed = _rows(data, "seed")
    compiled = [r for r in seed.values() if r["compiles"]]
    if compiled and "eager" in seed:
        first = span([r["first_call_s"] for r in compiled])
        out.append(
            WORDS["summary_seed"].format(first=first, eager=seed["eager"]["steady_median_ms"])
        )
    if wrong:
        out.append("- **Wrong numbers:** " + ", ".join(wrong) + ".")
    else:
        stochastic = any(i.get("stochastic") for d in runs for i in d["workloads"].values())
        out.append(WORDS["summary_correct"] + (WORDS["summary_dropout"] if stochastic else "."))
    return [*out, WORDS["summary_noise"]]


def _compiles_cell(r: dict[str, Any]) -> str:
    text = str(r["compiles"])
    if r.get("restarts"):
        text += f" (+{_n(r['restarts'], 'restart')})"
    return text + (", then eager" if r["fell_back_to_eager"] else "")


def _table(data: dict[str, Any], workload: str) -> list[str]:
    """A workload's results, a row per strategy of the run (n/a where one does not apply)."""
    rows, na = _rows(data, workload), data["workloads"][workload].get("not_applicable", {})
    out = table(
        "strategy | compiles> | first call (s)> | total (s)> | steady (ms/step)> | equal to eager"
    )
    for s in data["config"]["strategies"]:
        if s in na:
            out.append(row(cell(s, {"workload": workload}), "n/a", "", "", "", ""))
        elif s in rows:
            r = rows[s]
            first, total, steady = r["first_call_s"], r["total_s"], r["steady_median_ms"]
            cells = _compiles_cell(r), f"{first:.1f}", f"{total:.1f}", f"{steady:.3f}"
            out.append(row(cell(s, r), *cells, "yes" if r["equal_to_eager"] else "**NO**"))
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
        for ts in (per.get(w, []) for w in workloads):
            values = [t["value"] for t in ts if isinstance(t["value"], (int, float))]
            shown = ", ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in values)
            shown = f" ({shown})" if values and not isinstance(values[0], bool) else ""
            met = sum(t["status"] == "PASS" for t in ts)
            cells.append(f"{met} of {len(ts)}{shown}" if ts else "-")
        out.append(row(target.replace("oracle", "tensor buffer"), *cells))
    return out


def targets_block(runs: list[tuple[dict[str, Any], str]]) -> str:
    """The targets benchmarks.strategies checks, per published run, for benchmarks/README.md:
    met by how many of the three dynscalar strategies, with the measured values."""
    lines: list[str] = []
    for data, source in runs:
        if is_arguments(data) or not data.get("targets"):
            continue
        firsts = [r["first_call_s"] for r in data["results"] if r["compiles"]]
        steps = data["config"]["steps"]
        lines += [f"`{source}` (met by how many of the three dynscalar strategies):", ""]
        lines += _targets(data)
        lines += template("targets-note", lo=min(firsts), hi=max(firsts), steps=steps)
    return marked("strategy-targets", "\n".join(lines))


def _stochastic(data: dict[str, Any], workload: str, alt: str) -> list[str]:
    """For a workload with dropout in training: how it is checked, each strategy's results
    and its figure (``alt``: the figure's text); nothing for another workload."""
    if not data["workloads"][workload].get("stochastic"):
        return []
    c, rows = data["config"], _rows(data, workload)
    probe = next((r["dropout_probe"] for r in rows.values() if "dropout_probe" in r), None)
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
        draws=probe["draws"] if probe else 64,
    )
    for s in c["strategies"]:
        r = rows.get(s, {})
        if "loss_check" in r:
            exact = f"{r['max_abs_diff']:.1e}" + ("" if r["eval_equal"] else " **(NO)**")
            zs = (f"{r[k]['max_abs_z']:.1f}" for k in ("loss_check", "dropout_probe"))
            out.append(row(cell(s, r), exact, *zs))
    return [*out, "", f"![{alt}](img/{workload}.png)", ""]


def _section(data: dict[str, Any], source: str, workload: str) -> list[str]:
    """A workload measured in a separate run: its own machine line, table, checks, targets."""
    info, rows, title = data["workloads"][workload], _rows(data, workload), _title(workload)
    na, what = info.get("not_applicable", {}), WORDS["what_by_workload"].get(workload, {})
    machine = _machine(data)
    lines = template(
        "section", title=title, workload=workload, info=info, machine=machine, source=source
    )
    strategies = data["config"]["strategies"]
    cells = [cell(s, {"workload": workload}) for s in strategies]
    here = [f"n/a: {na[s]}" if s in na else what.get(s, WHAT.get(s, "")) for s in strategies]
    lines += table("strategy | what it is here", zip(cells, here, strict=True))
    lines += ["", *_table(data, workload), ""]
    restarted = [f"{name(s, r)} {r['restarts']}" for s, r in rows.items() if r.get("restarts")]
    if restarted:
        lines += template("restarts", restarted=", ".join(restarted))
    return lines + _stochastic(data, workload, f"{title}: {WORDS['schedule_alt']}")


def is_arguments(data: dict[str, Any]) -> bool:
    """Whether a JSON is a benchmarks.arguments run (the comparison page's own section)."""
    return data.get("kind") == "arguments"


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
            f"## {_title(workload)}",
            "",
            f"`{workload}`: {info['description']}; {info['control_paths']} control path(s), "
            "the compiles a perfectly dynamic counter needs.",
            "",
            *_table(data, workload),
            "",
            *_stochastic(data, workload, _title(workload)),
        ]
    for extra, extra_source in sections:
        for workload in extra["workloads"]:
            lines += _section(extra, extra_source, workload)
    return "\n".join(lines)


def render_comparison(
    data: dict[str, Any], source: str, sections: tuple[tuple[dict[str, Any], str], ...] = ()
) -> str:
    names = list(data["workloads"])
    by = {(r["workload"], r["strategy"]): r for r in data["results"]}
    paths = ", ".join(f"{n} {data['workloads'][n]['control_paths']}" for n in names)
    lines = template("comparison-head", paths=paths, names=" / ".join(names))
    wrong = []
    for s in (s for s in data["config"]["strategies"] if s != "eager"):
        rows = [by[(n, s)] for n in names if (n, s) in by]
        cells = " / ".join(map(_compiles_cell, rows))
        wrong += [f"{name(s, r)} on {r['workload']}" for r in rows if not r["equal_to_eager"]]
        lines.append(row(cell(s, rows[0]), cells, LIMITS.get(s, "")))
    same = "Every strategy returned the same numbers as eager."
    lines += ["", "**Wrong numbers:** " + ", ".join(wrong) + "." if wrong else same]
    lines += template("comparison-buffer")
    for extra, extra_source in (s for s in sections if not is_arguments(s[0])):
        for workload in extra["workloads"]:
            lines += _comparison_section(extra, extra_source, workload)
    lines += template("comparison-beyond", machine=_machine(data), source=source)
    for run, run_source in (s for s in sections if is_arguments(s[0])):
        lines += _arguments_section(run, run_source)
    return "\n".join(lines)


def _comparison_section(data: dict[str, Any], source: str, workload: str) -> list[str]:
    """A workload of a separate run on the comparison page: compiles and a note per strategy."""
    info, rows, c = data["workloads"][workload], _rows(data, workload), data["config"]
    na = info.get("not_applicable", {})
    notes = WORDS["schedule_notes"] if workload == "schedule" else LIMITS
    title = _title(workload)
    lines = template(
        "comparison-section", title=title, workload=workload, info=info, c=c, source=source
    )
    for s in (s for s in c["strategies"] if s != "eager"):
        if s in na:
            lines.append(row(cell(s, {"workload": workload}), "n/a", na[s]))
        elif s in rows:
            r = rows[s]
            note = ("" if r["equal_to_eager"] else "**wrong numbers**; ") + notes.get(s, "")
            lines.append(row(cell(s, r), _compiles_cell(r), note))
    return [*lines, ""]


# ----------------------------------------------------------------------------- arguments


def _ok(r: dict[str, Any] | None) -> bool:
    """Whether an arguments row is there and did not fail."""
    return r is not None and "error" not in r


def _argument_row(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "error"
    return _compiles_cell(r) + ("" if r["equal_to_eager"] else " **wrong**")


def _arguments_section(data: dict[str, Any], source: str) -> list[str]:
    """The comparison page's section on function arguments, from an arguments run."""
    c, m, names = data["config"], data["machine"], data["names"]
    cases = list(data["cases"])
    by = {(r["case"], r["strategy"]): r for r in data["results"]}
    per = {s: [by.get((case, s)) for case in cases] for s in [*c["strategies"], "stock"]}

    def cell_name(s: str) -> str:  # may wrap after "_" and before "(": the tables fit 1280 px
        return str(names[s]).replace("_", "_<wbr>").replace("(", "<wbr>(")

    lines = template("arguments-head", c=c)
    for case, info in data["cases"].items():
        shown = ", ".join(map(str, info["values"]))
        lines.append(WORDS["argument_case"].format(case=case, info=info, shown=shown))
    # stock's extra compiles: one more than the control paths (the first value is a constant)
    stock = per["stock"]
    extra = {r["compiles"] - data["cases"][r["case"]]["control_paths"] for r in stock if _ok(r)}
    stock_line = [WORDS["stock_arguments"]] if all(map(_ok, stock)) and extra == {1} else []
    lines += ["", WORDS["arguments_equal"], *stock_line, ""]
    lines += table(" | ".join(["strategy", "torch", *(f"{c}>" for c in cases), "equal to eager"]))
    errors, wrong, notes, how, times = [], [], [], [], []
    for s in c["strategies"]:
        rows = per[s]
        version = next((r["torch"] for r in rows if r and "torch" in r), "?").split("+")[0]
        errors += [(s, r) for r in rows if r and "error" in r]
        bad = [r["case"] for r in rows if _ok(r) and not r["equal_to_eager"]]
        wrong += [f"{names[s]} on {case}" for case in bad]
        same = "**NO**" if bad else ("yes" if any(map(_ok, rows)) else "-")
        lines.append(row(cell_name(s), version, *map(_argument_row, rows), same))
        for case, r, st in zip(cases, rows, stock, strict=True):  # a mark that changed nothing
            paths = data["cases"][case]["control_paths"]
            if s != "stock" and _ok(r) and _ok(st) and r["compiles"] == st["compiles"] > paths:
                notes += [WORDS["as_stock"].format(name=names[s], case=case, n=r["compiles"]), ""]
        first = " / ".join(f"{r['first_call_s']:.2f}" if _ok(r) else "-" for r in rows)
        steady = " / ".join(f"{r['steady_median_us']:.0f}" if _ok(r) else "-" for r in rows)
        times.append(row(cell_name(s), first, steady))
        how.append((cell_name(s), data["what"][s], WORDS["argument_limits"].get(s, "")))
    lines.append("")
    for s, r in errors:
        message = r["error"].splitlines()[-1].split(" (unhinted")[0]
        lines += [f"*error* ({names[s]}, `{r['case']}`): `{message}`", ""]
    lines += notes
    if wrong:
        lines += ["**Wrong numbers:** " + ", ".join(wrong) + ".", ""]
    lines += table("strategy | how | limits", how)
    lines += template("arguments-times", cases=" / ".join(f"`{case}`" for case in cases))
    lines += times
    versions = " and ".join(sorted({r["torch"] for r in data["results"] if "torch" in r}))
    noisy = WORDS["arguments_noisy"] if shared_cores(m) else ". "
    return lines + template(
        "arguments-machine", m=m, c=c, torch=versions, noisy=noisy, source=source
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
    eager = ", then eager" if r["fell_back_to_eager"] else ""
    return f"{label}{sep}{_n(r['compiles'], 'compile')}{eager}"


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
        for y, s in zip(ys, strategies, strict=True):
            if s in rows:
                text = _compiled(f" {rows[s]['total_s']:.0f} s", rows[s], ", ")
                ax.annotate(text, (rows[s]["total_s"], y), va="center", fontsize=9)
        ax.set_xlim(0, top * 2.1)  # room for the longest note
        ax.set_yticks(ys, [name(s) for s in strategies], fontsize=9.5)
        ax.invert_yaxis()
        ax.set_title(_title(workload), fontsize=10, loc="left")
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


def plot_cumulative(data: dict[str, Any], path: Path) -> None:
    """Cumulative time per step of four strategies (on train if run): first steps, whole run."""
    plt = _pyplot()
    workload = "train" if "train" in data["workloads"] else list(data["workloads"])[-1]
    rows = _rows(data, workload)
    shown = [s for s in ("stock", "unspec_int", "oracle", "ds_registry") if s in rows] or list(rows)
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
        f"{_title(workload)}, one cold run per strategy"
        + (f"\n(every dynscalar variant: {span(ours)} s in total)" if ours else ""),
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path)


def plot_schedule(data: dict[str, Any], path: Path, workload: str) -> None:
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

    def curve(values: list[float], **style: Any) -> None:  # the moving mean of ``values``
        windows = [values[max(0, i - width + 1) : i + 1] for i in range(len(values))]
        losses.plot(range(1, len(values) + 1), [sum(w) / len(w) for w in windows], **style)

    for i, run in enumerate(data.get("references", {}).get(workload, {}).get("losses", [])):
        label = "eager, other random streams" if i == 0 else None
        curve(run, color="#bbbbbb", linewidth=1, label=label)
    for s in (s for s in shown if "losses" in rows[s]):
        curve(rows[s]["losses"], color=COLORS.get(s, "#4c72b0"), linewidth=1.2)
    losses.set(
        xlim=(1, steps), xlabel="step", ylabel=f"training loss ({width}-step mean; axis cut)"
    )
    losses.set_title("training loss: compiled runs among eager runs", fontsize=10)
    losses.legend(fontsize=9, loc="upper right")
    for ax in (timing, losses):
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"{_title(workload)}, one cold run per strategy;\n"
        f"{data['config']['backend']}, torch {data['machine']['torch']}",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path)


def write_plots(data: dict[str, Any], folder: Path) -> list[Path]:
    """The main run's figures and its stochastic workloads'."""
    folder.mkdir(parents=True, exist_ok=True)
    total, cumulative = folder / "total_time.png", folder / "cumulative_time.png"
    plot_total_time(data, total)
    plot_cumulative(data, cumulative)
    return [total, cumulative, *write_section_plots(data, folder)]


def write_section_plots(data: dict[str, Any], folder: Path) -> list[Path]:
    """``<workload>.png`` for each stochastic workload of a run (none for an arguments run)."""
    folder.mkdir(parents=True, exist_ok=True)
    workloads = [w for w, info in data.get("workloads", {}).items() if info.get("stochastic")]
    for workload in workloads:
        plot_schedule(data, folder / f"{workload}.png", workload)
    return [folder / f"{workload}.png" for workload in workloads]


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
