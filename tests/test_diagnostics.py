"""Diagnostics: specialization warnings and strict errors, explain, auto_dynamic, logs.

The doctor has its own tests: tests/test_doctor.py.
"""

from __future__ import annotations

import copy
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import dynscalar as ds
from dynscalar._explain import ARGUMENT

from .helpers import CountingBackend, run_interpreter, run_side_by_side, twins
from .test_compile_int import Branches, UsesStep

HERE = Path(__file__).resolve()


class Loops(torch.nn.Module):
    """range(self.step) forces the value: Dynamo unrolls the loop."""

    def __init__(self) -> None:
        super().__init__()
        self.step = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.step):  # the specializing line
            x = x + 1
        return x


class Indexes(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 1
        self.table = [0.5, 1.5, 2.5, 3.5]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.table[self.step]


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(HERE.read_text().splitlines(), 1) if text in line)


# ----------------------------------------------------------------------------- specialization
def test_range_on_marked_scalar_warns_once_with_location() -> None:
    model, eager = twins(ds.mark_dynamic_attr(Loops(), "step"))
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    with pytest.warns(ds.SpecializationWarning) as record:
        for step in (2, 3, 2, 3):
            model.step = eager.step = step
            run_side_by_side(compiled, eager, 1)
    assert counter.frame_count == 2  # specialized: one graph per value (2 and 3)
    ours = [w for w in record if issubclass(w.category, ds.SpecializationWarning)]
    assert len(ours) == 1  # once per attribute and code location
    message = str(ours[0].message)
    # named as the call site names it: run_side_by_side calls `compiled(x)`
    assert "compiled.step (Loops.step) is forced to one value (2)" in message
    assert f"{HERE}:{line_of('# the specializing line')}" in message
    assert "What forces it there: `for _ in range(n)`" in message  # the construct it saw
    assert "torch.arange(n)" in message
    assert ours[0].filename == str(HERE) and ours[0].lineno == line_of("# the specializing line")


def test_list_indexing_warns() -> None:
    model, eager = twins(ds.mark_dynamic_attr(Indexes(), "step"))
    counter = CountingBackend("eager")
    with pytest.warns(
        ds.SpecializationWarning, match=r"compiled\.step \(Indexes\.step\) is forced to one value"
    ):
        run_side_by_side(torch.compile(model, backend=counter), eager, 2)
    assert counter.frame_count == 1  # the value never changed


LOOKUP = {i: 0.5 + i for i in range(4)}


class ListLookups(torch.nn.Module):  # its own line: each warning is given once per line
    def __init__(self) -> None:
        super().__init__()
        self.step = 1
        self.values = [0.5, 1.5, 2.5, 3.5]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.values[self.step]


class Lookups(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * LOOKUP[self.step]


@pytest.mark.parametrize(
    ("cls", "construct", "advice"),
    [
        (ListLookups, "`values[n]` on a list or tuple", "torch.tensor(values)"),
        (Lookups, "`table[n]` on a dict", "leave a value used as a dict key unmarked"),
    ],
)
def test_list_index_and_dict_key_get_their_own_advice(
    cls: type[torch.nn.Module], construct: str, advice: str
) -> None:
    model, eager = twins(ds.mark_dynamic_attr(cls(), "step"))
    counter = CountingBackend("eager")
    with pytest.warns(ds.SpecializationWarning) as record:
        run_side_by_side(torch.compile(model, backend=counter), eager, 1)
    (message,) = [str(w.message) for w in record if w.category is ds.SpecializationWarning]
    assert f"What forces it there: {construct}." in message and advice in message
    assert "range" not in message  # not the generic loop advice
    assert counter.frame_count == 1


@pytest.mark.parametrize("way", ["registry", "proxy", "decorator"])
def test_strict_mark_raises_specialization_error(way: str) -> None:
    if way == "registry":
        model = ds.mark_dynamic_attr(Loops(), "step", strict=True)
    elif way == "proxy":
        model = Loops()
        model.step = ds.DynamicInt(2, strict=True)
    else:
        model = ds.dynamic_attrs("step", strict=True)(type("StrictLoops", (Loops,), {}))()
    compiled = torch.compile(model, backend="eager")
    with pytest.raises(
        ds.SpecializationError, match=r"model\.step \((Strict)?Loops\.step\) is forced to one value"
    ) as info:
        compiled(torch.ones(2))
    assert isinstance(info.value, ValueError)  # what `except ValueError` in user code sees


def test_predicate_guard_is_not_a_specialization() -> None:
    model, eager = twins(ds.mark_dynamic_attr(Branches(), "step", strict=True))
    counter = CountingBackend("eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.SpecializationWarning)
        run_side_by_side(torch.compile(model, backend=counter), eager, 10)
    assert counter.frame_count == 2


# ----------------------------------------------------------------------------- explain
def test_explain_lists_marks_of_the_tree(capsys: pytest.CaptureFixture[str]) -> None:
    @ds.dynamic_attrs("step")
    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = 0
            self.temperature = ds.DynamicFloat(0.7)

    root = torch.nn.Module()
    root.block = Block()
    root.count = 3
    root.plain = 4
    ds.mark_dynamic_attr(root, "count", min=0, max=100)
    records = ds.explain(root)
    assert [(r.module, r.attribute, r.how) for r in records] == [
        ("", "count", "mark_dynamic_attr"),
        ("block", "step", "@dynamic_attrs"),
        ("block", "temperature", "DynamicFloat value"),
    ]
    assert records[0].spec == ds.DynamicSpec(min=0, max=100)
    printed = capsys.readouterr().out
    assert "block (Block)" in printed and "min=0, max=100" in printed and "plain" not in printed
    assert str(ds.explain(torch.nn.Linear(1, 1), show=False)) == (
        "dynscalar: no dynamic scalars in this module tree."
    )


def scaled_sum(x: torch.Tensor, n: int, lr: float) -> torch.Tensor:
    return x * n * lr


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    @ds.dynamic_args("scale")
    def forward(self, x: torch.Tensor, temperature: float = 1.0, scale: float = 1.0) -> Any:
        return x / temperature * scale


def test_explain_lists_argument_marks_of_each_forward_and_of_a_function() -> None:
    root = torch.nn.Module()
    root.head = ds.mark_dynamic_args(Scaled(), "temperature", min=0)
    ds.mark_dynamic_attr(root.head, "step")
    records = ds.explain(torch.compile(root, backend="eager"), show=False)
    assert [(r.module, r.cls, r.attribute, r.value, r.how) for r in records] == [
        ("head", "Scaled", "step", 0, "mark_dynamic_attr"),
        ("head", "Scaled", "forward(scale)", ARGUMENT, "@dynamic_args"),
        ("head", "Scaled", "forward(temperature)", ARGUMENT, "mark_dynamic_args"),
    ]
    assert str(records) == (
        "module         attribute             value                   how                spec\n"
        "-------------  --------------------  ----------------------  -----------------  ------\n"
        "head (Scaled)  step                  0                       mark_dynamic_attr  backed\n"
        "head (Scaled)  forward(scale)        <passed by the caller>  @dynamic_args      backed\n"
        "head (Scaled)  forward(temperature)  <passed by the caller>  mark_dynamic_args  min=0"
    )

    ds.mark_dynamic_args(scaled_sum, "n", min=0, max=10)
    ds.mark_dynamic_args(scaled_sum, "lr")
    assert str(ds.explain(torch.compile(scaled_sum, backend="eager"), show=False)) == (
        "object             attribute       value                   how                spec\n"
        "-----------------  --------------  ----------------------  -----------------  "
        "-------------\n"
        "<root> (function)  scaled_sum(lr)  <passed by the caller>  mark_dynamic_args  backed\n"
        "<root> (function)  scaled_sum(n)   <passed by the caller>  mark_dynamic_args  "
        "min=0, max=10"
    )


def test_explain_lists_an_optimizers_marked_keys() -> None:
    weights = [torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))]
    opt = torch.optim.Adam([{"params": weights[:1], "lr": 0.1}, {"params": weights[1:]}], lr=0.01)
    assert str(ds.explain(opt, show=False)) == "dynscalar: no dynamic scalars in this optimizer."
    ds.mark_dynamic_param_groups(opt, "lr", "betas")
    records = ds.explain(opt, show=False)
    assert [(r.cls, r.attribute, r.value, r.how) for r in records] == [
        ("Adam", "param_groups[*]['betas']", (0.9, 0.999), "mark_dynamic_param_groups"),
        ("Adam", "param_groups[*]['lr']", [0.1, 0.01], "mark_dynamic_param_groups"),  # per group
    ]
    assert str(records).splitlines()[2] == (
        "<root> (Adam)  param_groups[*]['betas']  (0.9, 0.999)  mark_dynamic_param_groups  backed"
    )


def test_explain_refuses_what_holds_no_marks() -> None:
    with pytest.raises(ds.DynscalarTypeError, match=r"expected a torch.nn.Module, a torch.optim"):
        ds.explain(3)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- auto_dynamic
@pytest.mark.parametrize(("model_cls", "expected"), [(UsesStep, 2), (Branches, 3)])
def test_auto_dynamic_matches_allow_unspec_int_but_scoped(model_cls: type, expected: int) -> None:
    torch.manual_seed(0)
    auto_model, auto_eager = twins(ds.auto_dynamic(model_cls()))
    auto = CountingBackend("eager")
    run_side_by_side(torch.compile(auto_model, backend=auto), auto_eager, 20)
    assert ds.is_dynamic_attr(auto_model, "step")
    assert [r.how for r in ds.explain(auto_model, show=False)] == ["auto_dynamic"]

    torch._dynamo.reset()
    stock_model, stock_eager = twins(model_cls())
    stock = CountingBackend("eager")
    with torch._dynamo.config.patch(allow_unspec_int_on_nn_module=True):
        run_side_by_side(torch.compile(stock_model, backend=stock), stock_eager, 20)
    assert auto.frame_count == stock.frame_count == expected

    torch._dynamo.reset()  # scoped: another model is untouched by auto_dynamic
    other, other_eager = twins(model_cls())
    counter = CountingBackend("eager")
    run_side_by_side(torch.compile(other, backend=counter), other_eager, 10)
    assert counter.frame_count >= 8 and not ds.is_dynamic_attr(other, "step")


def test_auto_dynamic_includes_floats_and_leaves_constant_attributes_alone() -> None:
    class Sched(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lr = 0.1
            self.width = 4

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[:, : self.width] * self.lr

    model = ds.auto_dynamic(Sched())
    eager = copy.deepcopy(model)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    for i in range(10):
        model.lr = eager.lr = 0.1 * (i + 1)
        run_side_by_side(compiled, eager, 1, lambda _: (torch.randn(2, 6),))
    assert counter.frame_count == 2
    assert ds.is_dynamic_attr(model, "lr") and not ds.is_dynamic_attr(model, "width")


def test_auto_dynamic_rejects_non_modules() -> None:
    with pytest.raises(TypeError, match=r"auto_dynamic: expected a torch\.nn\.Module"):
        ds.auto_dynamic(3)  # type: ignore[type-var]


# ----------------------------------------------------------------------------- logging
def test_debug_log_names_each_symbolic_scalar(caplog: pytest.LogCaptureFixture) -> None:
    model, eager = twins(ds.mark_dynamic_attr(UsesStep(), "step"))
    counter = CountingBackend("eager")
    with caplog.at_level(logging.DEBUG, logger="dynscalar"):
        run_side_by_side(torch.compile(model, backend=counter), eager, 2)
    assert counter.frame_count == 1
    messages = [r.getMessage() for r in caplog.records if r.name == "dynscalar"]
    assert any(
        "compiled.step (UsesStep.step) (value 0) becomes a symbolic graph input: marked with" in m
        for m in messages
    ), messages


class Upsample(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=self.scale, mode="nearest")  # the user's line


class Nested(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Sequential(Upsample())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(x)


def test_specialization_inside_torch_names_the_instance_path_and_the_users_line() -> None:
    """F.interpolate takes scale_factor as a Python number inside torch's own code: the
    warning names model.up[0].scale and points at the user's call, with advice that fits."""
    model = Nested()
    ds.mark_dynamic_attr(model.up[0], "scale")
    eager = copy.deepcopy(model)
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    with pytest.warns(ds.SpecializationWarning) as record:
        for scale in (2.0, 3.0):
            model.up[0].scale = eager.up[0].scale = scale
            x = torch.randn(1, 2, 4)
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 2  # specialized by torch: one graph per value
    ours = [w for w in record if issubclass(w.category, ds.SpecializationWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert message.startswith("dynscalar: model.up[0].scale (Upsample.scale) is forced")
    assert "It happens inside torch (functional.py:" in message
    assert "range(n)" not in message  # the user has no range() to change here
    assert ours[0].filename == str(HERE) and ours[0].lineno == line_of("# the user's line")


# ----------------------------------------------------------------------------- recompile_limit
class Counts(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)  # run_side_by_side's inputs: (3, 4)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.lin(x) * self.step


def test_marking_after_recompile_limit_warns_and_reset_makes_the_mark_count() -> None:
    """In a notebook: compile, train until torch gives up on forward, then mark. The mark
    alone changes nothing (torch compiles that frame no more), so dynscalar says so and
    names the fix; after torch._dynamo.reset() one compile covers every value."""
    limit = torch._dynamo.config.recompile_limit
    model, eager = twins(Counts())
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    run_side_by_side(compiled, eager, limit + 3)
    assert counter.frame_count == limit  # then eager
    with pytest.warns(ds.DynscalarWarning, match=r"Counts\.forward already hit") as record:
        ds.mark_dynamic_attr(model, "step")
    message = str(record[0].message)
    assert f"recompile_limit ({limit})" in message and "torch._dynamo.reset()" in message
    assert record[0].filename == __file__  # the marking line
    run_side_by_side(compiled, eager, 3)
    assert counter.frame_count == limit  # the mark alone: still uncompiled
    torch._dynamo.reset()
    run_side_by_side(compiled, eager, 5)
    assert counter.frame_count == limit + 1  # one compile, with the mark


def test_marking_before_the_limit_does_not_warn() -> None:
    model, eager = twins(Counts())
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    run_side_by_side(compiled, eager, 3)
    ds.mark_dynamic_attr(model, "step")  # filterwarnings = error: a warning would fail
    run_side_by_side(compiled, eager, 5)
    assert counter.frame_count == 4  # 3 values, then one symbolic graph


def test_torch_recompile_limit_warning_names_user_code_not_the_bridge(tmp_path: Path) -> None:
    """torch's recompile-limit warning ends with the location of the last guard; a guard made
    under dynscalar's hook is attributed to user code, not to the hook (_bridge/_reports.py
    hides the bridge's files). A subprocess: torch's logging set-up is per process."""
    import textwrap

    script = tmp_path / "loops.py"
    script.write_text(
        textwrap.dedent(
            """
            import warnings, torch, dynscalar
            warnings.simplefilter("ignore")
            class Loops(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.step = 0
                def forward(self, x):
                    self.step += 1
                    for _ in range(self.step % 20):
                        x = x + 1
                    return x
            m = dynscalar.mark_dynamic_attr(Loops(), "step")
            c = torch.compile(m, backend="eager")
            for _ in range(10):
                c(torch.ones(2))
            """
        )
    )
    result = run_interpreter(str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "hit config.recompile_limit" in result.stderr
    reason = next(line for line in result.stderr.splitlines() if "last reason" in line)
    assert "loops.py:10 in forward" in reason and "dynscalar" not in reason, reason
