"""Where each op rule and scalar form is exact: the measured cells in ``admitted.json``.

A rule (``_table``) or a scalar form (``_forms``) is used for a call only where the
exactness harness (``dynscalar/tools/matrix``, run by ``python -m tests.ops_matrix`` for
the shipped file and by ``python -m dynscalar measure`` for the user's; never by the
library) measured that it computes what eager computes.  ``admitted.json`` holds one
column per backend, torch release (``major.minor``) and device:

* ``python``: eager and ``aot_eager``; a cell is (rule, callable, dtype, grad), admitted
  where the rule's python entry is bit for bit eager's on every case (a random rule's
  inside an activation checkpoint too);
* ``inductor``: a rule's tensor form (``_tensor``), or a scalar form, admitted where
  inductor's code for it is no further from eager than stock inductor's with the value a
  constant.

A call traced under ``torch.autocast`` has cells of its own (``... float32 grad
autocast-bfloat16``): eager's autocast casts an op's inputs by the op's own policy, so a
cell measured without autocast says nothing about it.

A cell the file does not hold (another dtype, another torch release, or another device: a
CUDA tensor is not decided by CPU kernels, ATen takes other paths there) is looked up, only
then, in the user's own measurements: ``measured.json`` in :func:`user_cache_dir`, written by
``python -m dynscalar measure`` on the user's torch and device, in the same format.  It
fills only cells the shipped file lacks: a cell shipped as not exact stays refused, and one
the user measured as not exact is refused too.  A cell neither holds is not admitted: the
value is specialized as stock torch specializes it, with a ``SpecializationWarning`` that
says which measurement is missing and names the command; the cell is recorded in
:data:`missing`, which the command reads after running the user's script.

Examples:
    >>> import torch
    >>> from dynscalar.ops import RULES
    >>> rule = RULES["layer_norm"]
    >>> admitted(rule, "torch.layer_norm", torch.complex64, False, "python")
    ... # doctest: +ELLIPSIS
    (False, 'not measured ...')
    >>> admitted(rule, "torch.layer_norm", torch.float32, False, "python", "cuda")
    ... # doctest: +ELLIPSIS
    (False, 'not measured for torch ... on cuda: python cells measured for torch ... on cpu...')
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
from typing import Any

from ._forms import ScalarForm
from ._table import Rule

__all__ = [
    "PATH",
    "admitted",
    "column",
    "form_admitted",
    "form_key",
    "key",
    "missing",
    "user_cache_dir",
]

#: the measured columns (written by ``python -m tests.ops_matrix``)
PATH = pathlib.Path(__file__).with_name("admitted.json")
#: (column, cell) of every lookup that neither file held, in this process
missing: set[tuple[str, str]] = set()
#: what a missing measurement's warning says to run
COMMAND = "`python -m dynscalar measure SCRIPT`"


def column(backend: str, device: str, version: str | None = None) -> str:
    """A column's name: ``"python torch-2.13 cpu"`` (``version``: the installed torch's)."""
    if version is None:
        import torch

        version = torch.__version__
    release = ".".join(version.split("+")[0].split(".")[:2])
    return f"{backend} torch-{release} {device}"


def key(rule: Rule, callable_name: str, dtype: Any, grad: bool, autocast: str | None = None) -> str:
    """A rule's cell: ``"dropout torch.dropout float32 grad"`` (under autocast, the
    autocast dtype last: ``"... float32 grad autocast-bfloat16"``)."""
    return f"{rule.name} {callable_name} {_case(dtype, grad, autocast)}"


def form_key(form: ScalarForm, dtype: Any, grad: bool, autocast: str | None = None) -> str:
    """A scalar form's cell: ``"aten::add.Tensor float32 grad"``."""
    return f"{form.op} {_case(dtype, grad, autocast)}"


def _case(dtype: Any, grad: bool, autocast: str | None) -> str:
    """``autocast``: the state ``"cpu:bfloat16"`` (``_custom.autocast_state``) or a dtype."""
    case = f"{str(dtype).removeprefix('torch.')} {'grad' if grad else 'nograd'}"
    if autocast is None:
        return case
    return f"{case} autocast-{str(autocast).rpartition(':')[2].removeprefix('torch.')}"


def user_cache_dir() -> pathlib.Path:
    """Where ``python -m dynscalar measure`` keeps the user's measurements:
    ``$DYNSCALAR_CACHE_DIR``, else ``$XDG_CACHE_HOME/dynscalar``, else ``~/.cache/dynscalar``."""
    found = os.environ.get("DYNSCALAR_CACHE_DIR")
    if found:
        return pathlib.Path(found)
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "dynscalar"


@functools.cache
def _columns() -> dict[str, Any]:
    return _read(PATH)


@functools.cache
def _user_columns(path: pathlib.Path) -> dict[str, Any]:
    return _read(path)


def _read(path: pathlib.Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return data.get("columns", {})  # type: ignore[no-any-return]


def _cell(
    backend: str, device: str, cell: str, dtype: Any, grad: bool, autocast: str | None = None
) -> tuple[bool, str]:
    columns = _columns()
    name = column(backend, device)
    found = columns.get(name, {}).get("cells", {}).get(cell)
    if found is None:  # only now the user's measurements (read once per process and path)
        user = _user_columns(user_cache_dir() / "measured.json")
        found = user.get(name, {}).get("cells", {}).get(cell)
    if found is None:
        missing.add((name, cell))
        return (
            False,
            f"{_not_measured(columns, backend, device, dtype, grad, autocast)}; {COMMAND} "
            "measures it on this torch and device",
        )
    if found.get("admitted"):
        return True, ""
    return False, str(found.get("why") or "not exact")


def _not_measured(
    columns: dict[str, Any],
    backend: str,
    device: str,
    dtype: Any,
    grad: bool,
    autocast: str | None = None,
) -> str:
    if column(backend, device) not in columns:
        measured = [_shown(c) for c in columns if c.startswith(backend + " ")]
        held = f"measured for {', '.join(measured)}" if measured else "not measured"
        return f"not measured for {_shown(column(backend, device))}: {backend} cells {held}"
    name = str(dtype).removeprefix("torch.")
    mode = "with gradients" if grad else "without gradients"
    if autocast is not None:
        mode += f" under autocast ({autocast.rpartition(':')[2]})"
    return f"not measured for {name} {mode} on {backend}"


def _shown(name: str) -> str:
    """``"python torch-2.13 cpu"`` -> ``"torch 2.13 on cpu"``."""
    _, release, device = name.split(" ")
    return f"{release.replace('-', ' ')} on {device}"


def admitted(
    rule: Rule,
    callable_name: str,
    dtype: Any,
    grad: bool,
    backend: str,
    device: str = "cpu",
    autocast: str | None = None,
) -> tuple[bool, str]:
    """(whether ``backend``'s entry for the rule is exact for this call, why not);
    ``autocast``: the state the call is traced under (``"cpu:bfloat16"``), None: off."""
    if backend == "python" and not rule.differentiable:
        grad = False  # measured without gradients: the same cases (no input requires grad)
    cell = key(rule, callable_name, dtype, grad, autocast)
    return _cell(backend, device, cell, dtype, grad, autocast)


def form_admitted(
    form: ScalarForm, dtype: Any, grad: bool, device: str = "cpu", autocast: str | None = None
) -> tuple[bool, str]:
    """(whether inductor may trace ``form`` for an op of ``dtype``, why not)."""
    cell = form_key(form, dtype, grad, autocast)
    return _cell("inductor", device, cell, dtype, grad, autocast)
