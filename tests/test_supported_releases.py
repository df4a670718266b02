"""Every torch release the compatibility page supports is measured.

The supported releases are the rows of the table "What is dynamic where" in
``docs/compatibility.md`` (one place): from ``dynscalar._compat.MIN_TORCH`` (the project's
``torch>=`` floor) to the newest release measured, with no release between them left out.
For each of them ``dynscalar/ops/admitted.json`` holds a ``python`` column and an
``inductor`` column (rules and scalar forms) on the CPU, and the page's counts are the
file's: ``A of B cells`` admitted where the column holds every cell the harness measures,
``A of B cells (B of N measured)`` where it does not yet (a cell not measured is not
admitted: stock torch's compile), so a column is complete or the page says it is not.
The installed torch must be one of them: a newer release (2.16) fails here until its
columns are measured (``python -m tests.ops_matrix``, ``--inductor-only``, ``--forms
--inductor-only`` with that torch) and its rows are added to the page, instead of
silently running every float rule and inductor form as stock.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from dynscalar._compat import MIN_TORCH, TORCH_VERSION, release
from dynscalar.ops import _admission
from dynscalar.tools.matrix.forms import form_plan
from dynscalar.tools.matrix.run import inductor_plan, python_keys

from .helpers import ROOT

PAGE = ROOT / "docs" / "compatibility.md"
#: a CPU row of the table: ``| 2.14 | CPU | inductor | ...``
_ROW = re.compile(r"^\| (\d+\.\d+) \| CPU \| ([^|]+?) \|(.*)\|$")
#: a count in a cell: ``100 of 102 cells``, ``40 of 41 cells (41 of 102 measured)``
_COUNT = re.compile(r"\d+ of \d+ cells(?: \(\d+ of \d+ measured\))?")


def _rows() -> dict[tuple[str, str], list[str]]:
    """(release, backend) -> the row's other cells, for the table's CPU rows."""
    rows: dict[tuple[str, str], list[str]] = {}
    for line in PAGE.read_text().splitlines():
        if found := _ROW.match(line):
            rows[found[1], found[2]] = [cell.strip() for cell in found[3].split("|")]
    return rows


def _supported() -> list[str]:
    return sorted({r for r, _ in _rows()}, key=release)


SUPPORTED = _supported()
#: the releases the column tests run for (a page without rows fails them, not skips them)
RELEASES = SUPPORTED or ["no release on the page"]


def _columns() -> dict[str, Any]:
    return json.loads(_admission.PATH.read_text())["columns"]  # type: ignore[no-any-return]


def _counts(cells: dict[str, Any], keys: set[str]) -> str:
    """What the page says of the column's cells among ``keys`` (every cell of a kind)."""
    held = keys & set(cells)
    said = f"{sum(cells[k]['admitted'] for k in held)} of {len(held)} cells"
    return said if held == keys else f"{said} ({len(held)} of {len(keys)} measured)"


def _count_in(cell: str) -> str:
    found = _COUNT.search(cell)
    assert found, f"no 'N of M cells' in {cell!r}"
    return found[0]


def test_the_supported_releases_run_from_the_floor_with_none_left_out() -> None:
    floor = ".".join(map(str, release(MIN_TORCH)[:2]))
    assert f'"torch>={floor}",' in (ROOT / "pyproject.toml").read_text()  # the dependency
    assert f"dynscalar needs `torch>={floor}`" in PAGE.read_text()
    assert SUPPORTED and SUPPORTED[0] == floor, SUPPORTED
    newest = release(SUPPORTED[-1])
    assert newest[0] == release(floor)[0], "a new major version: list its releases here"
    every = [f"{newest[0]}.{minor}" for minor in range(release(floor)[1], newest[1] + 1)]
    assert every == SUPPORTED, f"the page leaves out {sorted(set(every) - set(SUPPORTED))}"
    for version in SUPPORTED:
        assert {b for r, b in _rows() if r == version} == {"eager, aot_eager", "inductor"}


def test_the_installed_torch_is_a_supported_release() -> None:
    installed = ".".join(map(str, release(TORCH_VERSION)[:2]))
    assert installed in SUPPORTED, (
        f"torch {TORCH_VERSION} is not on docs/compatibility.md: measure its python and "
        "inductor columns (python -m tests.ops_matrix; --inductor-only; --forms "
        "--inductor-only) and add its rows to the table"
    )


@pytest.mark.parametrize("version", RELEASES)
def test_a_supported_release_has_a_complete_python_column(version: str) -> None:
    name = _admission.column("python", "cpu", version)
    columns = _columns()
    assert name in columns, f"{_admission.PATH.name} has no {name!r}"
    cells = columns[name]["cells"]
    keys = python_keys()
    assert set(cells) <= keys and cells, sorted(set(cells) - keys)
    assert _count_in(_rows()[version, "eager, aot_eager"][0]) == _counts(cells, keys)


@pytest.mark.parametrize("version", RELEASES)
def test_a_supported_release_has_a_complete_inductor_column(version: str) -> None:
    name = _admission.column("inductor", "cpu", version)
    columns = _columns()
    assert name in columns, f"{_admission.PATH.name} has no {name!r}"
    cells = columns[name]["cells"]
    rules = {_admission.key(*cell) for cell in inductor_plan()}
    forms = {_admission.form_key(*cell) for cell in form_plan()}
    assert set(cells) <= rules | forms and cells, sorted(set(cells) - rules - forms)
    row = _rows()[version, "inductor"]
    assert _count_in(row[0]) == _counts(cells, rules)
    assert _count_in(row[1]) == _counts(cells, forms)
