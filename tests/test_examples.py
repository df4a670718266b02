"""The examples stay true to the code: run them and check what they print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_seed_model_example() -> None:
    out = run("examples/seed_model.py")
    assert "stock torch.compile:         8 compiles" in out
    assert "mark_dynamic_attr(m, 'step'): 1 compile; step = 20" in out


def test_warmup_training_example() -> None:
    out = run("examples/warmup_training.py", "--steps", "30")
    assert "30 steps, 1 compile(s), step=30, max |loss - eager loss| = 0.00e+00" in out


def test_demo_command() -> None:
    out = run("-m", "dynscalar", "demo", "--backend", "aot_eager", "--steps", "12")
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    assert lines[1].startswith("| stock torch.compile | 8 |")
    for line in lines[2:]:
        assert "| 1 |" in line and line.endswith("| yes |"), line
