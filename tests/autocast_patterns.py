"""Training under ``torch.autocast`` with a marked label smoothing, for ``tests/test_autocast.py``.

This module does not import dynscalar unless a value is marked: a fresh process runs it as
stock torch (``python -c "from tests.autocast_patterns import ..."``).
"""

from __future__ import annotations

import copy

import torch

from .helpers import CountingBackend


class Smoothed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(6, 5)
        self.loss = torch.nn.CrossEntropyLoss(label_smoothing=0.1)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.loss(self.lin(x), target)  # type: ignore[no-any-return]


_X = torch.linspace(-2.0, 2.0, 24).reshape(4, 6)
_TARGET = torch.tensor([0, 3, 1, 4])


def smoothing_steps(backend: str, mark: bool) -> tuple[int, list[torch.Tensor]]:
    """Three training steps under bf16 autocast, label smoothing 0.1, 0.2, 0.3: each
    loss, its dtype and the weight's gradient compared with an eager twin's; returns the
    graphs compiled and the losses."""
    torch.manual_seed(0)
    model = Smoothed()
    twin = copy.deepcopy(model)
    if mark:
        import dynscalar as ds

        ds.mark_dynamic_attr(model.loss, "label_smoothing")
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    losses = []
    for value in (0.1, 0.2, 0.3):
        model.loss.label_smoothing = twin.loss.label_smoothing = value
        model.zero_grad()
        twin.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got, want = compiled(_X, _TARGET), twin(_X, _TARGET)
        got.backward()
        want.backward()
        assert got.dtype == want.dtype == torch.float32  # cross_entropy: autocast to fp32
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(model.lin.weight.grad, twin.lin.weight.grad, rtol=0, atol=0)
        losses.append(got.detach())
    return counter.frame_count, losses
