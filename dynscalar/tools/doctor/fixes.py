"""Runnable code that makes each culprit dynamic, grouped by where it goes in the script."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from typing import Any

from ..._bridge._paths import render_step
from .records import ArgumentSite, Culprit, DoctorReport, FixBlock

__all__ = [
    "argument_fix",
    "class_expression",
    "code_string",
    "culprit_fix",
    "fix_blocks",
    "module_names",
    "script_names",
    "step_expression",
]


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
    return json.dumps(text) if text.isascii() and text.isprintable() else repr(text)


def class_expression(cls: type) -> tuple[str, tuple[str, ...]]:
    """How a fix names ``cls``, and what that needs imported: torch's public name
    (``torch.nn.Dropout``), the bare name for a class of the script itself, else
    ``module.Class``."""
    import torch

    module, name = cls.__module__, cls.__qualname__
    if module == "torch" or module.startswith("torch."):
        if getattr(torch.nn, name, None) is cls:
            return f"torch.nn.{name}", ("import torch",)
        return f"{module}.{name}", (f"import {module}",)
    if module == "__main__":
        return name, ()
    return f"{module}.{name}", (f"import {module}",)


def _instance_loop(culprit: Culprit) -> tuple[str, type] | None:
    """(root, class) when ``culprit`` is an attribute of several instances of one class
    under one root (``model.blocks[i].drop``): one loop over ``root.modules()`` marks them
    all, instead of a line per instance."""
    owners = {owner for _, owner in culprit.instances}
    roots = {_root_of(owner) for owner in owners}
    if len(owners) < 2 or len(roots) != 1 or culprit.owner_class is None:
        return None
    return roots.pop(), culprit.owner_class


def _loop_code(root: str, cls: type, names: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """The loop that marks ``names`` on every instance of ``cls`` under ``root``, and what it
    needs imported."""
    name, needs = class_expression(cls)
    marked = ", ".join(code_string(n) for n in names)
    return [
        f"for submodule in {root}.modules():  # every {cls.__name__} in it",
        f"    if isinstance(submodule, {name}):",
        f"        dynscalar.mark_dynamic_attr(submodule, {marked})",
    ], needs


def script_names(script: str) -> frozenset[str]:
    """The names the file ``script`` binds at module level (:func:`module_names`); empty
    when it cannot be read."""
    try:
        with open(script, encoding="utf-8") as handle:
            return module_names(handle.read())
    except (OSError, SyntaxError, ValueError):
        return frozenset()


def module_names(source: str) -> frozenset[str]:
    """The names ``source`` binds at module level: imports, assignments, functions and
    classes, also inside a module-level ``if``/``try``/``with``/``for``.

    Examples:
        >>> sorted(module_names("import torch\\nimport os.path as p\\nif True:\\n    x = 1"))
        ['p', 'torch', 'x']
    """
    names: set[str] = set()
    blocks: list[list[ast.stmt]] = [ast.parse(source).body]
    while blocks:
        for node in blocks.pop():
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            else:  # if / try / with / for at module level: their bodies run there too
                for name in ("body", "orelse", "finalbody"):
                    inner = getattr(node, name, None)
                    if isinstance(inner, list):
                        blocks.append([n for n in inner if isinstance(n, ast.stmt)])
                for handler in getattr(node, "handlers", None) or ():
                    blocks.append(handler.body)
    return frozenset(names)


def _bound(line: str) -> str:
    """The name an ``import`` line binds: ``import a.b`` binds ``a``; ``import a as b``, ``b``."""
    name = line.removeprefix("import ").split(" as ")[-1].strip()
    return name.split(".")[0]


def _without_bound(code: list[str], bound: frozenset[str]) -> list[str]:
    """``code`` without the imports of names the script binds at module level.

    Pasted into a function, ``import torch`` would make ``torch`` local to all of it, and
    the function's earlier uses of the script's ``torch`` fail (``UnboundLocalError``);
    a name the script binds at module level is already there, at module level and inside
    its functions.  An import of a name the script does not bind cannot shadow anything.
    """
    return [line for line in code if not (line.startswith("import ") and _bound(line) in bound)]


def culprit_fix(culprit: Culprit, bound: frozenset[str] = frozenset()) -> list[str]:
    """The code that fixes this culprit alone, with the imports the script lacks (``bound``:
    the names it binds at module level): a loop for the instances of one class, else the
    culprit's own line."""
    loop = _instance_loop(culprit)
    if loop is None or culprit.attribute is None:
        return _without_bound(["import dynscalar", *culprit.imports, *culprit.fix], bound)
    code, needs = _loop_code(*loop, [culprit.attribute])
    return _without_bound(["import dynscalar", *needs, *culprit.imports, *code], bound)


def fix_blocks(report: DoctorReport) -> list[FixBlock]:
    """The code that fixes every culprit, grouped by where it goes; the imports the script
    lacks come once, at the start of the first block, so each block runs pasted at module
    level or inside a function."""
    blocks: list[FixBlock] = []
    culprits = report.culprits
    owners: dict[str, list[str]] = {}  # module expression -> attributes to mark
    loops: dict[tuple[str, type], list[str]] = {}  # (root, class) -> attributes to mark
    imports: list[str] = []
    for culprit in culprits:
        if culprit.kind == "attribute" and culprit.owner and culprit.attribute:
            loop = _instance_loop(culprit)
            names = (
                owners.setdefault(culprit.owner, []) if loop is None else loops.setdefault(loop, [])
            )
            names += [] if culprit.attribute in names else [culprit.attribute]
            imports += [i for i in culprit.imports if i not in imports]
    if owners or loops:
        roots = list(dict.fromkeys([*map(_root_of, owners), *(root for root, _ in loops)]))
        quoted = " and ".join(f"`{root}`" for root in roots)
        # `model = torch.compile(model)` leaves only the wrapper: mark its _orig_mod after it
        done = "compiled" if any("._orig_mod" in owner for owner in owners) else "created"
        code = ["import dynscalar", *imports]
        code += [
            f"dynscalar.mark_dynamic_attr({owner}, {', '.join(code_string(n) for n in names)})"
            for owner, names in owners.items()
        ]
        for (root, cls), names in loops.items():
            marking, needs = _loop_code(root, cls, names)
            code[1:1] = [i for i in needs if i not in code]
            code += marking
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
    return _imports_once(blocks, script_names(report.script))


def _imports_once(blocks: list[FixBlock], bound: frozenset[str]) -> list[FixBlock]:
    """Every block's imports the script lacks (``bound``: what it binds at module level),
    once, at the start of the first block (the others are pasted further down the same
    script)."""
    imports = list(
        dict.fromkeys(line for b in blocks for line in b.code if line.startswith("import "))
    )
    kept = [replace(b, code=[line for line in b.code if line not in imports]) for b in blocks]
    imports = _without_bound(imports, bound)
    if kept:
        kept[0] = replace(kept[0], code=[*imports, *kept[0].code])
    return kept


def _root_of(expression: str) -> str:
    for index, char in enumerate(expression):
        if char in ".[(":
            return expression[:index]
    return expression
