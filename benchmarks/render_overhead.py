"""Write docs/overhead.md from a bench_overhead.py JSON result.

Every number on the page comes from the JSON of one run, with the machine, the torch
version and the load average beside it:

    python benchmarks/render_overhead.py benchmarks/published/overhead.json

The plots the run wrote next to its JSON (``overhead_*.png``) are copied to ``docs/img/``
when present (the published JSON is committed together with them).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

#: bench_overhead.GOAL_ADD_NS (not imported from there: that module imports torch).
GOAL_ADD_NS = 300.0

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PLOTS = ("overhead_percall.png", "overhead_eager.png", "overhead_scaling.png")


def _q(q: dict[str, float] | None, unit: str = "x", digits: int = 3) -> str:
    """``median (p10-p90)``."""
    if not q:
        return "-"
    return f"{q['median']:.{digits}f}{unit} ({q['p10']:.{digits}f}-{q['p90']:.{digits}f})"


def _pct(q: dict[str, float]) -> str:
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


def _percall(data: dict[str, Any]) -> list[str]:
    percall = data.get("percall")
    if not percall:
        return []
    cg = data.get("callgrind", {}).get("percall", {})
    c = data["config"]
    lines = [
        "## Per compiled call",
        "",
        "The seed model (`Linear(64, 64)`, `self.step += 1` in `forward`, an 8x64 input) compiled",
        "once per strategy, each with its own copy of `forward` (Dynamo caches per code object).",
        "Torch's `dynamic_sources` rows are compiled by stock torch: dynscalar's hooks are taken",
        "out of Dynamo for that compile. The argument strategies pass the counter in and get",
        "`step + 1` back; their reference is `dynamic_sources` on the argument. Strategies take",
        f"turns, {c['rounds']} rounds of {c['number']} calls, the order rotated every round;",
        "ratios are paired per round. "
        + (
            "Instructions per call come from callgrind (valgrind), one strategy per process,"
            " and do not depend on the machine's load."
            if cg
            else "No instruction counts: this run was made without `--callgrind`."
        ),
        "",
    ]
    for backend, section in percall.items():
        counts = cg.get(backend, {})
        # timings and instruction counts in two tables: one would not fit the page
        lines += [
            f"### {backend}",
            "",
            "| strategy | compiles | equal to eager | us per call | time / reference |",
            "|---|---:|---|---:|---:|",
        ]
        instructions = []
        for r in section["rows"]:
            ref = "" if r["reference"] == "dynamic_sources" else f" (vs {r['reference']})"
            lines.append(
                f"| {r['label']}{ref} | {r['compiles']} | "
                f"{'yes' if r['equal_to_eager'] else '**NO**'} | {_q(r['us'], '', 1)} | "
                f"{_q(r['ratio'])} |"
            )
            count = counts.get(r["strategy"])
            if count:
                ratio = f"{count['ratio']:.4f}x" if count["ratio"] else "-"
                instructions.append(f"| {r['label']}{ref} | {count['instructions']:,} | {ratio} |")
        lines.append("")
        if instructions:
            lines += [
                "| strategy | instructions per call | instructions / reference |",
                "|---|---:|---:|",
                *instructions,
                "",
            ]
    lines += ["![Per compiled call, against dynamic_sources](img/overhead_percall.png)", ""]
    return lines


def _eager(data: dict[str, Any]) -> list[str]:
    eager = data.get("eager")
    if not eager:
        return []
    cg = data.get("callgrind", {})
    counts = cg.get("eager", {})
    lines = [
        "## Eager",
        "",
        "Plain value and proxy take turns (" + str(eager["rounds"]) + " samples each); "
        "overhead and ratio are paired per sample."
        + (" Instructions: callgrind, per call." if counts else ""),
        "",
        "| case | plain (ns) | proxy (ns) | proxy - plain (ns) | proxy / plain |",
        "|---|---:|---:|---:|---:|",
    ]
    instructions = []
    for r in eager["rows"]:
        lines.append(
            f"| {r['label']} | {_q(r['plain_ns'], '', 0)} | {_q(r['proxy_ns'], '', 0)} | "
            f"{_q(r['overhead_ns'], '', 0)} | {_q(r['ratio'])} |"
        )
        n = counts.get(r["case"])
        if n:
            instructions.append(f"| {r['label']} | {n['plain']:,} | {n['proxy']:,} |")
    if instructions:
        lines += [
            "",
            "| case | instructions plain | instructions proxy |",
            "|---|---:|---:|",
            *instructions,
        ]
    lines += ["", "![Eager: proxy minus plain](img/overhead_eager.png)", ""]
    floor = cg.get("floor")
    add = counts.get("add")
    if floor and add:
        base = floor["call"]
        parts = [
            ("Python-level operator dispatch (a `__add__` that returns an int)", "dispatch"),
            ("reading `proxy.__wrapped__` (once per operand)", "read"),
            ("allocating and freeing the result's wrapt proxy", "alloc"),
            ("storing the value through wrapt's `__wrapped__` setter", "store_value"),
            ("storing the spec slot", "store_spec"),
        ]
        lines += [
            "### Where `DynamicInt + 1` goes",
            "",
            f"`x + 1` on a `DynamicInt` costs {add['proxy'] - base:,} instructions beyond the "
            f"measuring loop ({add['plain'] - base:,} on an int). Its unavoidable pieces, each "
            "measured alone:",
            "",
            "| piece | instructions |",
            "|---|---:|",
        ]
        total = 0
        for label, key in parts:
            lines.append(f"| {label} | {floor[key] - base:,} |")
            total += floor[key] - base
        lines += [
            f"| **sum** | **{total:,}** |",
            "",
            "Every proxy an operator returns is a new wrapt object: the allocation (wrapt's",
            "`tp_new` also allocates an instance dict) and the `__wrapped__` setter (which looks",
            "up and calls `__wrapped_setattr_fixups__` on every store) are wrapt's C code, and a",
            "Python subclass's `__add__` is a Python call. That sum is the floor for an",
            "operator that returns a wrapt proxy from Python code.",
            "",
        ]
        spent = add["proxy"] - base
        timed = {r["case"]: r for r in eager["rows"]}.get("add")
        if timed and spent > 0:
            ns = timed["proxy_ns"]["median"] * total / spent
            lines += [
                f"The floor is {total / spent:.0%} of the instructions of `x + 1`; in proportion,",
                f"about {ns:.0f} ns of this run's {timed['proxy_ns']['median']:.0f} ns. "
                + (
                    f"The eager goal of {GOAL_ADD_NS:.0f} ns is below that floor: only a proxy "
                    "that is not a wrapt object built by Python code (a C extension) could "
                    "reach it."
                    if ns > GOAL_ADD_NS
                    else f"The floor alone is within the eager goal of {GOAL_ADD_NS:.0f} ns."
                ),
                "",
            ]
    mul = counts.get("torch_mul")
    if floor and mul and "torch_function" in floor:
        base = floor["call"]
        extra = mul["proxy"] - mul["plain"]
        hook = floor["torch_function"] - base
        lines += [
            "### Where `torch.mul(t, x)` goes",
            "",
            f"`torch.mul(t, x)` with a `DynamicInt` costs {extra:,} instructions more than with "
            f"an int. Torch's C argument parser does not take the proxy as a number: it gives "
            f"up, finds `__torch_function__` and calls it, and the hook calls `torch.mul` "
            f"again with the plain value. Torch's part alone, measured with an object whose "
            f"`__torch_function__` returns at once (no second call): {hook:,} instructions, "
            f"{hook / extra:.0%} of the difference; dynscalar's hook (unwrapping the "
            f"arguments) is the remaining {extra - hook:,}.",
            "",
        ]
    return lines


def _compile(data: dict[str, Any]) -> list[str]:
    comp = data.get("compile")
    if not comp:
        return []
    share = comp["share"]
    lines = [
        "## Compile time",
        "",
        f"### The bridge's share of a first compile ({share['depth']} transformer blocks, "
        f"{share['modules']} modules, {share['attributes']} attributes)",
        "",
        "`step` (int, incremented in `forward`) and `warm` (float) marked with",
        "`mark_dynamic_attr`; inference (`eval()`, `no_grad`). The bridge's time is the self",
        "time of every hook it installs in Dynamo (time in the hook minus time in what it",
        "wraps, and than Dynamo realizing a lazy variable), measured during the compile. The",
        "stock compile alternates with it: the bridge taken out, the counter made dynamic by",
        "`dynamic_sources` and the float by `specialize_float=False`. Each compile starts with",
        "empty inductor caches (`torch._inductor.utils.fresh_cache`).",
        "",
        "| backend | first call, marked (s) | first call, stock (s) | marked / stock "
        "| bridge share of the first call | bridge share of Dynamo's trace |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for backend, b in share["backends"].items():
        lines.append(
            f"| {backend} | {_q(b['first_call_s'], '', 2)} | {_q(b['stock_first_call_s'], '', 2)} "
            f"| {_q(b['first_call_vs_stock'])} | {_pct(b['share_of_first_call'])} "
            f"| {_pct(b['share_of_trace'])} |"
        )
    first = next(iter(share["backends"].values()))
    run = next(r for r in first["runs"] if r["bridge"])
    lines += [
        "",
        "Hooks by self time (first marked run, " + next(iter(share["backends"])) + "):",
        "",
        "| hook | calls | self time (ms) |",
        "|---|---:|---:|",
    ]
    for name, h in run["hooks"].items():
        lines.append(f"| `{name}` | {h['calls']:,} | {h['self_s'] * 1e3:.1f} |")
    scaling = comp["scaling"]
    labels = {
        "ds_registry": "mark_dynamic_attr",
        "ds_proxy": "DynamicInt values",
        "dynamic_sources": "torch dynamic_sources",
        "static": "nothing dynamic",
    }
    lines += [
        "",
        f"### Growing with the number of dynamic scalars ({scaling['depth']} blocks, "
        f"{scaling['backend']})",
        "",
        f"Each of {scaling['depth']} blocks adds an int attribute to the input; k of them are",
        "dynamic (marked, `DynamicInt` values, or named in `dynamic_sources`), the rest are",
        "constants. First compile: median (p10-p90) over fresh copies; call: interleaved, paired",
        "against the model with nothing dynamic.",
        "",
        "| how | k | first compile (s) | us per call | call / nothing dynamic | compiles |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in scaling["rows"]:
        lines.append(
            f"| {labels.get(r['how'], r['how'])} | {r['k']} | {_q(r['compile_s'], '', 2)} | "
            f"{_q(r['call_us'], '', 1)} | {_q(r['call_vs_static'])} | {r['compiles']} |"
        )
    lines += [
        "",
        "![Compile time and call time against dynamic scalars](img/overhead_scaling.png)",
        "",
    ]
    return lines


def _warm(data: dict[str, Any]) -> list[str]:
    warm = data.get("warm")
    if not warm:
        return []
    lines = [
        "## Warm restart",
        "",
        f"Two processes, one after the other, with one fresh `TORCHINDUCTOR_CACHE_DIR` "
        f"({warm['backend']}); each runs four training steps (forward and backward) of the",
        "seed model, or of a model whose float `scale` is read and written in `forward`. Counters",
        "are torch's (`torch._dynamo.utils.counters`) in the second process. torch's own rows",
        "never import dynscalar.",
        "",
        "| variant | first call, cold (s) | first call, warm (s) | compiles (warm) "
        "| equal to eager (cold, warm) |",
        "|---|---:|---:|---:|---|",
    ]
    caches = [
        "| variant | FX graph cache hit / miss | AOTAutograd cache hit / miss / bypass |",
        "|---|---:|---:|",
    ]
    for r in warm["rows"]:
        cold, hot = r["cold"], r["warm"]
        if "error" in cold or "error" in hot:
            lines.append(f"| {r['label']} | error | error | - | - |")
            caches.append(f"| {r['label']} | - | - |")
            continue
        fx, aot = hot["fxgraph"], hot["aot_autograd"]
        eq = ", ".join("yes" if x["equal_to_eager"] else "**NO**" for x in (cold, hot))
        lines.append(
            f"| {r['label']} | {cold['first_call_s']:.2f} | {hot['first_call_s']:.2f} | "
            f"{hot['compiles']} | {eq} |"
        )
        caches.append(
            f"| {r['label']} | "
            f"{fx.get('fxgraph_cache_hit', 0)} / {fx.get('fxgraph_cache_miss', 0)} | "
            f"{aot.get('autograd_cache_hit', 0)} / {aot.get('autograd_cache_miss', 0)} / "
            f"{aot.get('autograd_cache_bypass', 0)} |"
        )
    lines += [
        "",
        "Torch's cache counters in the second (warm) process:",
        "",
        *caches,
        "",
        "Graphs with a dynamic float get an AOTAutograd cache key of their own (torch's key",
        "plus a dynscalar component, `dynscalar/_bridge/_floats.py`): they never read an entry",
        "stock torch wrote for the same graph shape, which can hold the float's value baked in",
        "(pytorch#194976; the `float written in forward, torch alone` row), and stock torch",
        "never reads theirs. Before, such graphs bypassed the AOTAutograd cache (the `before`",
        "row).",
        "",
    ]
    return lines


def _command(config: dict[str, Any]) -> str:
    """The bench_overhead.py command line of a run: its options that differ from the
    defaults (``--quick`` runs name only ``--quick``)."""
    if config.get("quick"):
        return "python benchmarks/bench_overhead.py --quick"
    parts = ["python benchmarks/bench_overhead.py"]
    for name, value in config.items():
        default = _defaults().get(name, value)
        if name in ("quick", "name", "child_callgrind", "out") or value == default:
            continue
        flag = "--" + name.replace("_", "-")
        parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


def _defaults() -> dict[str, Any]:
    import importlib.util
    import sys

    global _DEFAULTS
    if _DEFAULTS is None:
        name = "_bench_overhead_defaults"
        spec = importlib.util.spec_from_file_location(name, HERE / "bench_overhead.py")
        assert spec is not None and spec.loader is not None
        bench = importlib.util.module_from_spec(spec)
        sys.modules[name] = bench  # its dataclasses look their module up
        try:
            spec.loader.exec_module(bench)
            _DEFAULTS = vars(bench.parse_args([]))
        finally:
            del sys.modules[name]
    return _DEFAULTS


_DEFAULTS: dict[str, Any] | None = None


def render(data: dict[str, Any], source: str) -> str:
    lines = [
        "# Overhead",
        "",
        "What dynscalar costs against the best torch can do: per compiled call, in eager code,",
        "in compile time and on a warm restart. Generated by `benchmarks/render_overhead.py`",
        f"from `{source}`, written by `{_command(data['config'])}`.",
        "",
        "**Machine:** " + _machine(data),
        "",
        "## Goals",
        "",
        "| section | goal | measured: median (p10-p90) | status |",
        "|---|---|---|---|",
    ]
    for g in data["goals"]:
        lines.append(f"| {g['section']} | {g['goal']} | {g['measured']} | {g['status']} |")
    lines.append("")
    lines += _percall(data) + _eager(data) + _compile(data) + _warm(data)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="JSON written by bench_overhead.py")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "overhead.md")
    args = parser.parse_args()
    data = json.loads(args.result.read_text())
    result = args.result.resolve()
    source = str(result.relative_to(ROOT)) if result.is_relative_to(ROOT) else result.name
    img = args.out.parent / "img"
    for png in PLOTS:
        if (args.result.parent / png).exists() and args.result.parent.resolve() != img.resolve():
            img.mkdir(exist_ok=True)
            shutil.copyfile(args.result.parent / png, img / png)
    args.out.write_text(render(data, source))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
