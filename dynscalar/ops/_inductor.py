"""Which rules' tensor forms inductor may use: the inductor column of the exactness matrix.

Inductor compiles too slowly to measure at trace time, so its column is measured ahead of
time by ``python -m tests.ops_matrix --inductor`` and kept in ``inductor.json`` next to this
module: for each rule, callable, dtype and ``requires_grad``, whether inductor's code for
the rule's tensor form (``_tensor``) is no further from eager than inductor's code for the
op itself with the value as a constant (stock inductor), on every case of the matrix.  A
combination the file does not list is not admitted: the value is specialized as stock
torch specializes it.

Examples:
    >>> import torch
    >>> from dynscalar.ops import RULES
    >>> admitted(RULES["layer_norm"], "torch.layer_norm", torch.complex64, False)[0]
    False
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

from ._forms import ScalarForm
from ._table import Rule

__all__ = ["PATH", "admitted", "form_admitted", "form_key", "key"]

#: the measured inductor column (written by ``python -m tests.ops_matrix --inductor``)
PATH = pathlib.Path(__file__).with_name("inductor.json")


def key(rule: Rule, callable_name: str, dtype: Any, grad: bool) -> str:
    """The file's key for one cell: ``"dropout torch.dropout float32 grad"``."""
    name = str(dtype).removeprefix("torch.")
    return f"{rule.name} {callable_name} {name} {'grad' if grad else 'nograd'}"


@functools.cache
def _measured() -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(PATH.read_text())
    except FileNotFoundError:
        return {}
    return data.get("cells", {})  # type: ignore[no-any-return]


def admitted(rule: Rule, callable_name: str, dtype: Any, grad: bool) -> tuple[bool, str]:
    """(whether inductor may trace the rule's tensor form for this cell, why not)."""
    found = _measured().get(key(rule, callable_name, dtype, grad))
    if found is None:
        return False, "not measured on inductor by the exactness matrix"
    if found.get("admitted"):
        return True, ""
    return False, str(found.get("why", "further from eager than stock inductor"))


def form_key(form: ScalarForm, dtype: Any, grad: bool) -> str:
    """The file's key for one cell of a scalar form: ``"aten::add.Tensor float32 grad"``."""
    name = str(dtype).removeprefix("torch.")
    return f"{form.op} {name} {'grad' if grad else 'nograd'}"


def form_admitted(form: ScalarForm, dtype: Any, grad: bool) -> tuple[bool, str]:
    """(whether inductor may trace ``form`` for an op of ``dtype``, why not)."""
    found = _measured().get(form_key(form, dtype, grad))
    if found is None:
        return False, "not measured on inductor by the exactness matrix"
    if found.get("admitted"):
        return True, ""
    return False, str(found.get("why", "further from eager than stock inductor"))
