"""Code nobody here wrote: tiny models of real libraries, built from a config (no downloads).

Run with ``pip install -e ".[reallib]" && pytest -m reallib`` (deselected by default: they
take about a minute on 2 cores). Each test compares with the eager model and asserts the
exact number of compiled graphs.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend

pytestmark = pytest.mark.reallib


def _import_vision(name: str) -> Any:
    """timm or torchvision.  The registry's torchvision wheel is a CUDA build whose C ops do
    not load next to a CPU torch; its fake-op registrations are skipped (no test here uses a
    torchvision C op: DropPath and StochasticDepth are Python)."""
    sys.modules.setdefault(
        "torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations")
    )
    return pytest.importorskip(name, reason="needs the reallib extra")


def _same_draws(compiled: Any, eager: Any, x: torch.Tensor, seed: int) -> None:
    torch.manual_seed(seed)
    got = compiled(x)
    torch.manual_seed(seed)
    torch.testing.assert_close(got, eager(x), rtol=0, atol=0)


@pytest.mark.parametrize(("mark", "graphs"), [(False, 5), (True, 1)])
def test_timm_vit_stochastic_depth_schedule(mark: bool, graphs: int) -> None:
    """timm's DropPath (``bernoulli_(keep_prob)``) with a drop-path rate that ramps up:
    stock 5 graphs for 5 rates, marked 1; eager's random numbers either way."""
    timm = _import_vision("timm")
    torch.manual_seed(0)
    model = timm.models.VisionTransformer(
        img_size=16,
        patch_size=8,
        embed_dim=32,
        depth=2,
        num_heads=2,
        num_classes=4,
        drop_path_rate=0.1,
    ).train()
    eager = copy.deepcopy(model)

    def paths(m: torch.nn.Module) -> list[Any]:
        return [x for x in m.modules() if type(x).__name__ == "DropPath"]

    if mark:
        for path in paths(model):
            ds.mark_dynamic_attr(path, "drop_prob")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(2, 3, 16, 16)
    for i, rate in enumerate([0.1, 0.15, 0.2, 0.25, 0.3]):
        for m in (model, eager):
            for j, path in enumerate(paths(m)):
                path.drop_prob = rate * (j + 1) / 2
        _same_draws(compiled, eager, x, i)
    assert counter.frame_count == graphs


@pytest.mark.parametrize(("mark", "graphs"), [(False, 5), (True, 1)])
def test_torchvision_stochastic_depth_schedule(mark: bool, graphs: int) -> None:
    torchvision = _import_vision("torchvision")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 8), torchvision.ops.StochasticDepth(0.1, "row")
    ).train()
    eager = copy.deepcopy(model)
    if mark:
        ds.mark_dynamic_attr(model[1], "p")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(6, 8)
    for i, p in enumerate([0.1, 0.2, 0.3, 0.4, 0.5]):
        model[1].p = eager[1].p = p
        _same_draws(compiled, eager, x, i)
    assert counter.frame_count == graphs


@pytest.mark.parametrize(("mark", "graphs"), [(False, 3), (True, 2)])
def test_timm_model_ema_v3_warmup_step(mark: bool, graphs: int) -> None:
    """ModelEmaV3.update is ``@torch.no_grad()``; its decay warms up with ``step`` (two
    paths: ``step <= 0`` returns 0.0)."""
    timm_utils = _import_vision("timm.utils")
    net = torch.nn.Linear(4, 4)
    ema = timm_utils.ModelEmaV3(net, decay=0.999, use_warmup=True)
    twin = timm_utils.ModelEmaV3(net, decay=0.999, use_warmup=True)
    update = ema.update
    if mark:
        ds.mark_dynamic_args(update, "step")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(update, backend=counter)
    try:
        for step in range(6):
            with torch.no_grad():
                for p in net.parameters():
                    p.add_(0.1)
            compiled(net, step=step)
            twin.update(net, step=step)
            for a, b in zip(ema.module.parameters(), twin.module.parameters(), strict=True):
                torch.testing.assert_close(a, b, rtol=0, atol=0)
    finally:
        if mark:
            ds.unmark_dynamic_args(update, "step")  # the mark is on the method's code
    assert counter.frame_count == graphs


def _tiny_llama(**config: Any) -> Any:
    """A LlamaForCausalLM with a 64-token vocabulary and 32-wide layers, from a config."""
    transformers = _import_transformers()
    sizes = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64}
    heads = {"num_attention_heads": 4, "num_key_value_heads": 2}
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**sizes, **heads, **config))


def _num_items_in_batch_graphs(model: torch.nn.Module, how: str) -> int:
    """Five loss computations with ``num_items_in_batch`` 5..9 (``how``: ``stock``, ``mark``
    on the model's forward, or a ``DynamicInt``), each equal to an eager twin's bit for bit;
    returns the graphs compiled (aot_eager)."""
    eager = copy.deepcopy(model)
    if how == "mark":
        ds.mark_dynamic_args(model, "num_items_in_batch")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    ids = torch.randint(0, 64, (2, 8))
    with torch.no_grad():  # Dynamo reads `.grad` of the loss frame's non-leaf logits: a warning
        for n in range(5, 10):
            value = ds.DynamicInt(n) if how == "DynamicInt" else n
            got = compiled(input_ids=ids, labels=ids, num_items_in_batch=value).loss
            want = eager(input_ids=ids, labels=ids, num_items_in_batch=n).loss
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    return counter.frame_count


@pytest.mark.parametrize(("how", "graphs"), [("stock", 2), ("mark", 1), ("DynamicInt", 1)])
def test_transformers_loss_takes_num_items_in_batch_as_a_keyword(how: str, graphs: int) -> None:
    """LlamaForCausalLM.forward(**kwargs) hands ``num_items_in_batch`` to its loss; the
    forward is wrapped by transformers' decorators (``wrapped_func(*args, **kwargs)``)."""
    torch.manual_seed(0)
    model = _tiny_llama(num_hidden_layers=1, max_position_embeddings=64).eval()
    assert _num_items_in_batch_graphs(model, how) == graphs


@pytest.fixture(autouse=True)
def _restore_torch_configs() -> Iterator[None]:
    """Libraries change torch's global configs on import or use (k-diffusion sets
    ``suppress_errors``, after which failed compiles run eagerly and look "equal"): each
    test gets them back as they were."""
    import torch._dynamo.config
    import torch._functorch.config
    import torch._inductor.config

    configs = [torch._dynamo.config, torch._functorch.config, torch._inductor.config]
    with warnings.catch_warnings():  # (re)setting deprecated entries warns
        warnings.simplefilter("ignore", FutureWarning)
        saved = [config.save_config() for config in configs]
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for config, state in zip(configs, saved, strict=True):
            config.load_config(state)


def test_transformers_llama_attention_dropout_schedule_compiles_once_in_training() -> None:
    """LlamaAttention.attention_dropout (a float read in training, passed to SDPA as
    ``dropout_p``) follows a schedule: one graph for every value (the SDPA rule keeps the
    generator state its gradient replays), and with the same seed the loss and every
    gradient equal eager's bit for bit."""
    torch.manual_seed(0)
    model = _tiny_llama(
        num_hidden_layers=2,
        max_position_embeddings=32,
        attention_dropout=0.1,
        attn_implementation="sdpa",
    ).train()
    eager = copy.deepcopy(model)
    attentions = [m for m in model.modules() if type(m).__name__ == "LlamaAttention"]
    for attention in attentions:
        ds.mark_dynamic_attr(attention, "attention_dropout")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    ids = torch.randint(0, 64, (2, 8))
    for i, p in enumerate((0.1, 0.2, 0.3)):
        for module in (model, eager):
            for m in module.modules():
                if type(m).__name__ == "LlamaAttention":
                    m.attention_dropout = p
        results = []
        for fn, module in ((compiled, model), (eager, eager)):
            module.zero_grad()
            torch.manual_seed(i)
            loss = fn(input_ids=ids, labels=ids).loss
            loss.backward()
            grads = [q.grad for q in module.parameters() if q.grad is not None]
            results.append((loss.detach(), grads, torch.get_rng_state()))
        (loss_c, grads_c, rng_c), (loss_e, grads_e, rng_e) = results
        assert torch.equal(loss_c, loss_e), p
        assert len(grads_c) == len(grads_e)
        assert all(torch.equal(a, b) for a, b in zip(grads_c, grads_e, strict=True)), p
        assert torch.equal(rng_c, rng_e), p
    assert counter.frame_count == 1
    model.eval()
    eager.eval()
    torch.testing.assert_close(compiled(input_ids=ids).logits, eager(input_ids=ids).logits)


def test_diffusers_unet_freeu_factors_and_timestep_argument() -> None:
    """diffusers' FreeU factors (floats on the up blocks) and the UNet's `timestep` argument,
    which diffusers turns into torch.tensor([timestep]) inside a decorated forward."""
    diffusers = pytest.importorskip("diffusers", reason="needs the reallib extra")
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=32,
    ).eval()
    unet.enable_freeu(s1=0.9, s2=0.2, b1=1.2, b2=1.4)
    eager = copy.deepcopy(unet)
    blocks = [block for block in unet.up_blocks if hasattr(block, "s1")]
    for block in blocks:
        ds.mark_dynamic_attr(block, "s1", "s2", "b1", "b2")
    ds.mark_dynamic_args(unet, "timestep")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(unet, backend=counter)
    x, context = torch.randn(1, 4, 8, 8), torch.randn(1, 3, 32)
    with torch.no_grad():
        for timestep, s1 in ((999, 0.9), (980, 0.8), (960, 0.7), (940, 0.6)):
            for twin in (unet, eager):
                for block in twin.up_blocks:
                    if hasattr(block, "s1"):
                        block.s1, block.b1 = s1, 1.0 + s1 / 2
            got = compiled(x, timestep, context).sample
            torch.testing.assert_close(got, eager(x, timestep, context).sample, rtol=0, atol=0)
            assert type(timestep) is int
    # one graph; aot_eager compiles it twice because torch's float-tensorify pass restarts
    # once to drop FreeU factors the graph does not use (s2/b2 of a skipped branch)
    assert counter.frame_count == 2


def _import_beside_vision(name: str) -> Any:
    """``import name``, or skip, for a library that imports torchvision when it is
    installed (lightning through torchmetrics, transformers): torchvision is imported first
    as ``_import_vision`` does."""
    if importlib.util.find_spec("torchvision") is not None:
        _import_vision("torchvision")
    return pytest.importorskip(name, reason="needs the reallib extra")


def _import_lightning() -> Any:
    return _import_beside_vision("lightning")


def _lightning_fit(tmp_path: Path, *, compiled: bool, mark: bool) -> tuple[Any, Any, int]:
    """A LightningModule whose forward scales by a warm-up factor from ``global_step`` and
    ``current_epoch`` (both properties over the trainer's progress counters), trained by
    ``Trainer.fit`` on CPU for 3 epochs of 3 steps with ``torch.compile(model)``."""
    lightning = _import_lightning()

    class Warmup(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)
            self.losses: list[float] = []

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            warm = min(1.0, (self.global_step + 1) / 4) * 0.5**self.current_epoch
            return self.lin(x) * warm

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            return torch.nn.functional.mse_loss(self(x), y)

        def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
            self.losses.append(outputs["loss"].item())

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    module = Warmup()
    if mark:
        ds.mark_dynamic_attr(module, "global_step", "current_epoch")
    counter = CountingBackend("aot_eager")
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(12, 4), torch.randn(12, 1)), batch_size=4
    )
    trainer = lightning.Trainer(
        max_epochs=3,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's own advice (num_workers, ...)
        warnings.simplefilter("error", ds.DynscalarWarning)
        trainer.fit(torch.compile(module, backend=counter) if compiled else module, data)
    assert trainer.global_step == 9 and trainer.current_epoch == 3
    return module, trainer, counter.frame_count


@pytest.mark.parametrize(("mark", "graphs"), [(False, 9), (True, 1)])
def test_lightning_global_step_and_current_epoch_warmup(
    tmp_path: Path, mark: bool, graphs: int
) -> None:
    """Lightning's ``global_step``/``current_epoch`` are properties that read counters on
    the trainer's loops.  Stock: Lightning compiles ``training_step`` (``forward`` inlined)
    once per step, 8 times, hits ``recompile_limit`` and from then on compiles ``forward``
    alone once per step (the 9th graph); marked, the properties are followed to those
    counters: one graph for the whole run.  Losses and weights equal eager's."""
    eager, _, _ = _lightning_fit(tmp_path / "eager", compiled=False, mark=False)
    torch._dynamo.reset()
    module, _, compiled_graphs = _lightning_fit(tmp_path / "compiled", compiled=True, mark=mark)
    assert compiled_graphs == graphs
    torch.testing.assert_close(torch.tensor(module.losses), torch.tensor(eager.losses))
    torch.testing.assert_close(module.lin.weight, eager.lin.weight)
    torch.testing.assert_close(module.lin.bias, eager.lin.bias)
    if mark:
        reads = {r.attribute: r.reads for r in ds.explain(module, show=False)}
        assert reads == {
            "current_epoch": "property -> self._trainer.fit_loop.epoch_progress.current.completed",
            "global_step": "property -> self._trainer.fit_loop.epoch_loop.automatic_optimization"
            ".optim_progress.optimizer.step.total.completed",
        }


LIGHTNING_DOCTOR_REPORT = """\
dynscalar doctor: 2 Python scalars caused recompiles:

  Warmup.global_step (int, property model.global_step): 5 recompiles of Warmup.training_step
      reads model._trainer.fit_loop.epoch_loop.automatic_optimization.optim_progress.optimizer.step.total.completed
      lightning_warmup/train.py:30: warm = min(1.0, (self.global_step + 1) / 4) * 0.5**self.current_epoch
  Warmup.current_epoch (int, property model.current_epoch): 1 recompile of Warmup.training_step
      reads model._trainer.fit_loop.epoch_progress.current.completed
      lightning_warmup/train.py:30: warm = min(1.0, (self.global_step + 1) / 4) * 0.5**self.current_epoch

Fix: after `model` is created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_attr(model, "global_step", "current_epoch")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt lightning_warmup/train.py
"""  # noqa: E501 - the report's own lines


def test_lightning_doctor_names_the_properties_and_its_fix_works(tmp_path: Path) -> None:
    """The doctor on a Lightning training script: the guards are on the trainer's counters,
    the report names ``global_step``/``current_epoch`` and marks them; run again with that
    fix, nothing recompiles."""
    _import_lightning()
    from .test_doctor import doctor, fix_code, report_of

    result = doctor(tmp_path, "lightning_warmup", "train.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("global_step: 6\n")
    assert report_of(tmp_path) == LIGHTNING_DOCTOR_REPORT
    fixed = doctor(tmp_path, "lightning_warmup", "train.py", fix=fix_code(LIGHTNING_DOCTOR_REPORT))
    assert fixed.returncode == 0, fixed.stderr
    assert report_of(tmp_path) == "dynscalar doctor: no recompiles were caused by Python scalars.\n"


# ----------------------------------------------------------------------------- pytorch-optimizer
def _pytorch_optimizer() -> Any:
    return pytest.importorskip("pytorch_optimizer", reason="needs the reallib extra")


def _train_side_by_side(
    make: Any, mark: Any, backend: str, steps: int, between: Any = None, closure: bool = False
) -> int:
    """``make(model) -> optimizer`` twice (compiled, eager twin) over one model's copies;
    ``mark(optimizer)`` on the compiled one; ``between(optimizer, i)`` after each step on
    both.  Weights bit for bit after every step, the optimizer state at the end; returns
    the compiled step's graphs.  torch's FMA decomposition of ``addcmul_(value=)`` is off
    (it rounds differently from eager's kernel, stock torch too)."""
    from .optim_patterns import state_of

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    x = torch.randn(8, 4)
    opt, opt2 = make(model), make(twin)
    mark(opt)
    counter = CountingBackend(backend)
    step = torch.compile(opt.step, backend=counter)

    def loss_of(net: torch.nn.Module, o: Any, i: int) -> Any:
        def run() -> torch.Tensor:
            o.zero_grad()
            loss = net(x * (i + 1)).pow(2).sum()
            loss.backward()
            return loss

        return run

    with torch._dynamo.config.patch(enable_dynamo_decompositions=False):
        for i in range(steps):
            for net, o, run in ((model, opt, step), (twin, opt2, opt2.step)):
                compute = loss_of(net, o, i)
                compute()
                run(compute) if closure else run()
                if between is not None:
                    between(o, i)
            for p, q in zip(model.parameters(), twin.parameters(), strict=True):
                assert torch.equal(p, q), f"step {i}: {(p - q).abs().max().item()}"
    (got, got_groups), (want, want_groups) = state_of(opt), state_of(opt2)
    assert got_groups == want_groups
    for a, b in zip(got, want, strict=True):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a if isinstance(a[k], torch.Tensor))
    return counter.frame_count


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
@pytest.mark.parametrize(("mark", "graphs"), [(None, 13), ("wrapper", 8), ("base", 8)])
def test_pytorch_optimizer_sam_keeps_the_momentum_with_rho_and_lr_marked(
    mark: str | None, graphs: int
) -> None:
    """SAM over SGD with momentum, LambdaLR on the base optimizer, ``rho`` changed every
    step (aot_eager).  Marked, the learning rate reaches the base optimizer's step and the
    shared state keeps ``momentum_buffer``.  Stock: the frames reading ``lr`` compile once
    per learning rate.  The 8 marked graphs are 4 frames with a graph, each on 2 paths,
    none of them a marked value's: ``first_step`` (``len(self.state) != 0``: the state is
    empty at the first step), SGD's ``step`` (no momentum buffer yet, then one), SAM's
    ``second_step`` (it pops ``old_p`` and rebuilds the state dicts, whose keys are
    guarded: the buffers appear after the first step), and this test's closure (its
    unmarked loop counter ``i``, static at the first call, made dynamic by torch's
    automatic dynamic at the second).  Issue 49 counted the ideal as one per frame (4)."""
    po = _pytorch_optimizer()
    schedulers: list[Any] = []

    def make(model: torch.nn.Module) -> Any:
        opt = po.SAM(model.parameters(), torch.optim.SGD, rho=0.05, lr=0.1, momentum=0.9)
        schedulers.append(torch.optim.lr_scheduler.LambdaLR(opt.base_optimizer, lambda e: 0.8**e))
        return opt

    def marked(opt: Any) -> None:
        if mark is not None:
            target = opt if mark == "wrapper" else opt.base_optimizer
            ds.mark_dynamic_param_groups(target, "rho", "lr")

    def between(opt: Any, i: int) -> None:
        for sched in schedulers:
            if sched.optimizer is opt.base_optimizer:
                sched.step()
        for group in opt.param_groups:
            group["rho"] = 0.05 + 0.01 * (i + 1)

    assert _train_side_by_side(make, marked, "aot_eager", 5, between, closure=True) == graphs


@pytest.mark.parametrize(("mark", "graphs"), [(None, 10), ("wrapper", 4), ("base", 4)])
def test_pytorch_optimizer_lookahead_learning_rate_marked_on_either_optimizer(
    mark: str | None, graphs: int
) -> None:
    """Lookahead (k=3) over SGD with momentum, a new learning rate every step (aot_eager:
    stock recompiles the base optimizer's step per value)."""
    po = _pytorch_optimizer()

    def make(model: torch.nn.Module) -> Any:
        return po.Lookahead(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), k=3)

    def marked(opt: Any) -> None:
        if mark is not None:
            ds.mark_dynamic_param_groups(opt if mark == "wrapper" else opt.optimizer, "lr")

    def between(opt: Any, i: int) -> None:
        for group in opt.param_groups:
            group["lr"] = 0.1 * 0.9 ** (i + 1)

    assert _train_side_by_side(make, marked, "aot_eager", 7, between) == graphs


@pytest.mark.parametrize(("mark", "graphs"), [(False, 6), (True, 2)])
def test_pytorch_optimizer_debias_with_a_marked_step(mark: bool, graphs: int) -> None:
    """AdaBelief: ``group['step'] += 1`` and ``BaseOptimizer.debias`` (``1.0 -
    math.pow(beta, step)``); stock compiles a graph per step, marked two (the first step
    creates the state)."""
    po = _pytorch_optimizer()

    def make(model: torch.nn.Module) -> Any:
        opt = po.AdaBelief(model.parameters(), lr=1e-2)
        for group in opt.param_groups:  # the optimizer adds the key at its first step
            group.setdefault("step", 0)
        return opt

    def marked(opt: Any) -> None:
        if mark:
            ds.mark_dynamic_param_groups(opt, "step")

    assert _train_side_by_side(make, marked, "aot_eager", 6) == graphs


def _import_transformers() -> Any:
    return _import_beside_vision("transformers")


def _vq_anneal(how: str) -> int:
    """vector-quantize-pytorch's ``VectorQuantize`` with stochastic (Gumbel) code sampling,
    its ``sample_codebook_temp`` annealed over six steps.  ``forward`` graph-breaks into
    ``EuclideanCodebook.forward`` (``init_embed_`` branches on a buffer), which takes the
    temperature as an argument and graph-breaks again."""
    vqp = pytest.importorskip("vector_quantize_pytorch", reason="needs the reallib extra")
    torch.manual_seed(0)
    vq = vqp.VectorQuantize(dim=8, codebook_size=16, stochastic_sample_codes=True, decay=0.9)
    vq.train()
    eager = copy.deepcopy(vq)
    if how == "mark":
        ds.mark_dynamic_args(vq, "sample_codebook_temp")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(vq, backend=counter)
    x = torch.randn(2, 6, 8)
    for step, temp in enumerate([1.0, 0.9, 0.8, 0.7, 0.6, 0.5]):
        value = ds.DynamicFloat(temp) if how == "DynamicFloat" else temp
        torch.manual_seed(step)  # the Gumbel noise: eager's draws on aot_eager
        got = compiled(x, sample_codebook_temp=value)
        torch.manual_seed(step)
        want = eager(x, sample_codebook_temp=temp)
        for g, w in zip(got, want, strict=True):
            if isinstance(w, torch.Tensor):
                torch.testing.assert_close(g, w, rtol=0, atol=0)
        for a, b in zip(vq.buffers(), eager.buffers(), strict=True):  # the EMA codebook
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    return counter.frame_count


@pytest.mark.parametrize(("how", "graphs"), [("stock", 15), ("mark", 7), ("DynamicFloat", 7)])
def test_vector_quantize_gumbel_temperature_anneal(how: str, graphs: int) -> None:
    """The marked temperature is followed into the codebook's frame and its resume
    functions: as many graphs as a ``DynamicFloat`` argument, about half of stock's."""
    assert _vq_anneal(how) == graphs


def _vit_mae_curriculum(proxy: bool) -> int:
    """ViTMAE pre-training with a mask-ratio curriculum: ``random_masking`` keeps
    ``int(seq_length * (1 - config.mask_ratio))`` patches; the config holds a
    ``DynamicFloat`` (a config is no module, so it is marked by its value)."""
    transformers = _import_transformers()
    torch.manual_seed(0)
    config = transformers.ViTMAEConfig(
        image_size=16,
        patch_size=4,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        decoder_hidden_size=32,
        decoder_num_hidden_layers=1,
        decoder_num_attention_heads=2,
        decoder_intermediate_size=64,
        mask_ratio=0.75,
    )
    model = transformers.ViTMAEForPreTraining(config).eval()
    eager = copy.deepcopy(model)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    pixels, noise = torch.randn(2, 3, 16, 16), torch.rand(2, 16)
    for ratio in (0.75, 0.7, 0.65, 0.6, 0.5, 0.45):
        model.config.mask_ratio = ds.DynamicFloat(ratio) if proxy else ratio
        eager.config.mask_ratio = ratio
        got, want = compiled(pixels, noise=noise), eager(pixels, noise=noise)
        torch.testing.assert_close(got.loss, want.loss, rtol=0, atol=0)
        torch.testing.assert_close(got.logits, want.logits, rtol=0, atol=0)
        torch.testing.assert_close(got.mask, want.mask, rtol=0, atol=0)
    return counter.frame_count


@pytest.mark.parametrize(("proxy", "graphs"), [(False, 7), (True, 1)])
def test_vit_mae_mask_ratio_curriculum(proxy: bool, graphs: int) -> None:
    """Stock: one graph per ratio and a restart (torch's tensorify pass specializes the
    float a size is computed from); marked: one graph."""
    assert _vit_mae_curriculum(proxy) == graphs


@pytest.mark.parametrize(("how", "graphs"), [("stock", 7), ("mark", 1), ("DynamicFloat", 1)])
def test_x_transformers_top_k_fraction(how: str, graphs: int) -> None:
    """x-transformers' ``top_k`` filter: ``k = ceil(frac_num_tokens * num_tokens)``."""
    autoregressive = pytest.importorskip(
        "x_transformers.autoregressive_wrapper", reason="needs the reallib extra"
    )
    top_k = autoregressive.top_k
    if how == "mark":
        ds.mark_dynamic_args(top_k, "frac_num_tokens")
    try:
        counter = CountingBackend("aot_eager")
        compiled = torch.compile(top_k, backend=counter)
        torch.manual_seed(0)
        logits = torch.randn(2, 40)
        for frac in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35):
            value = ds.DynamicFloat(frac) if how == "DynamicFloat" else frac
            torch.testing.assert_close(compiled(logits, value), top_k(logits, frac), rtol=0, atol=0)
    finally:
        if how == "mark":
            ds.unmark_dynamic_args(top_k, "frac_num_tokens")  # the mark is on the code
    assert counter.frame_count == graphs


@pytest.mark.parametrize(("how", "graphs"), [("stock", 4), ("mark", 2), ("DynamicInt", 2)])
def test_transformers_gpt2_num_items_in_batch_across_a_graph_break(how: str, graphs: int) -> None:
    """GPT2LMHeadModel graph-breaks on a logging call in ``loss_function``; the loss
    (``ForCausalLMLoss``) then compiles as a frame of its own, where the marked
    ``num_items_in_batch`` arrives as an argument: one graph before the break, one for the
    loss (stock: the loss's frame static, then dynamic, and a restart)."""
    transformers = _import_transformers()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=32)
    model = transformers.GPT2LMHeadModel(config).eval()
    assert _num_items_in_batch_graphs(model, how) == graphs


def _schedulefree_steps(mark: bool, backend: str | None) -> tuple[list[torch.Tensor], int]:
    """schedulefree's SGDScheduleFree (foreach: ``_foreach_lerp_(y, z, ckp1)``,
    ``_foreach_add_(y, grad, alpha=lr * ...)``, ``_foreach_sub_(z, grad, alpha=lr)``) with a
    learning rate a scheduler decays, compiled ``opt.step``; (parameters, graphs)."""
    schedulefree = pytest.importorskip("schedulefree", reason="needs the reallib extra")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = schedulefree.SGDScheduleFree(model.parameters(), lr=0.1, warmup_steps=0)
    opt.train()
    if mark:
        ds.mark_dynamic_param_groups(opt, "lr")
    counter = CountingBackend(backend or "eager")
    step = torch.compile(opt.step, backend=counter) if backend else opt.step
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    for i in range(5):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        step()
        opt.param_groups[0]["lr"] = 0.1 * 0.8 ** (i + 1)
    return [p.detach().clone() for p in model.parameters()], counter.frame_count


@pytest.mark.inductor
@pytest.mark.parametrize(("mark", "graphs"), [(False, 6), (True, 2)])
def test_schedulefree_sgd_with_a_decaying_learning_rate_on_inductor(
    mark: bool, graphs: int
) -> None:
    """Stock: a graph per learning rate (``alpha=`` specializes it); marked: two, the step
    that creates the state and the steady one; no further from eager than stock."""
    got, count = _schedulefree_steps(mark, "inductor")
    want, _ = _schedulefree_steps(False, None)
    assert count == graphs
    stock, _ = _schedulefree_steps(False, "inductor") if mark else (got, count)
    for g, w, s in zip(got, want, stock, strict=True):
        assert (g - w).abs().max() <= (s - w).abs().max()


def _radam_schedulefree(keys: tuple[str, ...], steps: int = 8) -> int:
    """schedulefree's RAdamScheduleFree, compiled ``opt.step`` (aot_eager) beside an eager
    twin, a new learning rate after every step, ``keys`` marked; weights bit for bit after
    every step; returns the graphs."""
    schedulefree = pytest.importorskip("schedulefree", reason="needs the reallib extra")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    opts = [schedulefree.RAdamScheduleFree(m.parameters(), lr=0.01) for m in (model, twin)]
    for opt in opts:
        opt.train()
    if keys:
        ds.mark_dynamic_param_groups(opts[0], *keys)
    counter = CountingBackend("aot_eager")
    step = torch.compile(opts[0].step, backend=counter)
    x = torch.randn(8, 4)
    for i in range(steps):
        for net, opt, run in ((model, opts[0], step), (twin, opts[1], opts[1].step)):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            run()
            opt.param_groups[0]["lr"] = 0.01 * 0.9 ** (i + 1)
        for a, b in zip(model.parameters(), twin.parameters(), strict=True):
            assert torch.equal(a, b), f"step {i}"
    return counter.frame_count


_RADAM_FLOATS = ("lr", "lr_max", "weight_sum")


def test_schedulefree_radam_compiles_once_per_path() -> None:
    """RAdamScheduleFree with a decaying learning rate: three paths (the step that creates
    the state, ``rho_t <= 4`` and ``rho_t > 4``), three graphs with every float the step
    reads or writes marked.  The step only writes ``group["scheduled_lr"]`` (for logging),
    but Dynamo guards it by value all the same: reading ``optimizer.param_groups`` realizes
    every value of every group (``OptimizerVariable._set_capturable``), so left unmarked
    it costs one more graph when it first changes (4, the count issue 49 measured; the
    ideal is 3).  With only ``lr`` marked, ``lr_max`` and ``weight_sum`` change every step:
    a graph per step (8 for 8).  Stock torch fails at the second step: automatic dynamic
    makes ``k`` and ``lr_max`` symbolic there, and the fake run of ``weight / weight_sum``
    (both 0.0 while ``rho_t <= 4``) divides by zero (``TorchRuntimeError``) where eager's
    ``try`` catches ``ZeroDivisionError``."""
    with ds.disabled(), pytest.raises(torch._dynamo.exc.TorchRuntimeError, match="ZeroDivision"):
        _radam_schedulefree(())
    torch._dynamo.reset()
    assert _radam_schedulefree(("lr",)) == 8
    torch._dynamo.reset()
    assert _radam_schedulefree(_RADAM_FLOATS) == 4
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        assert _radam_schedulefree((*_RADAM_FLOATS, "scheduled_lr")) == 3


def test_kornia_adjustments_with_per_call_factors_compile_once() -> None:
    """kornia's ``adjust_brightness``/``adjust_contrast``/``adjust_gamma`` take a float and
    make it a tensor (``torch.as_tensor(factor, device=, dtype=)``): stock a graph per factor
    (Dynamo forces ``as_tensor``'s value), marked one, eager's numbers."""
    kornia = pytest.importorskip("kornia", reason="needs the reallib extra")

    def augment(image: torch.Tensor, b: Any, c: Any, g: Any) -> torch.Tensor:
        image = kornia.enhance.adjust_brightness(image, b)
        image = kornia.enhance.adjust_contrast(image, c)
        return kornia.enhance.adjust_gamma(image, g)

    image = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    factors = [(0.1, 1.2, 0.9), (0.2, 0.8, 1.1), (0.05, 1.0, 1.3), (0.15, 1.4, 0.7)]
    for mark, graphs in ((False, 5), (True, 1)):
        torch._dynamo.reset()
        counter = CountingBackend("aot_eager")
        compiled = torch.compile(augment, backend=counter)
        for b, c, g in factors:
            args = [ds.DynamicFloat(v) if mark else v for v in (b, c, g)]
            assert torch.equal(compiled(image, *args), augment(image, b, c, g))
        assert counter.frame_count == graphs


@pytest.mark.inductor
def test_kornia_gaussian_blur_sigma_on_inductor_needs_no_safety_net() -> None:
    """``gaussian_blur2d(sigma)`` builds ``torch.tensor([[sigma, sigma]])``: on inductor that
    ended in the safety net ("an internal error in its hook on autograd_cache_key"); now a
    stacked scalar_tensor, no warning (``filterwarnings = error``), stock inductor's numbers."""
    kornia = pytest.importorskip("kornia", reason="needs the reallib extra")

    def blur(image: torch.Tensor, sigma: Any) -> torch.Tensor:
        return kornia.filters.gaussian_blur2d(image, (5, 5), (sigma, sigma))

    image = torch.rand(1, 3, 12, 12, generator=torch.Generator().manual_seed(0))
    counter = CountingBackend("inductor")
    compiled = torch.compile(blur, backend=counter)
    for sigma in (1.0, 1.5):
        got = compiled(image, ds.DynamicFloat(sigma))
        torch.testing.assert_close(got, blur(image, sigma), rtol=1e-5, atol=1e-6)
    assert counter.frame_count == 1
