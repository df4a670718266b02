"""DynamicInt/DynamicFloat in eager mode: int semantics, dynamic-ness kept.

The full conformance suite (every operator, property-based) lives in test_conformance.py.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from dynscalar import DynamicFloat, DynamicInt, DynamicSpec, is_dynamic_scalar


def test_behaves_like_int() -> None:
    step = DynamicInt(7)
    assert step == 7 and hash(step) == hash(7) and str(step) == "7"
    assert isinstance(step, int) and repr(step) == "DynamicInt(7)"
    assert [10, 20, 30, 40, 50, 60, 70, 80][step] == 80
    assert {7: "seven"}[step] == "seven"
    assert step.bit_length() == 3


def test_arithmetic_keeps_dynamic() -> None:
    step = DynamicInt(7, unbacked=True)
    for result, kind, value in [
        (step + 1, DynamicInt, 8),
        (1 + step, DynamicInt, 8),
        (step * step, DynamicInt, 49),
        (step // 2, DynamicInt, 3),
        (step % 4, DynamicInt, 3),
        (-step, DynamicInt, -7),
        (step / 2, DynamicFloat, 3.5),
        (step * 0.5, DynamicFloat, 3.5),
        (DynamicFloat(0.5) * 0.9, DynamicFloat, 0.45),
    ]:
        assert type(result) is kind and result == value
        # ints inherit unbacked; floats are always backed (torch has no unbacked float input)
        assert result.spec.unbacked is (kind is DynamicInt)
    assert type(step < 8) is bool and type(step == 7) is bool
    out = step * torch.ones(2)
    assert type(out) is torch.Tensor and out.tolist() == [7.0, 7.0]
    assert (torch.ones(2) + step).tolist() == [8.0, 8.0]


def test_immutable_like_int() -> None:
    a = DynamicInt(1, min=0, max=5)
    b = a
    a += 1
    assert b == 1 and a == 2 and a is not b
    assert a.spec == b.spec == DynamicSpec(min=0, max=5)  # in-place keeps the whole spec
    assert (b + 1).spec == DynamicSpec()  # a derived value drops the range


def test_copy_and_pickle_keep_class_and_spec() -> None:
    value = DynamicInt(3, unbacked=True, min=-1, max=9)
    assert copy.copy(value) is value and copy.deepcopy(value) is value
    restored = pickle.loads(pickle.dumps(value))
    assert type(restored) is DynamicInt and restored == 3 and restored.spec == value.spec
    f = pickle.loads(pickle.dumps(DynamicFloat(0.25)))
    assert type(f) is DynamicFloat and f == 0.25


def test_is_dynamic_scalar() -> None:
    assert is_dynamic_scalar(DynamicInt(1)) and is_dynamic_scalar(DynamicFloat(1.0))
    assert not is_dynamic_scalar(1) and not is_dynamic_scalar(1.0)


def test_dynamic_float_from_int() -> None:
    value = DynamicFloat(2)
    assert type(value.value) is float and value == 2.0
    with pytest.raises(TypeError, match="bool"):
        DynamicFloat(True)
