"""The GPU check: dynscalar on one CUDA device, in at most 8 minutes, one JSON.

    python scripts/gpu_check.py --out gpu-check.json     # from the repository root
    python scripts/gpu_check.py --plan                   # the steps and their limits

Each step runs in its own process under a time limit (a step that runs out is recorded
as ``timed_out`` with what it printed; the next one runs); the limits add up to 470 s:

* ``columns_python`` (100 s): the ``python`` column (eager/aot_eager) of every op rule on
  CUDA for float32, bfloat16 and float16, with the exactness harness
  (``python -m dynscalar measure --rules all --backend python --device cuda``);
* ``columns_inductor`` (100 s): the scalar forms' inductor cells on CUDA (``--forms all``),
  float32 first, then bfloat16 and float16 as far as the time goes (each cell is stored
  when measured); the rules' inductor cells (tensor forms) are not in the budget;
* ``cuda_core`` (60 s): compile counts with CUDA tensors, each beside an eager twin: a
  marked int and a marked float on aot_eager and inductor, a marked dropout ``p`` in
  training (ATen's fused kernel on CUDA) and LayerNorm ``eps`` on aot_eager;
* ``reduce_overhead`` (60 s): ``mode="reduce-overhead"`` with a marked int and a marked
  float, over five values each: compiles, CUDA graph recordings (``capture_begin``
  calls), cudagraph skips, and each value's output against eager;
* ``core_tests`` (60 s): the core compile-count tests (``tests/test_compile_int.py``,
  ``tests/test_compile_float.py``, not inductor) on this machine's torch;
* ``optim_sweep`` (90 s): the optimizer sweep's inductor examples with the model and its
  optimizer state on CUDA (``tests/optim_sweep``, ``DEVICE = "cuda"``).

The measured cells go to ``<out>.cache/measured.json`` (``DYNSCALAR_CACHE_DIR`` for every
step, so later steps use them) and into the JSON's ``columns``, in ``admitted.json``'s
format: once reviewed, ``python -m tests.ops_matrix --import gpu-check.json`` merges them
into ``dynscalar/ops/admitted.json`` (and renders the op-coverage page).

Without a CUDA device it writes ``{"cuda": false, "ran": [], ...}`` and exits with 3 and
one line saying so.  The JSON's shape (``docs/compatibility.md#cuda`` shows a sample)::

    {"schema": 1, "cuda": true, "torch": "...", "device": "NVIDIA H100 ...",
     "capability": [9, 0], "budget_s": 480, "wall_s": 431.2, "ran": ["columns_python", ...],
     "steps": {"<step>": {"limit_s": 100, "wall_s": 73.1, "returncode": 0,
                          "timed_out": false, "result": {...} | null, "tail": "..."}},
     "columns": {"python torch-2.13 cuda": {"torch": "...", "cells": {...}}, ...}}
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 8 * 60

_MEASURE = [sys.executable, "-m", "dynscalar", "measure", "--device", "cuda"]
_DTYPES = "float32,bfloat16,float16"

#: the cases of ``cuda_core``: (name, backend, what is marked); each compiled beside eager
CUDA_CORE = r"""
import json, warnings
import torch
import dynscalar as ds
from torch._dynamo.testing import CompileCounterWithBackend

device = "cuda"
results = {}

def case(name, backend, make, values, seed=None):
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    model, eager, set_value = make()
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(8, 16, device=device)
    same, diff = True, 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for v in values:
            set_value(v)
            if seed is not None:
                torch.manual_seed(seed)
            got = compiled(x)
            if seed is not None:
                torch.manual_seed(seed)
            want = eager(x)
            same = same and torch.equal(got, want)
            diff = max(diff, float((got - want).abs().max()))
    spec = [str(w.message)[:300] for w in caught
            if issubclass(w.category, ds.SpecializationWarning)]
    results[name] = {"graphs": counter.frame_count, "values": len(values),
                     "eager_equal": bool(same), "max_abs_diff": diff, "warnings": spec}

class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0
        self.scale = 0.5
    def forward(self, x):
        return x * self.step + x.sin() * self.scale

def counter_model(attr):
    def make():
        m, e = Step().to(device), Step().to(device)
        ds.mark_dynamic_attr(m, attr)
        def set_value(v):
            setattr(m, attr, v); setattr(e, attr, v)
        return m, e, set_value
    return make

def nn_model(cls, attr, *args, train=False):
    def make():
        m, e = cls(*args).to(device), cls(*args).to(device)
        m.train(train); e.train(train)
        ds.mark_dynamic_attr(m, attr)
        def set_value(v):
            setattr(m, attr, v); setattr(e, attr, v)
        return m, e, set_value
    return make

for backend in ("aot_eager", "inductor"):
    case(f"int step {backend}", backend, counter_model("step"), [1, 2, 3, 4])
    case(f"float scale {backend}", backend, counter_model("scale"), [0.5, 0.25, 1.5, 2.0])
with torch.no_grad():
    case("LayerNorm eps aot_eager", "aot_eager", nn_model(torch.nn.LayerNorm, "eps", 16),
         [1e-5, 1e-3, 1e-2])
case("Dropout p train aot_eager (fused kernel)", "aot_eager",
     nn_model(torch.nn.Dropout, "p", train=True), [0.1, 0.25, 0.5], seed=0)
print("RESULT " + json.dumps(results))
"""

REDUCE_OVERHEAD = r"""
import json
import torch
import dynscalar as ds
from torch._dynamo.utils import counters

recordings = [0]
original = torch.cuda.graphs.CUDAGraph.capture_begin
def counting(self, *args, **kwargs):
    recordings[0] += 1
    return original(self, *args, **kwargs)
torch.cuda.graphs.CUDAGraph.capture_begin = counting

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 1
        self.scale = 0.5
        self.norm = torch.nn.LayerNorm(16)
    def forward(self, x):
        return self.norm(x * self.step) * self.scale

results = {}
for attr, values in (("step", [1, 2, 3, 4, 5]), ("scale", [0.5, 0.25, 1.5, 2.0, 3.0])):
    torch._dynamo.reset()
    counters.clear()
    recordings[0] = 0
    model, eager = M().cuda(), M().cuda()
    eager.load_state_dict(model.state_dict())
    ds.mark_dynamic_attr(model, attr)
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(8, 16, device="cuda")
    same = True
    with torch.no_grad():
        for v in values:
            for _ in range(3):  # warm-up, recording, replay
                setattr(model, attr, v); setattr(eager, attr, v)
                got = compiled(x).clone()
                same = same and torch.allclose(got, eager(x), rtol=1e-5, atol=1e-6)
    results[f"marked {attr}"] = {
        "values": len(values),
        "compiles": int(counters["stats"]["unique_graphs"]),
        "recordings": recordings[0],
        "cudagraph_skips": dict(counters["inductor"]).get("cudagraph_skips", 0),
        "eager_close": bool(same),
    }
print("RESULT " + json.dumps(results))
"""

OPTIM_SWEEP = r"""
import json, sys
sys.path.insert(0, ".")
from tests.optim_sweep import catalogue, runner
from tests.test_optim_sweep import BROAD_EXAMPLES, EXAMPLES
from tests.optim_sweep.render_docs import verdict
runner.DEVICE = "cuda"
results = {}
for key in [*EXAMPLES, *BROAD_EXAMPLES]:
    record = runner.run_row(catalogue.find(key))
    results[key] = {
        way: {k: record[way][k] for k in ("graphs", "distance", "groups_equal", "error")}
        for way in ("paths", "stock", "marked")
    }
    results[key]["marked_warnings"] = record["marked"]["warnings"][:3]
    results[key]["verdict"] = verdict(record)
    print("RESULT " + json.dumps(results), flush=True)
"""


def _steps() -> list[dict[str, Any]]:
    python = [sys.executable, "-c"]
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m"]
    return [
        {
            "name": "columns_python",
            "limit_s": 100,
            "command": [*_MEASURE, "--rules", "all", "--backend", "python", "--dtypes", _DTYPES],
        },
        {
            "name": "columns_inductor",
            "limit_s": 100,
            "command": [*_MEASURE, "--forms", "all", "--dtypes", _DTYPES],
        },
        {"name": "cuda_core", "limit_s": 60, "command": [*python, CUDA_CORE]},
        {"name": "reduce_overhead", "limit_s": 60, "command": [*python, REDUCE_OVERHEAD]},
        {
            "name": "core_tests",
            "limit_s": 60,
            "command": [
                *pytest,
                "not inductor and not broad",
                "tests/test_compile_int.py",
                "tests/test_compile_float.py",
            ],
        },
        {"name": "optim_sweep", "limit_s": 90, "command": [*python, OPTIM_SWEEP]},
    ]


def _result(output: str) -> Any:
    """The last ``RESULT {json}`` line a step printed, the measure command's summary (or,
    cut short, its last progress line), or pytest's summary line."""
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
        if line.startswith(("measure: ", "[")) and ("exact; wrote" in line or "left:" in line):
            return {"measure": line.split("\r")[-1]}
        if " passed" in line or " failed" in line or " error" in line:
            return {"pytest": line.strip("= ")}
    return None


def _run_step(step: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    limit = float(step["limit_s"])
    start = time.perf_counter()
    try:
        done = subprocess.run(
            step["command"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
        code: int | None = done.returncode
        output, timed_out = done.stdout + done.stderr, False
    except subprocess.TimeoutExpired as expired:
        code, timed_out = None, True
        output = _text(expired.stdout) + _text(expired.stderr)
    return {
        "limit_s": limit,
        "wall_s": round(time.perf_counter() - start, 1),
        "returncode": code,
        "timed_out": timed_out,
        "result": _result(output),
        "tail": output[-2000:],
    }


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value if isinstance(value, str) else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-check.json"))
    parser.add_argument("--plan", action="store_true", help="print the steps and limits")
    parser.add_argument("--only", help="comma-separated step names (default: all)")
    args = parser.parse_args(argv)
    steps = _steps()
    if args.only:
        steps = [s for s in steps if s["name"] in args.only.split(",")]
    if args.plan:
        print(json.dumps([{"name": s["name"], "limit_s": s["limit_s"]} for s in steps]))
        return 0

    import torch

    report: dict[str, Any] = {
        "schema": 1,
        "cuda": torch.cuda.is_available(),
        "torch": torch.__version__,
        "budget_s": BUDGET_S,
        "ran": [],
        "steps": {},
        "columns": {},
    }
    if not torch.cuda.is_available():
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(
            f"gpu_check: no CUDA device (torch {torch.__version__}, "
            f"torch.cuda.is_available() is False): nothing measured; wrote {args.out}",
            file=sys.stderr,
        )
        return 3
    report["device"] = torch.cuda.get_device_name()
    report["capability"] = list(torch.cuda.get_device_capability())
    cache = args.out.with_suffix(".cache")
    env = {
        **os.environ,
        "DYNSCALAR_CACHE_DIR": str(cache.resolve()),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    start = time.perf_counter()
    for step in steps:
        name = str(step["name"])
        print(f"gpu_check: {name} (at most {step['limit_s']} s)", file=sys.stderr, flush=True)
        report["steps"][name] = _run_step(step, env)
        report["ran"].append(name)
        measured = cache / "measured.json"
        if measured.exists():
            report["columns"] = json.loads(measured.read_text())["columns"]
        report["wall_s"] = round(time.perf_counter() - start, 1)
        args.out.write_text(json.dumps(report, indent=1) + "\n")  # kept if interrupted
    print(f"gpu_check: wrote {args.out} in {report['wall_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
