"""The code paths written for CUDA, checked where they can be on the CPU (no GPU here;
``scripts/gpu_check.py`` checks them on one, ``docs/how-it-works.md#cuda``).

* ``torch.dropout`` on a CUDA tensor runs ATen's fused kernel (``native_dropout``), which
  draws differently from the CPU's ``bernoulli_``: ``dynscalar::dropout_fused`` calls it
  with the Python float, its gradient is ``native_dropout_backward`` as eager's formula;
  ``native_dropout`` has a CPU kernel, so the op is compared with it here bit for bit.
* the exactness harness moves its CPU samples to the measured device in their layout.
* ``scripts/gpu_check.py`` exits cleanly, with a clear message, where no GPU is present.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar.ops import _kernels

from .helpers import ROOT, CountingBackend, run_interpreter


def _fused() -> Any:
    _kernels.prepare()
    return torch.ops.dynscalar.dropout_fused.default


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_the_fused_dropout_op_is_native_dropout_and_its_gradient(dtype: torch.dtype) -> None:
    x = torch.randn(4, 6).to(dtype)
    upstream = torch.randn(4, 6).to(dtype)
    for p in (0.25, 0.5, 0.9, 1e-7):
        eager_x, ours_x = (x.clone().requires_grad_(True) for _ in range(2))
        torch.manual_seed(3)
        want, want_mask = torch.native_dropout(eager_x, p, True)
        after_eager = torch.get_rng_state()
        torch.manual_seed(3)
        got, got_mask = _fused()(ours_x, p)
        assert torch.equal(torch.get_rng_state(), after_eager)  # the same draws
        want.backward(upstream)
        got.backward(upstream)
        assert torch.equal(got, want) and torch.equal(got_mask, want_mask), p
        assert eager_x.grad is not None and ours_x.grad is not None
        assert torch.equal(ours_x.grad, eager_x.grad), p


def test_the_fused_dropout_op_keeps_p_symbolic_in_one_graph() -> None:
    """Compiled (aot_eager) with a marked ``p``, forward and backward: one graph for three
    values, each eager's numbers and gradients."""
    op = _fused()
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(lambda x, p: op(x, p)[0], backend=counter)
    x = torch.randn(4, 6)
    for p in (0.25, 0.5, 0.9):
        eager_x, ours_x = (x.clone().requires_grad_(True) for _ in range(2))
        torch.manual_seed(5)
        want = torch.native_dropout(eager_x, p, True)[0]
        torch.manual_seed(5)
        got = compiled(ours_x, ds.DynamicFloat(p))
        want.sum().backward()
        got.sum().backward()
        assert torch.equal(got, want)
        assert eager_x.grad is not None and ours_x.grad is not None
        assert torch.equal(ours_x.grad, eager_x.grad)
    assert counter.frame_count == 1


def test_dropout_takes_the_fused_kernel_where_aten_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_kernels.dropout`` routes to the fused op on the devices ATen fuses on (the CPU
    stands in for one here); feature and alpha dropout, the edges and eval mode do not."""
    _fused()
    monkeypatch.setattr(_kernels, "_FUSED", ("cpu",))
    x = torch.randn(4, 6)
    torch.manual_seed(7)
    want = torch.native_dropout(x, 0.3, True)[0]
    torch.manual_seed(7)
    assert torch.equal(_kernels.dropout(x, 0.3, True), want)
    assert _kernels.dropout(x, 0.0, True) is x or torch.equal(_kernels.dropout(x, 0.0, True), x)
    assert torch.equal(_kernels.dropout(x, 0.3, False), x)
    monkeypatch.setattr(_kernels, "_FUSED", ())  # the CPU's own path: bernoulli_ noise
    torch.manual_seed(7)
    ours = _kernels.dropout(x, 0.3, True)
    torch.manual_seed(7)
    assert torch.equal(ours, torch.dropout(x, 0.3, True))


def test_the_harness_moves_samples_in_their_layout() -> None:
    from dynscalar.tools.matrix import harness

    g = torch.Generator().manual_seed(0)
    for layout in harness.LAYOUTS:
        x = harness.make((4, 6), torch.float32, layout, g)
        if x is None:
            continue
        y = harness.moved(x, "meta")
        assert y.device.type == "meta" and y.stride() == x.stride() and y.shape == x.shape
    args = harness.moved((x, [x], {"k": x}, 0.5), "meta")
    assert args[1][0].device.type == "meta" and args[2]["k"].device.type == "meta"
    assert args[3] == 0.5


def test_the_gpu_check_exits_cleanly_without_a_gpu(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.fail("this test is the no-GPU path: run scripts/gpu_check.py on the GPU instead")
    out = tmp_path / "gpu.json"
    done = run_interpreter(str(ROOT / "scripts" / "gpu_check.py"), "--out", str(out), timeout=120)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no CUDA device" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    written = json.loads(out.read_text())
    assert written["cuda"] is False and written["ran"] == [], written


def test_gpu_check_plan_fits_its_budget() -> None:
    """The check's own plan: every step has a time limit, and they add up to 8 minutes."""
    done = run_interpreter(str(ROOT / "scripts" / "gpu_check.py"), "--plan", timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan and all(step["limit_s"] > 0 for step in plan)
    assert math.fsum(step["limit_s"] for step in plan) <= 8 * 60
