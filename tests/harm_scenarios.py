"""Programs shaped like real training code, run stock, imported-unmarked and marked.

Each scenario is the pattern of a real library (named in its docstring) written out so it
runs without that library.  ``run(name, mark)`` compiles it with a counting backend, runs
an eager twin beside it on the same inputs (outputs, gradients and parameters must match)
and returns the number of graphs handed to the backend (restarts included) and the
compiled outputs.  ``mark=None`` touches nothing of dynscalar, so

    python -m tests.harm_scenarios OUT.pt

runs every scenario in a process that never imports dynscalar (stock torch) and saves the
results for ``tests/test_do_no_harm.py`` to compare with.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from typing import Any

import torch

from .helpers import CountingBackend

Outcome = tuple[int, list[torch.Tensor]]


def _ds() -> Any:
    import dynscalar

    return dynscalar


#: undo actions of the marks the running scenario made (function marks outlive it: they
#: are keyed by the code object, which the next run of the scenario shares)
_undo: list[Callable[[], Any]] = []


def _mark_args(fn: Any, names: str) -> None:
    ds = _ds()
    ds.mark_dynamic_args(fn, *names.split(","))
    _undo.append(lambda: ds.unmark_dynamic_args(fn, *names.split(",")))


def _same(got: Any, want: Any, exact: bool, what: str) -> None:
    tol: dict[str, Any] = {"rtol": 0.0, "atol": 0.0} if exact else {"rtol": 1e-4, "atol": 1e-6}
    if not exact and getattr(want, "dtype", None) in (torch.bfloat16, torch.float16):
        tol = {}  # torch's own closeness for half precision (stock rounds there too)
    torch.testing.assert_close(got, want, **tol, msg=lambda m: f"{what}: {m}")


def clamp_bounds(mark: str | None) -> Outcome:
    """``torch.clamp(x, 1 - eps, 1 + eps) * a`` with both floats changing every call."""

    def f(x: torch.Tensor, eps: float, a: float) -> torch.Tensor:
        return torch.clamp(x, 1 - eps, 1 + eps).sum() * a

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(f, backend=counter)
    if mark is not None:
        _mark_args(compiled, mark)
    x = torch.linspace(0.5, 1.5, 8)
    outs = []
    for i in range(5):
        eps, a = 0.1 + 0.01 * i, 1.5 + 0.1 * i
        got = compiled(x, eps, a)
        _same(got, f(x, eps, a), True, f"call {i}")
        outs.append(got)
    return counter.frame_count, outs


def top_k_sampling(mark: str | None) -> Outcome:
    """x-transformers' ``top_k`` filter (``k = ceil(frac_num_tokens * num_tokens)``) and a
    sampling temperature, both changing per call."""

    def sample(logits: torch.Tensor, frac: float, temperature: float) -> torch.Tensor:
        k = math.ceil(frac * logits.shape[-1])
        val, ind = torch.topk(logits, k)
        filtered = torch.full_like(logits, float("-inf")).scatter_(-1, ind, val)
        return (filtered / temperature).softmax(dim=-1)

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(sample, backend=counter)
    if mark is not None:
        _mark_args(compiled, mark)
    logits = torch.linspace(-2.0, 2.0, 40).reshape(2, 20)
    outs = []
    for i, (frac, temperature) in enumerate([(0.1, 1.0), (0.2, 0.9), (0.25, 0.8), (0.3, 0.7)]):
        got = compiled(logits, frac, temperature)
        _same(got, sample(logits, frac, temperature), True, f"call {i}")
        outs.append(got)
    return counter.frame_count, outs


def adamw_one_cycle(mark: str | None) -> Outcome:
    """AdamW (foreach) with OneCycleLR, which also cycles beta1 every step; ``mark`` is
    ``"lr"`` or ``"lr,betas"`` (``mark_dynamic_param_groups``)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    twin = copy.deepcopy(model)

    def make(m: torch.nn.Module) -> tuple[Any, Any]:
        opt = torch.optim.AdamW(m.parameters(), lr=0.01, foreach=True)
        return opt, torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=20)

    (opt, sched), (opt2, sched2) = make(model), make(twin)
    if mark is not None:
        _ds().mark_dynamic_param_groups(opt, *mark.split(","))
    counter = CountingBackend("aot_eager")
    step = torch.compile(opt.step, backend=counter)
    x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)
    for i in range(6):
        for m, o in ((model, opt), (twin, opt2)):
            o.zero_grad()
            (m(x * (i + 1)) ** 2).sum().backward()
        step()
        opt2.step()
        sched.step()
        sched2.step()
        # compiled AdamW rounds differently from eager in the last bits (stock torch too)
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            _same(p, q, False, f"step {i}")
    return counter.frame_count, [p.detach().clone() for p in model.parameters()]


def _ppo(mark: str | None, dtype: torch.dtype, n: int, anneal: float) -> Outcome:
    """PPO's clipped surrogate loss, ``clamp(ratio, 1 - clip_eps, 1 + clip_eps)``, on ``n``
    values of ``dtype``, the clip range annealed by ``anneal`` a call, with gradients."""

    def loss(ratio: torch.Tensor, adv: torch.Tensor, clip_eps: float) -> torch.Tensor:
        clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
        return -torch.min(ratio * adv, clipped * adv).mean()

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(loss, backend=counter)
    if mark is not None:
        _mark_args(compiled, mark)
    outs = []
    for i in range(5):
        clip_eps = 0.2 - anneal * i
        base = torch.linspace(0.6, 1.4, n).to(dtype)
        adv = torch.linspace(-1.0, 1.0, n).to(dtype)
        r1, r2 = base.clone().requires_grad_(), base.clone().requires_grad_()
        got, want = compiled(r1, adv, clip_eps), loss(r2, adv, clip_eps)
        got.backward()
        want.backward()
        _same(got, want, True, f"call {i}")
        _same(r1.grad, r2.grad, True, f"grad {i}")
        outs += [got.detach(), r1.grad]
    return counter.frame_count, outs


def ppo_clipped_loss(mark: str | None) -> Outcome:
    """PPO's clipped surrogate loss with a clip range that anneals and inputs that require
    grad."""
    return _ppo(mark, torch.float32, 8, 0.02)


def drop_path(x: torch.Tensor, drop_prob: float = 0.0, training: bool = False) -> torch.Tensor:
    """timm.layers.drop.drop_path as timm 1.0 writes it (stochastic depth)."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0:
        random_tensor.div_(keep_prob)
    return x * random_tensor


def _scheduled_module(mark: str | None, module: torch.nn.Module, backend: str) -> Outcome:
    """A module whose ``drop_prob``/``p`` attribute follows a schedule; the same seed
    before each compiled and eager call: the same random numbers."""
    twin = copy.deepcopy(module)
    if mark is not None:
        _ds().mark_dynamic_attr(module, mark)
    counter = CountingBackend(backend)
    compiled = torch.compile(module, backend=counter)
    name = mark or ("drop_prob" if hasattr(module, "drop_prob") else "p")
    x = torch.linspace(-1.0, 1.0, 48).reshape(6, 8)
    outs = []
    for i, value in enumerate([0.1, 0.2, 0.3, 0.4, 0.5]):
        setattr(module, name, value)
        setattr(twin, name, value)
        torch.manual_seed(i)
        got = compiled(x)
        torch.manual_seed(i)
        _same(got, twin(x), True, f"call {i}")
        outs.append(got)
    return counter.frame_count, outs


class DropPath(torch.nn.Module):
    """timm.layers.DropPath."""

    def __init__(self, drop_prob: float = 0.0) -> None:
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return drop_path(x, self.drop_prob, self.training)


def timm_drop_path(mark: str | None) -> Outcome:
    return _scheduled_module(mark, DropPath(0.1), "aot_eager")


def dropout_schedule(mark: str | None) -> Outcome:
    """``nn.Dropout`` whose ``p`` follows a schedule (eager's random numbers, aot_eager)."""
    return _scheduled_module(mark, torch.nn.Dropout(0.1), "aot_eager")


def dropout_sgd_steps(mark: str | None) -> Outcome:
    """A few SGD steps of an MLP with a scheduled dropout ``p`` (eager backend): weights
    after training equal eager's bit for bit."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1)
    )
    twin = copy.deepcopy(model)
    if mark is not None:
        _ds().mark_dynamic_attr(model[2], "p")
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    x = torch.linspace(-1.0, 1.0, 32).reshape(4, 8)
    for i, p in enumerate([0.1, 0.2, 0.3, 0.4]):
        model[2].p = twin[2].p = p
        for fn, opt in ((compiled, opts[0]), (twin, opts[1])):
            torch.manual_seed(i)
            opt.zero_grad()
            fn(x).pow(2).mean().backward()
            opt.step()
        for a, b in zip(model.parameters(), twin.parameters(), strict=True):
            _same(a, b, True, f"step {i}")
    return counter.frame_count, [p.detach().clone() for p in model.parameters()]


def _scheduled_training(
    mark: str | None,
    model: torch.nn.Module,
    owner: str,
    name: str,
    shape: tuple[int, ...],
    autocast: torch.dtype | None = None,
) -> Outcome:
    """A training step (forward and backward) per value of a probability attribute
    ``owner.name`` of ``model``, the same seed before the compiled and the eager call:
    outputs, gradients and the generator's state afterwards equal eager's bit for bit
    (``autocast``: each forward under ``torch.autocast("cpu", dtype=autocast)``, where
    stock torch.compile is not bit for bit: only a marked run is compared with eager)."""
    twin = copy.deepcopy(model)
    target = model.get_submodule(owner) if owner else model
    twin_target = twin.get_submodule(owner) if owner else twin
    if mark is not None:
        _ds().mark_dynamic_attr(target, mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, math.prod(shape)).reshape(shape)
    outs = []
    for i, value in enumerate([0.1, 0.2, 0.3, 0.4, 0.5]):
        setattr(target, name, value)
        setattr(twin_target, name, value)
        results = []
        for fn, m in ((compiled, model), (twin, twin)):
            m.zero_grad()
            leaf = x.clone().requires_grad_(True)
            torch.manual_seed(i)
            with torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
                out = fn(leaf)
            out.float().pow(2).sum().backward()
            results.append([out.detach(), leaf.grad, *[p.grad for p in m.parameters()]])
            results[-1].append(torch.get_rng_state())
        if autocast is None or mark is not None:
            for j, (a, b) in enumerate(zip(*results, strict=True)):
                _same(a, b, True, f"value {value}, tensor {j}")
        outs += results[0][:2]
    return counter.frame_count, outs


def checkpointed_dropout(mark: str | None) -> Outcome:
    """``nn.Dropout`` whose ``p`` follows a schedule, inside a non-reentrant
    ``torch.utils.checkpoint`` region (its backward recomputes the draws: torch replays
    them)."""
    from .attention_patterns import checkpointed

    torch.manual_seed(0)  # the same weights in the stock process and here
    block = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.1))
    return _scheduled_training(mark, checkpointed(block, "checkpoint"), "inner.1", "p", (4, 8))


def hf_attention_dropout(mark: str | None) -> Outcome:
    """Hugging Face's ``LlamaAttention`` (``attention_dropout`` passed to SDPA as
    ``dropout_p``) scheduled per step, under gradient checkpointing."""
    from .attention_patterns import HFAttention, checkpointed

    torch.manual_seed(0)  # the same weights in the stock process and here
    model = checkpointed(HFAttention(attention_dropout=0.1), "checkpoint")
    return _scheduled_training(mark, model, "inner", "attention_dropout", (3, 5, 8))


def ema_no_grad(mark: str | None) -> Outcome:
    """timm's ModelEmaV3.update pattern: a ``@torch.no_grad()`` function whose decay warms
    up with the step number (torch.compile wraps it in ``wrap_inline``'s ``inner``)."""

    @torch.no_grad()
    def update(ema: torch.Tensor, param: torch.Tensor, step: int) -> None:
        decay = 1 - (1 + step) ** -0.75
        ema.lerp_(param, 1 - decay)

    if mark is not None:
        _mark_args(update, mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(update, backend=counter)
    ema, ema2 = torch.zeros(4), torch.zeros(4)
    param = torch.linspace(1.0, 2.0, 4)
    for step in range(6):
        compiled(ema, param, step)
        update(ema2, param, step)
        _same(ema, ema2, True, f"step {step}")
    return counter.frame_count, [ema]


class KeywordForward(torch.nn.Module):
    """A Hugging Face style forward: extra arguments arrive through ``**kwargs``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        n = kwargs.get("num_items_in_batch")
        loss = self.lin(x).pow(2).sum()
        return loss / n if n is not None else loss


def keyword_argument(mark: str | None) -> Outcome:
    torch.manual_seed(0)
    model = KeywordForward()
    if mark is not None:
        _mark_args(model, mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    outs = []
    for n in range(3, 8):
        got = compiled(x, num_items_in_batch=n)
        _same(got, model(x, num_items_in_batch=n), True, f"n={n}")
        outs.append(got.detach())
    return counter.frame_count, outs


def int_after_proxy(mark: str | None) -> Outcome:
    """PyTorch's own ``test_dynamic_int_basic_compile`` (test/test_dynamic_shapes.py): the
    first call passes dynamic ints (``mark="DynamicInt"``), later calls plain ints."""

    def fn(a: int, b: int, c: int) -> torch.Tensor:
        return torch.ones(3) * a * b + c

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(fn, backend=counter)
    first: tuple[Any, ...] = (1, 1, 3)
    if mark is not None:
        first = tuple(_ds().DynamicInt(v) for v in first)
    outs = []
    for args in (first, (2, 2, 0), (-1, -1, 2)):
        got = compiled(*args)
        _same(got, fn(*(int(a) for a in args)), True, f"{args}")
        outs.append(got)
    return counter.frame_count, outs


class Sampler(torch.nn.Module):
    """A module reading int and float settings it never changes (k-diffusion's sampler
    wrappers, a model's ``num_heads``/``scale``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.num_steps = 3
        self.sigma_max = 2.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.num_steps + self.sigma_max


def _denoise(x: torch.Tensor, sigma: float, n: int) -> torch.Tensor:
    return x / (sigma**2 + 1) ** 0.5 * n


def _scheduler_step(x: torch.Tensor, t: float) -> torch.Tensor:
    return x * t


def _remark(mark: str, step: int) -> None:
    """The same marks made again, as set-up code called inside a loop does (a sampler
    factory marking its step function, a trainer hook marking its optimizer), on objects
    the compiled code never reads."""
    ds = _ds()
    if mark == "args":
        ds.mark_dynamic_args(_scheduler_step, "t")
        if step == 0:
            _undo.append(lambda: ds.unmark_dynamic_args(_scheduler_step, "t"))
    elif mark == "attrs":
        ds.mark_dynamic_attr(_REMARKED["module"], "num_steps")
    elif mark == "class":
        ds.dynamic_attrs("num_steps")(_REMARKED["cls"])
    elif mark == "param_groups":
        ds.mark_dynamic_param_groups(_REMARKED["optimizer"])


#: objects the re-mark scenario marks again and again (made anew by each run)
_REMARKED: dict[str, Any] = {}


def remark_between_calls(mark: str | None) -> Outcome:
    """A compiled module and a compiled function reading ints and floats that never change,
    called in a loop whose set-up code marks something else again on every iteration
    (``mark``: ``args``, ``attrs``, ``class`` or ``param_groups``): each compiles once,
    as in stock torch."""
    torch.manual_seed(0)
    model = Sampler()
    twin = copy.deepcopy(model)
    _REMARKED.update(
        module=Sampler(),
        cls=type("Other", (Sampler,), {}),
        optimizer=torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1),
    )
    counter = CountingBackend("aot_eager")
    compiled_model = torch.compile(model, backend=counter)
    compiled_denoise = torch.compile(_denoise, backend=counter)
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    outs = []
    try:
        for i in range(6):
            if mark is not None:
                _remark(mark, i)
            got = compiled_model(x)
            _same(got, twin(x), True, f"module, call {i}")
            got_denoise = compiled_denoise(x, 0.5, 3)
            _same(got_denoise, _denoise(x, 0.5, 3), True, f"function, call {i}")
            outs += [got.detach(), got_denoise]
    finally:
        _REMARKED.clear()
    return counter.frame_count, outs


class _Progress:
    def __init__(self) -> None:
        self.completed = 0


class CachedStep(torch.nn.Module):
    """A property whose getter has a side effect: it counts its reads (a logging hook, a
    cache refreshed on read)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.progress = _Progress()
        self.reads = 0

    @property
    def global_step(self) -> int:
        self.reads += 1
        return self.progress.completed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * min(1.0, (self.global_step + 1) / 4)


def property_side_effect(mark: str | None) -> Outcome:
    """A marked property (``mark``: ``global_step``) whose getter counts its reads: marking
    it runs no getter, so after the loop the count equals eager's."""
    torch.manual_seed(0)
    model = CachedStep()
    twin = copy.deepcopy(model)
    if mark is not None:
        _ds().mark_dynamic_attr(model, mark)
        _ds().explain(model, show=False)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    outs = []
    for i in range(5):
        model.progress.completed = twin.progress.completed = i
        got = compiled(x)
        _same(got, twin(x), True, f"call {i}")
        assert model.reads == twin.reads == i + 1, (model.reads, twin.reads)
        outs.append(got.detach())
    outs.append(torch.tensor(model.reads))
    return counter.frame_count, outs


class _LoopProgress:
    def __init__(self) -> None:
        self.global_step = 0


class TrainerWarmup(torch.nn.Module):
    """Lightning's ``LightningModule.trainer``, which raises until ``Trainer.fit`` attaches
    a trainer, and a warm-up from it: ``min(1, self.trainer.global_step / 100)``, marked in
    ``__init__`` (``mark``: ``warmup``)."""

    def __init__(self, mark: str | None) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self._trainer: _LoopProgress | None = None
        if mark is not None:
            _ds().mark_dynamic_attr(self, mark)

    @property
    def trainer(self) -> _LoopProgress:
        if self._trainer is None:
            raise RuntimeError(f"{type(self).__qualname__} is not attached to a `Trainer`.")
        return self._trainer

    @property
    def warmup(self) -> float:
        return min(1, self.trainer.global_step / 100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.warmup


def property_raising_getter(mark: str | None) -> Outcome:
    """A property marked before its getter can run (``mark``: ``warmup``); after "fit"
    attaches a trainer, a warm-up step by step."""
    torch.manual_seed(0)
    model = TrainerWarmup(mark)
    twin = TrainerWarmup(None)
    twin.load_state_dict(model.state_dict())
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    try:
        twin(x)
    except RuntimeError as error:
        assert "not attached" in str(error), error
    else:
        raise AssertionError("no trainer yet: the getter raises")
    model._trainer, twin._trainer = _LoopProgress(), _LoopProgress()  # Trainer.fit
    outs = []
    for i in range(5):
        model.trainer.global_step = twin.trainer.global_step = 10 * i
        got = compiled(x)
        _same(got, twin(x), True, f"step {i}")
        outs.append(got.detach())
    return counter.frame_count, outs


# ----------------------------------------------------------------------------- op rules
# Each scenario compares every output, gradient, weight and optimizer buffer with an eager
# twin bit for bit: on eager and aot_eager an op rule is used only where it is exact.


def ppo_clipped_bfloat16(mark: str | None) -> Outcome:
    """PPO's clipped surrogate loss on bfloat16, the clip range annealed, with gradients."""
    return _ppo(mark, torch.bfloat16, 16, 0.03)


def _optimizer_steps(
    mark: str | None, make: Callable[[Any], Any], dtype: torch.dtype, keys: str, exact: bool
) -> Outcome:
    """Eight compiled ``opt.step()`` calls beside an eager optimizer, the learning rate
    (and ``keys``) scheduled per step; weights and optimizer state bit for bit where stock
    torch's compiled step is (``exact``)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4).to(dtype)
    twin = copy.deepcopy(model)
    opts = [make(m.parameters()) for m in (model, twin)]
    if mark is not None:
        _ds().mark_dynamic_param_groups(opts[0], *mark.split(","))
    counter = CountingBackend("aot_eager")
    step = torch.compile(opts[0].step, backend=counter)
    g = torch.Generator().manual_seed(1)
    for i in range(8):
        grads = [torch.randn(p.shape, generator=g).to(dtype) for p in model.parameters()]
        for m in (model, twin):
            for p, grad in zip(m.parameters(), grads, strict=True):
                p.grad = grad.clone()
        step()
        opts[1].step()
        for opt in opts:
            for group in opt.param_groups:
                group["lr"] = 0.05 / (1 + i)
                if "betas" in keys:
                    group["betas"] = (0.9 - 0.01 * i, 0.999)
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            _same(p, q, exact, f"step {i}")
            for name, value in opts[1].state[q].items():
                _same(opts[0].state[p][name], value, exact, f"step {i} state {name}")
    return counter.frame_count, [p.detach().clone() for p in model.parameters()]


def sgd_momentum_lr(mark: str | None) -> Outcome:
    """SGD with momentum (foreach) and a per-step learning rate: ``_foreach_add_(alpha=-lr)``
    is eager's own kernel, weights bit for bit (a decomposition as multiply-then-add
    drifted ~1e-6 per step)."""

    def make(params: Any) -> Any:
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, foreach=True)

    return _optimizer_steps(mark, make, torch.float32, "lr", exact=True)


def adam_lr_betas(mark: str | None) -> Outcome:
    """Adam (foreach) with ``lr`` and ``betas`` scheduled per step (``mark``: ``lr`` or
    ``lr,betas``): ``lerp_``, ``beta ** step`` and the bias corrections.  Stock torch's
    compiled Adam rounds differently from eager in the last bits, so the weights are
    compared as close, marked and unmarked alike."""

    def make(params: Any) -> Any:
        return torch.optim.Adam(params, lr=0.05, foreach=True)

    return _optimizer_steps(mark, make, torch.float32, "lr,betas", exact=False)


def dropout_transposed_from_zero(mark: str | None) -> Outcome:
    """Dropout on a transposed activation, ``p`` scheduled from 0.0 (ATen returns the input
    itself there, drawing nothing) with gradients: eager's draws, strides and gradients."""
    torch.manual_seed(0)
    module, twin = torch.nn.Dropout(0.0), torch.nn.Dropout(0.0)
    if mark is not None:
        _ds().mark_dynamic_attr(module, mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(module, backend=counter)
    outs = []
    for i, p in enumerate([0.0, 0.1, 0.0, 0.3, 0.5]):
        module.p = twin.p = p
        base = torch.linspace(-1.0, 1.0, 48).reshape(6, 8)
        x1, x2 = base.t().clone().requires_grad_(), base.t().clone().requires_grad_()
        torch.manual_seed(i)
        got = compiled(x1)
        torch.manual_seed(i)
        want = twin(x2)
        got.pow(2).sum().backward()
        want.pow(2).sum().backward()
        _same(got, want, True, f"call {i}")
        _same(x1.grad, x2.grad, True, f"grad {i}")
        assert got.stride() == want.stride(), (got.stride(), want.stride())
        outs += [got.detach(), x1.grad]
    return counter.frame_count, outs


def focal_loss_gamma(mark: str | None) -> Outcome:
    """A focal-loss curriculum: ``(1 - p) ** gamma * ce`` with ``gamma`` growing, with
    gradients (``pow``'s derivative takes the exponent)."""

    def loss(logits: torch.Tensor, target: torch.Tensor, gamma: float) -> torch.Tensor:
        ce = torch.nn.functional.cross_entropy(logits, target, reduction="none")
        p = torch.exp(-ce)
        return ((1 - p) ** gamma * ce).mean()

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(loss, backend=counter)
    if mark is not None:
        _mark_args(compiled, mark)
    target = torch.tensor([0, 2, 1, 3, 2])
    outs = []
    for i in range(5):
        gamma = 0.5 + 0.5 * i
        base = torch.linspace(-2.0, 2.0, 20).reshape(5, 4)
        a, b = base.clone().requires_grad_(), base.clone().requires_grad_()
        got, want = compiled(a, target, gamma), loss(b, target, gamma)
        got.backward()
        want.backward()
        _same(got, want, True, f"call {i}")
        _same(a.grad, b.grad, True, f"grad {i}")
        outs += [got.detach(), a.grad]
    return counter.frame_count, outs


def layer_norm_eps_grad(mark: str | None) -> Outcome:
    """LayerNorm whose ``eps`` follows a schedule, trained: eager's fused kernel, its
    gradients for input, weight and bias."""
    torch.manual_seed(0)
    norm = torch.nn.LayerNorm(8)
    twin = copy.deepcopy(norm)
    if mark is not None:
        _ds().mark_dynamic_attr(norm, mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(norm, backend=counter)
    outs = []
    for i, eps in enumerate([1e-5, 1e-3, 1e-2, 0.1]):
        norm.eps = twin.eps = eps
        x = torch.linspace(-3.0, 3.0, 32).reshape(4, 8)
        got, want = compiled(x), twin(x)
        got.pow(2).sum().backward()
        want.pow(2).sum().backward()
        _same(got, want, True, f"call {i}")
        for p, q in zip(norm.parameters(), twin.parameters(), strict=True):
            _same(p.grad, q.grad, True, f"grad {i}")
        outs.append(got.detach())
    return counter.frame_count, outs


def _stored(module: torch.nn.Module) -> dict[str, Any]:
    """Class, value and spec of every number a module holds (lists and tuples item by
    item): what a step leaves behind, compared with the eager twin's."""

    def describe(value: Any) -> Any:
        if type(value) in (list, tuple):
            return [describe(item) for item in value]
        spec = getattr(value, "spec", None) if type(value).__name__.startswith("Dynamic") else None
        return (type(value).__name__, value if type(value) in (int, float) else float(value), spec)

    names = [k for k, v in vars(module).items() if not k.startswith("_") and k != "training"]
    return {k: describe(getattr(module, k)) for k in names}


class StepLog(torch.nn.Module):
    """A training step that keeps a long-running total and a per-step log of warm-up
    factors (``max(step, i) + 1`` for each of many entries): many values written back,
    and a chain of a thousand operations."""

    def __init__(self, step: Any) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)
        self.step = step
        self.total = step
        self.log: list[Any] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        total = self.step
        for i in range(1000):
            total = total + i
        self.total = total
        self.log = [max(self.step, i) + 1 for i in range(200)]
        return self.lin(x) * self.step


def long_writeback(mark: str | None) -> Outcome:
    """Many values and a long chain written back every step; ``mark`` is ``"step"``
    (``mark_dynamic_attr``: a plain int) or ``"DynamicInt"`` (the attribute holds one)."""
    model = StepLog(_ds().DynamicInt(0) if mark == "DynamicInt" else 0)
    twin = copy.deepcopy(model)
    if mark == "step":
        _ds().mark_dynamic_attr(model, "step")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    outs = []
    for i in range(6):
        got = compiled(x)
        _same(got, twin(x), True, f"call {i}")
        assert _stored(model) == _stored(twin), f"call {i}: stored values differ from eager"
        outs.append(got.detach())
    return counter.frame_count, outs


class Decay(torch.nn.Module):
    """A step counter and a decaying scale written every call (``self.step += 1``,
    ``self.scale = self.scale * 0.5``)."""

    def __init__(self, step: Any, scale: Any) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)
        self.step = step
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        self.scale = self.scale * 0.5
        return self.lin(x) * self.step + self.scale


def disabled_then_marked(mark: str | None) -> Outcome:
    """A model holding a ``DynamicInt`` and a ``DynamicFloat`` (``mark="DynamicInt"``) run
    for three steps inside ``dynscalar.disabled()`` (an A/B check against stock torch) and
    then without it: inside, every value is compiled as the plain value it holds, and the
    attributes keep their class and spec, so the steps after the block compile once."""
    ds = _ds() if mark is not None else None
    step, scale = (ds.DynamicInt(0), ds.DynamicFloat(1.0)) if ds is not None else (0, 1.0)
    model = Decay(step, scale)
    twin = copy.deepcopy(model)
    counter = CountingBackend("aot_eager")
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    outs = []

    def steps(first: int, last: int) -> None:
        compiled = torch.compile(model, backend=counter)
        for i in range(first, last):
            got = compiled(x)
            _same(got, twin(x), True, f"call {i}")
            assert _stored(model) == _stored(twin), f"call {i}: stored values differ from eager"
            outs.append(got.detach())

    if ds is not None:
        with ds.disabled():
            steps(0, 3)
    else:
        steps(0, 3)
    steps(3, 8)
    return counter.frame_count, outs


def sam_wrapper(mark: str | None) -> Outcome:
    """pytorch-optimizer's SAM (``tests/optim_patterns.py``) over SGD with momentum: LambdaLR
    on the base optimizer, ``rho`` changed every step; the compiled step pops ``old_p``
    from the state it shares with the base optimizer and calls its (patched) ``step``.
    ``mark``: ``"rho,lr"`` marked on the wrapper, or ``"base:lr"`` on the base optimizer.
    Weights and momentum buffers equal eager's bit for bit."""
    import warnings

    from .optim_patterns import SAM

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
    opts = [
        SAM(m.parameters(), torch.optim.SGD, rho=0.05, lr=0.1, momentum=0.9) for m in (model, twin)
    ]
    scheds = [torch.optim.lr_scheduler.LambdaLR(o.base_optimizer, lambda e: 0.8**e) for o in opts]
    if mark is not None:
        target, keys = (
            (opts[0].base_optimizer, mark[5:]) if mark.startswith("base:") else (opts[0], mark)
        )
        _ds().mark_dynamic_param_groups(target, *keys.split(","))
    counter = CountingBackend("aot_eager")
    step = torch.compile(opts[0].step, backend=counter)

    def closure_of(m: torch.nn.Module, opt: Any) -> Callable[[], torch.Tensor]:
        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            return loss

        return closure

    with warnings.catch_warnings():
        # the closure's loss crosses a graph break; Dynamo reads its .grad (stock too)
        warnings.filterwarnings("ignore", "The .grad attribute of a Tensor that is not a leaf")
        for i in range(5):
            for m, opt, sched, run in zip(
                (model, twin), opts, scheds, (step, opts[1].step), strict=True
            ):
                closure = closure_of(m, opt)
                closure()
                run(closure)
                sched.step()
                for group in opt.param_groups:
                    group["rho"] = 0.05 + 0.01 * (i + 1)
            for a, b in zip(model.parameters(), twin.parameters(), strict=True):
                _same(a, b, True, f"step {i}")
    buffers = [[o.state[p]["momentum_buffer"] for p in o.base_optimizer.state] for o in opts]
    for a, b in zip(*buffers, strict=True):
        _same(a, b, True, "momentum buffer")
    return counter.frame_count, [p.detach().clone() for p in model.parameters()]


def debias_math_pow(mark: str | None) -> Outcome:
    """pytorch-optimizer's Adam step (``tests/optim_patterns.py``): ``group['step'] += 1``
    and ``1.0 - math.pow(beta, step)``; ``mark``: ``"step"``.  torch's FMA decomposition of
    ``addcmul_(value=)`` is off, so stock's compiled step is eager's bit for bit too."""
    from .optim_patterns import DebiasedAdam

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
    opts = [DebiasedAdam(m.parameters()) for m in (model, twin)]
    if mark is not None:
        for opt in opts:
            for group in opt.param_groups:
                group.setdefault("step", 0)
        _ds().mark_dynamic_param_groups(opts[0], *mark.split(","))
    counter = CountingBackend("aot_eager")
    step = torch.compile(opts[0].step, backend=counter)
    with torch._dynamo.config.patch(enable_dynamo_decompositions=False):
        for i in range(6):
            for m, opt, run in zip((model, twin), opts, (step, opts[1].step), strict=True):
                opt.zero_grad()
                m(x * (i + 1)).pow(2).sum().backward()
                run()
            for a, b in zip(model.parameters(), twin.parameters(), strict=True):
                _same(a, b, True, f"step {i}")
    return counter.frame_count, [p.detach().clone() for p in model.parameters()]


class _Config:
    """A model config shared by its modules (transformers' ``PretrainedConfig``)."""

    def __init__(self, mask_ratio: float) -> None:
        self.mask_ratio = mask_ratio


class RandomMasking(torch.nn.Module):
    """ViTMAE's ``random_masking`` (transformers, modeling_vit_mae.py): keeps
    ``int(seq_length * (1 - config.mask_ratio))`` patches, a size computed from a float."""

    def __init__(self, config: _Config) -> None:
        super().__init__()
        self.config = config
        self.project = torch.nn.Linear(4, 4)

    def forward(self, sequence: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        _, seq_length, dim = sequence.shape
        len_keep = int(seq_length * (1 - self.config.mask_ratio))
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        kept = torch.gather(sequence, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, dim))
        return self.project(kept).sum(dim=1)


def mask_ratio_curriculum(mark: str | None) -> Outcome:
    """A mask-ratio curriculum on ViTMAE's masking (``mark="DynamicFloat"``: the config
    holds a ``DynamicFloat``); ratios at rounding edges of ``int(10 * (1 - r))``."""
    torch.manual_seed(0)
    config = _Config(0.75)
    model = RandomMasking(config)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    sequence = torch.linspace(-1.0, 1.0, 80).reshape(2, 10, 4)
    noise = torch.linspace(0.0, 1.0, 20).reshape(2, 10).flip(1)
    outs = []
    for ratio in (0.75, 0.7, 0.9, 0.3, 0.45, 0.6):
        config.mask_ratio = _ds().DynamicFloat(ratio) if mark is not None else ratio
        got = compiled(sequence, noise)
        config.mask_ratio = ratio
        _same(got, model(sequence, noise), True, f"ratio={ratio}")
        outs.append(got.detach())
    return counter.frame_count, outs


class _Codebook(torch.nn.Module):
    """vector-quantize-pytorch's codebook: a graph break (its ``init_embed_`` branches on
    a buffer), then Gumbel sampling at the temperature it is passed (fixed noise)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 32).reshape(8, 4))
        self.register_buffer("noise", torch.linspace(-0.5, 0.5, 48).reshape(6, 8))

    def forward(self, x: torch.Tensor, temperature: float) -> torch.Tensor:
        torch._dynamo.graph_break()
        logits = x @ self.embed.T / temperature + self.noise
        onehot = torch.nn.functional.one_hot(logits.argmax(-1), 8).to(x.dtype)
        return onehot @ self.embed


class _Quantizer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.project = torch.nn.Linear(4, 4)
        self.codebook = _Codebook()

    def forward(self, x: torch.Tensor, temperature: float) -> torch.Tensor:
        y = self.project(x) * temperature
        torch._dynamo.graph_break()
        return self.codebook(y, temperature) + temperature


def argument_across_graph_break(mark: str | None) -> Outcome:
    """A marked argument (a Gumbel temperature annealed per step) used before and after a
    graph break, and passed to a module whose forward graph-breaks (a frame of its own)."""
    torch.manual_seed(0)
    model = _Quantizer()
    if mark is not None:
        _mark_args(model, mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 24).reshape(6, 4)
    outs = []
    with torch.no_grad():
        for step in range(6):
            temperature = 1.0 - 0.15 * step
            got = compiled(x, temperature)
            _same(got, model(x, temperature), True, f"temperature={temperature}")
            outs.append(got)
    return counter.frame_count, outs


# ----------------------------------------------------------------------------- autocast
def amp_attention_dropout(mark: str | None) -> Outcome:
    """Hugging Face's attention dropout scheduled per step, trained under bf16 autocast
    (SDPA's autocast policy: lower precision; the output bfloat16 as eager's).  Stock
    aot_eager is not bit for bit here (3e-2 relative in bf16); marked, it is."""
    from .attention_patterns import HFAttention

    torch.manual_seed(0)  # the same weights in the stock process and here
    model = _NonLeafInput(HFAttention(attention_dropout=0.1))
    return _scheduled_training(
        mark, model, "inner", "attention_dropout", (3, 5, 8), autocast=torch.bfloat16
    )


class _NonLeafInput(torch.nn.Module):
    """``inner`` of an input that is no leaf, as a model's hidden states are (an
    embedding's output): autocast's cache casts a leaf that requires grad once per region,
    and eager sums its gradient in the low precision, where compiled graphs (stock's too)
    sum it in float32."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x * 1.0)  # type: ignore[no-any-return]


class _BiasedAttention(torch.nn.Module):
    """An attention with a learned float bias as its mask (T5-style position bias) and a
    scale that warms up."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 24)
        self.bias = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 25).reshape(5, 5))
        self.scale = 0.3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.proj(x).chunk(3, dim=-1)
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=self.bias, scale=self.scale
        )


def _amp_steps(
    mark: str | None,
    model: torch.nn.Module,
    owner: str,
    name: str,
    values: list[float],
    inputs: tuple[torch.Tensor, ...],
    dtype: torch.dtype,
    stock_exact: bool = True,
) -> Outcome:
    """SGD steps of ``model`` under ``torch.autocast("cpu", dtype=dtype)`` (forward inside,
    backward outside, as AMP trains), ``owner.name`` set to each of ``values``: outputs,
    gradients and parameters after each step equal an eager twin's bit for bit (where
    stock torch.compile is not, ``stock_exact=False``, only a marked run is compared: it
    is bit for bit; the unmarked run is compared with stock's own outputs)."""
    twin = copy.deepcopy(model)
    targets = [m.get_submodule(owner) if owner else m for m in (model, twin)]
    if mark is not None:
        _ds().mark_dynamic_attr(targets[0], mark)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    outs = []
    for i, value in enumerate(values):
        results = []
        for fn, m, target in ((compiled, model, targets[0]), (twin, twin, targets[1])):
            setattr(target, name, value)
            m.zero_grad()
            with torch.autocast("cpu", dtype=dtype):
                out = fn(*inputs)
            out.float().pow(2).sum().backward()
            with torch.no_grad():
                for param in m.parameters():
                    param -= 0.1 * param.grad
            results.append([out.detach(), *[p.grad for p in m.parameters()], *m.parameters()])
        if stock_exact or mark is not None:
            for j, (a, b) in enumerate(zip(*results, strict=True)):
                _same(a, b, True, f"step {i}, tensor {j}")
        outs.append(results[0][0])
    return counter.frame_count, outs


def amp_label_smoothing(mark: str | None) -> Outcome:
    """``CrossEntropyLoss(label_smoothing=)`` ramped per step under bf16 autocast (its
    autocast policy: float32, so the loss is float32 as eager's)."""
    from .autocast_patterns import Smoothed

    torch.manual_seed(0)
    model = Smoothed()
    x = torch.linspace(-2.0, 2.0, 24).reshape(4, 6)
    target = torch.tensor([0, 3, 1, 4])
    values = [0.1, 0.15, 0.2, 0.25]
    return _amp_steps(mark, model, "loss", "label_smoothing", values, (x, target), torch.bfloat16)


def amp_attention_bias_scale(mark: str | None) -> Outcome:
    """SDPA with a learned float mask (it requires grad: ATen's math path, in eager and
    marked alike) and a scale that warms up, under bf16 autocast.  Stock aot_eager is not
    bit for bit here (its graph holds the math path's ops: 3e-3 off in bf16); marked, the
    op is eager's kernel, bit for bit."""
    torch.manual_seed(0)
    x = torch.linspace(-1.0, 1.0, 80).reshape(2, 5, 8)
    values = [0.3, 0.35, 0.4, 0.45]
    model = _BiasedAttention()
    return _amp_steps(mark, model, "", "scale", values, (x,), torch.bfloat16, stock_exact=False)


def amp_margin_losses(mark: str | None) -> Outcome:
    """Huber, hinge-embedding, triplet, cosine-embedding and Poisson losses and a cdist
    whose margins, delta, eps and norm order change per call, under float16 autocast (each
    op's policy casts to float32; cdist's is float32 too), with gradients.  Each loss has
    inputs of its own: a composite op whose input reaches several of its ATen calls sums
    that input's gradient, as one opaque op, in another order than eager's autograd does
    where the input also reaches another op (1 ulp; stock decomposes as eager does)."""

    def losses(
        a: torch.Tensor, b: torch.Tensor, delta: float, margin: float, eps: float, p: float
    ) -> torch.Tensor:
        F = torch.nn.functional
        y = torch.tensor([1.0, -1.0, 1.0, -1.0])
        a1, a2, a3, a4, a5, a6 = (a * k for k in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
        total = F.huber_loss(a1, b, delta=delta)
        total = total + F.hinge_embedding_loss(a2.sum(1), y, margin=margin)
        total = total + F.triplet_margin_loss(a3, b, a3.flip(0), margin=margin)
        total = total + F.cosine_embedding_loss(a4, b * 2, y, margin=margin / 4)
        total = total + F.poisson_nll_loss(a5, b.abs(), eps=eps)
        return total + torch.cdist(a6, b, p=p).sum()

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(losses, backend=counter)
    if mark is not None:
        _mark_args(compiled, mark)
    base = torch.linspace(-1.0, 1.0, 24).reshape(4, 6)
    outs = []
    for i in range(4):
        values = (1.0 + 0.1 * i, 0.5 + 0.1 * i, 1e-8 * (i + 1), 2.0 + 0.25 * i)
        results = []
        for fn in (compiled, losses):
            a, b = base.clone().requires_grad_(True), base.flip(1).clone().requires_grad_(True)
            with torch.autocast("cpu", dtype=torch.float16):
                out = fn(a, b, *values)
            out.backward()
            results.append([out.detach(), a.grad, b.grad])
        for j, (got, want) in enumerate(zip(*results, strict=True)):
            _same(got, want, True, f"call {i}, tensor {j}")
        outs += results[0]
    return counter.frame_count, outs


SCENARIOS: dict[str, Callable[[str | None], Outcome]] = {
    "clamp_bounds": clamp_bounds,
    "top_k_sampling": top_k_sampling,
    "adamw_one_cycle": adamw_one_cycle,
    "ppo_clipped_loss": ppo_clipped_loss,
    "timm_drop_path": timm_drop_path,
    "dropout_schedule": dropout_schedule,
    "dropout_sgd_steps": dropout_sgd_steps,
    "ema_no_grad": ema_no_grad,
    "keyword_argument": keyword_argument,
    "int_after_proxy": int_after_proxy,
    "remark_between_calls": remark_between_calls,
    "property_side_effect": property_side_effect,
    "property_raising_getter": property_raising_getter,
    "ppo_clipped_bfloat16": ppo_clipped_bfloat16,
    "sgd_momentum_lr": sgd_momentum_lr,
    "adam_lr_betas": adam_lr_betas,
    "dropout_transposed_from_zero": dropout_transposed_from_zero,
    "focal_loss_gamma": focal_loss_gamma,
    "layer_norm_eps_grad": layer_norm_eps_grad,
    "long_writeback": long_writeback,
    "disabled_then_marked": disabled_then_marked,
    "sam_wrapper": sam_wrapper,
    "debias_math_pow": debias_math_pow,
    "mask_ratio_curriculum": mask_ratio_curriculum,
    "argument_across_graph_break": argument_across_graph_break,
    "checkpointed_dropout": checkpointed_dropout,
    "hf_attention_dropout": hf_attention_dropout,
    "amp_attention_dropout": amp_attention_dropout,
    "amp_label_smoothing": amp_label_smoothing,
    "amp_attention_bias_scale": amp_attention_bias_scale,
    "amp_margin_losses": amp_margin_losses,
}


def run(name: str, mark: str | None) -> Outcome:
    torch._dynamo.reset()
    try:
        return SCENARIOS[name](mark)
    finally:
        while _undo:
            _undo.pop()()
        torch._dynamo.reset()


if __name__ == "__main__":
    results = {name: run(name, None) for name in SCENARIOS}
    assert "dynscalar" not in sys.modules, "the stock run imported dynscalar"
    torch.save(results, sys.argv[1])
