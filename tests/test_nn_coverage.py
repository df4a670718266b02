"""torch.nn float hyperparameters under dynscalar: the coverage table, row by row.

Every row of ``tests.nn_coverage`` (the same catalogue and runner that write
``docs/nn-coverage.md``) compiles on ``eager`` and ``aot_eager`` exactly as often as the
catalogue says and equals eager bit for bit; a few rows also on inductor.
The op rules themselves are checked case by case by the exactness matrix
(``tests/test_ops_matrix.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.nn_coverage import catalogue as cov
from tests.nn_coverage import render_docs as page
from tests.nn_coverage import runner

ROOT = Path(__file__).resolve().parents[1]


ROWS = cov.catalogue()


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """One torch thread: on a shared 2-core machine two made tiny steps ~80x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _published() -> dict[str, Any]:
    return json.loads(page.JSON_PATH.read_text())


def _check(row: Any, result: Any, backend: str) -> None:
    assert result.error is None, result.error
    assert result.failures == [], result.failures
    assert result.compiles == row.expected(backend), result.per_call
    if backend in row.specialized:
        assert result.warnings, "a specialized row warns"
        assert all(w.startswith("SpecializationWarning") for w in result.warnings)
    else:
        assert result.warnings == []
        if row.compiles == 1:
            assert result.per_call[0] == result.compiles, "nothing compiles after the first value"


# --------------------------------------------------------------------------- the table's rows


@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.broad)])
@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.id)
def test_row(row: Any, backend: str) -> None:
    _check(row, runner.run_row(row, backend), backend)


INDUCTOR_ROWS = ["dropout", "layernorm", "crossentropy-ignore", "batchnorm1d-momentum-train"]


@pytest.mark.inductor
@pytest.mark.parametrize("row_id", INDUCTOR_ROWS)
@pytest.mark.broad
def test_row_on_inductor(row_id: str) -> None:
    """The published run's inductor tolerance for the row (measured against stock there)."""
    row = cov.ROWS[row_id]
    entry = {e["id"]: e for e in _published()["rows"]}[row_id]
    tol = entry["inductor_tolerance"]
    _check(row, runner.run_row(row, "inductor", tolerance=(tol["rtol"], tol["atol"])), "inductor")


def test_catalogue_and_published_table_agree() -> None:
    """Same rows, values and attributes; the published compiles are the catalogue's."""
    data = _published()
    assert [e["id"] for e in data["rows"]] == [row.id for row in ROWS]
    for row, entry in zip(ROWS, data["rows"], strict=True):
        assert entry["attrs"] == list(row.attrs) and entry["values"] == list(row.values)
        assert entry["tolerance"] == list(runner.eager_tolerance(row)), row.id
        for backend, result in entry["backends"].items():
            assert result["compiles"] == row.expected(backend), (row.id, backend)
            assert result["equal"], (row.id, backend, result["failures"])
    assert data["tolerances"] == {}, "eager and aot_eager are compared bit for bit"


def test_published_page_is_rendered_from_the_published_json() -> None:
    assert page.render(_published()) == page.PAGE_PATH.read_text()


def test_published_table_meets_the_coverage_target() -> None:
    """All rows but one compile once on aot_eager and on inductor (61 of 62: RReLU's random
    slopes in training are specialized).  On inductor a value no tensor form keeps
    symbolic is eager's kernel in a boxed custom op (CELU alpha, LPPool's and
    pairwise_distance's norm, SDPA's scale); LRN's beta and LPPool's norm_type cross pow's
    special exponents, one graph per path.  Every row equal to eager."""
    data = _published()
    rows = data["rows"]
    for backend in ("aot_eager", "inductor"):
        once = [e["id"] for e in rows if page.compiled_once(e["backends"][backend])]
        assert len(once) >= len(rows) - 1, (backend, len(once), len(rows))
    assert all(e["status"] != "NOT EQUAL" and e["status"] != "error" for e in rows)


def test_render_is_stable() -> None:
    data = _published()
    assert page.render(json.loads(json.dumps(data))) == page.render(data)


def test_command_line_measures_rows_and_merges_them(tmp_path: Path) -> None:
    """``python -m tests.nn_coverage``: the JSON and the page for the rows asked for, and
    ``--merge`` re-measures a row into an existing JSON in catalogue order."""
    from tests.nn_coverage.__main__ import main

    out, md = tmp_path / "nn.json", tmp_path / "nn.md"
    common = ["--backends", "eager", "--no-stock", "--out", str(out), "--page", str(md)]
    assert main([*common, "--rows", "elu,dropout"]) == 0
    data = json.loads(out.read_text())
    assert [e["id"] for e in data["rows"]] == ["elu", "dropout"]
    assert all(e["status"] == "dynamic, equal" for e in data["rows"])
    assert md.read_text() == page.render(data, "nn.json")
    assert main([*common, "--rows", "leakyrelu", "--merge"]) == 0
    merged = json.loads(out.read_text())
    assert [e["id"] for e in merged["rows"]] == ["dropout", "leakyrelu", "elu"]
    assert merged["partial_runs"][0]["rows"] == ["leakyrelu"]
    with pytest.raises(SystemExit):
        main([*common, "--merge"])
