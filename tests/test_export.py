"""torch.export with marked scalars: specialized with a warning, never wrong values."""

from __future__ import annotations

import pytest
import torch

import dynscalar as ds


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.step = 5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x) * self.step


class TakesInt(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n


def mark(model: Scaled, way: str) -> Scaled:
    if way == "registry":
        ds.mark_dynamic_attr(model, "step")
    else:
        model.step = ds.DynamicInt(5)
    return model


@pytest.mark.parametrize("way", ["registry", "proxy"])
def test_strict_export_specializes_marked_attribute_with_warning(way: str) -> None:
    model = mark(Scaled(), way)
    x = torch.randn(2, 4)
    with pytest.warns(
        ds.SpecializationWarning, match=r"torch\.export specializes Scaled\.step to 5"
    ):
        program = torch.export.export(model, (x,), strict=True)
    torch.testing.assert_close(program.module()(x), model(x))


@pytest.mark.parametrize("way", ["registry", "proxy"])
def test_non_strict_export_bakes_the_current_value(way: str) -> None:
    """Non-strict export runs forward in Python: the value at export time is a constant,
    and the user is told."""
    model = mark(Scaled(), way)
    x = torch.randn(2, 4)
    with pytest.warns(ds.SpecializationWarning, match=r"\(non-strict\) specializes step"):
        program = torch.export.export(model, (x,), strict=False)
    torch.testing.assert_close(program.module()(x), model(x))


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
def test_exported_int_argument_refuses_other_values(strict: bool) -> None:
    """A DynamicInt argument is specialized with a guard: another value raises, never wrong."""
    x = torch.ones(2)
    if strict:
        with pytest.warns(ds.SpecializationWarning, match="torch.export specializes"):
            program = torch.export.export(TakesInt(), (x, ds.DynamicInt(3)), strict=True)
    else:
        with pytest.warns(ds.SpecializationWarning, match="specializes argument 1 to 3"):
            program = torch.export.export(TakesInt(), (x, ds.DynamicInt(3)), strict=False)
    torch.testing.assert_close(program.module()(x, 3), x * 3)
    with pytest.raises(AssertionError, match="n == 3"):
        program.module()(x, 7)


class TakesFloat(torch.nn.Module):
    def forward(self, x: torch.Tensor, v: float) -> torch.Tensor:
        return x * v


def test_strict_export_of_a_dynamic_float_argument_keeps_its_value() -> None:
    """The plain float is read through the proxy (never int()): 0.5 stays 0.5."""
    x = torch.ones(2)
    with pytest.warns(ds.SpecializationWarning, match="torch.export specializes"):
        program = torch.export.export(TakesFloat(), (x, ds.DynamicFloat(0.5)), strict=True)
    torch.testing.assert_close(program.module()(x, 0.5), x * 0.5)


def test_strict_mark_refuses_export_specialization_with_a_picklable_error() -> None:
    """torch.export re-raises errors from tracing as its own UserError; dynscalar re-raises
    the dynscalar error it wraps (so ``except SpecializationError`` catches it), with
    torch's UserError as its cause; it keeps its public class and pickles by it."""
    import pickle

    model = ds.mark_dynamic_attr(Scaled(), "step", strict=True)
    with pytest.raises(ds.SpecializationError, match=r"specializes Scaled\.step to 5") as info:
        torch.export.export(model, (torch.randn(2, 4),), strict=True)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value.__cause__, torch._dynamo.exc.UserError)
    assert type(pickle.loads(pickle.dumps(info.value))) is ds.SpecializationError


def test_out_of_range_value_is_specialized_by_export_not_checked() -> None:
    """Export specializes before any range check: the exported program guards the value."""
    model = ds.mark_dynamic_attr(Scaled(), "step", max=10)
    x = torch.randn(2, 4)
    with pytest.warns(ds.SpecializationWarning, match="specializes Scaled.step to 5"):
        program = torch.export.export(model, (x,), strict=True)
    torch.testing.assert_close(program.module()(x), model(x))
