"""Compiled dynscalar code never differs from eager: the differential fuzzer.

The quick profile checks 200 seeded random programs (half on ``eager``, half on
``aot_eager``) and a small ``inductor`` sample.  A test fails listing every disagreement
that is neither allowed by the contract (tests/fuzz/contract.py) nor torch's own, each with
the command that re-runs it and a minimal program.  ``DYNSCALAR_FUZZ_SEED`` picks another
seed; ``python -m tests.fuzz --profile long`` runs the long profile (docs/fuzzing.md).

The other tests specify the fuzzer itself: reproducible programs, the contract table, the
classification of differences and the shrinker.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

import dynscalar
from tests.fuzz import runner
from tests.fuzz.contract import CONTRACT, Entry, Scalar, contract_error, rule_for
from tests.fuzz.generator import (
    SHAPES,
    Assign,
    Call,
    Instance,
    Program,
    Redefine,
    Spec,
    Stmt,
    Value,
    generate,
    render,
)
from tests.fuzz.profile import PROFILES, backend_for, run_profile
from tests.fuzz.render_docs import PAGE, PUBLISHED, source_name
from tests.fuzz.render_docs import render as render_page
from tests.helpers import run_interpreter

SEED = int(os.environ.get("DYNSCALAR_FUZZ_SEED", "0"))
QUICK = PROFILES["quick"]
INDUCTOR_SAMPLE = 3
ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- the profiles
#: the quick profile's programs in two parts: the default suite runs the aot_eager programs
#: of the first half (about 50), ``pytest -m broad`` the rest (CI runs both)
_HALF = QUICK.programs // 2


@pytest.mark.fuzz
@pytest.mark.parametrize(
    ("backend", "part"),
    [
        ("aot_eager", range(_HALF)),
        pytest.param("aot_eager", range(_HALF, QUICK.programs), marks=pytest.mark.broad),
        pytest.param("eager", range(QUICK.programs), marks=pytest.mark.broad),
    ],
    ids=["aot_eager-first-half", "aot_eager-second-half", "eager"],
)
def test_quick_profile_has_no_dynscalar_caused_disagreement(backend: str, part: range) -> None:
    indices = [i for i in part if backend_for(i) == backend]
    report = run_profile(
        SEED,
        indices,
        backend=backend_for,
        shrink_budget_s=QUICK.shrink_budget_s / 2,
        shrink_each_s=QUICK.shrink_each_s,
    )
    for verdict in report.verdicts:  # every program ran to its end in both runs
        assert verdict.calls == len(verdict.program.calls) or verdict.events, verdict.program.index
    assert not report.failures(), report.failure_text()


@pytest.mark.fuzz
@pytest.mark.inductor
@pytest.mark.broad
def test_inductor_sample_has_no_dynscalar_caused_disagreement() -> None:
    report = run_profile(
        SEED,
        range(QUICK.programs, QUICK.programs + INDUCTOR_SAMPLE),
        backend=lambda _: "inductor",
        shrink_budget_s=QUICK.shrink_each_s,
        shrink_each_s=QUICK.shrink_each_s,
    )
    assert not report.failures(), report.failure_text()


# ----------------------------------------------------------------------------- the generator
def test_a_program_is_a_function_of_seed_and_index() -> None:
    assert generate(3, 17) == generate(3, 17)
    assert render(generate(3, 17)) == render(generate(3, 17))
    assert render(generate(3, 17)) != render(generate(4, 17))
    assert render(generate(3, 17)) != render(generate(3, 18))


def test_every_form_of_a_program_is_valid_python() -> None:
    for index in range(300):
        program = generate(SEED, index)
        compile(render(program), "marked", "exec")
        compile(render(program, script=True), "script", "exec")
        unmarked = render(program, marks=False)
        compile(unmarked, "unmarked", "exec")
        assert "dynscalar" not in unmarked.split("\n", 1)[1]  # past the header comment
        assert "Dynamic" not in unmarked


def test_programs_cover_the_ways_to_mark_and_the_value_types() -> None:
    programs = [generate(SEED, i) for i in range(QUICK.programs)]
    kinds = Counter(p.kind for p in programs)
    values = Counter(
        v.kind
        for p in programs
        for v in [
            *(v for i in p.instances for v in i.init),
            *(getattr(s, "value", None) or getattr(s, "arg", None) for s in p.steps),
        ]
        if v is not None
    )
    ints = [v.payload for p in programs for i in p.instances for v in i.init if v.kind == "int"]
    steps = Counter(type(s).__name__ for p in programs for s in p.steps)
    assert kinds["module"] and kinds["function"]
    assert set(values) == {
        "int",
        "bool",
        "float",
        "np.int64",
        "np.int32",
        "np.float64",
        "np.float32",
        "DynamicInt",
        "DynamicFloat",
        "str",
        "None",
        "tensor",
    }
    assert min(ints) < 0 and max(ints) > 2**31 and max(ints) > 2**63
    assert steps["Call"] and steps["Assign"] and steps["Mark"] and steps["Unmark"]
    assert any(p.class_mark for p in programs)
    assert any(i.mark for p in programs for i in p.instances)
    assert any(i.mark is None and i.cls == "M" for p in programs for i in p.instances)
    body = [s for p in programs for s in p.body]
    assert any(s.writes for s in body) and any(s.forces for s in body)
    assert any(s.template.startswith("if ") for s in body)
    for function in ("math.pow(", "math.log(", "math.exp(", "math.sqrt("):
        assert any(function in s.template for s in body), function
    specs = [
        v.spec for p in programs for i in p.instances for v in i.init if v.kind == "DynamicInt"
    ]
    assert any(s.unbacked for s in specs) and any(s.strict for s in specs)
    assert any(s.has_range for s in specs)


def test_every_shape_is_drawn_and_leaves_the_other_programs_alone() -> None:
    """Each shape of ``SHAPES`` is in some quick-profile program; a program's shapes come
    from a stream of their own, so its body and steps without them are unchanged."""
    programs = [generate(SEED, i) for i in range(QUICK.programs)]
    drawn = Counter(tag for p in programs for tag in p.tags)
    assert set(drawn) == set(SHAPES), drawn
    plain = next(p for p in programs if not p.tags)
    assert render(plain) == render(replace(generate(SEED, plain.index), tags=()))
    redefined = next(p for p in programs if "redefined function" in p.tags)
    assert any(isinstance(step, Redefine) for step in redefined.steps)
    assert "exec(compile(F_SOURCE" in render(redefined)
    churn = next(p for p in programs if "instances churn" in p.tags)
    assert all(
        isinstance(step, Assign)
        for before, step in zip(churn.steps, churn.steps[1:], strict=False)
        if isinstance(before, Call)
    )


def test_later_shapes_leave_the_programs_of_the_earlier_ones_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Integer tensors with the scalars and random ops came later, each from a stream of
    its own: without their statements every program is what it was before them (the
    published runs' programs), and they are drawn (int powers, shifts, feature and alpha
    dropout, ``bernoulli_``)."""
    from tests.fuzz import generator

    later = generator._OWN_STREAM
    programs = [generate(SEED, i) for i in range(QUICK.programs)]
    assert all(any(tag in p.tags for p in programs) for tag in later)
    added = {t for tag in later for t, _ in generator._SHAPE_STATEMENTS[tag]}
    for p in programs:
        body = tuple(s for s in p.body if s.template not in added)
        kept = replace(p, body=body, tags=tuple(t for t in p.tags if t not in later))
        before = generate(SEED, p.index, later_shapes=False)
        assert render(kept) == render(before), p.index
    for tag in later:
        monkeypatch.setitem(SHAPES, tag, (SHAPES[tag][0], 0.0))
    assert all(
        render(generate(SEED, i)) == render(generate(SEED, i, later_shapes=False))
        for i in range(50)
    )
    templates = " ".join(s.template for p in programs for s in p.body)
    for text in (") ** (", " << ", "dropout2d(", "feature_alpha_dropout(", ".bernoulli_("):
        assert text in templates, text


def test_a_generator_left_elsewhere_is_a_difference() -> None:
    """Every call starts from the same seed in both runs; a random op that leaves the
    default generator elsewhere than eager's is reported even where the results agree."""
    same = torch.ones(2)
    comp = runner.CallRecord("m0", runner.Outcome(result=same, generator=1), {}, [], [])
    eager = runner.CallRecord("m0", runner.Outcome(result=same, generator=2), {}, [], [])
    keys = [m.key for m in runner.diff_call(0, comp, eager, exact=True)]
    assert keys == ["generator state after the call differs"]
    eager.outcome.generator = 1
    assert runner.diff_call(0, comp, eager, exact=True) == []


def _record(steps: list[str], internal: list[str], error: str | None) -> runner.CallRecord:
    return runner.CallRecord("m0", runner.Outcome(error=error), {}, steps, internal)


def test_a_lost_mark_and_the_users_error_reported_as_internal_are_dynscalars() -> None:
    ok = _record([], [], None)
    lost = runner.diff_call(
        0, _record(["MarkLost"], [], None), _record(["MarkLost"], [], None), exact=True
    )
    assert [m.key for m in lost] == ["a function defined again lost its mark"] * 2
    internal = runner.INTERNAL_ERROR + " in its hook on ..."
    raised = _record([], [], "TypeError: unsupported operand")
    keys = [m.key for m in runner.diff_call(0, _record([], [internal], "X: y"), raised, exact=True)]
    assert "the program's own error reported as dynscalar's internal error" in keys
    # a fallback that gave eager's numbers (eager did not raise) is the net doing its job
    assert runner.diff_call(0, _record([], [internal], None), ok, exact=True) == []


# ----------------------------------------------------------------------------- the contract
def test_the_contract_names_public_dynscalar_errors() -> None:
    for rule in CONTRACT:
        error = getattr(dynscalar, rule.error)
        assert issubclass(error, dynscalar.DynscalarError), rule.error
        assert rule_for(error("x")) is rule


def test_a_contract_error_is_found_inside_torch_wrapping() -> None:
    from torch._dynamo.exc import BackendCompilerFailed

    inner = dynscalar.DynamicFloatSpecializedError("baked")
    wrapped = BackendCompilerFailed(lambda *a: None, inner, None)
    assert contract_error(wrapped) is inner
    try:
        try:
            raise dynscalar.OutOfRangeError("out")
        except ValueError as exc:
            raise RuntimeError("torch wrapped it") from exc
    except RuntimeError as outer:
        assert type(contract_error(outer)) is dynscalar.OutOfRangeError
    assert contract_error(RuntimeError("plain")) is None


def _entry(value: Any, *marks: Any, read: bool = True, forces: bool = False) -> Entry:
    return Entry((Scalar("s", value, marks, read),), forces=forces, makes_float=False)


def rule(name: str) -> Any:
    return next(r for r in CONTRACT if r.error == name)


def test_a_contract_error_is_allowed_only_under_its_condition() -> None:
    import numpy as np

    spec = dynscalar.DynamicSpec
    out_of_range, type_error = rule("OutOfRangeError"), rule("DynscalarTypeError")
    assert out_of_range.applies(_entry(7, spec(max=5)))
    assert out_of_range.applies(_entry(dynscalar.DynamicInt(7), spec(min=8)))
    assert not out_of_range.applies(_entry(5, spec(max=5)))
    assert not out_of_range.applies(_entry(7, spec(max=5), read=False))
    assert not out_of_range.applies(_entry(7))  # unmarked
    assert type_error.applies(_entry("3", spec())) and type_error.applies(_entry(True, spec()))
    assert not type_error.applies(_entry(np.int64(3), spec()))  # numpy scalars are numbers
    # floats under int-only specs and ints outside int64 are traced, not refused
    assert all(r.error != "DynscalarValueError" for r in CONTRACT)
    strict = rule("SpecializationError")
    assert strict.applies(_entry(3, spec(strict=True), forces=True))
    assert strict.applies(_entry(np.float64(0.5), spec(strict=True)))
    assert not strict.applies(_entry(3, spec(), forces=True))


# ----------------------------------------------------------------------------- the runner
def program(body: list[str], *instances: Instance, steps: list[Any]) -> Program:
    stmts = tuple(Stmt(t, "s", "s", writes=t.startswith("{a} =")) for t in body)
    return Program(
        0, 0, "module", ("s",), stmts, (1.0, -2.0, 0.5, 3.0), None, instances, tuple(steps)
    )


def test_programs_that_agree_have_no_events() -> None:
    p = program(
        ["y = y * {a}", "{a} = {a} + 1"],
        Instance("m0", "M", (Value("int", 3),)),
        steps=[Call("m0"), Call("m0")],
    )
    verdict = runner.check_program(p, "eager", None)
    assert verdict.events == [] and verdict.calls == 2 and verdict.compiles >= 1


def test_a_documented_error_is_allowed_and_the_comparison_goes_on() -> None:
    marked = Instance("m0", "M", (Value("int", 3),), mark=(("s",), Spec(max=5)))
    p = program(
        ["y = y * {a}"],
        marked,
        steps=[
            Call("m0"),
            Assign("m0", "s", Value("int", 7)),
            Call("m0"),
            Assign("m0", "s", Value("int", 4)),
            Call("m0"),
        ],
    )
    verdict = runner.check_program(p, "eager", None)
    assert [(e.cause, e.error, e.mismatch.call) for e in verdict.events] == [
        ("allowed", "OutOfRangeError", 1)
    ]


@pytest.mark.broad
def test_a_difference_stock_torch_shows_too_is_torchs_own() -> None:
    """Unmarked, so dynscalar plays no part: every difference must be classified as torch's.

    Stock torch runs in a worker process that never imports dynscalar.
    """
    bodies = [["{a} = {a} * 2 + 1", "y = y * {a}"], ["y = y * {a}"]]
    values = [Value("np.float64", 0.5), Value("np.int64", 3), Value("float", 0.5), Value("int", 3)]
    worker = runner.StockWorker()
    try:
        for body in bodies:
            for value in values:
                p = program(body, Instance("m0", "M", (value,)), steps=[Call("m0"), Call("m0")])
                verdict = runner.check_program(p, "aot_eager", worker)
                assert all(e.cause == "torch" for e in verdict.events), verdict.events
    finally:
        worker.close()


@pytest.mark.broad
def test_a_torch_bug_behind_a_refused_call_is_torchs_own() -> None:
    """The long profile's program at seed 0, index 4419: a marked str makes compiled code
    raise (DynscalarTypeError; eager raises TypeError too), then a numpy int meets
    ``self.s += 0.5``, which stock torch's fake tensors cannot trace.  In the stock re-run the
    first call's TypeError makes torch give up on the frame, which hides the bug there; the
    re-run without the refused call shows it."""
    marked_str = Instance("m1", "MD", (Value("str", "3"),))  # MD: @dynamic_attrs("s")
    numpy_float = Instance("m2", "M", (Value("np.float64", -1.25),))
    steps = [Call("m1"), Assign("m2", "s", Value("np.int64", -2)), Call("m2")]
    p = replace(
        program(["{a} += 0.5"], marked_str, numpy_float, steps=steps),
        class_mark=(("s",), Spec()),
    )
    worker = runner.StockWorker()
    try:
        verdict = runner.check_program(p, "aot_eager", worker)
    finally:
        worker.close()
    assert [(e.cause, e.mismatch.call) for e in verdict.events] == [("torch", 1)], verdict.events
    assert "without the calls refused by the contract" in (verdict.events[0].torch_kind or "")


def test_torchs_numpy_zero_d_results_are_taken_out_only_inside_the_check() -> None:
    """Stock torch returns a numpy scalar computed in a compiled frame as a 0-d ndarray
    (``tensor * ndarray`` is then float64 where eager has float32: the long profile's
    programs 584, 1578, 1982, 2628, 3644, 4076, where dynscalar's graphs reach a frame that
    stock compiled to nothing).  The classifier compiles the program again with that
    conversion taken out; outside the check torch is untouched."""
    import numpy as np
    import torch

    def double(s: Any) -> Any:
        return s * 2

    torch._dynamo.reset()
    assert type(torch.compile(double, backend="eager")(np.float64(0.5))) is np.ndarray
    torch._dynamo.reset()
    with runner._numpy_scalars_kept():
        assert type(torch.compile(double, backend="eager")(np.float64(0.5))) is np.float64
    torch._dynamo.reset()
    assert type(torch.compile(double, backend="eager")(np.float64(0.5))) is np.ndarray
    torch._dynamo.reset()


@pytest.mark.broad
def test_a_numpy_zero_d_result_dynscalar_lets_torch_compile_is_torchs_own() -> None:
    """The long profile's program 584 (seed 0, eager): a marked property compiled in a frame
    of its own returns ``np.int64(8) * 2`` as a 0-d array; stock torch's re-run gave up on
    the frame earlier and does not show it.  Classified as torch's, by the re-run with
    torch's conversion taken out."""
    worker = runner.StockWorker()
    try:
        program = generate(0, 584, later_shapes=False)  # as the published run made it
        verdict = runner.check_program(program, "eager", worker)
    finally:
        worker.close()
    assert [e.cause for e in verdict.events] == ["torch"], verdict.events
    assert "0-d arrays" in (verdict.events[0].torch_kind or "")


@pytest.mark.broad
def test_the_shrinker_keeps_only_what_the_failure_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault injected into the compiled run: a wrong result whenever ``s`` ends at 8.

    The program has no marks, so that nothing but the injected fault can make it fail.
    """
    call = runner.Harness.call

    def faulty(self: runner.Harness, fn: Any, *args: Any) -> None:
        call(self, fn, *args)
        record = self.log.calls[-1]
        if self.contract and fn.__dict__.get("s") == 8 and record.outcome.error is None:
            record.outcome.result = record.outcome.result + 1

    monkeypatch.setattr(runner.Harness, "call", faulty)
    p = program(
        ["y = y * {a}", "if {a} > 3:\n    y = y + 1", "{a} = {a} + 1", "y = y - {a} // 2"],
        Instance("m0", "M", (Value("int", 3),)),
        Instance("m1", "M", (Value("int", 5),)),
        Instance("m2", "M", (Value("float", 0.5),)),
        steps=[
            Call("m1"),
            Assign("m0", "s", Value("float", 2.5)),
            Call("m0"),
            Call("m2"),
            Assign("m1", "s", Value("int", 7)),
            Call("m1"),
            Call("m0"),
            Call("m1"),
        ],
    )
    verdict = runner.check_program(p, "eager", None)
    assert verdict.failure is not None and verdict.failure.mismatch.key == "result differs"
    small, event, complete = runner.shrink(verdict, None, budget_s=120)
    assert complete and event.mismatch.key == "result differs"
    assert len(small.calls) == 1 and len(small.instances) == 1
    assert [s.template for s in small.body] == ["{a} = {a} + 1"]  # makes 7 into 8
    # what remains still fails, and is a standalone script
    assert runner.check_program(small, "eager", None).failure is not None
    compile(render(small, script=True), "script", "exec")


@pytest.mark.broad
def test_a_minimal_program_runs_as_a_standalone_script(tmp_path: Path) -> None:
    p = program(
        ["{a} += 1", "y = y * {a}"],
        Instance("m0", "M", (Value("int", 3),), mark=(("s",), Spec())),
        steps=[Call("m0"), Call("m0")],
    )
    script = tmp_path / "p.py"
    script.write_text(render(p, script=True, backend="eager"))
    result = run_interpreter(str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "call 0: " in result.stdout and "call 1: " in result.stdout


# ----------------------------------------------------------------------------- the docs page
def test_the_fuzzing_page_is_rendered_from_the_published_run() -> None:
    data = json.loads(PUBLISHED.read_text())
    assert PAGE.read_text() == render_page(data, source_name(PUBLISHED)), (
        "docs/fuzzing.md is generated: run `python -m benchmarks.render`"
    )
    assert data["programs"] == sum(data["backends"].values())
    for rule_ in CONTRACT:
        assert f"`{rule_.error}`" in PAGE.read_text()
