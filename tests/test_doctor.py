"""``python -m dynscalar doctor``: every scalar behind every recompile, in one run, with the fix.

Each end-to-end test copies a fixture project (tests/fixtures/doctor/<project>, several files,
known culprits) into a temporary folder, runs the doctor on it in a subprocess from that
folder's parent (so a sibling import works only if the doctor runs the script the way
``python`` does) and compares the whole report.  Reports name files relative to the current
folder, so the only path in them is the project's own.  The fixes the doctor prints are then
applied and the doctor run again: it must find nothing left but the shape recompile.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from dynscalar.__main__ import main
from dynscalar._diagnostics import BridgeError
from dynscalar.tools.doctor import watcher as _recompiles
from dynscalar.tools.doctor.analysis import Collector
from dynscalar.tools.doctor.call_sites import read_call
from dynscalar.tools.doctor.fixes import argument_fix, fix_blocks
from dynscalar.tools.doctor.records import ArgumentSite, CallSite, DoctorReport
from dynscalar.tools.doctor.report import format_json, format_report
from dynscalar.tools.doctor.run import run_doctor

from .helpers import CountingBackend, run_interpreter

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"


def doctor(
    tmp_path: Path,
    project: str,
    script: str,
    *args: str,
    options: tuple[str, ...] = ("-o", "report.txt"),
    fix: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the doctor on a copy of ``project`` from ``tmp_path``; the report goes to a file."""
    if not (tmp_path / project).exists():
        shutil.copytree(FIXTURES / project, tmp_path / project)
    env = dict(os.environ)
    env.pop("DOCTOR_FIX", None)
    if fix is not None:
        (tmp_path / "fix.py").write_text(fix)
        env["DOCTOR_FIX"] = str(tmp_path / "fix.py")
    return run_interpreter(
        "-m", "dynscalar", "doctor", *options, f"{project}/{script}", *args, cwd=tmp_path, env=env
    )


def report_of(tmp_path: Path, name: str = "report.txt") -> str:
    return (tmp_path / name).read_text()


def all_fix_code(report: str) -> str:
    """The code of every "Fix:" block of the report, in order (the first starts with
    ``import dynscalar``)."""
    lines = report.splitlines()
    code: list[str] = []
    for index, line in enumerate(lines):
        if line.startswith("Fix: after"):
            for block_line in lines[index + 2 :]:
                if not block_line.startswith("    "):
                    break
                code.append(block_line[4:])
    return "\n".join(code) + "\n"


def fix_code(report: str) -> str:
    """The code of the report's attribute fix (the indented block after "Fix: after ...")."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Fix: after")) + 2
    block = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block) + "\n"


# ----------------------------------------------------------------------------- end to end
TRAINING_REPORT = """\
dynscalar doctor: 2 Python scalars caused 7 of 8 recompiles:

  Net.step (int, model.step): 7 recompiles of Net.forward
      training/mymodel.py:15: self.step += 1
  Net.temperature (float, model.temperature): 1 recompile of Net.forward
      training/mymodel.py:17: return self.head(h) / self.temperature
  (a recompile with several of these causes is counted under each)

Net.forward reached torch._dynamo.config.recompile_limit (8):
  its last recompile and every later call needing one ran eagerly;
  the doctor read why each missed.
1 more recompile had other causes (tensor shapes or other guards);
  TORCH_LOGS=recompiles shows them.

Fix: after `model` is created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_attr(model, "step", "temperature")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt training/train.py --epochs 3
"""

ONLY_SHAPES_REPORT = """\
dynscalar doctor: no recompiles were caused by Python scalars.

1 more recompile had other causes (tensor shapes or other guards);
  TORCH_LOGS=recompiles shows them.
"""


@pytest.mark.broad
def test_training_script_both_culprits_in_one_run_and_the_fix_works(tmp_path: Path) -> None:
    # Dynamo's own reasons name only Net.step (the first failing guard of each version);
    # the smaller last batch of each epoch is a shape recompile, not a scalar's.
    result = doctor(tmp_path, "training", "train.py", "--epochs", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "trained 3 epoch(s), step=9\n"  # its own argv, as `python` runs it
    assert report_of(tmp_path) == TRAINING_REPORT

    fixed = doctor(tmp_path, "training", "train.py", "--epochs", "3", fix=fix_code(TRAINING_REPORT))
    assert fixed.returncode == 0, fixed.stderr
    assert report_of(tmp_path) == ONLY_SHAPES_REPORT


SCHEDULED_REPORT = """\
dynscalar doctor: 5 Python scalars caused 15 of 16 recompiles and 54 more calls
run eagerly at the limit:

  Net.step (int, model.step):
      8 recompiles of Net.forward, 27 more calls run eagerly at the limit
      scheduled/net.py:17: self.step += 1
  SGD.param_groups[0]['lr'] (float, opt.param_groups[0]['lr']):
      7 recompiles of SGD.step, 27 more calls run eagerly at the limit
      scheduled/train.py:49: step()
  Net.warmup (float, model.warmup): 7 recompiles of Net.forward
      scheduled/net.py:18: self.warmup = min(1.0, self.warmup + 0.125)
  Net.forward(temperature) (float): 1 recompile of Net.forward
      scheduled/net.py:20: return self.head(h) / temperature
  Dropout.p (float, model.drop.p):
      24 more calls of Net.forward run eagerly at the limit
      scheduled/net.py:19: h = self.drop(torch.relu(self.body(x))) * self.warmup
      dropout returns its input at p == 0 without drawing random numbers: once
      marked, p == 0 and p != 0 are two paths (a compile each), every other
      value shares one
  (a recompile with several of these causes is counted under each)

Net.forward reached torch._dynamo.config.recompile_limit (8):
  its last recompile and every later call needing one ran eagerly;
  the doctor read why each missed.
SGD.step reached torch._dynamo.config.recompile_limit (8):
  its last recompile and every later call needing one ran eagerly;
  the doctor read why each missed.
1 more recompile had other causes (tensor shapes or other guards);
  TORCH_LOGS=recompiles shows them.

Fix: after `model` is created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_attr(model, "step", "warmup")
    dynscalar.mark_dynamic_attr(model.drop, "p")

Fix: after `opt` is created, before the first call, add:

    dynscalar.mark_dynamic_param_groups(opt, "lr")

  Or torch's own way for a learning rate: create the optimizer with a tensor,
  SGD(..., lr=torch.tensor(0.1)); torch's schedulers update it in place and
  the step compiles once. Prefer it when you create the optimizer yourself and
  nothing assigns a float to group["lr"]; prefer the mark when a library creates
  the optimizer, code assigns floats to group["lr"], the optimizer refuses a
  tensor lr (Adam/AdamW, foreach=True on a CPU), or other keys are scheduled.

Fix: after `compiled` is created, before the first call, add:

    dynscalar.mark_dynamic_args(compiled, "temperature")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt scheduled/train.py --compiles
"""

SCHEDULED_FIXED_REPORT = """\
dynscalar doctor: no recompiles were caused by Python scalars.

1 recompile took another path of a dynamic scalar (by design: nothing to fix):

  Dropout.p (float, model.drop.p): 1 recompile of Net.forward
      `model.drop.p == 0.0` no longer held
      scheduled/net.py:19: h = self.drop(torch.relu(self.body(x))) * self.warmup
      dropout returns its input at p == 0 without drawing random numbers: p == 0
      and p != 0 are two paths, compiled once each

1 more recompile had other causes (tensor shapes or other guards);
  TORCH_LOGS=recompiles shows them.
"""


# A stock run (dynscalar never imported) of the fixture's warm-up line alone, on aot_eager:
# how many versions torch compiles for warm-ups 0.75, 0.875, then 1.0 twice.
WARMUP_PROBE = """\
import torch

class Warmup(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.warmup = 0.75

    def forward(self, x):
        self.warmup = min(1.0, self.warmup + 0.125)
        return x * self.warmup

compiled = torch.compile(Warmup(), backend="aot_eager")
for _ in range(4):
    compiled(torch.ones(2))
from torch._dynamo.eval_frame import _debug_get_cache_entry_list as versions
print(len(versions(Warmup.forward.__code__)))
"""


def stock_pins_the_warmup() -> bool:
    """Whether stock torch's version compiled for the last warm-up (0.875) pins that value.

    The second version makes the float dynamic; the float-tensorify pass then specializes
    ``min(1.0, warmup + 0.125)``.  torch 2.13 and 2.14 guard on the expression
    (``min(1.0, 0.125 + L['self'].warmup) == 1.0``), which 1.0 also passes: 2 versions.
    torch 2.15's pass specializes the float itself (``L['self'].warmup == 0.875``; see
    docs/compatibility.md), which 1.0 fails: 3 versions.
    """
    probe = run_interpreter("-c", WARMUP_PROBE)
    assert probe.returncode == 0, probe.stderr
    versions = int(probe.stdout.split()[-1])
    assert versions in (2, 3), probe.stdout
    return versions == 3


def scheduled_report() -> str:
    """SCHEDULED_REPORT as this torch's stock guards make it.  Where the version compiled
    for the last warm-up pins it, the 28 calls past forward's limit (warm-up 1.0) fail it
    too, so making Net.step dynamic alone would not have let that version serve them: the
    doctor names Net.warmup as one of their causes, and ranks it by its counts."""
    if not stock_pins_the_warmup():
        return SCHEDULED_REPORT
    # the doctor orders causes by recompiles, then calls run eagerly: with 8 and 27 the
    # warm-up now ranks before the learning rate (7 and 27)
    lines = SCHEDULED_REPORT.splitlines(keepends=True)
    at = lines.index("  Net.warmup (float, model.warmup): 7 recompiles of Net.forward\n")
    warmup = [
        "  Net.warmup (float, model.warmup):\n",
        "      8 recompiles of Net.forward, 27 more calls run eagerly at the limit\n",
        lines[at + 1],
    ]
    del lines[at : at + 2]
    lr = lines.index("  SGD.param_groups[0]['lr'] (float, opt.param_groups[0]['lr']):\n")
    lines[lr:lr] = warmup
    return "".join(lines)


@pytest.mark.broad
def test_a_new_users_training_script_gives_every_culprit_in_one_run(tmp_path: Path) -> None:
    """A step counter and a warm-up float written in forward, a dropout whose p changes per
    epoch from 0.0, SGD with a per-batch LambdaLR under a compiled opt.step(), and a
    temperature argument; 36 calls on aot_eager.  Stock: 8 compiled versions of forward and
    8 of step, both at recompile_limit (Dropout.p changes only after forward hit it).  One
    doctor run names all five with their fixes; with them: 2 + 2 versions (dropout's path at
    p == 0, the optimizer's first step without momentum buffers), and the same numbers as
    eager."""
    result = doctor(tmp_path, "scheduled", "train.py", "--compiles")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "compiled versions: forward 8, step 8"
    assert report_of(tmp_path) == scheduled_report()
    assert result.stderr.count("hit config.recompile_limit") == 2  # once per function

    fix = all_fix_code(SCHEDULED_REPORT)
    options = ("-o", "report.txt")
    args = ("--compiles", "--state", str(tmp_path / "fixed.pt"))
    fixed = doctor(tmp_path, "scheduled", "train.py", *args, options=options, fix=fix)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.splitlines()[-1] == "compiled versions: forward 2, step 2"
    assert report_of(tmp_path) == SCHEDULED_FIXED_REPORT
    assert "SpecializationWarning" not in fixed.stderr  # p == 0 is a path, not forced

    eager = run_interpreter(
        "scheduled/train.py", "--eager", "--state", str(tmp_path / "eager.pt"), cwd=tmp_path
    )
    assert eager.returncode == 0, eager.stderr
    assert eager.stdout == fixed.stdout.replace("compiled versions: forward 2, step 2\n", "")
    got, want = (torch.load(tmp_path / name) for name in ("fixed.pt", "eager.pt"))
    for out, expected in zip(got["outputs"], want["outputs"], strict=True):
        assert torch.equal(out, expected)
    for name, weight in want["model"].items():
        assert torch.equal(got["model"][name], weight), name
    assert got["opt"]["param_groups"] == want["opt"]["param_groups"]  # the scheduled lr too
    for index, state in want["opt"]["state"].items():
        assert torch.equal(got["opt"]["state"][index]["momentum_buffer"], state["momentum_buffer"])


NESTED_REPORT = """\
dynscalar doctor: 3 Python scalars caused 6 of 6 recompiles:

  Counter.calls (int, model.block.calls): 3 recompiles of Model.forward
      nested/blocks.py:14: self.calls += 1
  Counter.calls (int, seq[1].calls): 3 recompiles of Sequential.forward
      nested/blocks.py:14: self.calls += 1
  Gate.open (float, model.gates['main'].open): 1 recompile of Model.forward
      nested/blocks.py:26: return torch.sigmoid(x) * self.open
  (a recompile with several of these causes is counted under each)

Fix: after `model` and `seq` are created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_attr(model.block, "calls")
    dynscalar.mark_dynamic_attr(seq[1], "calls")
    dynscalar.mark_dynamic_attr(model.gates["main"], "open")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt nested/run.py
"""


@pytest.mark.broad
def test_nested_modules_module_dict_and_sequential_are_named_by_path(tmp_path: Path) -> None:
    result = doctor(tmp_path, "nested", "run.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "calls: 4 4\n"
    assert report_of(tmp_path) == NESTED_REPORT

    fixed = doctor(tmp_path, "nested", "run.py", fix=fix_code(NESTED_REPORT))
    assert fixed.returncode == 0, fixed.stderr
    assert report_of(tmp_path) == "dynscalar doctor: no recompiles were caused by Python scalars.\n"


INSTANCES_REPORT = """\
dynscalar doctor: 2 Python scalars caused 8 of 8 recompiles and 3 more calls run
eagerly at the limit:

  Shift.offset (int, 6 instances):
      8 recompiles of Sequential.forward, 3 more calls run eagerly at the limit
      model[0].shift.offset, model[1].shift.offset, ..., model[5].shift.offset
      instances/train.py:20: return x + self.offset
  Dropout.p (float, 6 instances):
      8 recompiles of Sequential.forward, 3 more calls run eagerly at the limit
      model[0].drop.p, model[1].drop.p, ..., model[5].drop.p
      instances/train.py:31: return self.shift(x + self.drop(self.lin(x)))
  (a recompile with several of these causes is counted under each)

Sequential.forward reached torch._dynamo.config.recompile_limit (8):
  its last recompile and every later call needing one ran eagerly;
  the doctor read why each missed.

Fix: after `model` is created, before the first call, add:

    import dynscalar
    for submodule in model.modules():  # every Shift in it
        if isinstance(submodule, Shift):
            dynscalar.mark_dynamic_attr(submodule, "offset")
    for submodule in model.modules():  # every Dropout in it
        if isinstance(submodule, torch.nn.Dropout):
            dynscalar.mark_dynamic_attr(submodule, "p")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt instances/train.py
"""


@pytest.mark.broad
def test_instances_of_one_class_are_one_culprit_with_one_fix_and_counts_as_torch_logs(
    tmp_path: Path,
) -> None:
    """A Dropout and a Shift in each of 6 blocks, all set per epoch: one culprit per class
    (its instances listed), one loop per class in the fix, one ``import dynscalar``; the
    recompiles counted as TORCH_LOGS=recompiles lists them (the one refused at the limit
    included), each once although 12 attributes changed for it."""
    result = doctor(tmp_path, "instances", "train.py")
    assert result.returncode == 0, result.stderr
    assert report_of(tmp_path) == INSTANCES_REPORT
    assert all_fix_code(INSTANCES_REPORT).count("import dynscalar") == 1

    logged = run_interpreter(
        "instances/train.py", cwd=tmp_path, env={**os.environ, "TORCH_LOGS": "recompiles"}
    )
    assert logged.returncode == 0, logged.stderr
    listed = logged.stderr.count("Recompiling function")
    as_json = doctor(tmp_path, "instances", "train.py", options=("--json", "-o", "report.json"))
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(report_of(tmp_path, "report.json"))
    assert data["recompiles"] == listed == 8
    assert [s["recompiles"] for s in data["scalars"]] == [8, 8]
    assert data["scalars"][1]["instances"] == [f"model[{i}].drop.p" for i in range(6)]
    assert data["scalars"][1]["fix"] == [
        "import dynscalar",  # not `import torch`: the script has it at module level
        "for submodule in model.modules():  # every Dropout in it",
        "    if isinstance(submodule, torch.nn.Dropout):",
        '        dynscalar.mark_dynamic_attr(submodule, "p")',
    ]

    fixed = doctor(tmp_path, "instances", "train.py", fix=all_fix_code(INSTANCES_REPORT))
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == result.stdout == "offset: 9\n"
    assert report_of(tmp_path) == "dynscalar doctor: no recompiles were caused by Python scalars.\n"


PROPERTIES_REPORT = """\
dynscalar doctor: 2 Python scalars caused 5 of 5 recompiles:

  Warmup.global_step (int, property model.global_step):
      5 recompiles of Warmup.forward
      reads model.trainer.fit_loop.step_progress.completed
      properties/loops.py:52: warm = min(1.0, (self.global_step + 1) / 8) * 0.5**self.current_epoch
  Warmup.current_epoch (int, property model.current_epoch):
      1 recompile of Warmup.forward
      reads model.trainer.fit_loop.epoch_progress.completed
      properties/loops.py:52: warm = min(1.0, (self.global_step + 1) / 8) * 0.5**self.current_epoch
  (a recompile with several of these causes is counted under each)

Fix: after `model` is created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_attr(model, "global_step", "current_epoch")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt properties/run.py
"""


@pytest.mark.broad
def test_scalars_read_through_properties_are_named_by_the_property(tmp_path: Path) -> None:
    """Lightning's global_step/current_epoch: the guards are on counters of plain objects
    (``model.trainer.fit_loop...completed``), which cannot be marked; the doctor names the
    module's property and marks it, which follows the getter."""
    result = doctor(tmp_path, "properties", "run.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "global_step: 6 current_epoch: 2\n"
    assert report_of(tmp_path) == PROPERTIES_REPORT

    fixed = doctor(tmp_path, "properties", "run.py", fix=fix_code(PROPERTIES_REPORT))
    assert fixed.returncode == 0, fixed.stderr
    assert report_of(tmp_path) == "dynscalar doctor: no recompiles were caused by Python scalars.\n"


FUNCTIONS_REPORT = """\
dynscalar doctor: 3 Python scalars caused 2 of 2 recompiles:

  scaled_sum(n) (int): 1 recompile of scaled_sum
      functions/ops.py:7: return (x * n).sum() * lr
  scaled_sum(lr) (float): 1 recompile of scaled_sum
      functions/ops.py:7: return (x * n).sum() * lr
  Shift.forward(offset) (int): 1 recompile of Shift.forward
      functions/ops.py:12: return x + offset
  (a recompile with several of these causes is counted under each)

Fix: after `step` is created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_args(step, "n", "lr")

Fix: after `shift` is created, before the first call, add:

    dynscalar.mark_dynamic_args(shift, "offset")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt functions/run.py
"""


def test_function_arguments_get_their_call_rewritten(tmp_path: Path) -> None:
    result = doctor(tmp_path, "functions", "run.py")
    assert result.returncode == 0, result.stderr
    assert report_of(tmp_path) == FUNCTIONS_REPORT


@pytest.mark.broad
def test_json_report_and_its_fixes_applied_to_the_calls(tmp_path: Path) -> None:
    result = doctor(tmp_path, "functions", "run.py", options=("--json", "-o", "report.json"))
    assert result.returncode == 0, result.stderr
    data = json.loads(report_of(tmp_path, "report.json"))
    run_py = tmp_path / "functions" / "run.py"
    assert {k: v for k, v in data.items() if k not in ("scalars", "fixes")} == {
        "script": "functions/run.py",
        "args": [],
        "exit_code": 0,
        "crash": None,
        "recompiles": 2,
        "other_recompiles": 0,
        "eager_calls": 0,
        "other_eager_calls": 0,
        "path_recompiles": 0,
        "path_eager_calls": 0,
        "paths": [],
        "limits": {},
        "rerun": "python -m dynscalar doctor --json -o report.json functions/run.py",
        "notes": [],
    }
    assert data["scalars"][0] == {
        "scalar": "scaled_sum(n)",
        "kind": "argument",
        "type": "int",
        "path": None,
        "reads": None,
        "function": "scaled_sum",
        "source": "L['n']",
        "where": {
            "file": str(tmp_path / "functions" / "ops.py"),
            "line": 7,
            "code": "return (x * n).sum() * lr",
        },
        "recompiles": 1,
        "eager_calls": 0,
        "values": [3],
        "instances": [],
        "fix": ["import dynscalar", 'dynscalar.mark_dynamic_args(step, "n")'],
        "note": None,
    }
    assert [(s["scalar"], s["type"], s["values"]) for s in data["scalars"]] == [
        ("scaled_sum(n)", "int", [3]),
        ("scaled_sum(lr)", "float", [0.2]),
        ("Shift.forward(offset)", "int", [1]),
    ]
    assert [(f["where"], f["code"], f["replaces"]) for f in data["fixes"]] == [
        (
            "after `step` is created, before the first call, add",
            'import dynscalar\ndynscalar.mark_dynamic_args(step, "n", "lr")',
            None,
        ),
        (  # the import comes once, in the first block
            "after `shift` is created, before the first call, add",
            'dynscalar.mark_dynamic_args(shift, "offset")',
            None,
        ),
    ]

    source = run_py.read_text()
    for fix in data["fixes"]:  # apply every fix where the report says it goes
        code = [line for line in fix["code"].splitlines() if line != "import dynscalar"]
        callee = fix["where"].split("`")[1]
        created = next(line for line in source.splitlines() if line.startswith(f"{callee} = "))
        source = source.replace(created, "\n".join([created, *code]))
    run_py.write_text("import dynscalar\n" + source)
    fixed = doctor(tmp_path, "functions", "run.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == result.stdout == "total=24.00\n"  # same numbers
    assert report_of(tmp_path) == "dynscalar doctor: no recompiles were caused by Python scalars.\n"


CRASH_REPORT = """\
dynscalar doctor: crash/main.py stopped with RuntimeError: loss is nan (exit code 1).
Before that, 1 Python scalar caused 2 of 2 recompiles:

  Stepper.step (int, model.step): 2 recompiles of Stepper.forward
      crash/model.py:12: self.step += 1

Fix: after `model` is created, before the first call, add:

    import dynscalar
    dynscalar.mark_dynamic_attr(model, "step")

Then run the doctor again to check:
    python -m dynscalar doctor -o report.txt crash/main.py raise
"""


@pytest.mark.broad
def test_a_crash_is_reported_with_python_s_traceback_and_exit_code(tmp_path: Path) -> None:
    result = doctor(tmp_path, "crash", "main.py", "raise")
    assert result.returncode == 1
    assert result.stdout == "argv: ['raise'] name: __main__ file: True\n"
    script = tmp_path / "crash" / "main.py"
    assert result.stderr.endswith(
        "Traceback (most recent call last):\n"
        f'  File "{script}", line 17, in <module>\n'
        '    raise RuntimeError("loss is nan")\n'
        "RuntimeError: loss is nan\n"
    )  # the script's frames only, as `python crash/main.py raise` prints them
    assert report_of(tmp_path) == CRASH_REPORT


def test_exit_code_and_report_on_stderr_by_default(tmp_path: Path) -> None:
    result = doctor(tmp_path, "crash", "main.py", "exit", "3", "--json", options=())
    assert result.returncode == 3
    assert result.stdout == "argv: ['exit', '3', '--json'] name: __main__ file: True\n"
    assert result.stderr.startswith(
        "dynscalar doctor: running crash/main.py exit 3 --json (the report follows when it ends)\n"
    )
    report = result.stderr[result.stderr.index("dynscalar doctor: 1") :]
    assert report == CRASH_REPORT.replace(
        "dynscalar doctor: crash/main.py stopped with RuntimeError: loss is nan (exit code 1).\n"
        "Before that, 1",
        "dynscalar doctor: 1",
    ).replace("doctor -o report.txt crash/main.py raise", "doctor crash/main.py exit 3 --json")


def test_missing_script_says_so_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "-o", "report.txt", "nothere.py", "-x"]) == 2
    assert capsys.readouterr().err == (
        f"dynscalar doctor: can't open file '{tmp_path / 'nothere.py'}': "
        "[Errno 2] No such file or directory\n"
    )  # not "no recompiles": nothing ran
    assert not (tmp_path / "report.txt").exists()


def test_usage_shows_script_arguments_as_optional(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["doctor"])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        "usage: python -m dynscalar doctor [-h] [--json] [-o FILE] SCRIPT [ARGS ...]\n"
        "python -m dynscalar doctor: error: the following argument is required: SCRIPT\n"
    )


# ----------------------------------------------------------------------------- in process
class TwoScalars(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.width = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.step + self.width


def watch(model: TwoScalars, *steps: tuple[int, int, int]) -> list[_recompiles.Recompile]:
    """Call the compiled model once per (step, width, batch); return the recompiles seen."""
    events: list[_recompiles.Recompile] = []
    compiled = torch.compile(model, backend="eager")
    with _recompiles.RecompileWatcher(events.append):
        for step, width, batch in steps:
            model.step, model.width = step, width
            compiled(torch.ones(batch))
    return events


def test_watcher_reads_every_failing_scalar_where_dynamo_names_the_first() -> None:
    (event,) = watch(TwoScalars(), (0, 2, 3), (1, 3, 3))
    assert [(f.source, f.expected, f.actual) for f in event.causes] == [
        ("L['self'].step", 0, 1),
        ("L['self'].width", 2, 3),
    ]
    (reason,) = event.reasons  # Dynamo's own: the first failing guard only
    assert "self.step == 0" in reason and "self.width ==" not in reason
    frame = event.causes[0].user_frame
    assert frame is not None and frame.filename == __file__ and frame.line is not None
    assert frame.line.strip() == "return x * self.step + self.width"
    assert event.refused_by is None and event.frame_locals is None  # not kept alive


def test_watcher_does_not_blame_a_scalar_for_a_shape_recompile() -> None:
    (event,) = watch(TwoScalars(), (0, 2, 3), (1, 2, 5))  # new step and a new shape
    assert [f.source for f in event.changed] == ["L['self'].step"]
    assert event.causes == [] and not event.avoidable  # the shape would recompile anyway


def test_watcher_reports_the_recompile_limit() -> None:
    with torch._dynamo.config.patch(recompile_limit=2):
        events = watch(TwoScalars(), (0, 2, 3), (1, 2, 3), (2, 2, 3))
    assert [(e.refused_by, e.limit) for e in events] == [(None, None), ("recompile_limit", 2)]


def test_watcher_reads_calls_past_the_recompile_limit() -> None:
    """Past the limit torch runs the calls that miss the cache eagerly; the watcher still
    reads why each one missed (a scalar that changes only then is found in the same run),
    and the calls give eager's numbers as they do without it."""
    model = TwoScalars()
    compiled = torch.compile(model, backend="eager")
    events: list[_recompiles.Recompile] = []
    with torch._dynamo.config.patch(recompile_limit=2), _recompiles.RecompileWatcher(events.append):
        for step, width in ((0, 2), (1, 2), (2, 2), (2, 5), (3, 5)):
            model.step, model.width = step, width
            assert torch.equal(compiled(torch.ones(3)), torch.ones(3) * step + width)
    # every call after the first compile missed the cache; from the third on, at the limit
    assert [e.refused_by for e in events] == [None] + ["recompile_limit"] * 3
    width_changes = [f.actual for f in events[2].causes if f.source == "L['self'].width"]
    assert width_changes == [5]  # seen although forward was at the limit


def test_watcher_reads_symbolic_guards_a_dynamic_scalar_fails() -> None:
    """A marked dropout p: at 0 the compiled code takes dropout's other path, guarded by the
    predicate (``Eq(p, 0)``, printed ``p == 0.0``) among Dynamo's symbolic guards."""
    import dynscalar as ds

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.0))
    ds.mark_dynamic_attr(model[1], "p")
    compiled = torch.compile(model, backend="aot_eager")
    events: list[_recompiles.Recompile] = []
    with _recompiles.RecompileWatcher(events.append):
        for p in (0.0, 0.1, 0.2):
            model[1].p = p
            compiled(torch.ones(2))
    (event,) = events
    (cause,) = event.causes
    assert (cause.source, cause.symbolic, cause.pins) == ("L['fn']._modules['1'].p", True, True)
    assert cause.guard == "L['fn']._modules['1'].p == 0.0" and cause.actual == 0.1


def test_any_param_group_key_is_named_as_user_code_reaches_it() -> None:
    """A compiled opt.step() reads every hyperparameter of every group: a scheduled
    ``betas`` (OneCycleLR cycles beta1) and ``weight_decay`` are named by the optimizer's
    variable and fixed by key."""
    weight = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.Adam([weight], lr=0.1, weight_decay=0.0)
    step = torch.compile(opt.step, backend="eager")
    report = DoctorReport("train.py", [])
    collector = Collector(report)
    with _recompiles.RecompileWatcher(collector):
        for i in range(3):
            weight.grad = torch.ones(2)
            opt.param_groups[0]["betas"] = (0.9 - 0.01 * i, 0.999)
            opt.param_groups[0]["weight_decay"] = 0.01 * i
            step()
    collector.finish()
    assert [(c.scalar, c.path, c.kind, c.values) for c in report.culprits] == [
        (
            "Adam.param_groups[0]['betas'][0]",
            "opt.param_groups[0]['betas'][0]",
            "param_group",
            [0.89],
        ),
        (
            "Adam.param_groups[0]['weight_decay']",
            "opt.param_groups[0]['weight_decay']",
            "param_group",
            [0.01],
        ),
    ]
    (block,) = fix_blocks(report)
    assert block.placement == "after `opt` is created, before the first call, add"
    assert block.code == [
        "import dynscalar",
        'dynscalar.mark_dynamic_param_groups(opt, "betas", "weight_decay")',
    ]
    assert block.notes == ()  # torch's tensor alternative is for the learning rate


def test_watcher_puts_dynamo_back_as_it_was() -> None:
    from torch._dynamo import convert_frame, guards

    before = (
        convert_frame.get_and_maybe_log_recompilation_reasons,  # type: ignore[attr-defined]
        convert_frame.exceeds_recompile_limit,  # type: ignore[attr-defined]
        guards.get_verbose_code_parts,
        convert_frame.ConvertFrame.__call__,
    )
    with _recompiles.RecompileWatcher(lambda event: None):
        assert guards.get_verbose_code_parts is not before[2]
        assert convert_frame.ConvertFrame.__call__ is not before[3]
    after = (
        convert_frame.get_and_maybe_log_recompilation_reasons,  # type: ignore[attr-defined]
        convert_frame.exceeds_recompile_limit,  # type: ignore[attr-defined]
        guards.get_verbose_code_parts,
        convert_frame.ConvertFrame.__call__,
    )
    assert after == before


def test_moved_internals_stop_the_doctor_before_the_script_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from torch._dynamo import convert_frame

    def exceeds_recompile_limit(cache_size: Any) -> tuple[bool, str]:  # a changed signature
        return False, ""

    monkeypatch.setattr(convert_frame, "exceeds_recompile_limit", exceeds_recompile_limit)
    with pytest.raises(BridgeError, match=r"changed convert_frame\.exceeds_recompile_limit"):
        _recompiles.check_recompile_internals()
    script = tmp_path / "script.py"
    script.write_text("open(__file__ + '.ran', 'w').close()\n")
    assert run_doctor(str(script), []) == 2
    assert "the doctor was written for" in capsys.readouterr().err
    assert not (tmp_path / "script.py.ran").exists()


# ----------------------------------------------------------------------------- pieces
@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("L['self'].step == 7            # self.step += 1  # m.py:3 in f", ("L['self'].step", 7)),
        ("L['s'] == 0.1  # return x * s  # m.py:9 in f (HINT: a == b)", ("L['s']", 0.1)),
        ("L['s'] == inf", ("L['s']", float("inf"))),
        ("L['self'].training == True", None),  # bools are not scalars here
        ("L['t'] == (1, 2)", None),
        ("L['name'] == 'a == 1'", None),
        ("len(L['args']) == 1", ("len(L['args'])", 1)),
    ],
)
def test_scalar_guard_text_is_parsed(text: str, parsed: Any) -> None:
    assert _recompiles._parse_scalar_guard(text) == parsed


def test_argument_fix_marks_the_arguments_of_what_the_call_site_calls() -> None:
    call = CallSite(
        filename="run.py",
        lineno=3,
        statement="out = f(\n    x,\n    n,\n    lr=0.5,\n)",
        callee="f",
        arguments={"n": (20, 21), "lr": (30, 33)},
    )
    site = ArgumentSite("train_step", ("n", "lr"), call)
    assert argument_fix(site) == ['dynscalar.mark_dynamic_args(f, "n", "lr")']
    unknown = ArgumentSite("train_step", ("n",), None)
    assert argument_fix(unknown) == ['dynscalar.mark_dynamic_args(train_step, "n")']


def test_call_site_reading_handles_multiline_calls_and_keywords(tmp_path: Path) -> None:
    module = tmp_path / "caller.py"
    module.write_text(
        textwrap.dedent(
            """\
            import sys


            def callee(x, n, *, lr=0.1):
                return read(sys._getframe(1), callee.__code__)


            def main():
                if True:
                    return callee(
                        1,
                        2 + 3,
                        lr=0.5,
                    )
            """
        )
    )
    calls: dict[str, Any] = {}

    def read(frame: Any, code: Any) -> None:  # while the call runs: f_lasti is the call
        calls["both"] = read_call(frame, code, ["n", "lr"])
        calls["missing"] = read_call(frame, code, ["x", "missing"])

    namespace: dict[str, Any] = {"read": read}
    exec(compile(module.read_text(), str(module), "exec"), namespace)
    namespace["main"]()
    call = calls["both"]
    assert call is not None
    assert (call.filename, call.lineno, call.callee) == (str(module), 10, "callee")
    assert call.statement == "return callee(\n    1,\n    2 + 3,\n    lr=0.5,\n)"
    assert call.wrapped(["n", "lr"]) == (
        "return callee(\n    1,\n    dynscalar.mark_dynamic(2 + 3),\n"
        "    lr=dynscalar.mark_dynamic(0.5),\n)"
    )
    assert calls["missing"] is None  # not passed at this call


def test_report_says_which_calls_past_a_limit_it_could_not_read() -> None:
    report = DoctorReport("train.py", [], limits={"Net.forward": ("recompile_limit", 8)})
    report.unread = ["Net.forward"]
    report.notes = ["calls of Net.forward after its recompile limit ran eagerly without being read"]
    text = format_report(report)
    assert "every later call needing one ran eagerly;\n  why later ones missed was not read" in text
    assert text.endswith(
        "dynscalar doctor could not read everything: calls of Net.forward after its recompile "
        "limit ran eagerly without being read"
    )
    limits = json.loads(format_json(report))["limits"]
    assert limits == {"Net.forward": {"limit": "recompile_limit", "value": 8, "read": False}}


def test_report_without_culprits_after_a_crash() -> None:
    report = DoctorReport("train.py", [], exit_code=1, crash="KeyError: 'x'")
    assert format_report(report) == (
        "dynscalar doctor: train.py stopped with KeyError: 'x' (exit code 1).\n"
        "Before that, no recompiles were caused by Python scalars."
    )


def _collect(run: Any) -> Any:
    """Run ``run()`` under the doctor's watcher; the report the doctor would print from."""
    from dynscalar.tools.doctor.analysis import Collector
    from dynscalar.tools.doctor.records import DoctorReport
    from dynscalar.tools.doctor.watcher import RecompileWatcher

    report = DoctorReport(script="<test>", args=[])
    collector = Collector(report)
    watcher = RecompileWatcher(collector)
    with watcher:
        run()
    collector.finish(watcher.unobserved)
    return report


def test_a_marked_value_torch_still_compiles_per_value_is_a_culprit_not_a_path() -> None:
    """A marked int that user code forces (``range(self.k)``): every new value recompiles.
    The doctor used to file such recompiles under "took another path of a dynamic scalar
    (by design: nothing to fix)"; it now names what forced the value and what to do, and
    gives no marking code (the value is marked already)."""
    import dynscalar as ds

    class Repeat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.k = 1

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(self.k):
                x = x * 2
            return x

    model = ds.mark_dynamic_attr(Repeat(), "k")
    compiled = torch.compile(model, backend="aot_eager")

    def run() -> None:
        for k in (1, 2, 3):
            model.k = k
            assert torch.equal(compiled(torch.ones(2)), torch.ones(2) * 2**k)

    with pytest.warns(ds.SpecializationWarning, match="range"):
        report = _collect(run)
    assert report.paths == []
    (culprit,) = report.culprits
    assert (culprit.scalar, culprit.kind, culprit.recompiles) == ("Repeat.k", "specialized", 2)
    assert culprit.fix == [] and culprit.note is not None
    assert culprit.note.startswith("marked, but torch compiled it for one value: it forced at")
    assert "range" in culprit.note
    from dynscalar.tools.doctor.fixes import fix_blocks

    assert fix_blocks(report) == []


def test_a_path_of_a_marked_value_is_still_a_path() -> None:
    """Dropout's p == 0: a predicate of a dynamic value, compiled once per path, stays a
    path (nothing specialized it)."""
    import dynscalar as ds

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.0))
    ds.mark_dynamic_attr(model[1], "p")
    compiled = torch.compile(model, backend="aot_eager")

    def run() -> None:
        for p in (0.0, 0.1, 0.2):
            model[1].p = p
            compiled(torch.ones(2))

    report = _collect(run)
    assert report.culprits == [] and len(report.paths) == 1


def test_instances_taking_one_path_in_one_recompile_are_one_path_counted_once() -> None:
    """Six marked dropouts leave p == 0 in one call: one recompile (as TORCH_LOGS=recompiles
    lists it) with six failing guards, one path listing the six instances, as the doctor
    groups culprits."""
    import dynscalar as ds
    from dynscalar.tools.doctor.fixes import fix_blocks

    model = torch.nn.Sequential(*(torch.nn.Dropout(0.0) for _ in range(6)))
    for drop in model:
        ds.mark_dynamic_attr(drop, "p")
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)

    def run() -> None:
        for p in (0.0, 0.1, 0.2):
            for drop in model:
                drop.p = p
            compiled(torch.ones(8))

    report = _collect(run)
    assert counter.frame_count == 2  # the p == 0 path, then one recompile for p != 0
    assert (report.recompiles, report.path_recompiles, report.culprits) == (1, 1, [])
    (path,) = report.paths
    assert path.instances == [f"model[{i}].p" for i in range(6)]
    text = format_report(report)
    assert "1 recompile took another path of a dynamic scalar" in text
    assert "Dropout.p (float, 6 instances): 1 recompile of Sequential.forward" in text
    assert "(and the same guard of each instance)" in text
    assert "dropout returns its input at p == 0" in text
    assert "counted under each" not in text
    data = json.loads(format_json(report))
    assert data["path_recompiles"] == 1 and len(data["paths"][0]["instances"]) == 6
    assert fix_blocks(report) == []


class _FunctionalDropout(torch.nn.Module):
    """Attention dropout two ways: ``MultiheadAttention(dropout=)`` and a float attribute
    handed to SDPA's ``dropout_p``."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, dropout=0.0, batch_first=True)
        self.attn_dropout = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, _ = self.attn(x, x, x, need_weights=False)
        p = self.attn_dropout if self.training else 0.0
        q = x.unsqueeze(1)
        return a + torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=p)[:, 0]


def test_the_p_0_note_comes_with_every_kind_of_dropout() -> None:
    """``MultiheadAttention.dropout`` and a module's float handed to SDPA's ``dropout_p``
    take the p == 0 path as ``Dropout.p`` does: their culprits say so."""
    model = _FunctionalDropout()
    compiled = torch.compile(model, backend="eager")

    def run() -> None:
        for p in (0.0, 0.1):
            model.attn.dropout = p
            model.attn_dropout = p
            compiled(torch.ones(2, 3, 8))

    report = _collect(run)
    notes = {c.scalar: c.note for c in report.culprits}
    assert set(notes) == {"MultiheadAttention.dropout", "_FunctionalDropout.attn_dropout"}
    for note in notes.values():
        assert note is not None and note.startswith("dropout returns its input at p == 0")


FIX_IN_A_FUNCTION = """\
import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.0)

    def forward(self, x):
        return x + self.drop(self.lin(x))


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(Block() for _ in range(3)))
    # FIX
    compiled = torch.compile(model, backend="eager")
    for epoch in range(10):
        for block in model:
            block.drop.p = 0.02 * epoch
        compiled(torch.randn(4, 8))
    print("trained")


main()
"""


@pytest.mark.broad
def test_the_fix_block_runs_pasted_inside_a_function(tmp_path: Path) -> None:
    """A script that trains inside ``main()`` and uses its module-level ``torch`` there:
    the fix block, pasted into ``main`` where the report says, runs (an ``import torch`` in
    it would make ``torch`` local to ``main`` and fail on its first line), and the doctor
    then finds only dropout's path, counted once for its three instances."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(FIX_IN_A_FUNCTION)
    result = doctor(tmp_path, "proj", "train.py")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(
        "dynscalar doctor: running proj/train.py (the report goes to report.txt when it ends)\n"
    )
    report = report_of(tmp_path)
    assert "Dropout.p (float, 3 instances)" in report
    code = all_fix_code(report)
    assert code.splitlines() == [
        "import dynscalar",
        "for submodule in model.modules():  # every Dropout in it",
        "    if isinstance(submodule, torch.nn.Dropout):",
        '        dynscalar.mark_dynamic_attr(submodule, "p")',
    ]
    pasted = textwrap.indent(code, "    ")
    fixed = FIX_IN_A_FUNCTION.replace("    # FIX\n", pasted)
    (tmp_path / "proj" / "train.py").write_text(fixed)
    ran = run_interpreter("proj/train.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "trained\n"
    # with `import torch` pasted too, as the doctor printed it before
    broken = FIX_IN_A_FUNCTION.replace(
        "    # FIX\n", textwrap.indent("import torch\n" + code, "    ")
    )
    (tmp_path / "broken.py").write_text(broken)
    failed = run_interpreter("broken.py", cwd=tmp_path)
    assert failed.returncode == 1 and "UnboundLocalError" in failed.stderr

    again = doctor(tmp_path, "proj", "train.py")
    assert again.returncode == 0, again.stderr
    report = report_of(tmp_path)
    assert report.startswith("dynscalar doctor: no recompiles were caused by Python scalars.")
    assert "1 recompile took another path of a dynamic scalar" in report
    assert "Dropout.p (float, 3 instances): 1 recompile of Sequential.forward" in report


def test_a_start_line_and_progress_while_the_script_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A training script may run for minutes before the report: the doctor says it started,
    then how long it has run, on stderr."""
    from dynscalar.tools.doctor import run as doctor_run

    (tmp_path / "slow.py").write_text("import time\ntime.sleep(0.5)\nprint('done')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(doctor_run, "PROGRESS_EVERY_S", 0.1)
    assert run_doctor("slow.py", ["--fast"], output="report.txt") == 0
    out, err = capsys.readouterr()
    assert out == "done\n"
    lines = err.splitlines()
    assert lines[0] == (
        "dynscalar doctor: running slow.py --fast (the report goes to report.txt when it ends)"
    )
    assert len(lines) >= 3, err
    for line in lines[1:]:
        assert line.startswith("dynscalar doctor: still running (")
        assert line.endswith(" s, 0 cache misses read so far)")


def test_calls_past_the_limit_read_each_versions_guards_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every call past a recompile limit is read against every cached version; what never
    changes (a version's guard tree, its guard texts) is read once per version, which keeps
    the doctor's cost per such call small."""
    read: list[Any] = []
    scalar_guards = _recompiles._scalar_guards
    monkeypatch.setattr(
        _recompiles, "_scalar_guards", lambda root: read.append(root) or scalar_guards(root)
    )
    events = watch(TwoScalars(), *((step, 2, 3) for step in range(20)))
    assert len(events) == 19  # 7 recompiles, the one the limit refused, 11 calls past it
    assert all(event.causes for event in events)
    assert len(read) == 8  # one per version (not 1 + 2 + ... + 8 + 11 * 8)
    assert len({id(root) for root in read}) == 8
