"""DynamicInt/DynamicFloat in eager mode: int semantics, dynamic-ness kept.

The full conformance suite (every operator, property-based) lives in test_conformance.py.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import pydoc

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


@pytest.mark.parametrize("cls", [DynamicInt, DynamicFloat])
def test_signature_and_help_show_the_constructor(cls: type) -> None:
    """IDE and notebook signature help call ``inspect.signature`` on the class (wrapt's
    ``__wrapped__`` member made it raise ValueError); ``help()`` shows the docstring as plain
    text, with no mkdocs cross-reference markup."""
    sig = inspect.signature(cls)
    assert list(sig.parameters) == list(inspect.signature(cls.__init__).parameters)[1:]
    assert sig.parameters["value"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert sig.return_annotation is inspect.Signature.empty
    sig.bind(1, unbacked=False, strict=True)
    with pytest.raises(TypeError):
        sig.bind(1, True)  # the spec is keyword-only, as in the constructor
    if type(cls) is type:  # wrapt's C proxy; pydoc fails on wrapt's pure-Python ObjectProxy
        text = pydoc.render_doc(cls, renderer=pydoc.plaintext)  # (its __module__ is a property)
        assert (
            f"{cls.__name__}(value: {cls.__name__[7:].lower()}, *, unbacked: bool = False" in text
        )
    else:
        text = inspect.getdoc(cls) or ""
    assert "][dynscalar." not in text and "``DynamicScalar``" in text
