"""Under ``torch.autocast``: a marked value computes in the dtypes eager's autocast gives.

dynscalar's custom ops are registered for ``CompositeExplicitAutograd`` only, so
autocast's dispatch key passes them by: they receive uncast inputs, and AOTAutograd's
graphs run them where autocast is off.  Each call is therefore handed the autocast state
it was traced under (``autocast="cpu:bfloat16"``) and runs eager's kernel under it: the
kernel's own policy casts its inputs (float32 for the losses, lower precision for
attention).  Admission is per autocast state (``... float32 grad autocast-bfloat16``).

The training scenarios (label smoothing, attention dropout and a learned attention bias
under bf16, margin losses under f16) run three ways in ``tests/test_do_no_harm.py``; this
file holds the eager backend, inductor, and the cells.
"""

from __future__ import annotations

import json

import pytest
import torch

from dynscalar import ops
from dynscalar.ops import _admission, _custom

from .autocast_patterns import smoothing_steps
from .helpers import run_python


def test_label_smoothing_on_the_eager_backend_gives_eager_gradients() -> None:
    """The eager backend runs the graph under the user's autocast, where the forward was
    right before; the gradient recomputed the op without it (2.4e-4 off)."""
    graphs, _ = smoothing_steps("eager", mark=True)
    assert graphs == 1


@pytest.mark.inductor
def test_label_smoothing_on_inductor_is_one_graph_and_eager_s_numbers() -> None:
    """Inductor's tensor form is plain torch ops, each cast by its own policy: under
    autocast it has no measured cell, so the call is boxed (eager's kernel under the same
    state, checked at run time); stock compiles a graph per value."""
    stock = run_python(
        """
        import sys
        from tests.autocast_patterns import smoothing_steps
        graphs, _ = smoothing_steps("inductor", mark=False)
        assert "dynscalar" not in sys.modules
        print(graphs)
        """
    )
    assert stock.returncode == 0, stock.stderr[-2000:]
    graphs, _ = smoothing_steps("inductor", mark=True)
    assert graphs == 1
    assert int(stock.stdout.split()[-1]) == 4  # one per value, and the first recompiled


def test_every_rule_has_admitted_autocast_cells_for_float32() -> None:
    """The python column holds each rule's float32 cells under bf16 and f16 autocast,
    with and without gradients, and admits them (eager's kernel under eager's state)."""
    cells = json.loads(_admission.PATH.read_text())["columns"][_admission.column("python", "cpu")][
        "cells"
    ]
    for rule in ops.RULES.values():
        for callable_name in rule.callables:
            for cast in ("cpu:bfloat16", "cpu:float16"):
                for grad in (False, True) if rule.differentiable else (False,):
                    key = _admission.key(rule, callable_name, torch.float32, grad, cast)
                    assert cells[key]["admitted"], (key, cells[key]["why"])


def test_a_cell_under_autocast_is_its_own() -> None:
    rule = ops.RULES["cross_entropy_loss"]
    name = "torch._C._nn.cross_entropy_loss"
    assert _admission.key(rule, name, torch.float32, True, "cpu:bfloat16").endswith(
        "float32 grad autocast-bfloat16"
    )
    found = _admission.admitted(rule, name, torch.float32, True, "inductor", "cpu", "cpu:bfloat16")
    assert not found[0]
    assert found[1].startswith(
        "not measured for float32 with gradients under autocast (bfloat16) on inductor"
    )


def test_the_autocast_state_is_read_for_the_tensors_device() -> None:
    assert _custom.autocast_state("cpu") is None
    with torch.autocast("cpu", dtype=torch.float16):
        assert _custom.autocast_state("cpu") == "cpu:float16"
        assert _custom.autocast_state("cuda") is None
        assert _custom.autocast_state("meta") is None  # a device autocast does not know
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.autocast("cpu", enabled=False):
        assert _custom.autocast_state("cpu") is None
