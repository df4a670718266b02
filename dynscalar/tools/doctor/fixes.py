"""Runnable code that makes each culprit dynamic, grouped by where it goes in the script."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..._bridge._paths import quoted, render_step
from .records import ArgumentSite, Culprit, DoctorReport, FixBlock

__all__ = ["argument_fix", "code_string", "fix_blocks", "step_expression"]


def argument_fix(site: ArgumentSite) -> list[str]:
    """Code (without ``import dynscalar``) that makes ``site.parameters`` dynamic.

    An argument mark (:func:`dynscalar.mark_dynamic_args`) on what the call site calls
    (``site.call.callee``: a compiled function, or a compiled module), so callers keep
    passing plain values; without a readable call site, on the function itself.
    """
    target = site.call.callee if site.call is not None else site.function
    names = ", ".join(code_string(name) for name in site.parameters)
    return [f"dynscalar.mark_dynamic_args({target}, {names})"]


def step_expression(expr: str, kind: str, key: str | int, container: Any) -> str:
    """One step, in the doctor's code (string keys in double quotes)."""
    return render_step(expr, kind, key, container, quote=code_string)


def code_string(text: str) -> str:
    """A double-quoted Python string literal, like the rest of the suggested code."""
    return quoted(text)


def fix_blocks(report: DoctorReport) -> list[FixBlock]:
    """The code that fixes every culprit, grouped by where it goes."""
    blocks: list[FixBlock] = []
    culprits = report.culprits
    owners: dict[str, list[str]] = {}  # module expression -> attributes to mark
    imports: list[str] = []
    for culprit in culprits:
        if culprit.kind == "attribute" and culprit.owner and culprit.attribute:
            names = owners.setdefault(culprit.owner, [])
            names += [] if culprit.attribute in names else [culprit.attribute]
            imports += [i for i in culprit.imports if i not in imports]
    if owners:
        roots = list(dict.fromkeys(_root_of(owner) for owner in owners))
        quoted = " and ".join(f"`{root}`" for root in roots)
        # `model = torch.compile(model)` leaves only the wrapper: mark its _orig_mod after it
        done = "compiled" if any("._orig_mod" in owner for owner in owners) else "created"
        code = ["import dynscalar", *imports]
        code += [
            f"dynscalar.mark_dynamic_attr({owner}, {', '.join(code_string(n) for n in names)})"
            for owner, names in owners.items()
        ]
        blocks.append(
            FixBlock(
                f"after {quoted} {'is' if len(roots) == 1 else 'are'} {done}, "
                "before the first call, add",
                code,
            )
        )
    optimizers: dict[str, list[Culprit]] = {}  # optimizer expression -> its culprits
    for culprit in culprits:
        if culprit.kind == "param_group" and culprit.owner and culprit.attribute:
            optimizers.setdefault(culprit.owner, []).append(culprit)
    for owner, group in optimizers.items():
        keys = list(dict.fromkeys(c.attribute for c in group if c.attribute))
        notes = tuple(dict.fromkeys(line for c in group for line in c.alternative))
        code = ["import dynscalar", *dict.fromkeys(i for c in group for i in c.imports)]
        quoted_keys = ", ".join(code_string(k) for k in keys)
        code.append(f"dynscalar.mark_dynamic_param_groups({owner}, {quoted_keys})")
        placement = f"after `{_root_of(owner)}` is created, before the first call, add"
        blocks.append(FixBlock(placement, code, notes=notes))
    sites: dict[tuple[str, str], list[Culprit]] = {}
    for culprit in culprits:
        if culprit.kind == "argument" and culprit.argument is not None:
            call = culprit.argument[1]
            at = "" if call is None else f"{call.filename}:{call.lineno}:{call.statement}"
            sites.setdefault((culprit.function, at), []).append(culprit)
    for (function, _), group in sites.items():
        parameters = tuple(dict.fromkeys(c.argument[0] for c in group if c.argument))
        calls = [c.argument[1] for c in group if c.argument is not None and c.argument[1]]
        merged = None
        if calls:  # one statement: the spans of every culprit argument in it
            spans: dict[str, tuple[int, int]] = {}
            for call in calls:
                spans.update(call.arguments)
            merged = replace(calls[0], arguments=spans)
        code = ["import dynscalar", *argument_fix(ArgumentSite(function, parameters, merged))]
        if merged is not None:
            placement = f"after `{merged.callee}` is created, before the first call, add"
        else:
            placement = f"after `{function}` is defined, before the first call, add"
        blocks.append(FixBlock(placement, code))
    values = [c for c in culprits if c.kind == "value"]
    if values:
        code = ["import dynscalar"]
        for culprit in values:
            code += [line for line in (*culprit.imports, *culprit.fix) if line not in code]
        blocks.append(FixBlock("after each assignment of the value, add", code))
    return blocks


def _root_of(expression: str) -> str:
    for index, char in enumerate(expression):
        if char in ".[(":
            return expression[:index]
    return expression
