"""Do no harm: the same programs run three ways.

1. **stock**: in a process that never imports dynscalar (``python -m tests.harm_scenarios``);
2. **imported, unmarked**: here, with dynscalar's bridge installed and nothing marked;
3. **marked**: here, with one value marked.

The unmarked run must equal stock: the same number of graphs and bit-identical outputs.
The marked run must compile no more often than stock (here: an exact count, each at or
below stock's), raise nothing stock does not, and equal its eager twin (every scenario
compares each call with eager, gradients and parameters included).  The scenarios are the
patterns of real libraries (x-transformers' top-k sampling, AdamW with OneCycleLR, PPO's
clipped loss, timm's DropPath, dropout schedules, timm's EMA update, a Hugging Face
forward taking ``**kwargs``, PyTorch's own dynamic-int test, set-up code marking again in
a loop, property getters with a side effect or that cannot run yet, as Lightning's
``trainer``, a step that writes back many values and a long chain, a model stepped inside
``dynscalar.disabled()`` and after it, pytorch-optimizer's SAM wrapper and ``math.pow``
debiasing, ViTMAE's mask-ratio curriculum, vector-quantize-pytorch's temperature across
graph breaks, a dropout and Hugging Face's attention dropout scheduled inside activation
checkpoints), written out in ``tests/harm_scenarios.py``; ``tests/test_real_libraries.py``
runs the libraries themselves.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

import dynscalar as ds

from . import harm_scenarios
from .helpers import NOOP_GRAPHS_NOT_COMPILED, TENSORIFY_RESTARTS_INSTEAD_OF_BAKING, run_interpreter

#: scenario -> {mark: graphs compiled with that mark}; the note says what changed.
MARKED: dict[str, dict[str, int]] = {
    # the marked bound is decomposed; the other float, unmarked, is forced by clamp and
    # remembered as stock remembers it (mark "a": as stock)
    "clamp_bounds": {"eps": 2, "a": 6},
    # k = ceil(frac * n) is a size: a Python int computed at run time on aot_eager, so frac
    # stays dynamic; the unmarked float recompiles as in stock
    "top_k_sampling": {"temperature": 5, "frac": 4, "frac,temperature": 1},
    # lr alone: beta1 (unmarked, cycled too) still recompiles as in stock
    "adamw_one_cycle": {"lr": 7, "lr,betas": 1},
    "ppo_clipped_loss": {"clip_eps": 1},
    "timm_drop_path": {"drop_prob": 1},
    "dropout_schedule": {"p": 1},
    "dropout_sgd_steps": {"p": 1},
    "ema_no_grad": {"step": 1},
    "keyword_argument": {"num_items_in_batch": 1},
    # a plain int reuses the DynamicInt's graph: nothing in it can tell them apart
    "int_after_proxy": {"DynamicInt": 1},
    # the same mark made again elsewhere between calls: no recompile of unrelated code
    "remark_between_calls": {"args": 2, "attrs": 2, "class": 2, "param_groups": 2},
    "property_side_effect": {"global_step": 1},
    "property_raising_getter": {"warmup": 1},
    # op rules: eager's kernels on aot_eager (bf16 clamp, SGD's alpha, Adam's lerp_/pow,
    # dropout's paths at p == 0, pow's and layer_norm's gradients)
    "ppo_clipped_bfloat16": {"clip_eps": 1},
    "sgd_momentum_lr": {"lr": 2},  # the first step makes the momentum buffers: 2 paths
    "adam_lr_betas": {"lr": 8, "lr,betas": 1},  # betas cycle too: unmarked, as stock
    "dropout_transposed_from_zero": {"p": 2},  # p == 0 and p != 0: two paths
    "focal_loss_gamma": {"gamma": 1},
    "layer_norm_eps_grad": {"eps": 1},
    "long_writeback": {"step": 1, "DynamicInt": 1},
    # three graphs inside disabled() (each value compiled as the plain value, as stock;
    # where the float-tensorify pass restarts, the second value's graph twice, as stock),
    # then one for every later step: the attributes kept their class and spec
    "disabled_then_marked": {"DynamicInt": 5 if TENSORIFY_RESTARTS_INSTEAD_OF_BAKING else 4},
    # the marks reach the base optimizer's step; the rebuilt state dicts' keys are guarded
    "sam_wrapper": {"rho,lr": 5, "base:lr": 5},
    # the first step creates the state (one path), every later step shares the second graph
    "debias_math_pow": {"step": 2},
    # a size from a float: symbolic on aot_eager, exact at rounding edges; two paths
    # (int(10 * (1 - 0.9)) keeps no patch: a size 0)
    "mask_ratio_curriculum": {"DynamicFloat": 2},
    # one graph in each frame: forward before its break, after it (up to the codebook
    # call: it computes nothing, and torch >= 2.15 compiles no such graph, stock neither),
    # the codebook after its own break, forward's rest
    "argument_across_graph_break": {"temperature": 3 if NOOP_GRAPHS_NOT_COMPILED else 4},
    # random rules: the draws replayed where torch recomputes the checkpointed region
    "checkpointed_dropout": {"p": 1},
    "hf_attention_dropout": {"attention_dropout": 1},
    # under autocast: eager's kernel under the autocast state the call was traced under
    "amp_attention_dropout": {"attention_dropout": 1},
    "amp_label_smoothing": {"label_smoothing": 1},
    "amp_attention_bias_scale": {"scale": 1},
    "amp_margin_losses": {"delta,margin,eps,p": 1},
}


#: marks torch specializes anyway (exact, one compile per value, one SpecializationWarning)
SPECIALIZED: set[tuple[str, str]] = set()


@pytest.fixture(scope="module")
def stock(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario's (graphs, outputs) from a process that never imports dynscalar."""
    out = tmp_path_factory.mktemp("stock") / "stock.pt"
    result = run_interpreter("-m", "tests.harm_scenarios", str(out), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded: dict[str, Any] = torch.load(out)
    return loaded


@pytest.mark.parametrize("name", sorted(harm_scenarios.SCENARIOS))
@pytest.mark.broad
def test_imported_and_unmarked_equals_stock(name: str, stock: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        graphs, outputs = harm_scenarios.run(name, None)
    stock_graphs, stock_outputs = stock[name]
    assert graphs == stock_graphs
    assert len(outputs) == len(stock_outputs)
    for got, want in zip(outputs, stock_outputs, strict=True):
        assert torch.equal(got, want)


@pytest.mark.parametrize(
    ("name", "mark", "graphs"),
    [(name, mark, graphs) for name, marks in MARKED.items() for mark, graphs in marks.items()],
)
@pytest.mark.broad
def test_a_mark_never_compiles_more_than_stock(
    name: str, mark: str, graphs: int, stock: dict[str, Any]
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, _ = harm_scenarios.run(name, mark)  # each call compared with eager inside
    warned = [w for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert len(warned) == ((name, mark) in SPECIALIZED), [str(w.message) for w in warned]
    assert got == graphs
    assert graphs <= stock[name][0], f"stock compiled {stock[name][0]} graphs"


def test_every_scenario_is_marked_somewhere() -> None:
    assert set(MARKED) == set(harm_scenarios.SCENARIOS)
