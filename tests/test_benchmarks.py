"""The strategy benchmark and the demo's plot: a tiny run of each, checked for shape and truth.

These run the real scripts in subprocesses (each strategy in its own fresh process) on the
``eager``/``aot_eager`` backends, so they check plumbing and correctness, not speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_quick_benchmark_run(tmp_path: Path) -> None:
    out = run(
        "benchmarks/bench_strategies.py",
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

    from dynscalar._demo import Row, plot_rows

    rows = [
        Row("stock torch.compile", 8, 2.0, 3.0, 0.1, True, [2.0] + [0.1] * 9, True, 3),
        Row("dynscalar.DynamicInt", 1, 2.0, 2.2, 0.1, True, [2.0] + [0.02] * 9, False, 3),
    ]
    figures = []
    real_close = plt.close
    plt.close = figures.append  # keep the figure to inspect it
    try:
        plot_rows(rows, tmp_path / "demo.png")
    finally:
        plt.close = real_close
    (fig,) = figures
    assert "median of 3 cold runs per strategy" in fig._suptitle.get_text()
    for ax in fig.axes:
        assert ax.get_xlim()[0] == 0
        if ax.get_ylabel() == "seconds":
            assert ax.get_ylim()[0] == 0
    real_close(fig)


def test_missing_matplotlib_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from dynscalar._demo import import_pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'dynscalar\[bench\]'"):
        import_pyplot()
