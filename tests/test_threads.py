"""Marking and compiling from two threads at once leaves every mark intact."""

from __future__ import annotations

import threading

import torch

import dynscalar as ds

from .helpers import CountingBackend
from .test_compile_int import UsesStep

N_ATTRS = 40
CALLS = 15


def test_concurrent_marking_of_one_module_loses_no_mark() -> None:
    shared = torch.nn.Module()
    for i in range(2 * N_ATTRS):
        setattr(shared, f"a{i}", i)
    barrier = threading.Barrier(2)

    def mark(offset: int) -> None:
        barrier.wait()
        for i in range(offset, 2 * N_ATTRS, 2):
            ds.mark_dynamic_attr(shared, f"a{i}")

    threads = [threading.Thread(target=mark, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(ds.is_dynamic_attr(shared, f"a{i}") for i in range(2 * N_ATTRS))


def test_two_threads_mark_and_compile_their_models() -> None:
    errors: list[BaseException] = []
    results: dict[int, tuple[int, bool]] = {}
    barrier = threading.Barrier(2)
    # one backend per thread: Dynamo keys compiled code by backend, so each thread compiles
    # its own model exactly once, whatever the interleaving
    counters = [CountingBackend("eager"), CountingBackend("eager")]

    def work(k: int) -> None:
        try:
            torch.manual_seed(k)
            model = UsesStep()
            eager = UsesStep()
            eager.load_state_dict(model.state_dict())
            barrier.wait()
            ds.mark_dynamic_attr(model, "step")
            compiled = torch.compile(model, backend=counters[k], fullgraph=True)
            for _ in range(CALLS):
                x = torch.randn(3, 4)
                torch.testing.assert_close(compiled(x), eager(x))
            results[k] = (model.step, ds.is_dynamic_attr(model, "step"))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {0: (CALLS, True), 1: (CALLS, True)}
    assert [c.frame_count for c in counters] == [1, 1]
