"""Optimizer hyperparameters (learning rate, ...) that stay dynamic under a compiled step.

``torch.compile(optimizer.step)`` reads ``optimizer.param_groups[i]["lr"]``; stock torch
guards on its value and recompiles for every new learning rate a scheduler sets (unless
``lr`` is a tensor).  :func:`mark_dynamic_param_groups` marks the *key*: whatever float a
scheduler (or your code) stores under it later is traced as a symbolic input, and the
values stay plain Python floats.

The marks follow the param-group dicts.  Wrapper optimizers (SAM, Lookahead and most of
pytorch-optimizer's) build a base optimizer over the same dicts, often the same list, and
compiled code reads them through either one: the wrapper's ``step`` reads
``self.param_groups``, the base optimizer's ``step`` (a frame of its own once a scheduler
patched it) reads its own.  So a mark is kept on the optimizer it was made on and on the
optimizers it holds that hold the same dicts (``_marks.group_holders``); an optimizer
without a mark of its own for a key takes the mark of one it holds.  Nothing of the
optimizer's ``state`` or the dicts is copied, replaced or written.  The marks are kept by
the mark store (``dynscalar._marks``) on those optimizer instances.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

from ._attrs import check_names
from ._diagnostics import DynscalarAttributeError, DynscalarTypeError, did_you_mean
from ._marks import GROUP_MARKS_KEY, STATE_MARKS_KEY, Marks, edit_marks, group_holders
from ._spec import DynamicSpec

__all__ = ["mark_dynamic_param_groups", "unmark_dynamic_param_groups"]

OptimizerT = TypeVar("OptimizerT", bound=torch.optim.Optimizer)


def mark_dynamic_param_groups(
    optimizer: OptimizerT,
    *keys: str,
    state: tuple[str, ...] | str = (),
    strict: bool = False,
) -> OptimizerT:
    """Trace the float hyperparameters ``keys`` (default ``"lr"``) of every param group
    symbolically when ``optimizer.step`` is compiled.  A tuple hyperparameter (Adam's
    ``betas``, which OneCycleLR and CyclicLR cycle) has each of its floats traced
    symbolically.  Returns ``optimizer``.

    ``state`` names per-parameter state entries (``optimizer.state[p][name]``) whose int or
    float is traced symbolically too: torch-optimizer's AdaBelief, Yogi and the like count
    steps in a plain int ``state["step"]``, which stock torch reads as a constant at the
    second step and makes dynamic at the third (one graph more).  The entries need not
    exist yet (the first step makes them); a tensor there is left as it is (already a
    graph input).  With ``state`` given, ``keys`` may be empty.

    The marks follow the param-group dicts: a wrapper optimizer (SAM, Lookahead) and the
    optimizer it wraps over the same dicts see the same marks, whichever of the two is
    marked and whichever one the compiled code reads the groups through.  Groups added
    later (``add_param_group``) are marked too.

    Examples:
        >>> import torch, dynscalar
        >>> model = torch.nn.Linear(2, 2)
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> opt = dynscalar.mark_dynamic_param_groups(opt)
        >>> sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.9**epoch)
        >>> step = torch.compile(opt.step, backend="eager")  # one compile for every lr
        >>> # an int step counter kept per parameter (state[p]["step"]), symbolic too
        >>> opt = dynscalar.mark_dynamic_param_groups(opt, "lr", state="step")
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise DynscalarTypeError(
            f"dynscalar.mark_dynamic_param_groups: expected a torch.optim.Optimizer, got "
            f"{type(optimizer).__name__}."
        )
    checked, entries = _names(keys, state, "mark_dynamic_param_groups")
    spec = DynamicSpec.build(strict=strict, where="dynscalar.mark_dynamic_param_groups")
    for index, group in enumerate(optimizer.param_groups):
        for key in checked:
            if key not in group:
                known = [k for k in group if k != "params"]
                hint = did_you_mean(key, known)
                raise DynscalarAttributeError(
                    f"dynscalar.mark_dynamic_param_groups: {type(optimizer).__name__}."
                    f"param_groups[{index}] has no {key!r}.{hint} Its hyperparameters are "
                    f"{', '.join(known)}."
                )
            value = group[key]
            items = value if isinstance(value, (tuple, list)) and value else (value,)
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in items):
                raise DynscalarTypeError(
                    f"dynscalar.mark_dynamic_param_groups: {type(optimizer).__name__}."
                    f"param_groups[{index}][{key!r}] is {type(value).__name__} ({value!r}), "
                    "not a float or a tuple of floats; only Python float hyperparameters can "
                    "be marked (a tensor learning rate is already a graph input)."
                )
    _edit_holders(optimizer, lambda marks: marks.update(dict.fromkeys(checked, spec)))
    _edit_holders(optimizer, lambda marks: marks.update(dict.fromkeys(entries, spec)), state=True)
    return optimizer


def unmark_dynamic_param_groups(
    optimizer: OptimizerT, *keys: str, state: tuple[str, ...] | str = ()
) -> OptimizerT:
    """Undo ``mark_dynamic_param_groups`` for ``keys`` (default ``"lr"``, none where
    ``state`` is given) and the per-parameter state entries ``state``, on ``optimizer`` and
    on the optimizers over the same param groups it holds.  Returns ``optimizer``.

    Examples:
        >>> import torch, dynscalar
        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
        >>> opt = dynscalar.mark_dynamic_param_groups(opt, "lr")
        >>> dynscalar.unmark_dynamic_param_groups(opt, "lr") is opt
        True
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise DynscalarTypeError(
            f"dynscalar.unmark_dynamic_param_groups: expected a torch.optim.Optimizer, got "
            f"{type(optimizer).__name__}."
        )
    checked, entries = _names(keys, state, "unmark_dynamic_param_groups")

    def unmark(names: tuple[str, ...]) -> Callable[[Marks], None]:
        def edit(marks: Marks) -> None:
            for name in names:
                marks.pop(name, None)

        return edit

    _edit_holders(optimizer, unmark(checked))
    _edit_holders(optimizer, unmark(entries), state=True)
    return optimizer


def _names(
    keys: tuple[str, ...], state: tuple[str, ...] | str, api: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(param-group keys, state entries), checked: ``"lr"`` when neither is given."""
    entries = (state,) if isinstance(state, str) else tuple(state)
    names = keys or (() if entries else ("lr",))
    checked = check_names(names, api) if names else ()
    return checked, check_names(entries, api) if entries else ()


def _edit_holders(
    optimizer: torch.optim.Optimizer, edit: Callable[[Marks], None], state: bool = False
) -> None:
    """Apply ``edit`` to the param-group marks (``state``: the state-entry marks) of
    ``optimizer`` and of every optimizer it holds over the same param-group dicts (a
    wrapper's base optimizer)."""
    holders = [holder for _, holder in group_holders(optimizer, list(optimizer.param_groups))]
    for target in (optimizer, *holders):
        edit_marks(target.__dict__, edit, key=STATE_MARKS_KEY if state else GROUP_MARKS_KEY)
