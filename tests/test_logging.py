"""Logging in torch's conventions: ``TORCH_LOGS=dynscalar`` (INFO) and ``+dynscalar`` (DEBUG).

torch reads ``TORCH_LOGS`` once, at ``import torch``, so each setting runs in a fresh
process (one per setting, shared by the tests that read its output).
"""

from __future__ import annotations

import functools
import os
import re
import textwrap

import pytest

from dynscalar._bridge import named_in_torch_logs

from .helpers import run_python

TORCH_FIRST = "import torch, dynscalar"
DYNSCALAR_FIRST = "import dynscalar, torch"
# Logs a line of each level through dynscalar's logger, checks that nothing imported Dynamo,
# then (compile=True) compiles a marked model: the bridge installs, `M.step` is symbolic.
SCRIPT = """
import logging, sys
{imports}
assert "torch._dynamo" not in sys.modules, "import dynscalar imported torch._dynamo"
log = logging.getLogger("dynscalar")
log.info("probe at info")
log.debug("probe at debug")
if {compile}:
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__(); self.step = 0
        def forward(self, x):
            self.step += 1
            return x * self.step
    compiled = torch.compile(dynscalar.mark_dynamic_attr(M(), "step"), backend="eager")
    for _ in range(3):
        compiled(torch.ones(2))
    assert compiled.step == 3
print("done")
"""
# torch's formatter: level letter (I = INFO, V = DEBUG), date, time, pid, file:line]
PREFIX = {"INFO": r"I\d{4} [\d:.]+ +\d+ ", "DEBUG": r"V\d{4} [\d:.]+ +\d+ "}


@functools.cache
def run(torch_logs: str | None, imports: str = TORCH_FIRST, compile: bool = True) -> str:
    """stderr of SCRIPT run with ``TORCH_LOGS=torch_logs`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_LOGS")}
    if torch_logs is not None:
        env["TORCH_LOGS"] = torch_logs
    result = run_python(SCRIPT.format(imports=imports, compile=compile), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "done"
    return result.stderr


def lines_at(stderr: str, level: str, text: str) -> list[str]:
    prefix = re.compile(PREFIX[level])
    return [line for line in stderr.splitlines() if text in line and prefix.match(line)]


def test_torch_logs_dynscalar_shows_info_not_debug() -> None:
    err = run("dynscalar")
    assert len(lines_at(err, "INFO", "probe at info")) == 1, err  # once: no duplicate handler
    assert "probe at debug" not in err, err
    assert not lines_at(err, "DEBUG", ""), err  # the bridge's DEBUG detail included


def test_torch_logs_dynscalar_shows_bridge_installed_at_info() -> None:
    err = run("dynscalar")
    assert lines_at(err, "INFO", "dynscalar bridge installed into torch"), err
    assert lines_at(err, "INFO", "compiled.step (M.step) (value 0) becomes a symbolic graph input")


def test_torch_logs_dynscalar_when_dynscalar_is_imported_before_torch() -> None:
    err = run("dynscalar", DYNSCALAR_FIRST, compile=False)
    assert len(lines_at(err, "INFO", "probe at info")) == 1, err
    assert "probe at debug" not in err, err


def test_torch_logs_plus_dynscalar_shows_debug_detail_next_to_torch_names() -> None:
    err = run("recompiles,+dynscalar")
    assert len(lines_at(err, "INFO", "probe at info")) == 1, err
    assert len(lines_at(err, "DEBUG", "probe at debug")) == 1, err
    assert lines_at(err, "INFO", "compiled.step (M.step) (value 0) becomes a symbolic graph input")
    assert lines_at(err, "DEBUG", "compiled.step (M.step) -> backed s"), err


def test_silent_without_torch_logs() -> None:
    err = run(None)
    assert "probe" not in err, err
    assert "dynscalar" not in err, err


def test_registered_as_a_torch_log_and_set_logs_works() -> None:
    imports = textwrap.dedent(
        """
        import torch, dynscalar
        from torch._logging import _internal
        assert _internal.log_registry.log_alias_to_log_qnames["dynscalar"] == ["dynscalar"]
        torch._logging.set_logs(modules={"dynscalar": logging.INFO})
        """
    )
    err = run(None, imports, compile=False)
    assert len(lines_at(err, "INFO", "probe at info")) == 1, err
    assert "probe at debug" not in err, err


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("dynscalar", True),
        ("+dynscalar", True),
        ("-dynscalar", True),
        ("+dynamo,dynscalar", True),
        ("recompiles", False),
        ("dynscalar._bridge", False),
        ("", False),
    ],
)
def test_named_in_torch_logs(setting: str, named: bool) -> None:
    assert named_in_torch_logs(setting) is named
