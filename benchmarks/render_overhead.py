"""docs/overhead.md, its figures and the README's goals from an overhead JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import (
    marked,
    pyplot,
    read_json,
    replace_block,
    row,
    save_figure,
    source_name,
    span,
    spread,
    table,
    template,
    words,
)


def qfmt(q: dict[str, float] | None, unit: str = "x", digits: int = 3) -> str:
    """``median (p10-p90)``."""
    if not q:
        return "-"
    if _single(q):  # one run: no range to show
        return f"{q['median']:.{digits}f}{unit}"
    return f"{q['median']:.{digits}f}{unit} ({q['p10']:.{digits}f}-{q['p90']:.{digits}f})"


def _single(q: dict[str, float]) -> bool:
    """Whether a median (p10-p90) comes from a single measurement."""
    return q["p10"] == q["p90"] == q["median"]


def pfmt(q: dict[str, float]) -> str:
    if _single(q):
        return f"{q['median']:.2%}"
    return f"{q['median']:.2%} ({q['p10']:.2%}-{q['p90']:.2%})"


def _machine(data: dict[str, Any]) -> str:
    m, c = data["machine"], data["config"]
    start, end = m.get("loadavg_start"), m.get("loadavg_end")
    load = (
        f"load average (1, 5, 15 min) {start} at the start and {end} at the end of the timed "
        "sections"
        if start and end
        else "load average not recorded"
    )
    sections = m.get("loadavg_by_section") or {}
    if sections:
        load += (
            " (1-minute load at the start and end of each: "
            + ", ".join(
                f"{name} {v[0][0]}-{v[1][0]}" for name, v in sections.items() if len(v) == 2
            )
            + ")"
        )
    timer = "this thread's CPU time" if c.get("timer", "cpu") == "cpu" else "wall-clock time"
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['torch_threads']} torch thread(s); torch "
        f"{m['torch']}, Python {m['python']}, wrapt {m['wrapt']}, dynscalar {m['dynscalar']}; "
        f"{load}. Timings are {timer}; the run took {data['wall_s'] / 60:.0f} minutes."
    )


REFERENCE = "dynamic_sources"  # the per-call section's reference strategy


def _percall(data: dict[str, Any]) -> list[str]:
    percall = data.get("percall")
    if not percall:
        return []
    cg = data.get("callgrind", {}).get("percall", {})
    measured = (
        "Instructions per call come from callgrind (valgrind), one strategy per process,"
        " and do not depend on the machine's load."
        if cg
        else "No instruction counts: this run was made without `--callgrind`."
    )
    c = data["config"]
    phases = any(section.get("stock_phase") for section in percall.values())
    name = "overhead-percall-phases" if phases else "overhead-percall"
    lines = template(name, rounds=c["rounds"], number=c["number"], counts=measured)
    for backend, section in percall.items():
        counts = cg.get(backend, {})
        # timings and instruction counts in two tables: one would not fit the page
        timings, instructions = [], []
        for r in section["rows"]:
            name = r["label"] + ("" if r["reference"] == REFERENCE else f" (vs {r['reference']})")
            equal = "yes" if r["equal_to_eager"] else "**NO**"
            timings.append((name, r["compiles"], equal, qfmt(r["us"], "", 1), qfmt(r["ratio"])))
            if count := counts.get(r["strategy"]):
                ratio = f"{count['ratio']:.4f}x" if count["ratio"] else "-"
                instructions.append((name, f"{count['instructions']:,}", ratio))
        head = "strategy | compiles> | equal to eager | us per call> | time / reference>"
        lines += [f"### {backend}", "", *table(head, timings), ""]
        if instructions:
            head = "strategy | instructions per call> | instructions / reference>"
            lines += [*table(head, instructions), ""]
    lines += ["![Per compiled call, against dynamic_sources](img/overhead_percall.png)", ""]
    return lines


def _eager(data: dict[str, Any]) -> list[str]:
    eager = data.get("eager")
    if not eager:
        return []
    cg = data.get("callgrind", {})
    counts = cg.get("eager", {})
    callgrind = " Instructions: callgrind, per call." if counts else ""
    lines = template("overhead-eager", rounds=eager["rounds"], callgrind=callgrind)
    instructions = []
    for r in eager["rows"]:
        ns = (qfmt(r[k], "", 0) for k in ("plain_ns", "proxy_ns", "overhead_ns"))
        lines.append(row(r["label"], *ns, qfmt(r["ratio"])))
        if n := counts.get(r["case"]):
            instructions.append((r["label"], f"{n['plain']:,}", f"{n['proxy']:,}"))
    if instructions:
        lines += ["", *table("case | instructions plain> | instructions proxy>", instructions)]
    lines += ["", "![Eager: proxy minus plain](img/overhead_eager.png)", ""]
    floor = cg.get("floor")
    add = counts.get("add")
    if floor and add:
        base = floor["call"]
        proxy, plain = add["proxy"] - base, add["plain"] - base
        lines += template("overhead-add", proxy=proxy, plain=plain)
        total = 0
        for key, label in WORDS["floor_parts"].items():
            lines.append(row(label, f"{floor[key] - base:,}"))
            total += floor[key] - base
        lines += [row("**sum**", f"**{total:,}**"), "", *template("overhead-floor")]
        spent = add["proxy"] - base
        timed = {r["case"]: r for r in eager["rows"]}.get("add")
        if timed and spent > 0:
            ns = timed["proxy_ns"]["median"] * total / spent
            median = timed["proxy_ns"]["median"]
            lines += template("overhead-add-share", share=total / spent, ns=ns, median=median)
    mul = counts.get("torch_mul")
    if floor and mul and "torch_function" in floor:
        base = floor["call"]
        extra = mul["proxy"] - mul["plain"]
        hook = floor["torch_function"] - base
        lines += template(
            "overhead-mul", extra=extra, hook=hook, share=hook / extra, rest=extra - hook
        )
    return lines


def _compile(data: dict[str, Any]) -> list[str]:
    comp = data.get("compile")
    if not comp:
        return []
    share = comp["share"]
    single = data["config"].get("share_repeats") == 1
    lines = template(
        "overhead-share",
        depth=share["depth"],
        modules=share["modules"],
        attributes=share["attributes"],
        repeats=" One compile of each per backend (`--share-repeats 1`): no range to show."
        if single
        else "",
    )
    for backend, b in share["backends"].items():
        times = (qfmt(b[k], "", 2) for k in ("first_call_s", "stock_first_call_s"))
        shares = (pfmt(b[k]) for k in ("share_of_first_call", "share_of_trace"))
        lines.append(row(backend, *times, qfmt(b["first_call_vs_stock"]), *shares))
    first = next(iter(share["backends"].values()))
    run = next(r for r in first["runs"] if r["bridge"])
    lines += [
        "",
        "Hooks by self time (first marked run, " + next(iter(share["backends"])) + "):",
        "",
        *table(
            "hook | calls> | self time (ms)>",
            (
                (f"`{k}`", f"{h['calls']:,}", f"{h['self_s'] * 1e3:.1f}")
                for k, h in run["hooks"].items()
            ),
        ),
    ]
    scaling = comp["scaling"]
    labels = WORDS["scaling_labels"]
    once = _single(scaling["rows"][0]["compile_s"])
    lines += template(
        "overhead-scaling",
        depth=scaling["depth"],
        backend=scaling["backend"],
        first=WORDS["scaling_first_once" if once else "scaling_first"],
        rounds=data["config"].get("scaling_rounds", ""),
        phases=WORDS["scaling_phases"] if scaling.get("stock_phase") else ".",
    )
    for r in scaling["rows"]:
        took = qfmt(r["compile_s"], "", 2), qfmt(r["call_us"], "", 1), qfmt(r["call_vs_static"])
        lines.append(row(labels.get(r["how"], r["how"]), r["k"], *took, r["compiles"]))
    lines += [
        "",
        "![Compile time and call time against dynamic scalars](img/overhead_scaling.png)",
        "",
    ]
    return lines


def cache_counts(row: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """A warm child's FX graph cache hits and misses, AOTAutograd hits, misses, bypasses."""
    fx, aot = row["fxgraph"], row["aot_autograd"]
    return (
        *(fx.get(f"fxgraph_cache_{k}", 0) for k in ("hit", "miss")),
        *(aot.get(f"autograd_cache_{k}", 0) for k in ("hit", "miss", "bypass")),
    )


def _warm(data: dict[str, Any]) -> list[str]:
    warm = data.get("warm")
    if not warm:
        return []
    lines = template("overhead-warm", backend=warm["backend"])
    caches = []
    for r in warm["rows"]:
        cold, hot = r["cold"], r["warm"]
        if "error" in cold or "error" in hot:
            lines.append(row(r["label"], "error", "error", "-", "-"))
            caches.append((r["label"], "-", "-"))
            continue
        fx_hit, fx_miss, aot_hit, aot_miss, bypass = cache_counts(hot)
        eq = ", ".join("yes" if x["equal_to_eager"] else "**NO**" for x in (cold, hot))
        times = (f"{x['first_call_s']:.2f}" for x in (cold, hot))
        lines.append(row(r["label"], *times, hot["compiles"], eq))
        caches.append((r["label"], f"{fx_hit} / {fx_miss}", f"{aot_hit} / {aot_miss} / {bypass}"))
    head = "variant | FX graph cache hit / miss> | AOTAutograd cache hit / miss / bypass>"
    lines += ["", "Torch's cache counters in the second (warm) process:", ""]
    lines += [*table(head, caches), ""]
    bypassed = next((r for r in warm["rows"] if "bypass" in r["variant"]), None)
    tail = WORDS["warm_bypass"].format(label=bypassed["label"]) if bypassed else "."
    lines += template("overhead-warm-keys", bypass=tail)
    return lines


def _command(config: dict[str, Any]) -> str:
    """The command line of a run: its options that differ from the defaults (``--quick``
    runs name only ``--quick``)."""
    if config.get("quick"):
        return "python -m benchmarks.overhead --quick"
    parts = ["python -m benchmarks.overhead"]
    for name, value in config.items():
        default = _defaults().get(name, value)
        if name in ("quick", "name", "child_callgrind", "out") or value == default:
            continue
        flag = "--" + name.replace("_", "-")
        parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


def _defaults() -> dict[str, Any]:
    from benchmarks.overhead import parse_args

    return vars(parse_args([]))


DS_ATTR = ("ds_registry", "ds_decorator")
DS_ARGS = ("ds_args", "ds_args_decorator")


def summary(data: dict[str, Any]) -> list[str]:
    """Two or three sentences in plain words: what a mark costs per call and in eager code."""
    out = []
    percall = data.get("percall") or {}
    rows = [r for section in percall.values() for r in section["rows"]]
    kept = [r["ratio"]["median"] for r in rows if r["strategy"] in DS_ATTR + DS_ARGS]
    proxy = [r for r in rows if r["strategy"] == "ds_proxy"]
    refs = {
        backend: next(r for r in section["rows"] if r["strategy"] == "dynamic_sources")
        for backend, section in percall.items()
    }
    if kept and proxy:
        extra_us = [
            r["us"]["median"] - refs[b]["us"]["median"]
            for b, section in percall.items()
            for r in section["rows"]
            if r["strategy"] == "ds_proxy"
        ]
        base_us = [refs[b]["us"]["median"] for b in percall]
        pct = span([(r["ratio"]["median"] - 1) * 100 for r in proxy], ".0f")
        out.append(
            WORDS["summary_percall"].format(
                kept=span(kept, ".2f"), pct=pct, us=span(extra_us, ".1f"), base=span(base_us, ".0f")
            )
        )
    eager = {r["case"]: r for r in (data.get("eager") or {}).get("rows", [])}
    if "add" in eager:
        add = eager["add"]
        calls = [
            r["overhead_ns"]["median"] / 1000
            for case, r in eager.items()
            if case not in ("add", "seed_forward") and "forward" not in r["label"]
        ]
        forward = next((r for r in eager.values() if "forward" in r["label"]), None)
        us, plain = add["overhead_ns"]["median"] / 1000, add["plain_ns"]["median"] / 1000
        sentence = WORDS["summary_eager"].format(us=us, plain=plain)
        if calls:
            sentence += WORDS["summary_eager_calls"].format(us=span(calls, ".1f"))
        if forward:
            pct = (forward["ratio"]["median"] - 1) * 100
            sentence += WORDS["summary_eager_forward"].format(pct=pct)
        out.append(sentence + ".")
    comp = (data.get("compile") or {}).get("share")
    if comp:
        shares = [b["share_of_first_call"]["median"] * 100 for b in comp["backends"].values()]
        out.append(
            f"Compiling, dynscalar's own hooks take {span(shares, '.1f')}% of a first compile."
        )
    return [" ".join(out)] if out else []


def goals_block(data: dict[str, Any], source: str) -> str:
    """The goals benchmarks.overhead checks, for benchmarks/README.md."""
    lines = template("overhead-goals", source=source)
    lines += [row(g["section"], g["goal"], g["measured"], g["status"]) for g in data["goals"]]
    return marked("overhead-goals", "\n".join(lines) + "\n")


def _import(imports: dict[str, Any] | None, source: str) -> list[str]:
    """The import section: ``import dynscalar`` against ``import torch``, one process each."""
    if not imports:
        return []
    from benchmarks.import_time import table

    rounds = imports["machine"].get("rounds")
    return template("overhead-import", rounds=rounds, table=table(imports), source=source)


def render(
    data: dict[str, Any],
    source: str,
    imports: dict[str, Any] | None = None,
    imports_source: str = "",
) -> str:
    command, found = _command(data["config"]), summary(data)
    text = "".join(line + "\n" for line in found)  # the summary and its blank line, if any
    lines = template(
        "overhead-head", summary=text, machine=_machine(data), source=source, command=command
    )
    lines += _percall(data) + _eager(data) + _compile(data) + _warm(data)
    lines += _import(imports, imports_source)
    return "\n".join(lines).rstrip() + "\n"


# ============================================================================ figures
#: Figures are drawn this wide (px at 100 dpi): the docs' content column at 1280 px.
WIDTH_IN = 6.8
DPI = 100
BASE_PT = 9.5


def _pyplot() -> Any:
    size = {k: BASE_PT for k in ("font.size", "axes.labelsize", "legend.fontsize")}
    size |= {"xtick.labelsize": BASE_PT, "ytick.labelsize": BASE_PT}
    return pyplot(**size, **{"axes.titlesize": BASE_PT + 0.5})


def _short(label: str) -> str:
    return (
        label.replace("`", "")
        .replace(" (DynamicInt vs int)", "")
        .replace(" (DynamicFloat vs float)", "")
    )


def plot_percall(data: dict[str, Any], path: Path) -> None:
    """Microseconds per compiled call, from 0, one panel per backend, the ratio beside."""
    plt = _pyplot()
    percall = data["percall"]
    sizes = [len(s["rows"]) for s in percall.values()]
    fig, axes = plt.subplots(
        len(percall),
        1,
        figsize=(WIDTH_IN, 0.32 * sum(sizes) + 1.1 * len(percall)),
        squeeze=False,
        gridspec_kw={"height_ratios": sizes},
    )
    for ax, (backend, section) in zip(axes[:, 0], percall.items(), strict=True):
        rows = section["rows"]
        ys = list(range(len(rows)))
        med = [r["us"]["median"] for r in rows]
        err = spread([r["us"] for r in rows])
        colors = ["#4c72b0" if r["strategy"].startswith("ds_") else "#b0b0b0" for r in rows]
        ax.barh(ys, med, xerr=err, color=colors, capsize=2, error_kw={"lw": 0.8})
        top = max(r["us"]["p90"] for r in rows)
        for y, r in zip(ys, rows, strict=True):
            ax.annotate(f" {r['ratio']['median']:.2f}x", (r["us"]["p90"], y), va="center")
        ax.set_xlim(0, top * 1.18)
        ax.set_yticks(ys, [r["label"].replace("dynscalar.", "") for r in rows])
        ax.invert_yaxis()
        ax.set_title(backend, loc="left", fontweight="bold")
        ax.grid(axis="x", alpha=0.3)
    fig.supxlabel(
        "µs per compiled call, median and p10-p90 (axis from 0);\n"
        "beside each bar: its time / its reference's (torch's dynamic_sources)",
        fontsize=BASE_PT,
    )
    fig.tight_layout()
    save_figure(fig, path)


def plot_eager(data: dict[str, Any], path: Path) -> None:
    """Eager: what a proxy adds to each case, in microseconds, from 0."""
    plt = _pyplot()
    rows = data["eager"]["rows"]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 0.42 * len(rows) + 1.3))
    ys = list(range(len(rows)))
    ax.barh(
        ys,
        [r["overhead_ns"]["median"] / 1000 for r in rows],
        xerr=spread([r["overhead_ns"] for r in rows], 1e-3),
        color="#4c72b0",
        capsize=2,
        error_kw={"lw": 0.8},
    )
    ax.set_yticks(ys, [_short(r["label"]) for r in rows])
    ax.invert_yaxis()
    fig.suptitle("Eager: what a proxy adds to each call (median, p10-p90)", fontsize=BASE_PT + 0.5)
    fig.supxlabel("µs added per call (axis from 0)", fontsize=BASE_PT)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    save_figure(fig, path)


WORDS = words("overhead")  # reader-facing words: templates/overhead.json


def plot_scaling(data: dict[str, Any], path: Path) -> None:
    """First compile and call time against the number of dynamic scalars, axes from 0
    (a value measured once is a point, not a curve)."""
    plt = _pyplot()
    scaling = data["compile"]["scaling"]
    static = next(r for r in scaling["rows"] if r["how"] == "static")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH_IN, 6.4))
    markers = {"ds_registry": "o", "ds_proxy": "s", "dynamic_sources": "^"}
    for how, label in list(WORDS["scaling_labels"].items())[:3]:
        rows = [r for r in scaling["rows"] if r["how"] == how]
        ks = [r["k"] for r in rows]
        for ax, key in ((top, "compile_s"), (bottom, "call_us")):
            once = all(_single(r[key]) for r in rows)
            ax.errorbar(
                ks,
                [r[key]["median"] for r in rows],
                yerr=None if once else spread([r[key] for r in rows]),
                marker=markers[how],
                ls="none" if once else "-",
                capsize=3,
                label=label,
            )
    top.axhline(static["compile_s"]["median"], color="gray", ls=":", label="nothing dynamic")
    bottom.axhline(static["call_us"]["median"], color="gray", ls=":", label="nothing dynamic")
    once = _single(scaling["rows"][0]["compile_s"])
    top.set_title(
        f"first compile, {scaling['backend']}"
        + (": one run per point, no curve" if once else " (median, p10-p90)"),
        loc="left",
    )
    bottom.set_title(
        f"compiled call, {scaling['backend']} (median, p10-p90 over rounds)", loc="left"
    )
    top.set_ylabel("seconds")
    bottom.set_ylabel("microseconds")
    for ax in (top, bottom):
        ax.set_xscale("log")
        ax.set_xticks(scaling["ks"], [str(k) for k in scaling["ks"]])
        ax.set_ylim(bottom=0)
        ax.set_xlabel(f"dynamic scalars (of {scaling['depth']} int attributes)")
        ax.grid(alpha=0.3)
    bottom.legend(loc="lower right", ncol=2)
    fig.tight_layout()
    save_figure(fig, path)


def write_plots(data: dict[str, Any], folder: Path) -> list[Path]:
    """Draw the page's figures into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw, present in (
        ("overhead_percall.png", plot_percall, data.get("percall")),
        ("overhead_eager.png", plot_eager, data.get("eager")),
        ("overhead_scaling.png", plot_scaling, (data.get("compile") or {}).get("scaling")),
    ):
        if present:
            draw(data, folder / name)
            written.append(folder / name)
    return written


def write(path: Path, docs: Path, readme: Path, plots: bool = True) -> list[Path]:
    """docs/overhead.md, the README's goals and (``plots``) the figures from one run."""
    data, source = read_json(path), source_name(path)
    imports_path = path.parent / "import.json"
    imports = read_json(imports_path) if imports_path.exists() else None
    (docs / "overhead.md").write_text(render(data, source, imports, source_name(imports_path)))
    readme.write_text(replace_block(readme.read_text(), goals_block(data, source)))
    return [docs / "overhead.md", readme, *(write_plots(data, docs / "img") if plots else [])]
