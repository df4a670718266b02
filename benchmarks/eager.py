"""Eager cost of a proxy: ``DynamicInt + 1``, torch calls receiving a proxy and the seed
model's eager forward with a proxy attribute, each against the plain value, interleaved.

    python -m benchmarks.eager                      # the cases, printed as a table
    python -m benchmarks.eager --baseline OLD.py    # + before/after against another
                                                    #   dynscalar/_proxy.py
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import torch

import dynscalar as ds
from benchmarks.harness import interleaved, paired_ratios, quantiles
from dynscalar.tools.demo_models import SeedModel


def _small(proxy: bool) -> dict[str, Callable[[], Any]]:
    """The one-operation cases, each a call on a proxy or on the plain value."""
    t = torch.ones(8, 8)
    i, two = (ds.DynamicInt(7), ds.DynamicInt(2)) if proxy else (7, 2)
    f = ds.DynamicFloat(0.5) if proxy else 0.5
    return {
        "add": lambda: i + 1,
        "tensor_mul": lambda: t * f,
        "torch_mul": lambda: torch.mul(t, two),
        "view": lambda: t.view(two, -1),
        "full": lambda: torch.full((8,), f),
    }


def _forward(proxy: bool) -> Callable[[], Any]:
    x = torch.randn(8, 64)
    torch.manual_seed(0)
    model = SeedModel().eval()
    if proxy:
        model.step = ds.DynamicInt(0)

    def forward() -> Any:
        with torch.no_grad():
            return model(x)

    return forward


def make(case: str, proxy: bool) -> Callable[[], Any]:
    """The call ``case`` times, given a proxy or the plain value."""
    return _forward(proxy) if case == "forward" else _small(proxy)[case]


#: name: (label, calls per sample at --eager-scale 1.0)
EAGER_CASES: dict[str, tuple[str, int]] = {
    "add": ("`x + 1` (DynamicInt vs int)", 20_000),
    "tensor_mul": ("`t * x`, 8x8 tensor (DynamicFloat vs float)", 2_000),
    "torch_mul": ("`torch.mul(t, x)` (DynamicInt vs int)", 2_000),
    "view": ("`t.view(x, -1)` (DynamicInt vs int)", 2_000),
    "full": ("`torch.full((8,), x)` (DynamicFloat vs float)", 2_000),
    "forward": ("seed model eager forward (DynamicInt `step` vs int)", 300),
}


def compare(fns: dict[str, Callable[[], Any]], rounds: int, number: int) -> dict[str, list[float]]:
    for fn in fns.values():  # warm up
        for _ in range(max(1, number // 10)):
            fn()
    return interleaved(fns, rounds, number)


def run_eager(cases: list[str], rounds: int, scale: float) -> dict[str, Any]:
    rows = []
    for name in cases:
        label, base = EAGER_CASES[name]
        number = max(1, int(base * scale))
        samples = compare({"plain": make(name, False), "proxy": make(name, True)}, rounds, number)
        plain, proxy = samples["plain"], samples["proxy"]
        rows.append(
            {
                "case": name,
                "label": label,
                "calls_per_sample": number,
                "plain_ns": quantiles(plain, 1e9),
                "proxy_ns": quantiles(proxy, 1e9),
                "overhead_ns": quantiles([b - a for a, b in zip(plain, proxy, strict=True)], 1e9),
                "ratio": quantiles(paired_ratios(proxy, plain)),
            }
        )
    return {"rounds": rounds, "rows": rows}


def before_after(path: str, rounds: int, number: int) -> None:
    """The same operations on another ``dynscalar/_proxy.py``'s proxies and on these."""
    spec = importlib.util.spec_from_file_location("dynscalar._proxy_baseline", path)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)
    oi, of = old.DynamicInt(7), old.DynamicFloat(0.5)
    ni, nf = ds.DynamicInt(7), ds.DynamicFloat(0.5)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "x + 1": (lambda: oi + 1, lambda: ni + 1),
        "1 + x": (lambda: 1 + oi, lambda: 1 + ni),
        "x / 2": (lambda: oi / 2, lambda: ni / 2),
        "f * 0.9": (lambda: of * 0.9, lambda: nf * 0.9),
        "-x": (lambda: -oi, lambda: -ni),
        "DynamicInt(7)": (lambda: old.DynamicInt(7), lambda: ds.DynamicInt(7)),
    }
    print(f"{'operation':<14} {'before ns':>10} {'now ns':>10} {'now/before':>11}")
    for label, (before, now) in cases.items():
        s = compare({"before": before, "now": now}, rounds, number)
        ratio = quantiles(paired_ratios(s["now"], s["before"]))["median"]
        b, n = quantiles(s["before"], 1e9)["median"], quantiles(s["now"], 1e9)["median"]
        print(f"{label:<14} {b:10.0f} {n:10.0f} {ratio:10.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--scale", type=float, default=1.0, help="calls per sample")
    parser.add_argument("--baseline", help="another dynscalar/_proxy.py to compare against")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.baseline:
        before_after(args.baseline, args.rounds, max(1, int(5_000 * args.scale)))
    print(f"{'case':<52} {'plain ns':>9} {'proxy ns':>9} {'overhead ns':>12}")
    for row in run_eager(list(EAGER_CASES), args.rounds, args.scale)["rows"]:
        p, q, o = (row[k]["median"] for k in ("plain_ns", "proxy_ns", "overhead_ns"))
        print(f"{row['label']:<52} {p:9.0f} {q:9.0f} {o:12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
