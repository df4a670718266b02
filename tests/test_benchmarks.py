"""The strategy benchmark and the demo's plot: a tiny run of each, checked for shape and truth.

These run the real scripts in subprocesses (each strategy in its own fresh process) on the
``eager``/``aot_eager`` backends, so they check plumbing and correctness, not speed. The
schedule workload's statistical checks are also tested in-process: they must pass for a
correct dropout and fail for broken ones (a check that cannot fail checks nothing).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytest.importorskip("matplotlib", reason="plots need matplotlib (the 'bench' extra)")


def run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def is_png(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC


def bench() -> types.ModuleType:
    """benchmarks.strategies, imported here (it imports torch and dynscalar)."""
    from benchmarks import strategies

    return strategies


@pytest.mark.broad
def test_quick_benchmark_run(tmp_path: Path) -> None:
    out = run(
        "-m",
        "benchmarks.strategies",
        "--quick",
        "--backend",
        "eager",
        "--workloads",
        "train",
        "--strategies",
        "stock,oracle,ds_registry",
        "--out",
        str(tmp_path),
        "--name",
        "quick",
    )
    result = json.loads((tmp_path / "quick.json").read_text())
    assert {"machine", "config", "workloads", "results", "targets", "wall_s"} <= set(result)
    assert result["machine"]["torch"] and result["machine"]["cores"]
    assert result["workloads"]["train"]["control_paths"] == 2
    rows = {r["strategy"]: r for r in result["results"]}
    assert set(rows) == {"stock", "oracle", "ds_registry"}
    for row in rows.values():
        assert row["equal_to_eager"], row
        assert row["steps"] == 12 and len(row["step_times_s"]) == 12
        assert row["final_step"] == 12
        for key in ("first_call_s", "total_s", "steady_median_ms", "total_vs_oracle"):
            assert row[key] > 0, key
    assert rows["stock"]["compiles"] == 8 and rows["stock"]["fell_back_to_eager"]
    assert rows["oracle"]["compiles"] == 1
    assert rows["ds_registry"]["compiles"] == 2 and not rows["ds_registry"]["fell_back_to_eager"]
    assert rows["ds_registry"]["step_type_after"] == "int"
    statuses = {t["target"]: t["status"] for t in result["targets"]}
    assert statuses["compiles == control paths"] == "PASS"
    assert statuses["equal to eager"] == "PASS"
    assert all(s in {"PASS", "MISS", "n/a"} for s in statuses.values())
    assert "| dynscalar: mark_dynamic_attr | 2 |" in out
    assert is_png(tmp_path / "cumulative_time.png")
    assert is_png(tmp_path / "total_time.png")


@pytest.mark.broad
def test_quick_schedule_run(tmp_path: Path) -> None:
    """Dropout p and label smoothing set by the loop every step: stock compiles once per
    value, every dynscalar form once (one control path), and all pass the three checks."""
    out = run(
        "-m",
        "benchmarks.strategies",
        "--backend",
        "aot_eager",
        "--steps",
        "6",
        "--threads",
        "1",
        "--workloads",
        "schedule",
        "--strategies",
        "stock,unspec_int,oracle,ds_proxy,ds_registry,ds_decorator",
        "--out",
        str(tmp_path),
        "--name",
        "sched",
    )
    result = json.loads((tmp_path / "sched.json").read_text())
    info = result["workloads"]["schedule"]
    assert info["control_paths"] == 1 and info["stochastic"]
    assert info["not_applicable"]["unspec_int"].startswith("ints only")
    assert len(result["references"]["schedule"]["losses"]) == 10
    rows = {r["strategy"]: r for r in result["results"]}
    assert set(rows) == {"stock", "oracle", "ds_proxy", "ds_registry", "ds_decorator"}
    for row in rows.values():
        assert "error" not in row, row.get("error")
        assert row["equal_to_eager"], row["strategy"]
        assert row["eval_equal"] and row["max_abs_diff"] <= 1e-5
        assert row["loss_check"]["pass"] and row["loss_check"]["windows"] == 2
        assert row["dropout_probe"]["pass"] and row["dropout_probe"]["draws"] == 64
        assert len(row["losses"]) == len(row["step_times_s"]) == 6
        assert not row["fell_back_to_eager"]
    # A new p on every step: stock compiles once per value, in the timed and the exact pass.
    assert rows["stock"]["compiles"] == rows["stock"]["eval_compiles"] == 6
    for name in ("ds_proxy", "ds_registry", "ds_decorator"):
        assert rows[name]["compiles"] == rows[name]["eval_compiles"] == 1, name
        assert rows[name]["restarts"] == 0, name
    assert rows["oracle"]["compiles"] == 1
    assert set(rows["ds_proxy"]["value_types_after"].values()) == {"DynamicFloat"}
    assert set(rows["ds_registry"]["value_types_after"].values()) == {"float"}
    statuses = [t for t in result["targets"] if t["target"] == "compiles == control paths"]
    assert [t["status"] for t in statuses] == ["PASS"] * 3
    assert "| torch: allow_unspec_int_on_nn_module | n/a: ints only" in out
    assert "| dynscalar: DynamicFloat values | 1 |" in out
    assert is_png(tmp_path / "schedule.png")


ARGUMENT_STRATEGIES = ("stock", "dynamic_true", "ds_value", "ds_args", "ds_decorator")


@pytest.mark.broad
def test_quick_arguments_run(tmp_path: Path) -> None:
    """A compiled function called with 4 values of its scalar argument: every dynscalar
    form compiles once per control path from the first call (arith 1, branch 2, float 1),
    stock once more (the first value is a constant), and every call equals eager exactly."""
    result_path = tmp_path / "arguments.json"
    out = run(
        "-m",
        "benchmarks.arguments",
        "--quick",
        "--backend",
        "eager",
        "--strategies",
        ",".join(ARGUMENT_STRATEGIES),
        "--out",
        str(result_path),
    )
    result = json.loads(result_path.read_text())
    assert result["kind"] == "arguments"
    assert {"machine", "config", "cases", "results", "what", "names"} <= set(result)
    assert result["machine"]["torch"] and result["machine"]["loadavg_start"]
    assert result["config"]["values"] == 4 and result["config"]["rounds"] == 2
    assert {c: i["control_paths"] for c, i in result["cases"].items()} == {
        "arith": 1,
        "branch": 2,
        "float": 1,
    }
    rows = {(r["case"], r["strategy"]): r for r in result["results"]}
    assert set(rows) == {(c, s) for c in result["cases"] for s in ARGUMENT_STRATEGIES}
    for (case, strategy), row in rows.items():
        assert "error" not in row, (case, strategy, row.get("error"))
        assert row["equal_to_eager"] and row["max_abs_diff"] == 0, (case, strategy)
        assert row["calls"] == len(row["call_times_s"]) == 8
        assert row["first_call_s"] > 0 and row["steady_median_us"] > 0
        assert not row["fell_back_to_eager"] and row["restarts"] == 0, (case, strategy)
    compiles = {k: r["compiles"] for k, r in rows.items()}
    for strategy in ("dynamic_true", "ds_value", "ds_args", "ds_decorator"):
        for case, info in result["cases"].items():
            assert compiles[(case, strategy)] == info["control_paths"], (case, strategy)
    assert [compiles[(c, "stock")] for c in ("arith", "branch", "float")] == [2, 3, 2]
    assert rows[("float", "ds_value")]["values"] == [0.15, 0.25, 0.35, 0.45]
    assert "| dynscalar: mark_dynamic_args |" in out

    from benchmarks import render_strategies as render

    page = "\n".join(render._arguments_section(result, "arguments.json"))
    assert "## Marking function arguments" in page
    table: dict[str, str] = {}  # the first table: compiles per case
    for line in page.splitlines():
        if line.startswith("| "):
            table.setdefault(line.split(" | ")[0], line)
    assert table["| stock torch.compile"].endswith("| 2 | 3 | 2 | yes |")
    assert table["| dynscalar: mark_<wbr>dynamic_<wbr>args"].endswith("| 1 | 2 | 1 | yes |")


def test_arguments_render_says_wrong_numbers_and_errors() -> None:
    """The section must not hide a strategy that returned other numbers than eager or
    failed: a check that cannot fail checks nothing."""
    from benchmarks import render_strategies as render

    good = {"torch": "2.13.0", "compiles": 1, "restarts": 0, "fell_back_to_eager": False}
    good |= {"equal_to_eager": True, "first_call_s": 0.1, "steady_median_us": 50.0}
    data = {
        "kind": "arguments",
        "machine": {"cpu": "cpu", "cores": 2, "python": "3.11", "loadavg_start": [1.0]},
        "config": {"values": 2, "rounds": 1, "shape": [4, 4], "backend": "eager"},
        "cases": {"arith": {"description": "d", "arg": "n", "control_paths": 1, "values": [2]}},
        "names": {"ds_args": "dynscalar: mark_dynamic_args", "stock": "stock torch.compile"},
        "what": {"ds_args": "a", "stock": "b"},
        "results": [
            {**good, "case": "arith", "strategy": "ds_args", "equal_to_eager": False},
            {"case": "arith", "strategy": "stock", "error": "Boom: broken (unhinted: x)"},
        ],
    }
    data["config"]["strategies"] = ["ds_args", "stock"]
    page = "\n".join(render._arguments_section(data, "x.json"))
    assert "| 1 **wrong** | **NO** |" in page
    assert "**Wrong numbers:** dynscalar: mark_dynamic_args on arith." in page
    assert "| stock torch.compile | ? | error | - |" in page
    assert "`Boom: broken`" in page


def _stand_in(bench: types.ModuleType, trained: Any, kind: str) -> Any:
    """An eager copy of ``trained`` whose dropout is broken in one way (``ok``: not)."""
    import torch

    workload = bench.WORKLOADS["schedule"]
    plain = workload.plain  # ScheduledClassifier
    model = bench._plain(workload)
    with torch.no_grad():
        for mine, theirs in zip(model.parameters(), trained.parameters(), strict=True):
            mine.copy_(theirs)
    if kind in ("stale 0.3", "stale 0.05"):  # the value of one step baked in
        stale = float(kind.split()[1])
        model.set_schedule = types.MethodType(
            lambda self, p, s: plain.set_schedule(self, stale, s), model
        )
    elif kind == "unscaled":  # no 1 / (1 - p)
        model.dropout = types.MethodType(
            lambda self, m, x: x * (torch.rand_like(x) >= m.p) if m.training else x, model
        )
    elif kind == "off":  # no dropout at all
        model.dropout = types.MethodType(lambda self, m, x: x, model)
    return model


def test_dropout_probe_passes_a_right_dropout_and_catches_broken_ones() -> None:
    import torch

    b = bench()
    workload = b.WORKLOADS["schedule"]
    inputs = workload.make_inputs(60)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trained = b._plain(workload)
        torch.manual_seed(3)
        b._run_loop(trained, trained, workload, inputs)
        eager = b.STRATEGIES["eager"]
        results = {}
        for kind in ("ok", "stale 0.3", "stale 0.05", "unscaled", "off"):
            model = _stand_in(b, trained, kind)
            results[kind] = b.dropout_probe(model, model, eager, workload, inputs)
    finally:
        torch.set_num_threads(threads)
    assert results["ok"]["pass"], results["ok"]
    for kind in ("stale 0.3", "stale 0.05", "unscaled", "off"):
        assert not results[kind]["pass"], (kind, results[kind]["max_abs_z"])


def test_loss_check_windows_and_limits() -> None:
    b = bench()
    rng = random.Random(0)
    curve = [2.3 - 1.5 * i / 200 for i in range(200)]

    def run(shift: float = 0.0) -> list[float]:
        offset = rng.gauss(0, 0.02)  # a run's own trajectory
        return [c + offset + shift + rng.gauss(0, 0.1) for c in curve]

    reference = [run() for _ in range(10)]
    same = b.loss_check(run(), reference)
    assert same["pass"] and same["windows"] == 4 and same["reference_runs"] == 10
    assert same["max_abs_z"] == max(abs(z) for z in same["z"])
    shifted = b.loss_check(run(shift=0.2), reference)
    assert not shifted["pass"] and shifted["max_abs_z"] > b.LOSS_Z
    assert b.loss_check(run()[:6], [r[:6] for r in reference])["windows"] == 2
    assert b.loss_check(run()[:4], [r[:4] for r in reference])["windows"] == 1


@pytest.mark.broad
def test_demo_plot(tmp_path: Path) -> None:
    png = tmp_path / "demo.png"
    out = run(
        "-m", "dynscalar", "demo", "--backend", "aot_eager", "--steps", "6", "--plot", str(png)
    )
    assert f"plot written to {png}" in out
    assert is_png(png)


def test_demo_plot_says_how_many_runs_and_starts_at_zero(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dynscalar.tools.demo import Row, plot_rows

    rows = [
        Row("stock torch.compile", 8, 2.0, 3.0, 0.1, True, [2.0] + [0.1] * 9, True, 3),
        Row("dynscalar.DynamicInt", 1, 2.0, 2.2, 0.1, True, [2.0] + [0.02] * 9, False, 3),
    ]
    figures = []
    real_close = plt.close
    plt.close = figures.append  # keep the figure to inspect it
    try:
        plot_rows(rows, tmp_path / "demo.png")
        plot_rows(rows, tmp_path / "demo.png", backend="aot_eager")
    finally:
        plt.close = real_close
    fig, other = figures
    subtitle = fig._suptitle.get_text().splitlines()[1]
    assert subtitle == (
        "median of 3 cold runs per strategy (fresh process, fresh inductor cache; backend inductor)"
    )
    # an aot_eager run uses no inductor cache, and says so by not naming one
    assert other._suptitle.get_text().splitlines()[1] == (
        "median of 3 cold runs per strategy (fresh process; backend aot_eager)"
    )
    real_close(other)
    for ax in fig.axes:
        assert ax.get_xlim()[0] == 0
        if ax.get_ylabel() == "seconds":
            assert ax.get_ylim()[0] == 0
    real_close(fig)


def test_missing_matplotlib_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from dynscalar.tools.demo import import_pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(
        ImportError,
        match=r"pip install matplotlib \(in a clone of the repository: pip install -e '\.\[bench",
    ):
        import_pyplot()


@pytest.mark.broad
def test_import_time_measures_both_imports_in_one_process() -> None:
    from benchmarks import import_time

    result = import_time.measure(rounds=1)
    assert result["torch_ms"]["median"] > result["dynscalar_ms"]["median"] > 0
    assert result["bridge_modules"] == [
        "dynscalar._bridge",
        "dynscalar._bridge._patch",
        "dynscalar._bridge._table",
        "dynscalar._bridge._torch",
    ]
    assert "| dynscalar / torch |" in import_time.table(result)


def test_callers_times_stock_and_marked_after_every_value_compiled() -> None:
    """``benchmarks.callers``: the marked pair compiles fewer graphs than stock (its callee
    is symbolic from the first value) and both are timed; every call was compared with
    eager inside ``run_case``."""
    from benchmarks import callers

    row = callers.run_case("int", "eager", rounds=1, number=2)
    # stock: outer and inner each a constant, then dynamic, and outer's resume function
    assert row["graphs"] == {"stock": 5, "marked": 3}
    assert set(row["us_per_call"]) == {"stock", "marked"}
    assert row["marked_over_stock"]["median"] > 0


@pytest.mark.broad
def test_compile_time_runs_each_configuration_in_its_own_process() -> None:
    """``benchmarks.compile_time``: stock and torch's knobs never import dynscalar, every
    configuration compiles one graph, and the table gives both ratios against stock."""
    from benchmarks import compile_time

    result = compile_time.measure(rounds=1, backends=["eager"], depths={"eager": 1})
    runs = result["runs"]
    assert sorted(r["config"] for r in runs) == sorted(compile_time.CONFIGS)
    for run in runs:
        assert run["graphs"] == 1, run
        assert run["dynscalar_imported"] == (run["config"] in ("imported", "marked")), run
        assert run["first_call_s"] > 0
    ratios = result["backends"]["eager"]["ratio_to_stock"]
    assert set(ratios) == {"imported", "marked"}
    table = compile_time.render(result)
    assert "| eager (1 block) |" in table and "goal <= 1.03x" in table


def test_warm_restart_table_and_machine_words() -> None:
    """``benchmarks.warm_restart``'s table from a result (the processes themselves are the
    benchmark's: minutes of inductor compiles): both first steps, the paired ratio and the
    warm process's cache counters; the machine's load in words, not as a load average."""
    from benchmarks import warm_restart

    def run(config: str, r: int, warm_s: float, aot: dict[str, int]) -> dict[str, Any]:
        cold = {"first_step_s": 20.0, "fxgraph": {}, "aot_autograd": {}}
        warm = {"first_step_s": warm_s, "fxgraph": {"fxgraph_cache_hit": 2}, "aot_autograd": aot}
        return {"config": config, "round": r, "cold": cold, "warm": warm}

    hit = {"autograd_cache_hit": 1}
    runs = [run("stock", 0, 4.0, hit), run("marked", 0, 5.0, hit)]
    runs += [run("marked", 1, 6.0, hit), run("stock", 1, 5.0, hit)]
    result = warm_restart.summarize(runs, warm_restart.CONFIGS)
    table = warm_restart.render(result)
    assert (
        "| `Dropout.p` and `MultiheadAttention.dropout` marked | 20.00 s (20.00-20.00) |" in table
    )
    assert "| 5.50 s (5.10-5.90) | 1.23 (1.20-1.24)x | 2 / 0; 1 / 0 / 0 |" in table  # 5/4, 6/5
    words = warm_restart.machine_words(
        {"cpu": "Xeon", "cores": 2, "torch": "2.13.0", "python": "3.11", "loadavg_start": [6.4]}
    )
    assert words == (
        "Measured on Xeon, 2 cores, shared with other jobs (a load of about 6 on 2 cores: the "
        "times are noisy, the cache counters are not); torch 2.13.0, Python 3.11."
    )
