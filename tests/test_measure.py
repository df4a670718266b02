"""``python -m dynscalar measure``: the cells a program needs, measured on the user's torch
and device into the per-user cache, which the library reads where the shipped file lacks a
cell (``dynscalar/tools/measure.py``, ``dynscalar/ops/_admission.py``).

A column is hidden by a copy of the shipped file without it (the stand-in for a torch
release or a device the project never measured): before the command, a marked LayerNorm
``eps`` compiles once per value, with a warning naming the command; after it, once, with
eager's numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from dynscalar import ops
from dynscalar.ops import _admission

from .helpers import run_interpreter

SCRIPT = """\
import json, pathlib, sys, warnings

import torch
from torch._dynamo.testing import CompileCounterWithBackend

import dynscalar as ds
from dynscalar.ops import _admission

# the shipped file as the test hides a column of it
_admission.PATH = pathlib.Path(sys.argv[1])
_admission._columns.cache_clear()

backend = sys.argv[2]
counter = CompileCounterWithBackend(backend)
model = ds.mark_dynamic_attr(torch.nn.LayerNorm(6), "eps")
eager = torch.nn.LayerNorm(6)
compiled = torch.compile(model, backend=counter)
x = torch.randn(3, 6)
same = True
with warnings.catch_warnings(record=True) as caught, torch.no_grad():
    warnings.simplefilter("always")
    for eps in (1e-5, 1e-3, 1e-2):
        model.eps = eager.eps = eps
        same = same and torch.equal(compiled(x), eager(x))
messages = [str(w.message) for w in caught if issubclass(w.category, ds.SpecializationWarning)]
print("RESULT " + json.dumps({"graphs": counter.frame_count, "same": same, "warnings": messages}))
"""


def _hidden(tmp_path: Path, backend: str) -> Path:
    """A copy of the shipped file without the installed torch's ``backend`` cpu column."""
    data = json.loads(_admission.PATH.read_text())
    assert data["columns"].pop(_admission.column(backend, "cpu"), None) is not None
    path = tmp_path / "admitted.json"
    path.write_text(json.dumps(data))
    return path


def _run(*args: str, cache: Path) -> Any:
    env = {**os.environ, "DYNSCALAR_CACHE_DIR": str(cache)}
    return run_interpreter(*args, env=env, timeout=600)


def _result(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))  # type: ignore[no-any-return]


def _in_process(script: Path, hidden: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The script run in this process (its ``print`` captured): the shipped file hidden, the
    cache as the environment says."""
    import contextlib
    import io
    import runpy
    import sys

    monkeypatch.setattr(sys, "argv", [str(script), str(hidden), backend])
    shipped = _admission.PATH
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(script), run_name="__main__")  # it points PATH at the copy
    finally:
        _admission.PATH = shipped
        _admission._columns.cache_clear()  # the script read the hidden copy
        _admission._user_columns.cache_clear()
    line = next(x for x in out.getvalue().splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def _before_command_after(
    tmp_path: Path, backend: str, column: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the command (in this process): a graph per value and a warning naming it;
    after (a fresh process, which reads the cache): one graph and eager's numbers."""
    hidden = _hidden(tmp_path, column)
    cache = tmp_path / "cache"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    monkeypatch.setenv("DYNSCALAR_CACHE_DIR", str(cache))

    before = _in_process(script, hidden, backend, monkeypatch)
    assert before["graphs"] == 3, before  # one graph per value, as stock torch
    assert before["same"]
    (message,) = before["warnings"]
    assert "not measured for torch" in message, message
    assert "python -m dynscalar measure SCRIPT" in message, message

    done = _run("-m", "dynscalar", "measure", str(script), str(hidden), backend, cache=cache)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    key = _admission.key(ops.RULES["layer_norm"], "torch.layer_norm", torch.float32, False)
    name = _admission.column(column, "cpu")
    assert f"{name}: {key}: exact" in done.stdout, done.stdout
    assert "1/1 cell in" in done.stderr and "left" in done.stderr, done.stderr  # progress
    stored = json.loads((cache / "measured.json").read_text())
    assert stored["columns"][name]["torch"] == torch.__version__
    assert set(stored["columns"][name]["cells"]) == {key}  # only the cell the script needs

    after = _result(_run(str(script), str(hidden), backend, cache=cache))
    assert after == {"graphs": 1, "same": True, "warnings": []}, after


def test_the_command_measures_a_hidden_python_cell_and_the_value_becomes_dynamic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _before_command_after(tmp_path, "aot_eager", "python", monkeypatch)


@pytest.mark.inductor
@pytest.mark.parametrize("key", ["aten::clamp float32 grad", "aten::div.Scalar float32 nograd"])
def test_an_inductor_cell_is_measured_as_the_shipped_file_has_it(key: str) -> None:
    """The command's inductor path (a scalar form's cell) gives the shipped verdict.  End to
    end, a hidden inductor cell of a deterministic call is no example: inductor then boxes
    eager's kernel (``dynscalar::apply_boxed``, checked in the process), one graph anyway."""
    from dynscalar.tools.measure import Cell, measure_cell

    name = _admission.column("inductor", "cpu")
    shipped = _admission._columns()[name]["cells"][key]
    assert measure_cell(Cell(name, key))["admitted"] == shipped["admitted"]


# ----------------------------------------------------------------------------- the rules
def _user_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cells: dict[str, Any], shipped: Any
) -> None:
    """The user's cache holding ``cells`` in the python cpu column, the shipped file's
    columns ``shipped(columns)``."""
    name = _admission.column("python", "cpu")
    (tmp_path / "measured.json").write_text(
        json.dumps({"columns": {name: {"torch": torch.__version__, "cells": cells}}})
    )
    monkeypatch.setenv("DYNSCALAR_CACHE_DIR", str(tmp_path))
    columns = json.loads(json.dumps(_admission._columns()))
    shipped(columns[name]["cells"])
    monkeypatch.setattr(_admission, "_columns", lambda: columns)
    _admission._user_columns.cache_clear()


RULE = ops.RULES["layer_norm"]
KEY = _admission.key(RULE, "torch.layer_norm", torch.float32, False)


def _decide() -> tuple[bool, str]:
    return _admission.admitted(RULE, "torch.layer_norm", torch.float32, False, "python")


def test_the_cache_fills_only_cells_the_shipped_file_lacks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cell shipped as not exact stays refused, whatever the user measured."""
    refused = {"admitted": False, "why": "shipped: values differ"}
    _user_cache(
        monkeypatch,
        tmp_path,
        {KEY: {"admitted": True, "why": ""}},
        lambda cells: cells.__setitem__(KEY, refused),
    )
    assert _decide() == (False, "shipped: values differ")


def test_a_cell_the_user_measured_as_not_exact_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _user_cache(
        monkeypatch,
        tmp_path,
        {KEY: {"admitted": False, "why": "user: gradient differs"}},
        lambda cells: cells.pop(KEY),
    )
    assert _decide() == (False, "user: gradient differs")


def test_a_cell_neither_holds_is_recorded_and_names_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _user_cache(monkeypatch, tmp_path, {}, lambda cells: cells.pop(KEY))
    monkeypatch.setattr(_admission, "missing", set())
    ok, why = _decide()
    assert not ok and "`python -m dynscalar measure SCRIPT` measures it" in why, why
    assert _admission.missing == {(_admission.column("python", "cpu"), KEY)}


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DYNSCALAR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert _admission.user_cache_dir() == Path("/xdg/dynscalar")
    monkeypatch.setenv("DYNSCALAR_CACHE_DIR", "/mine")
    assert _admission.user_cache_dir() == Path("/mine")
    monkeypatch.delenv("DYNSCALAR_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _admission.user_cache_dir() == Path.home() / ".cache" / "dynscalar"


def test_the_plan_of_a_whole_column_and_its_estimate(tmp_path: Path) -> None:
    """``--rules``/``--forms``: whole columns for a device; ``--list`` measures nothing."""
    done = _run(
        "-m",
        "dynscalar",
        "measure",
        "--list",
        "--rules",
        "dropout",
        "--backend",
        "python",
        "--dtypes",
        "float32,bfloat16",
        "--device",
        "cuda",
        cache=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    name = _admission.column("python", "cuda")
    assert f"{name}: dropout torch.dropout float32 grad" in lines
    assert len(lines) == 2 * 2 * len(ops.RULES["dropout"].callables), lines
    assert "estimated" in done.stderr and not (tmp_path / "measured.json").exists()


def test_columns_measured_elsewhere_are_imported_into_the_shipped_file(tmp_path: Path) -> None:
    """``python -m tests.ops_matrix --import``: a GPU check's (or a measured.json's) columns
    merged cell by cell; the other columns as they were."""
    from tests.ops_matrix.__main__ import import_columns

    shipped = tmp_path / "admitted.json"
    shipped.write_text(_admission.PATH.read_text())
    cuda = "python torch-2.13 cuda"
    import_columns(shipped, {cuda: {"torch": "2.13.0+cu128", "cells": {KEY: {"admitted": True}}}})
    import_columns(shipped, {cuda: {"torch": "2.13.0+cu128", "cells": {"x y float16 nograd": {}}}})
    columns = json.loads(shipped.read_text())["columns"]
    assert set(columns[cuda]["cells"]) == {KEY, "x y float16 nograd"}
    assert {n: c for n, c in columns.items() if n != cuda} == _admission._columns()


def test_a_cell_whose_measurement_fails_is_reported_and_not_stored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import io

    from dynscalar.tools import measure

    def failing(cell: measure.Cell) -> dict[str, Any]:
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(measure, "measure_cell", failing)
    cell = measure.Cell(_admission.column("python", "cpu"), KEY)
    stored: list[Any] = []
    results = measure.measure([cell], io.StringIO(), lambda c, v: stored.append(c))
    assert not results[cell]["admitted"] and "no such kernel" in results[cell]["why"]
    assert stored == []
