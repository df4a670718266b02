"""A compiled optimizer step with a scheduled learning rate compiles once.

Every test trains a compiled copy and an eager copy of the same model side by side, and
asserts the exact number of compiled graphs and the parameters afterwards.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend

STEPS = 9
OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "SGD(momentum)": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "Adam": lambda params: torch.optim.Adam(params, lr=0.1),
    "AdamW": lambda params: torch.optim.AdamW(params, lr=0.1, weight_decay=0.01),
}
# SGD: the first step creates the momentum buffers, a second path (stock torch with a
# tensor learning rate compiles 2 graphs too).
GRAPHS = {"SGD(momentum)": 2, "Adam": 1, "AdamW": 1}


def train(
    name: str, mark: bool, backend: str | None, steps: int = STEPS
) -> tuple[list[torch.Tensor], int]:
    """Parameters after `steps` LambdaLR-scheduled steps, and the number of graphs."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    optimizer = OPTIMIZERS[name](model.parameters())
    if mark:
        ds.mark_dynamic_param_groups(optimizer, "lr")
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.8**epoch)
    counter = CountingBackend(backend or "eager")
    step = torch.compile(optimizer.step, backend=counter) if backend else optimizer.step
    for i in range(steps):
        model.zero_grad()
        model(torch.full((2, 4), float(i + 1))).pow(2).sum().backward()
        step()
        scheduler.step()
        assert type(optimizer.param_groups[0]["lr"]) is float  # stays a plain float
    return [p.detach().clone() for p in model.parameters()], counter.frame_count


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_scheduled_learning_rate_compiles_once(name: str, backend: str) -> None:
    marked, graphs = train(name, mark=True, backend=backend)
    assert graphs == GRAPHS[name]
    eager, _ = train(name, mark=False, backend=None)
    stock, stock_graphs = train(name, mark=False, backend=backend)
    if name.startswith("SGD") and backend == "aot_eager":
        # stock torch: `alpha=-lr` cannot stay symbolic through the tensorify pass, so it
        # recompiles for the learning rates until the recompile limit (Adam's lr already
        # stays dynamic in stock torch on this backend, and on `eager` no pass runs)
        assert stock_graphs > graphs
    assert graphs <= stock_graphs
    for got, want, baseline in zip(marked, eager, stock, strict=True):
        if name.startswith("SGD"):
            # ATen fuses `param + alpha * grad` (FMA); the dynamic step rounds the product
            # first: a last-bit difference per step, accumulated over the steps.
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        else:
            # compiled Adam is torch's own reformulation: dynscalar's step is bit-identical
            # to stock torch's compiled step, and both are within 1e-5 of eager
            torch.testing.assert_close(got, baseline, rtol=0, atol=0)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_dynamic_float_in_the_param_group_works_too() -> None:
    torch.manual_seed(0)
    model, twin = torch.nn.Linear(4, 3), None
    twin = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    reference = torch.optim.SGD(twin.parameters(), lr=0.1)
    counter = CountingBackend("aot_eager")
    step = torch.compile(optimizer.step, backend=counter)
    for i in range(5):
        lr = 0.1 * 0.5**i
        optimizer.param_groups[0]["lr"] = ds.DynamicFloat(lr)
        reference.param_groups[0]["lr"] = lr
        for m in (model, twin):
            m.zero_grad()
            m(torch.ones(2, 4) * (i + 1)).sum().backward()
        step()
        reference.step()
    assert counter.frame_count == 1
    for got, want in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_marking_a_tensor_learning_rate_is_refused() -> None:
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=torch.tensor(0.1))
    with pytest.raises(ds.DynscalarTypeError, match=r"SGD\.param_groups\[0\]\['lr'\] is Tensor"):
        ds.mark_dynamic_param_groups(optimizer)


def test_tuple_hyperparameters_are_marked_element_by_element() -> None:
    """Adam's betas: OneCycleLR cycles beta1 every step."""
    optimizer = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    assert ds.mark_dynamic_param_groups(optimizer, "lr", "betas") is optimizer
    bad = torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    bad.param_groups[0]["betas"] = (0.9, "0.99")
    with pytest.raises(ds.DynscalarTypeError, match=r"Adam\.param_groups\[0\]\['betas'\] is tuple"):
        ds.mark_dynamic_param_groups(bad, "betas")


def test_a_misspelt_hyperparameter_gets_a_did_you_mean() -> None:
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(
        ds.DynscalarError, match=r"param_groups\[0\] has no 'lrr'\. Did you mean 'lr'\?"
    ):
        ds.mark_dynamic_param_groups(optimizer, "lrr")
    with pytest.raises(AttributeError, match=r"Its hyperparameters are lr, momentum"):
        ds.mark_dynamic_param_groups(optimizer, "momentun")


def test_a_tensor_state_entry_marked_is_left_as_it_is() -> None:
    """torch's own optimizers keep ``state['step']`` in a tensor (already a graph input):
    marking the entry changes nothing - the graphs and the weights of ``lr`` alone."""
    got, graphs = train("Adam", mark=True, backend="aot_eager")

    def with_state(params: Any) -> torch.optim.Optimizer:
        return ds.mark_dynamic_param_groups(torch.optim.Adam(params, lr=0.1), state="step")

    OPTIMIZERS["Adam(state)"] = with_state
    try:
        want, state_graphs = train("Adam(state)", mark=True, backend="aot_eager")
    finally:
        del OPTIMIZERS["Adam(state)"]
    assert state_graphs == graphs == GRAPHS["Adam"]
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)


def test_state_entries_are_marked_unmarked_and_explained() -> None:
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    assert ds.mark_dynamic_param_groups(optimizer, state=("step",)) is optimizer
    optimizer.state[optimizer.param_groups[0]["params"][0]]["step"] = 3
    rows = [(r.attribute, r.value) for r in ds.explain(optimizer, show=False)]
    assert rows == [("state[*]['step']", 3)]  # no "lr": state alone marks no group key
    ds.mark_dynamic_param_groups(optimizer, "lr")
    ds.unmark_dynamic_param_groups(optimizer, state="step")
    assert [r.attribute for r in ds.explain(optimizer, show=False)] == ["param_groups[*]['lr']"]
    with pytest.raises(ds.DynscalarTypeError, match="identifier"):
        ds.mark_dynamic_param_groups(optimizer, state=("not a name",))
