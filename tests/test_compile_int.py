"""Compiled equals eager for dynamic int scalars, with exact compile counts."""

from __future__ import annotations

import copy

import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicInt

from .helpers import CountingBackend, run_side_by_side, twins

CALLS = 30


class Seed(torch.nn.Module):
    """The seed example: the counter is only incremented."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        return self.layer(x)


class UsesStep(Seed):
    """The counter flows into the graph."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        return self.layer(x) * self.step


class Branches(Seed):
    """Control flow on the counter: two paths, so exactly two compiles."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        if self.step % 2 == 0:
            return x.cos()
        return self.layer(x) * self.step


MODELS = {"seed": (Seed, 1), "uses_step": (UsesStep, 1), "branches": (Branches, 2)}


def build(model_name: str, way: str, **spec: object) -> torch.nn.Module:
    cls, _ = MODELS[model_name]
    if way == "decorator":
        cls = ds.dynamic_attrs("step", **spec)(type(f"Dyn{cls.__name__}", (cls,), {}))
    model = cls()
    if way == "proxy":
        model.step = DynamicInt(model.step, **spec)
    elif way == "registry":
        ds.mark_dynamic_attr(model, "step", **spec)
    return model


def check_attribute_after(model: torch.nn.Module, eager: torch.nn.Module, way: str) -> None:
    assert model.step == eager.step
    if way == "proxy":
        assert type(model.step) is DynamicInt
    else:
        assert type(model.step) is int
    assert ds.is_dynamic_attr(model, "step")


@pytest.mark.parametrize("fullgraph", [True, False], ids=["fullgraph", "breaks-ok"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("way", ["proxy", "registry", "decorator"])
@pytest.mark.parametrize("model_name", list(MODELS))
def test_compiles_once_per_path(model_name: str, way: str, backend: str, fullgraph: bool) -> None:
    model, eager = twins(build(model_name, way))
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter, fullgraph=fullgraph)
    run_side_by_side(compiled, eager, CALLS)
    assert counter.frame_count == MODELS[model_name][1]
    check_attribute_after(model, eager, way)


def test_stock_torch_recompiles_per_value() -> None:
    """The baseline the library exists for: unmarked, every value is a new compile."""
    model, eager = twins(UsesStep())
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    run_side_by_side(compiled, eager, 5)
    assert counter.frame_count == 5


@pytest.mark.inductor
@pytest.mark.parametrize(("model_name", "way"), [("uses_step", "registry"), ("branches", "proxy")])
def test_inductor(model_name: str, way: str) -> None:
    model, eager = twins(build(model_name, way))
    counter = CountingBackend("inductor")
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    run_side_by_side(compiled, eager, CALLS)
    assert counter.frame_count == MODELS[model_name][1]
    check_attribute_after(model, eager, way)


class WarmupNet(torch.nn.Module):
    """A training model whose warm-up factor follows the step counter."""

    def __init__(self, warmup: int = 10) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 1)
        self.step = 0
        self.warmup = warmup

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        factor = torch.clamp(torch.full((), self.step / self.warmup), max=1.0)
        return self.fc2(torch.relu(self.fc1(x))) * factor


def train_side_by_side(backend: str, way: str, steps: int) -> int:
    torch.manual_seed(0)
    model = WarmupNet()
    if way == "proxy":
        model.step = DynamicInt(0)
    elif way == "registry":
        ds.mark_dynamic_attr(model, "step")
    else:
        model = ds.dynamic_attrs("step")(type("DynWarmupNet", (WarmupNet,), {}))()
        model.load_state_dict(WarmupNet().state_dict())
    eager = copy.deepcopy(model)
    eager.step = int(eager.step)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    opt_c = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.05)
    for i in range(steps):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss_c = torch.nn.functional.mse_loss(compiled(x), y)
        loss_e = torch.nn.functional.mse_loss(eager(x), y)
        loss_c.backward()
        loss_e.backward()
        torch.testing.assert_close(loss_c, loss_e, msg=lambda m, i=i: f"step {i}: {m}")
        for (name, p_c), p_e in zip(model.named_parameters(), eager.parameters(), strict=True):
            torch.testing.assert_close(
                p_c.grad, p_e.grad, msg=lambda m, n=name, i=i: f"{n} @ {i}: {m}"
            )
        opt_c.step()
        opt_e.step()
        opt_c.zero_grad()
        opt_e.zero_grad()
    assert model.step == eager.step == steps
    return counter.frame_count


@pytest.mark.parametrize("way", ["proxy", "registry", "decorator"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_training_gradients_equal_eager(backend: str, way: str) -> None:
    assert train_side_by_side(backend, way, steps=CALLS) == 1


@pytest.mark.inductor
def test_training_inductor() -> None:
    assert train_side_by_side("inductor", "decorator", steps=CALLS) == 1


# ----------------------------------------------------------------------------- write-back
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_proxy_attribute_stays_proxy_with_same_spec(backend: str) -> None:
    model, eager = twins(build("uses_step", "proxy", min=-5, max=1000))
    before = model.step
    compiled = torch.compile(model, backend=CountingBackend(backend), fullgraph=True)
    run_side_by_side(compiled, eager, CALLS)
    assert type(model.step) is DynamicInt
    assert model.step is not before and before == 0  # a new object; the old one unchanged
    assert model.step.spec == before.spec == ds.DynamicSpec(min=-5, max=1000)
    assert model.step == eager.step == CALLS


def test_registry_attribute_stays_plain_and_dynamic() -> None:
    model, eager = twins(build("uses_step", "registry"))
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    run_side_by_side(compiled, eager, CALLS)
    assert type(model.step) is int and ds.is_dynamic_attr(model, "step")
    model.step = eager.step = 1000  # set from outside the model: still one graph
    run_side_by_side(compiled, eager, 3)
    assert counter.frame_count == 1


# ----------------------------------------------------------------------------- structure
class Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.child = UsesStep()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.child(x) + 1


def test_nested_child_marked_only() -> None:
    outer = Outer()
    ds.mark_dynamic_attr(outer.child, "step")
    model, eager = twins(outer)
    eager.child.__dict__.pop("_dynscalar_marks")
    counter = CountingBackend("aot_eager")
    run_side_by_side(torch.compile(model, backend=counter, fullgraph=True), eager, CALLS)
    assert counter.frame_count == 1
    assert model.child.step == eager.child.step == CALLS
    assert not ds.is_dynamic_attr(model, "calls")


def test_two_instances_only_one_marked() -> None:
    marked, marked_eager = twins(build("uses_step", "registry"))
    plain, plain_eager = twins(UsesStep())
    counter = CountingBackend("eager")
    c_marked = torch.compile(marked, backend=counter)
    c_plain = torch.compile(plain, backend=counter)
    for i in range(CALLS):
        x = torch.randn(3, 4)
        torch.testing.assert_close(c_marked(x), marked_eager(x), msg=f"marked, call {i}")
        torch.testing.assert_close(c_plain(x), plain_eager(x), msg=f"plain, call {i}")
    assert marked.step == plain.step == CALLS
    assert ds.is_dynamic_attr(marked, "step") and not ds.is_dynamic_attr(plain, "step")
    # Each graph is guarded on the marks it was compiled with, so the unmarked
    # twin never reuses the marked instance's graph: it behaves exactly like stock torch,
    # one static graph per value until the code object's recompile_limit (8 entries,
    # shared with the marked graph) is reached, then eager.  The marked instance keeps
    # its one graph throughout.
    assert counter.frame_count == torch._dynamo.config.recompile_limit


def test_marks_survive_dynamo_reset() -> None:
    model, eager = twins(build("branches", "registry"))
    counter = CountingBackend("eager")
    run_side_by_side(torch.compile(model, backend=counter), eager, 10)
    torch._dynamo.reset()
    run_side_by_side(torch.compile(model, backend=counter), eager, 10)
    assert counter.frame_count == 4  # two paths, compiled again after the reset


# ----------------------------------------------------------------------------- functions
def scaled(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n + n // 3


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_function_argument_compiles_once(backend: str) -> None:
    counter = CountingBackend(backend)
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    for n in range(-5, 25):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x, DynamicInt(n)), scaled(x, n))
    assert counter.frame_count == 1


def test_function_argument_plain_int_baseline() -> None:
    counter = CountingBackend("eager")
    compiled = torch.compile(scaled, backend=counter)
    for n in range(5):
        compiled(torch.randn(3), n)
    assert counter.frame_count == 2  # static first, then automatic dynamic: we do better (1)


# ----------------------------------------------------------------------------- unbacked
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("way", ["proxy", "registry"])
def test_unbacked_straight_line_negative_values(way: str, backend: str) -> None:
    model = build("uses_step", way, unbacked=True)
    model.step = DynamicInt(-20, unbacked=True) if way == "proxy" else -20
    model, eager = twins(model)
    counter = CountingBackend(backend)
    run_side_by_side(torch.compile(model, backend=counter, fullgraph=True), eager, CALLS)
    assert counter.frame_count == 1
    assert model.step == eager.step == CALLS - 20


def test_unbacked_branch_graph_breaks_without_fullgraph() -> None:
    model, eager = twins(build("branches", "registry", unbacked=True))
    counter = CountingBackend("eager")
    run_side_by_side(torch.compile(model, backend=counter), eager, CALLS)
    # graph before the branch, then one graph for each resumed path
    assert counter.frame_count == 3


def test_unbacked_branch_fullgraph_names_the_attribute() -> None:
    model = build("branches", "proxy", unbacked=True)
    compiled = torch.compile(model, backend=CountingBackend("eager"), fullgraph=True)
    with pytest.raises(
        torch._dynamo.exc.UserError, match=r"model\.step \(Branches\.step\) is marked unbacked=True"
    ) as info:
        compiled(torch.randn(3, 4))
    # dynscalar's explanation first, torch's generic advice after it
    assert str(info.value).startswith("dynscalar: ")
    assert "\ntorch: Consider annotating your code using torch._check*()." in str(info.value)


# ----------------------------------------------------------------------------- ranges
@pytest.mark.parametrize("fullgraph", [True, False], ids=["fullgraph", "breaks-ok"])
def test_range_is_the_symbol_range_and_enforced_at_call_time(fullgraph: bool) -> None:
    model, eager = twins(build("uses_step", "registry", min=0, max=10))
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter, fullgraph=fullgraph)
    run_side_by_side(compiled, eager, 11)  # enters with 0..10, leaves 11 behind
    assert counter.frame_count == 1
    with pytest.raises(ValueError, match=r"UsesStep\.step: value 11 is outside .*\[0, 10\]"):
        compiled(torch.randn(3, 4))


def test_range_on_proxy_argument() -> None:
    counter = CountingBackend("eager")
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    for n in range(3, 8):
        torch.testing.assert_close(
            compiled(torch.ones(2), DynamicInt(n, min=3, max=7)), scaled(torch.ones(2), n)
        )
    assert counter.frame_count == 1
    with pytest.raises(ValueError, match="outside the declared range"):
        DynamicInt(8, min=3, max=7)


def test_range_guard_is_symbolic() -> None:
    """The range must not turn into a value guard: still one graph across the range."""
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    for n in (-100, 0, 100):
        compiled(torch.ones(2), DynamicInt(n, min=-100, max=100))
    assert counter.frame_count == 1
