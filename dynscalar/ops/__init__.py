"""The op rules: how a marked float reaches a torch op, and where each rule is exact.

* ``_table``: the rules (data): the ops whose ``float`` parameter Dynamo would force;
* ``_forms``: the ATen overloads that take a ``Scalar`` float, each with a form inductor
  lowers (the float a 0-d tensor operand);
* ``_custom``: dynscalar's custom ops, the ATen op with ``float`` read as ``Scalar``;
* ``_kernels``: what a ``"python"`` backend traces for ops with value-dependent paths;
* ``_tensor``: what inductor traces (plain torch ops, the float an operand);
* ``_admission``: where each rule and form is exact, read from ``admitted.json`` (the
  exactness harness in ``dynscalar/tools/matrix`` measures it);
* ``_apply``: any other torch call as one custom op, checked when it is traced (``_compare``);
* ``_math``: the Python float arithmetic a ``math`` function on a marked value is traced as.

Plain torch only (public API and ``torch.library``); the bridge (``dynscalar._bridge``)
decides when a rule applies.  Nothing here runs a kernel or registers an op at import.

The bridge reaches these modules through this package alone, by role: ``admission``,
``apply``, ``custom``, ``factories``, ``forms`` and ``math_twins`` (``_math``) are the
modules above under the names the bridge calls them by; it never imports ``ops._*``.

Examples:
    >>> from dynscalar import ops
    >>> ops.rule_for(__import__("torch").layer_norm)[0].scalars
    ('eps',)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import _admission as admission
from . import _apply as apply
from . import _custom as custom
from . import _factories as factories
from . import _forms as forms
from . import _math as math_twins
from ._forms import FORMS, ScalarForm
from ._table import NATIVE_METHODS, RULES, Rule, resolve_callable

__all__ = [
    "FORMS",
    "NATIVE_METHODS",
    "RULES",
    "Rule",
    "ScalarForm",
    "admission",
    "apply",
    "custom",
    "factories",
    "forms",
    "inductor_entry",
    "math_twins",
    "python_entry",
    "resolve_callable",
    "rule_for",
    "rule_for_method",
]


@functools.cache
def _callables() -> tuple[dict[Any, tuple[Rule, str]], dict[str, tuple[Rule, str]]]:
    functions: dict[Any, tuple[Rule, str]] = {}
    methods: dict[str, tuple[Rule, str]] = {}
    for rule in RULES.values():
        for name in rule.callables:
            if name.startswith("Tensor."):
                methods[name.removeprefix("Tensor.")] = (rule, name)
            else:
                functions[resolve_callable(name)] = (rule, name)
    return functions, methods


def rule_for(fn: Any) -> tuple[Rule, str] | None:
    """(rule, callable name) for a torch function a marked float may reach, else None."""
    try:
        return _callables()[0].get(fn)
    except TypeError:  # an unhashable callable: never a rule's
        return None


def rule_for_method(name: str) -> tuple[Rule, str] | None:
    """(rule, ``"Tensor.<name>"``) for a tensor method a marked float may reach."""
    return _callables()[1].get(name)


def python_entry(rule: Rule, callable_name: str) -> Callable[..., Any]:
    """What a ``"python"`` backend traces in place of ``callable_name``: the rule's custom
    op, or its function in ``_kernels`` (an in-place callable's own, where it has one)."""
    from . import _custom, _kernels

    if rule.python == "custom":
        return _custom.entry_for(rule)
    _kernels.prepare()
    return _own(_kernels, callable_name, rule.python)


def inductor_entry(rule: Rule, callable_name: str) -> Callable[..., Any] | None:
    """What inductor traces in place of ``callable_name`` (None: specialized)."""
    if rule.inductor is None:
        return None
    from . import _tensor

    return _own(_tensor, callable_name, rule.inductor)


def _own(module: Any, callable_name: str, default: str) -> Callable[..., Any]:
    """``module``'s function for ``callable_name``: an in-place callable's own where the
    module has one (``dropout_``), else ``default``."""
    short = callable_name.rpartition(".")[2]
    if short.endswith("_") and hasattr(module, short):
        return getattr(module, short)  # type: ignore[no-any-return]
    return getattr(module, default)  # type: ignore[no-any-return]
