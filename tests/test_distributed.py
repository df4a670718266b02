"""DistributedDataParallel with a marked step counter: 2 gloo ranks on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import dynscalar as ds

STEPS = 10
BATCH = 8


class Counted(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 12)
        self.fc2 = torch.nn.Linear(12, 1)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.fc2(torch.tanh(self.fc1(x))) * (1.0 + 0.1 * self.step)


def data() -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(BATCH, 6, generator=g), torch.randn(BATCH, 1, generator=g))
        for _ in range(STEPS)
    ]


def initial_model() -> Counted:
    torch.manual_seed(0)
    return Counted()


def eager_reference() -> Counted:
    """The same training, single process, eager, on the full batch."""
    reference = initial_model()
    opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in data():
        torch.nn.functional.mse_loss(reference(x), y).backward()
        opt.step()
        opt.zero_grad()
    return reference


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def process_group(rank: int, world: int, port: int) -> Iterator[None]:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        yield
        # Both ranks reach here before either tears down: rank 0 hosts the TCPStore, and
        # rank 1 once aborted ("terminate called without an active exception") when rank 0
        # exited first on a loaded 2-core machine.
        dist.barrier()
    finally:
        dist.destroy_process_group()


def train_on_shard(
    model: torch.nn.Module, params: Iterable[torch.nn.Parameter], rank: int, world: int
) -> int:
    """This rank's share of each batch, compiled; returns the number of Dynamo graphs."""
    compiled = torch.compile(model, backend=lambda gm, _: gm.forward)
    opt = torch.optim.SGD(params, lr=0.1)
    shard = BATCH // world
    for x, y in data():
        xs, ys = x[rank * shard : (rank + 1) * shard], y[rank * shard : (rank + 1) * shard]
        torch.nn.functional.mse_loss(compiled(xs), ys).backward()
        opt.step()
        opt.zero_grad()
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def rank_main(rank: int, world: int, port: int, out_dir: str, mark: bool) -> None:
    with process_group(rank, world, port):
        model = initial_model()
        if mark:
            ds.mark_dynamic_attr(model, "step")
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        frames = train_on_shard(ddp, ddp.parameters(), rank, world)
        torch.save(
            {
                "params": model.state_dict(),
                "step": model.step,
                "frames": frames,
                "marked": ds.is_dynamic_attr(model, "step"),
            },
            Path(out_dir) / f"rank{rank}.pt",
        )


@pytest.mark.broad
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not built in")
@pytest.mark.parametrize("mark", [True, False], ids=["marked", "stock"])
def test_ddp_two_ranks_compile_once_and_match_eager(tmp_path: Path, mark: bool) -> None:
    """Each rank compiles its forward once (stock: once per value), params equal eager's."""
    world = 2
    mp.spawn(rank_main, args=(world, free_port(), str(tmp_path), mark), nprocs=world, join=True)
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    expected_graphs = 1 if mark else 8  # stock: recompile_limit, then eager

    reference = eager_reference()

    for r, result in enumerate(results):
        assert result["frames"] == expected_graphs, f"rank {r}: {result['frames']} graphs"
        assert result["step"] == STEPS and type(result["step"]) is int
        assert result["marked"] is mark
        for name, value in reference.state_dict().items():
            torch.testing.assert_close(result["params"][name], value, msg=f"rank {r} {name}")
    for name in reference.state_dict():
        torch.testing.assert_close(
            results[0]["params"][name], results[1]["params"][name], rtol=0, atol=0
        )


def fsdp_rank_main(rank: int, world: int, port: int, out_dir: str, mark: bool) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    with process_group(rank, world, port):
        model = initial_model()
        if mark:
            ds.mark_dynamic_attr(model, "step")
        fully_shard(model, mesh=init_device_mesh("cpu", (world,)))
        frames = train_on_shard(model, model.parameters(), rank, world)
        full = {k: v.full_tensor() for k, v in model.state_dict().items()}
        torch.save(
            {"params": full, "step": model.step, "frames": frames},
            Path(out_dir) / f"rank{rank}.pt",
        )


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not built in")
@pytest.mark.broad
def test_fsdp2_fully_shard_on_gloo_cpu(tmp_path: Path) -> None:
    """FSDP2 on CPU: marked training equals the single-process reference, no recompiles.

    fully_shard's hooks split the forward into 2 graphs; the count does not grow with steps.
    Dynamo already treats int attributes of fully_shard modules as dynamic, so stock torch
    compiles the same 2 graphs here (docs/compatibility.md).
    """
    world = 2
    counts = {}
    for mark in (True, False):
        out = tmp_path / str(mark)
        out.mkdir()
        mp.spawn(fsdp_rank_main, args=(world, free_port(), str(out), mark), nprocs=world, join=True)
        results = [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(world)]
        reference = eager_reference()
        for r, result in enumerate(results):
            assert result["step"] == STEPS
            for name, value in reference.state_dict().items():
                torch.testing.assert_close(result["params"][name], value, msg=f"rank {r} {name}")
        counts[mark] = {result["frames"] for result in results}
    assert counts[True] == counts[False] == {2}
