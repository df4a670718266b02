"""docs/overhead.md, its figures and the README's goals from an overhead JSON."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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
    spread,
    table,
    template,
    words,
)

WORDS = words("overhead")  # reader-facing words: templates/overhead.json
REFERENCE = "dynamic_sources"  # the per-call section's reference strategy
KEPT = ("ds_registry", "ds_decorator", "ds_args", "ds_args_decorator")  # marks, no proxy


def _single(q: dict[str, float]) -> bool:
    """Whether a median (p10-p90) comes from a single measurement."""
    return q["p10"] == q["p90"] == q["median"]


def qfmt(q: dict[str, float] | None, unit: str = "x", fmt: str = ".3f") -> str:
    """``median (p10-p90)``, the median alone for a single measurement, ``-`` for none."""
    if not q:
        return "-"
    median, p10, p90 = (format(q[k], fmt) for k in ("median", "p10", "p90"))
    return f"{median}{unit}" if _single(q) else f"{median}{unit} ({p10}-{p90})"


def _machine(data: dict[str, Any]) -> str:
    m, c = data["machine"], data["config"]
    shared = " Other jobs shared the cores." if shared_cores(m) else ""
    timer = "this thread's CPU time" if c.get("timer", "cpu") == "cpu" else "wall-clock time"
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['torch_threads']} torch thread(s); torch "
        f"{m['torch']}, Python {m['python']}, wrapt {m['wrapt']}, dynscalar {m['dynscalar']}."
        f"{shared} Timings are {timer}; the run took {data['wall_s'] / 60:.0f} minutes."
    )


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
    phases = any(section.get("stock_phase") for section in percall.values())
    name = "overhead-percall-phases" if phases else "overhead-percall"
    c = data["config"]
    lines = template(name, rounds=c["rounds"], number=c["number"], counts=measured)
    for backend, section in percall.items():
        counts = cg.get(backend, {})
        # timings and instruction counts in two tables: one would not fit the page
        timings, instructions = [], []
        for r in section["rows"]:
            name = r["label"] + ("" if r["reference"] == REFERENCE else f" (vs {r['reference']})")
            equal = "yes" if r["equal_to_eager"] else "**NO**"
            timings.append((name, r["compiles"], equal, qfmt(r["us"], "", ".1f"), qfmt(r["ratio"])))
            if count := counts.get(r["strategy"]):
                ratio = f"{count['ratio']:.4f}x" if count["ratio"] else "-"
                instructions.append((name, f"{count['instructions']:,}", ratio))
        head = "strategy | compiles> | equal to eager | us per call> | time / reference>"
        lines += [f"### {backend}", "", *table(head, timings), ""]
        if instructions:
            head = "strategy | instructions per call> | instructions / reference>"
            lines += [*table(head, instructions), ""]
    return [*lines, "![Per compiled call, against dynamic_sources](img/overhead_percall.png)", ""]


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
        ns = (qfmt(r[k], "", ".0f") for k in ("plain_ns", "proxy_ns", "overhead_ns"))
        lines.append(row(r["label"], *ns, qfmt(r["ratio"])))
        if n := counts.get(r["case"]):
            instructions.append((r["label"], f"{n['plain']:,}", f"{n['proxy']:,}"))
    if instructions:
        lines += ["", *table("case | instructions plain> | instructions proxy>", instructions)]
    lines += ["", "![Eager: proxy minus plain](img/overhead_eager.png)", ""]
    floor, add, mul = cg.get("floor"), counts.get("add"), counts.get("torch_mul")
    if floor and add:
        base = floor["call"]  # the measuring loop, in every count
        lines += template("overhead-add", proxy=add["proxy"] - base, plain=add["plain"] - base)
        parts = [(label, floor[key] - base) for key, label in WORDS["floor_parts"].items()]
        total, spent = sum(n for _, n in parts), add["proxy"] - base
        lines += [row(label, f"{n:,}") for label, n in parts]
        lines += [row("**sum**", f"**{total:,}**"), "", *template("overhead-floor")]
        timed = next((r for r in eager["rows"] if r["case"] == "add"), None)
        if timed and spent > 0:
            median = timed["proxy_ns"]["median"]
            ns = median * total / spent
            lines += template("overhead-add-share", share=total / spent, ns=ns, median=median)
    if floor and mul and "torch_function" in floor:
        extra, hook = mul["proxy"] - mul["plain"], floor["torch_function"] - floor["call"]
        rest = extra - hook
        lines += template("overhead-mul", extra=extra, hook=hook, share=hook / extra, rest=rest)
    return lines


def _compile(data: dict[str, Any]) -> list[str]:
    comp = data.get("compile")
    if not comp:
        return []
    share, single = comp["share"], data["config"].get("share_repeats") == 1
    repeats = " One compile of each per backend (`--share-repeats 1`): no range to show."
    lines = template("overhead-share", **share, repeats=repeats if single else "")
    for backend, b in share["backends"].items():
        times = (qfmt(b[k], "", ".2f") for k in ("first_call_s", "stock_first_call_s"))
        shares = (qfmt(b[k], "", ".2%") for k in ("share_of_first_call", "share_of_trace"))
        lines.append(row(backend, *times, qfmt(b["first_call_vs_stock"]), *shares))
    backend, first = next(iter(share["backends"].items()))
    hooks = next(r for r in first["runs"] if r["bridge"])["hooks"]
    cells = [(f"`{k}`", f"{h['calls']:,}", f"{h['self_s'] * 1e3:.1f}") for k, h in hooks.items()]
    lines += ["", f"Hooks by self time (first marked run, {backend}):", ""]
    lines += table("hook | calls> | self time (ms)>", cells)
    scaling = comp["scaling"]
    once = _single(scaling["rows"][0]["compile_s"])
    lines += template(  # depth and backend from **scaling
        "overhead-scaling",
        **scaling,
        first=WORDS["scaling_first_once" if once else "scaling_first"],
        rounds=data["config"].get("scaling_rounds", ""),
        phases=WORDS["scaling_phases"] if scaling.get("stock_phase") else ".",
    )
    for r in scaling["rows"]:
        took = qfmt(r["compile_s"], "", ".2f"), qfmt(r["call_us"], "", ".1f")
        label = WORDS["scaling_labels"].get(r["how"], r["how"])
        lines.append(row(label, r["k"], *took, qfmt(r["call_vs_static"]), r["compiles"]))
    figure = "![Compile time and call time against dynamic scalars](img/overhead_scaling.png)"
    return [*lines, "", figure, ""]


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
        r = {**r, "label": WORDS["warm_labels"].get(r["variant"], r["label"])}  # today's words
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
    lines += ["", "Torch's cache counters in the second (warm) process:", "", *table(head, caches)]
    bypassed = next((r for r in warm["rows"] if "bypass" in r["variant"]), None)
    label = bypassed and WORDS["warm_labels"].get(bypassed["variant"], bypassed["label"])
    tail = WORDS["warm_bypass"].format(label=label) if bypassed else "."
    return [*lines, "", *template("overhead-warm-keys", bypass=tail)]


def _command(config: dict[str, Any]) -> str:
    """The command line of a run: its options that differ from the defaults (``--quick``
    runs name only ``--quick``)."""
    if config.get("quick"):
        return "python -m benchmarks.overhead --quick"
    from benchmarks.overhead import parse_args

    defaults, parts = vars(parse_args([])), ["python -m benchmarks.overhead"]
    for name, value in config.items():  # --name only names the output file
        if name != "name" and value != defaults.get(name, value):
            flag = "--" + name.replace("_", "-")
            parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


def summary(data: dict[str, Any]) -> str:
    """Plain words on what a mark costs per call and in eager code, and a blank line."""
    out = []
    percall = data.get("percall") or {}
    rows = [(backend, r) for backend, section in percall.items() for r in section["rows"]]
    kept = [r["ratio"]["median"] for _, r in rows if r["strategy"] in KEPT]
    refs = {b: r["us"]["median"] for b, r in rows if r["strategy"] == REFERENCE}
    proxy = [(b, r) for b, r in rows if r["strategy"] == "ds_proxy"]
    if kept and proxy:
        pct = span([(r["ratio"]["median"] - 1) * 100 for _, r in proxy], ".0f")
        extra_us = span([r["us"]["median"] - refs[b] for b, r in proxy], ".1f")
        base = span(list(refs.values()), ".0f")
        out.append(
            WORDS["summary_percall"].format(kept=span(kept, ".2f"), pct=pct, us=extra_us, base=base)
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
    if comp := (data.get("compile") or {}).get("share"):
        shares = [b["share_of_first_call"]["median"] * 100 for b in comp["backends"].values()]
        out.append(
            f"Compiling, dynscalar's own hooks take {span(shares, '.1f')}% of a first compile."
        )
    return " ".join(out) + "\n" if out else ""


def goals_block(data: dict[str, Any], source: str) -> str:
    """The goals benchmarks.overhead checks, for benchmarks/README.md."""
    lines = template("overhead-goals", source=source)
    lines += [row(g["section"], g["goal"], g["measured"], g["status"]) for g in data["goals"]]
    return marked("overhead-goals", "\n".join(lines) + "\n")


def render(
    data: dict[str, Any],
    source: str,
    imports: dict[str, Any] | None = None,
    imports_source: str = "",
    compile_time: dict[str, Any] | None = None,
    compile_time_source: str = "",
    warm_restart: dict[str, Any] | None = None,
    warm_restart_source: str = "",
) -> str:
    lines = template(
        "overhead-head",
        summary=summary(data),
        machine=_machine(data),
        source=source,
        command=_command(data["config"]),
    )
    lines += _percall(data) + _eager(data) + _compile(data) + _warm(data)
    if compile_time:  # first compiles against stock, a fresh process each
        from benchmarks.compile_time import render as compile_time_table

        lines += template(
            "overhead-compile-time",
            rounds=compile_time["machine"].get("rounds"),
            table=compile_time_table(compile_time),
            source=compile_time_source,
        )
    if warm_restart:  # the first training step of a restart, a fresh process each
        from benchmarks.warm_restart import machine_words
        from benchmarks.warm_restart import render as warm_restart_table

        lines += template(
            "overhead-warm-restart",
            rounds=warm_restart["machine"].get("rounds"),
            machine=machine_words(warm_restart["machine"]),
            table=warm_restart_table(warm_restart),
            source=warm_restart_source,
        )
    if imports:  # ``import dynscalar`` against ``import torch``, one process each
        from benchmarks.import_time import table as import_table

        rounds = imports["machine"].get("rounds")
        lines += template(
            "overhead-import", rounds=rounds, table=import_table(imports), source=imports_source
        )
    return "\n".join(lines).rstrip() + "\n"


# ============================================================================ figures
#: Figures are drawn this wide (px at 100 dpi): the docs' content column at 1280 px.
WIDTH_IN = 6.8
BASE_PT = 9.5


def _pyplot() -> Any:
    sizes = ("font.size", "axes.labelsize", "legend.fontsize", "xtick.labelsize", "ytick.labelsize")
    return pyplot(**dict.fromkeys(sizes, BASE_PT), **{"axes.titlesize": BASE_PT + 0.5})


def _bars(
    ax: Any, qs: list[dict[str, float]], labels: list[str], color: Any, per: float = 1
) -> None:
    """Bars from 0, top to bottom: the medians of ``qs`` over ``per``, p10-p90 error bars."""
    ys = range(len(qs))
    medians = [q["median"] / per for q in qs]
    ax.barh(ys, medians, xerr=spread(qs, 1 / per), color=color, capsize=2, error_kw={"lw": 0.8})
    ax.set_yticks(ys, labels)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)


def plot_percall(data: dict[str, Any], path: Path) -> None:
    """Microseconds per compiled call, from 0, one panel per backend, the ratio beside."""
    percall = data["percall"]
    sizes = [len(s["rows"]) for s in percall.values()]
    fig, axes = _pyplot().subplots(
        len(percall),
        1,
        figsize=(WIDTH_IN, 0.32 * sum(sizes) + 1.1 * len(percall)),
        squeeze=False,
        gridspec_kw={"height_ratios": sizes},
    )
    for ax, (backend, section) in zip(axes[:, 0], percall.items(), strict=True):
        rows = section["rows"]
        colors = ["#4c72b0" if r["strategy"].startswith("ds_") else "#b0b0b0" for r in rows]
        labels = [r["label"].replace("dynscalar.", "") for r in rows]
        _bars(ax, [r["us"] for r in rows], labels, colors)
        for y, r in enumerate(rows):
            ax.annotate(f" {r['ratio']['median']:.2f}x", (r["us"]["p90"], y), va="center")
        ax.set_xlim(0, max(r["us"]["p90"] for r in rows) * 1.18)
        ax.set_title(backend, loc="left", fontweight="bold")
    fig.supxlabel(
        "µs per compiled call, median and p10-p90 (axis from 0);\n"
        "beside each bar: its time / its reference's (torch's dynamic_sources)",
        fontsize=BASE_PT,
    )
    fig.tight_layout()
    save_figure(fig, path)


def plot_eager(data: dict[str, Any], path: Path) -> None:
    """Eager: what a proxy adds to each case, in microseconds, from 0."""
    rows = data["eager"]["rows"]
    fig, ax = _pyplot().subplots(figsize=(WIDTH_IN, 0.42 * len(rows) + 1.3))
    labels = [
        re.sub(r"`| \(DynamicInt vs int\)| \(DynamicFloat vs float\)", "", r["label"]) for r in rows
    ]
    _bars(ax, [r["overhead_ns"] for r in rows], labels, "#4c72b0", per=1000)
    fig.suptitle("Eager: what a proxy adds to each call (median, p10-p90)", fontsize=BASE_PT + 0.5)
    fig.supxlabel("µs added per call (axis from 0)", fontsize=BASE_PT)
    fig.tight_layout()
    save_figure(fig, path)


def plot_scaling(data: dict[str, Any], path: Path) -> None:
    """First compile and call time against the number of dynamic scalars, axes from 0
    (a value measured once is a point, not a curve)."""
    scaling = data["compile"]["scaling"]
    static = next(r for r in scaling["rows"] if r["how"] == "static")
    fig, (top, bottom) = _pyplot().subplots(2, 1, figsize=(WIDTH_IN, 6.4))
    once = _single(scaling["rows"][0]["compile_s"])
    spreads = (
        ": one run per point, no curve" if once else " (median, p10-p90)",
        " (median, p10-p90 over rounds)",
    )
    panels = (
        (top, "compile_s", "seconds", "first compile"),
        (bottom, "call_us", "microseconds", "compiled call"),
    )
    markers = {"ds_registry": "o", "ds_proxy": "s", "dynamic_sources": "^"}
    for how, label in list(WORDS["scaling_labels"].items())[:3]:
        rows = [r for r in scaling["rows"] if r["how"] == how]
        for ax, key, _, _ in panels:
            single = all(_single(r[key]) for r in rows)
            ax.errorbar(
                [r["k"] for r in rows],
                [r[key]["median"] for r in rows],
                yerr=None if single else spread([r[key] for r in rows]),
                marker=markers[how],
                ls="none" if single else "-",
                capsize=3,
                label=label,
            )
    for (ax, key, unit, title), over in zip(panels, spreads, strict=True):
        ax.set_title(f"{title}, {scaling['backend']}{over}", loc="left")
        ax.axhline(static[key]["median"], color="gray", ls=":", label="nothing dynamic")
        ax.set_ylabel(unit)
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


def page(data: dict[str, Any], path: Path) -> str:
    """The overhead page made of one run (``data``, read from ``path``) and, beside it, the
    import and first-compile measurements (``import.json``, ``compile_time.json``) when
    present."""
    imports_path = path.parent / "import.json"
    imports = read_json(imports_path) if imports_path.exists() else None
    compile_path = path.parent / "compile_time.json"
    compile_time = read_json(compile_path) if compile_path.exists() else None
    warm_path = path.parent / "warm_restart.json"
    warm_restart = read_json(warm_path) if warm_path.exists() else None
    return render(
        data,
        source_name(path),
        imports,
        source_name(imports_path),
        compile_time,
        source_name(compile_path),
        warm_restart,
        source_name(warm_path),
    )


def write(path: Path, docs: Path, readme: Path, plots: bool = True) -> list[Path]:
    """docs/overhead.md, the README's goals and (``plots``) the figures from one run."""
    data, source = read_json(path), source_name(path)
    (docs / "overhead.md").write_text(page(data, path))
    readme.write_text(replace_block(readme.read_text(), goals_block(data, source)))
    return [docs / "overhead.md", readme, *(write_plots(data, docs / "img") if plots else [])]
