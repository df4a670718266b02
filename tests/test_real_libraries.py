"""Code nobody here wrote: tiny models of real libraries, built from a config (no downloads).

Run with ``pip install -e ".[reallib]" && pytest -m reallib`` (deselected by default: they
take about a minute on 2 cores). Each test compares with the eager model and asserts the
exact number of compiled graphs.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

import dynscalar as ds

from .conftest import CountingBackend

pytestmark = pytest.mark.reallib


def test_transformers_llama_attention_dropout_schedule_compiles_once() -> None:
    """LlamaAttention.attention_dropout (a float read in training) follows a schedule."""
    transformers = pytest.importorskip("transformers", reason="needs the reallib extra")
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        attention_dropout=0.1,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).train()
    eager = copy.deepcopy(model)
    attentions = [m for m in model.modules() if type(m).__name__ == "LlamaAttention"]
    for attention in attentions:
        ds.mark_dynamic_attr(attention, "attention_dropout")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    ids = torch.randint(0, 64, (2, 8))
    for p in (0.1, 0.2, 0.3):
        for module in (model, eager):
            for m in module.modules():
                if type(m).__name__ == "LlamaAttention":
                    m.attention_dropout = p
        # dropout draws from another stream when compiled: compare the distribution of the
        # loss over repeated calls (its mean, within 6 standard errors), not one sample
        got = torch.stack([compiled(input_ids=ids, labels=ids).loss.detach() for _ in range(30)])
        want = torch.stack([eager(input_ids=ids, labels=ids).loss.detach() for _ in range(30)])
        spread = math.sqrt((got.var() + want.var()).item() / 30)
        assert abs(got.mean() - want.mean()).item() <= 6 * spread + 1e-6, (p, got, want)
    assert counter.graphs == 1
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
    assert counter.graphs == 2
