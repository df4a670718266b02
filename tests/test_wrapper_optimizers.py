"""Wrapper optimizers and ``math.pow`` debiasing: pytorch-optimizer's patterns, by hand.

SAM and Lookahead build a base optimizer over the wrapper's param-group dicts; compiled
code reads them through either one.  pytorch-optimizer's Adam family keeps an int
``group['step']`` and debiases with ``1.0 - math.pow(beta, step)``.  Every test trains a
compiled copy and an eager twin side by side and asserts the weights bit for bit after
every step, the optimizer state at the end, and the exact number of graphs, next to stock
torch's count.  ``tests/test_real_libraries.py`` runs the library itself.

Stock torch 2.13 traces ``addcmul_(value=)`` as a fused multiply-add
(``TensorVariable.method_addcmul_``, ``torch._dynamo.config.enable_dynamo_decompositions``),
which rounds differently from eager's kernel: these tests turn that decomposition off, so
that stock torch's compiled step is bit-identical to eager and every difference would be
dynscalar's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend
from .optim_patterns import SAM, AdaBelief, DebiasedAdam, Lookahead, state_of

BACKENDS = ["eager", "aot_eager"]

# SAM's closure holds its loss (a non-leaf tensor) across the graph break at `backward()`:
# Dynamo's `safe_has_grad` reads its `.grad` while wrapping it for the resumed frame, which
# warns (stock torch too; torch's own code, under `filterwarnings = error`).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The .grad attribute of a Tensor that is not a leaf Tensor:UserWarning"
)


@pytest.fixture(autouse=True)
def _exact_addcmul() -> Iterator[None]:
    with torch._dynamo.config.patch(enable_dynamo_decompositions=False):
        yield


def _same_weights(got: torch.nn.Module, want: torch.nn.Module, what: str) -> None:
    for p, q in zip(got.parameters(), want.parameters(), strict=True):
        assert torch.equal(p, q), f"{what}: weights differ by {(p - q).abs().max().item()}"


def _same_state(got: torch.optim.Optimizer, want: torch.optim.Optimizer) -> None:
    (got_params, got_groups), (want_params, want_groups) = state_of(got), state_of(want)
    assert got_groups == want_groups
    assert len(got_params) == len(want_params)
    for a, b in zip(got_params, want_params, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert type(a[key]) is type(b[key]), key
            if isinstance(a[key], torch.Tensor):
                assert torch.equal(a[key], b[key]), key
            else:
                assert a[key] == b[key], key


def _mark(optimizer: Any, mark: str | None, *keys: str) -> None:
    """``mark``: None (stock), ``"wrapper"`` or ``"base"`` (the optimizer marked)."""
    if mark == "wrapper":
        ds.mark_dynamic_param_groups(optimizer, *keys)
    elif mark == "base":
        base = getattr(optimizer, "base_optimizer", None) or optimizer.optimizer
        ds.mark_dynamic_param_groups(base, *keys)


# ----------------------------------------------------------------------------- SAM
def train_sam(mark: str | None, backend: str, steps: int = 5) -> tuple[int, SAM, SAM]:
    """SAM over SGD with momentum, LambdaLR on the base optimizer and ``rho`` changed every
    step; the compiled ``step`` pops ``old_p`` from the shared state and calls
    ``base_optimizer.step()``, which a scheduler has patched (a frame of its own)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.randn(8, 4)

    def make(m: torch.nn.Module) -> tuple[SAM, Any, Callable[[], Any]]:
        opt = SAM(m.parameters(), torch.optim.SGD, rho=0.05, lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.LambdaLR(opt.base_optimizer, lambda e: 0.8**e)

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            return loss

        return opt, sched, closure

    (opt, sched, closure), (opt2, sched2, closure2) = make(model), make(twin)
    _mark(opt, mark, "rho", "lr")
    counter = CountingBackend(backend)
    step = torch.compile(opt.step, backend=counter)
    for i in range(steps):
        closure()
        step(closure)
        sched.step()
        closure2()
        opt2.step(closure2)
        sched2.step()
        for o in (opt, opt2):
            for group in o.param_groups:
                group["rho"] = 0.05 + 0.01 * (i + 1)
        _same_weights(model, twin, f"step {i}")
    _same_state(opt, opt2)
    return counter.frame_count, opt, opt2


#: backend -> {mark: graphs}; stock recompiles on aot_eager for every learning rate (the
#: tensorify pass cannot keep `alpha=-lr` symbolic); on eager, automatic dynamic makes the
#: changing floats symbolic after one recompile, so stock compiles as few graphs there.
#: The marked run's graphs: each frame once, plus one more of `second_step` when the
#: momentum buffers appear in the state dicts it rebuilds (their keys are guarded).
SAM_GRAPHS = {
    "eager": {None: 5, "wrapper": 5, "base": 5},
    "aot_eager": {None: 10, "wrapper": 5, "base": 5},
}


@pytest.mark.parametrize("mark", [None, "wrapper", "base"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_sam_keeps_the_shared_state_and_compiles_once_per_frame(
    backend: str, mark: str | None
) -> None:
    graphs, opt, _ = train_sam(mark, backend)
    assert graphs == SAM_GRAPHS[backend][mark]
    assert graphs <= SAM_GRAPHS[backend][None]
    assert all("momentum_buffer" in opt.state[p] for p in opt.base_optimizer.state)


def test_sam_marks_follow_the_dicts_into_the_base_optimizer() -> None:
    torch.manual_seed(0)
    opt = SAM(torch.nn.Linear(2, 2).parameters(), torch.optim.SGD, rho=0.05, lr=0.1)
    ds.mark_dynamic_param_groups(opt, "rho", "lr")
    spec = ds.DynamicSpec().canonical()
    for holder in (opt, opt.base_optimizer):
        assert holder.__dict__["_dynscalar_group_marks"] == {"rho": spec, "lr": spec}
    assert opt.param_groups is opt.base_optimizer.param_groups  # nothing replaced
    assert opt.state is opt.base_optimizer.state
    ds.unmark_dynamic_param_groups(opt, "rho", "lr")
    for holder in (opt, opt.base_optimizer):
        assert holder.__dict__["_dynscalar_group_marks"] == {}


# ----------------------------------------------------------------------------- Lookahead
def train_lookahead(mark: str | None, backend: str, steps: int = 7) -> int:
    """Lookahead (k=3) over SGD with momentum, a new learning rate every step."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.randn(8, 4)

    def make(m: torch.nn.Module) -> Lookahead:
        return Lookahead(torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), k=3)

    opt, opt2 = make(model), make(twin)
    _mark(opt, mark, "lr")
    counter = CountingBackend(backend)
    step = torch.compile(opt.step, backend=counter)
    for i in range(steps):
        for m, o in ((model, opt), (twin, opt2)):
            o.zero_grad()
            m(x * (i + 1)).pow(2).sum().backward()
        step()
        opt2.step()
        for o in (opt, opt2):
            for group in o.param_groups:
                group["lr"] = 0.1 * 0.9 ** (i + 1)
        _same_weights(model, twin, f"step {i}")
    _same_state(opt, opt2)
    _same_state(opt.optimizer, opt2.optimizer)
    return counter.frame_count


LOOKAHEAD_GRAPHS = {
    "eager": {None: 3, "wrapper": 3, "base": 3},
    "aot_eager": {None: 9, "wrapper": 3, "base": 3},
}


@pytest.mark.parametrize("mark", [None, "wrapper", "base"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_lookahead_learning_rate_marked_on_either_optimizer(backend: str, mark: str | None) -> None:
    """The mark on the wrapper reaches the base optimizer's step as the base's own does."""
    graphs = train_lookahead(mark, backend)
    assert graphs == LOOKAHEAD_GRAPHS[backend][mark]


# ----------------------------------------------------------------------------- debias
def train_debiased(mark: bool, backend: str, steps: int = 6) -> int:
    """pytorch-optimizer's Adam step: ``group['step'] += 1``, ``1 - math.pow(beta, step)``."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.randn(8, 4)
    opt, opt2 = DebiasedAdam(model.parameters()), DebiasedAdam(twin.parameters())
    if mark:
        for o in (opt, opt2):  # the optimizer adds the key at its first step
            for group in o.param_groups:
                group.setdefault("step", 0)
        ds.mark_dynamic_param_groups(opt, "step")
    counter = CountingBackend(backend)
    step = torch.compile(opt.step, backend=counter)
    for i in range(steps):
        for m, o in ((model, opt), (twin, opt2)):
            o.zero_grad()
            m(x * (i + 1)).pow(2).sum().backward()
        step()
        opt2.step()
        _same_weights(model, twin, f"step {i}")
        assert type(opt.param_groups[0]["step"]) is int
    _same_state(opt, opt2)
    return counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
def test_debias_with_math_pow_compiles_once_per_path(backend: str) -> None:
    """Stock: one graph per step (``math.pow`` forces ``step``).  Marked: the first step
    creates the state (one path), every later step shares the second graph."""
    assert train_debiased(False, backend) == 6
    assert train_debiased(True, backend) == 2


def train_sam_adabelief(state: tuple[str, ...] | None, steps: int = 6) -> int:
    """SAM over an AdaBelief-style base optimizer (an int ``state[p]['step']``), a new
    learning rate after every step, ``lr`` and the state entries ``state`` marked on the
    wrapper (None: stock), aot_eager; weights next to an eager twin after every step."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.randn(8, 4)

    def make(m: torch.nn.Module) -> tuple[SAM, Callable[[], Any]]:
        opt = SAM(m.parameters(), AdaBelief, rho=0.05, lr=0.01)

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            return loss

        return opt, closure

    (opt, closure), (opt2, closure2) = make(model), make(twin)
    if state is not None:
        ds.mark_dynamic_param_groups(opt, "lr", state=state)
    counter = CountingBackend("aot_eager")
    step = torch.compile(opt.step, backend=counter)
    with torch._dynamo.config.patch(enable_dynamo_decompositions=False):
        for i in range(steps):
            closure()
            step(closure)
            closure2()
            opt2.step(closure2)
            for o in (opt, opt2):
                for group in o.param_groups:
                    group["lr"] = 0.01 * 0.9 ** (i + 1)
            for p, q in zip(model.parameters(), twin.parameters(), strict=True):
                # AdaBelief's bias corrections: last-bit differences, stock's too
                torch.testing.assert_close(p, q)
    assert [s["step"] for s in opt.state.values()] == [steps, steps]
    return counter.frame_count


def test_a_state_entry_marked_on_the_wrapper_reaches_the_base_optimizer() -> None:
    """``state="step"`` marked on SAM reaches the base optimizer's step, which reads the
    shared ``state`` through itself: 5 graphs (SAM's frames on their paths: ``first_step``
    and the resumed step each once more when the state appears); ``lr`` alone 7 (the int
    read as a constant at the second step, dynamic at the third); stock 12."""
    with ds.disabled():
        assert train_sam_adabelief(None) == 12
    torch._dynamo.reset()
    assert train_sam_adabelief(()) == 7
    torch._dynamo.reset()
    assert train_sam_adabelief(("step",)) == 5


# ----------------------------------------------------------------------------- soundness
def _sgd_sam(model: torch.nn.Module) -> SAM:
    return SAM(model.parameters(), torch.optim.SGD, rho=0.05, lr=0.1, momentum=0.9)


def _closure(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> Any:
    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        return loss

    return closure


def sam_step(opt: SAM, closure: Callable[[], Any]) -> None:
    opt.step(closure)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.broad
def test_an_unmarked_optimizer_over_other_dicts_gets_eager_numbers(backend: str) -> None:
    """One compiled function, a marked SAM and an unmarked one: the marked graphs are not
    reused for the unmarked optimizer's learning rates (they recompile as in stock)."""
    torch.manual_seed(0)
    models = [torch.nn.Linear(3, 2) for _ in range(2)]
    twins = [copy.deepcopy(m) for m in models]
    opts, eager = [_sgd_sam(m) for m in models], [_sgd_sam(m) for m in twins]
    ds.mark_dynamic_param_groups(opts[0], "lr")
    x = torch.randn(4, 3)
    counter = CountingBackend(backend)
    compiled = torch.compile(sam_step, backend=counter)
    for i in range(4):
        for model, opt, twin, reference in zip(models, opts, twins, eager, strict=True):
            for o in (opt, reference):
                o.param_groups[0]["lr"] = 0.1 / (i + 1)
            closure = _closure(model, opt, x)
            closure()
            compiled(opt, closure)
            closure = _closure(twin, reference, x)
            closure()
            reference.step(closure)
            _same_weights(model, twin, f"step {i}")
            _same_state(opt, reference)


@pytest.mark.broad
def test_a_group_added_later_is_marked_and_unmarking_gives_stock_behaviour() -> None:
    torch.manual_seed(0)
    model, extra = torch.nn.Linear(3, 2), torch.nn.Linear(2, 1)
    twin, extra_twin = copy.deepcopy(model), copy.deepcopy(extra)
    opt, reference = _sgd_sam(model), _sgd_sam(twin)
    ds.mark_dynamic_param_groups(opt, "lr")
    x = torch.randn(4, 3)
    counter = CountingBackend("aot_eager")
    step = torch.compile(opt.step, backend=counter)

    def train(i: int) -> None:
        for o in (opt, reference):
            for group in o.param_groups:
                group["lr"] = 0.1 / (i + 1)
        pairs = ((model, extra, opt, step), (twin, extra_twin, reference, reference.step))

        for net, head, o, run in pairs:

            def closure(net: Any = net, head: Any = head, o: Any = o) -> torch.Tensor:
                o.zero_grad()
                loss = head(net(x)).pow(2).sum() if len(o.param_groups) > 1 else net(x).sum()
                loss.backward()
                return loss

            closure()
            run(closure)
        _same_weights(model, twin, f"step {i}")
        _same_weights(extra, extra_twin, f"step {i}")
        _same_state(opt, reference)

    for i in range(3):
        train(i)
    before = counter.frame_count
    for o, head in ((opt, extra), (reference, extra_twin)):
        o.base_optimizer.add_param_group({"params": list(head.parameters()), "rho": 0.05})
    for i in range(3, 7):
        train(i)
    added = counter.frame_count - before
    ds.unmark_dynamic_param_groups(opt, "lr")
    for i in range(7, 10):
        train(i)
    # the added group: every frame compiles once more (two groups now), then its learning
    # rates take no recompile; unmarked: the frames reading `lr` recompile per value
    assert (before, added, counter.frame_count - before - added) == (5, 5, 8)


def _graphs_of_the_other(remark: bool) -> int:
    """Graphs of SAM B's compiled step while SAM A is marked again before every step."""
    torch.manual_seed(0)
    models = [torch.nn.Linear(3, 2) for _ in range(2)]
    opts = [_sgd_sam(m) for m in models]
    x = torch.randn(4, 3)
    counter = CountingBackend("eager")
    step_a = torch.compile(opts[0].step, backend="eager")
    step_b = torch.compile(opts[1].step, backend=counter)
    for _ in range(4):
        if remark:
            ds.mark_dynamic_param_groups(opts[0], "lr", "rho")
        for model, opt, step in zip(models, opts, (step_a, step_b), strict=True):
            closure = _closure(model, opt, x)
            closure()
            step(closure)
    return counter.frame_count


def test_marking_one_wrapper_does_not_recompile_another() -> None:
    assert _graphs_of_the_other(remark=True) == _graphs_of_the_other(remark=False)


# ----------------------------------------------------------------------------- write-back
class PopsItsScratch(torch.nn.Module):
    """Keeps a scratch entry in a dict it holds and pops it again (SAM's ``old_p``); the
    dict gains another key between calls, as an optimizer's ``state[p]`` does."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.5
        self.cache: dict[str, Any] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.cache["old"] = x * self.scale
        return x + self.cache.pop("old")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dict_rebuilt_after_a_pop_keeps_keys_added_since(backend: str) -> None:
    """Dynamo writes such a dict back as ``clear()`` plus the items it traced; with the
    scale marked the graph is reused, so the rebuilt dict's keys are guarded: a key added
    in between compiles once more, and is kept as eager keeps it."""
    model = ds.mark_dynamic_attr(PopsItsScratch(), "scale")
    eager = PopsItsScratch()
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.ones(3)
    for i in range(5):
        if i == 2:
            model.cache["momentum"] = eager.cache["momentum"] = torch.zeros(3)
        model.scale = eager.scale = 0.5 + i
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert list(model.cache) == list(eager.cache)
    assert counter.frame_count == 2
