"""benchmarks.overhead on a tiny setting, and docs/overhead.md from its published JSON.

The run checks plumbing and correctness (every strategy compiles once and equals eager),
not speed: timings on a tiny setting mean nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import render_overhead

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "benchmarks" / "published" / "overhead.json"
PAGE = ROOT / "docs" / "overhead.md"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytest.importorskip("matplotlib", reason="plots need matplotlib (the 'bench' extra)")


@pytest.mark.broad
def test_quick_overhead_run(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.overhead", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data = json.loads((tmp_path / "overhead.json").read_text())
    assert {"machine", "config", "percall", "eager", "compile", "warm", "goals"} <= set(data)
    assert data["machine"]["torch"] and data["machine"]["loadavg_start"] is not None
    assert data["machine"]["loadavg_end"] is not None

    rows = {r["strategy"]: r for r in data["percall"]["eager"]["rows"]}
    assert {"dynamic_sources", "ds_proxy", "ds_registry", "ds_decorator", "ds_args"} <= set(rows)
    for row in rows.values():
        assert row["compiles"] == 1 and row["equal_to_eager"], row
        assert row["us"]["p10"] <= row["us"]["median"] <= row["us"]["p90"]
        assert len(row["samples_us"]) == data["config"]["rounds"]
    assert rows["dynamic_sources"]["ratio"]["median"] == 1.0

    cases = {r["case"] for r in data["eager"]["rows"]}
    assert {"add", "tensor_mul", "forward"} <= cases
    share = data["compile"]["share"]
    assert share["attributes"] > 0 and share["backends"]["eager"]["share_of_first_call"]
    scaling = data["compile"]["scaling"]
    assert {(r["how"], r["k"]) for r in scaling["rows"]} >= {("ds_registry", 1), ("static", 0)}
    assert all(r["compiles"] == 1 for r in scaling["rows"])
    (warm,) = data["warm"]["rows"]
    assert "error" not in warm["cold"] and "error" not in warm["warm"], warm
    assert warm["warm"]["equal_to_eager"]

    assert {g["status"] for g in data["goals"]} <= {"PASS", "MISS", "n/a"}
    for png in data["plots"]:
        assert (tmp_path / png).read_bytes()[:8] == PNG_MAGIC
    page = render_overhead.render(data, "overhead.json")
    assert page.startswith("# Overhead\n") and "## Per compiled call" in page


def test_published_page_is_rendered_from_the_published_json() -> None:
    """docs/overhead.md is exactly what render_overhead makes of the committed JSON."""
    data = json.loads(PUBLISHED.read_text())
    page = render_overhead.page(data, PUBLISHED)
    assert "## First compile against stock torch" in page and "## Import" in page
    assert page == PAGE.read_text(), "re-run: python -m benchmarks.render"
    for png in data["plots"]:
        assert (ROOT / "docs" / "img" / png).read_bytes()[:8] == PNG_MAGIC
