"""Names in messages: a value is named by the path the user's code writes.

Dynamo names what it reads by a source (``L['self'].__dict__['_modules']['drop'].p``,
``L['self'].param_groups[0]['lr']``); one function, ``_paths.user_path``, turns every
shape it produces into the user's path (``model.drop.p``, ``opt.param_groups[0]['lr']``),
for warnings, ``TORCH_LOGS=dynscalar``, errors and the doctor.
"""

from __future__ import annotations

import logging
import sys
import textwrap

import pytest
import torch
from torch._dynamo.testing import CompileCounter

import dynscalar as ds
from dynscalar._bridge._paths import parse_source, user_path

from .helpers import run_interpreter


@pytest.mark.parametrize(
    ("source", "path"),
    [
        ("L['self']._modules['drop'].p", "model.drop.p"),
        # once forward writes an attribute, Dynamo reads children through the instance dict
        ("L['self'].__dict__['_modules']['drop'].p", "model.drop.p"),
        (
            "L['self'].__dict__['_modules']['blocks']._modules['0'].__dict__['_modules']['drop'].p",
            "model.blocks[0].drop.p",
        ),
        ("G['model']._modules['drop'].p", "model.drop.p"),
        ("G['cfg'].scale", "cfg.scale"),
        # torch.compile(nn.Sequential(...)) compiles a wrapper whose module is `fn`; Dynamo's
        # own messages drop the scope
        ("L['fn']._modules['1'].step", "model[1].step"),
        ("fn._modules['1'].step", "model[1].step"),
        ("self.step", "model.step"),
        ("L['self'].param_groups[0]['lr']", "model.param_groups[0]['lr']"),  # no object: model
        ("L['self'].param_groups[0]['betas'][1]", "model.param_groups[0]['betas'][1]"),
        ("L['kwargs']['temperature']", "temperature"),
        ("L['temperature']", "temperature"),
        ("L['self'].step.__wrapped__", "model.step"),  # the plain value inside a DynamicInt
        ("L['self'].__dict__['step']", "model.step"),
        ("L['self']._parameters['weight']", "model.weight"),
        ("L['self']._modules['a-b'].p", "model.get_submodule('a-b').p"),
        ("L['self'].__dict__['odd name']", "getattr(model, 'odd name')"),
        ("L['x'].size()[0]", "L['x'].size()[0]"),  # not a chain of names: as Dynamo wrote it
        ("len(L['args'])", "len(L['args'])"),
    ],
)
def test_dynamo_sources_become_the_users_paths(source: str, path: str) -> None:
    assert user_path(source) == path


def test_parsed_sources_keep_each_steps_container() -> None:
    parsed = parse_source("L['self'].__dict__['_modules']['drop'].p")
    assert parsed is not None and (parsed.scope, parsed.root) == ("L", "self")
    assert [(s.kind, s.key, s.container) for s in parsed.steps] == [
        ("module", "drop", "L['self']"),
        ("attr", "p", "L['self'].__dict__['_modules']['drop']"),
    ]


def test_the_root_is_named_as_the_call_site_names_it() -> None:
    model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Dropout(0.1))
    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    here = sys._getframe()
    source = "L['self'].param_groups[0]['lr']"
    assert user_path(source, f_locals={"self": opt}, caller=here) == "opt.param_groups[0]['lr']"
    # no variable for it: what it is
    assert user_path(source, f_locals={"self": opt}) == "optimizer.param_groups[0]['lr']"
    compiled = torch.compile(model, backend="eager")  # only the wrapper bound: its name
    del model
    found = user_path("L['fn']._modules['1'].p", f_locals={"fn": compiled._orig_mod}, caller=here)
    assert found == "compiled[1].p"


class Writes(torch.nn.Module):
    """A forward that writes an attribute: Dynamo then reads children through ``__dict__``."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.0)
        self.drop.n = 2
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        for _ in range(self.drop.n):  # forces the marked int: a SpecializationWarning
            x = x + 1
        return self.drop(x)


def test_warnings_name_the_users_path_when_forward_writes_an_attribute() -> None:
    model = Writes()
    ds.mark_dynamic_attr(model.drop, "n")
    compiled = torch.compile(model, backend="eager")
    with pytest.warns(ds.SpecializationWarning) as record:
        compiled(torch.ones(2))
    (message,) = [str(w.message) for w in record if "is forced" in str(w.message)]
    assert message.startswith("dynscalar: model.drop.n (Dropout.n) is forced to one value (2)")
    assert "__dict__" not in message and "_modules" not in message


def test_logs_name_an_optimizer_by_its_variable(caplog: pytest.LogCaptureFixture) -> None:
    weight = torch.nn.Parameter(torch.ones(2))
    opt = ds.mark_dynamic_param_groups(torch.optim.SGD([weight], lr=0.1))
    step = torch.compile(opt.step, backend="eager")
    weight.grad = torch.ones(2)
    logger = logging.getLogger("dynscalar")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="dynscalar"):
            step()
    finally:
        logger.removeHandler(caplog.handler)
    assert (
        "opt.param_groups[0]['lr'] (SGD.param_groups[0]['lr']) (value 0.1) becomes a symbolic "
        "graph input" in caplog.text
    )
    assert "model.param_groups" not in caplog.text


def test_at_the_prompt_a_warning_has_no_empty_backticks() -> None:
    """``python -`` (and the interactive prompt) has no source lines: the location is
    ``<stdin>:N`` alone."""
    script = textwrap.dedent(
        """
        import warnings, torch, dynscalar
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.n = 3
            def forward(self, x):
                for _ in range(self.n):
                    x = x + 1
                return x
        m = dynscalar.mark_dynamic_attr(M(), "n")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.compile(m, backend="eager")(torch.ones(1))
        for w in caught:
            print(w.message)
        """
    )
    result = run_interpreter("-", input=script)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "is forced" in line]
    assert line.startswith("dynscalar: m.n (M.n) is forced to one value (3) at <stdin>:8; ")
    assert "``" not in line and "(``)" not in line


class _Steps(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.0)
        self.drop.n = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.drop.n


def test_labels_are_named_only_when_a_message_uses_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile names its marked values (``_paths.user_path``: the parse, the call site's
    variables) only for a message it emits; a compile that emits none names nothing."""
    from dynscalar._bridge import _reports

    named: list[str] = []

    def counted(source: str, **kwargs: object) -> str:
        named.append(source)
        return user_path(source, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_reports, "user_path", counted)
    quiet = _Steps()
    ds.mark_dynamic_attr(quiet.drop, "n")
    counter = CompileCounter()
    compiled = torch.compile(quiet, backend=counter)
    for n in (2, 3):
        quiet.drop.n = n
        assert torch.equal(compiled(torch.ones(2)), torch.ones(2) * n)
    assert counter.frame_count == 1
    assert named == []

    model, twin = Writes(), Writes()
    ds.mark_dynamic_attr(model.drop, "n")
    counter = CompileCounter()
    with pytest.warns(ds.SpecializationWarning, match=r"model\.drop\.n \(Dropout\.n\) is forced"):
        out = torch.compile(model, backend=counter)(torch.ones(2))
    assert torch.equal(out, twin(torch.ones(2))) and model.calls == twin.calls == 1
    assert counter.frame_count == 1
    assert named == ["L['self'].__dict__['_modules']['drop'].n"]


def test_a_label_keeps_no_frame_alive_and_outlives_its_compile() -> None:
    """The label holds the traced frame's translator weakly: gone with the compile, it is
    named from the text alone (``self`` of a module is ``model``)."""
    import gc
    import weakref

    from dynscalar._bridge._reports import Label

    class Translator:
        def __init__(self) -> None:
            self.f_locals = {"self": torch.nn.Dropout(0.0)}

    tx = Translator()
    label = Label("L['self'].p", "Dropout.p", tx)
    alive = weakref.ref(tx)
    del tx
    gc.collect()
    assert alive() is None
    assert str(label) == "model.p (Dropout.p)"
    assert str(Label("L['p']", "p", None)) == "p"
