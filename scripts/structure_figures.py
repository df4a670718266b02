"""The figures the bridge's structure is judged by, measured on this checkout.

    python scripts/structure_figures.py           # a Markdown report
    python scripts/structure_figures.py --json    # the same figures as JSON

Measured, not estimated:

* **Traced paths.** Two scenarios compiled on ``aot_eager`` in a fresh process (the bridge
  installed and caches warm by a first compile, then ``torch._dynamo.reset()``), traced with
  ``sys.setprofile``: ``argument`` (``x * n``, ``n = DynamicInt(5)``) and ``attribute``
  (``mark_dynamic_attr(m, "step")``; ``self.step += 1; return x * self.step``).  A *step* is
  a run of consecutive dynscalar calls in one module (the plumbing every hook call passes
  left out: the table's wrapper, the safety net, ``by_torch``); *returns* are the steps
  into a module already left.  Also the dynscalar calls and distinct functions, and the
  *plumbing share*: the plumbing modules' share of every dynscalar call.
* **Hooks per torch target**: the table's entries with hooks, and the modules named.
* **Per-compile state**: ``CompileState``'s fields, and the modules and call sites reaching
  it (``compile_state()``/``peek_state()``).
* **Library lines** per mechanism: code lines (no docstrings, comments or blank lines) of
  ``dynscalar`` without ``dynscalar/tools``.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dynscalar"
PLUMBING = ("_bridge._table", "_bridge._patch", "_bridge._safety", "_bridge._torchs_own")

_TRACE = r"""
import json, sys, torch, dynscalar as ds
import torch._dynamo

scenario = sys.argv[1]
if scenario == "argument":
    def f(x, n):
        return x * n
    g = torch.compile(f, backend="aot_eager")
    x = torch.randn(3)
    call = lambda v: g(x, ds.DynamicInt(v))
    eager = lambda v: f(x, v)
else:
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 0
        def forward(self, x):
            self.step += 1
            return x * self.step
    m = M()
    ds.mark_dynamic_attr(m, "step")
    g = torch.compile(m, backend="aot_eager")
    x = torch.randn(3)
    def call(v):
        m.step = v - 1
        return g(x)
    eager = lambda v: x * v
call(2)
torch._dynamo.reset()
package = ds.__file__.rsplit("/", 1)[0] + "/"
events = []

def profile(frame, event, arg):
    if event != "call" or not frame.f_code.co_filename.startswith(package):
        return
    module = frame.f_code.co_filename[len(package):-3].replace("/", ".")
    events.append((module.removesuffix(".__init__"), frame.f_code.co_qualname))

sys.setprofile(profile)
out = call(5)
sys.setprofile(None)
assert torch.equal(out, eager(5)), (out, eager(5))
print(json.dumps(events))
"""

#: the scenarios, as the how-it-works page names them
SCENARIOS = {
    "argument": "`torch.compile(lambda x, n: x * n)` called with `n = DynamicInt(5)`",
    "attribute": '`mark_dynamic_attr(m, "step")`; `self.step += 1; return x * self.step`',
}


def events(scenario: str) -> list[tuple[str, str]]:
    """(module, function) of every dynscalar call one scenario's compile makes, in order
    (a fresh process; the result checked against eager's)."""
    done = subprocess.run(
        [sys.executable, "-c", _TRACE, scenario],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return [tuple(e) for e in json.loads(done.stdout.strip().splitlines()[-1])]


def first_entered(calls: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The functions in the order first entered, without the plumbing and nested functions."""
    path = [e for e in calls if not e[0].startswith(PLUMBING) and "<" not in e[1]]
    seen: set[tuple[str, str]] = set()
    return [e for e in path if not (e in seen or seen.add(e))]  # type: ignore[func-returns-value]


def steps_of(path: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Consecutive functions of one module as one step: (module, functions)."""
    steps: list[tuple[str, list[str]]] = []
    for module, name in path:
        if steps and steps[-1][0] == module:
            steps[-1][1].append(name)
        else:
            steps.append((module, [name]))
    return steps


def traced(scenario: str) -> dict[str, object]:
    """Steps, modules, returns, calls and the plumbing share of one scenario's compile."""
    calls = events(scenario)
    plumbing = sum(1 for module, _ in calls if module.startswith(PLUMBING))
    steps = [module for module, _ in steps_of(first_entered(calls))]
    left: set[str] = set()
    returns = 0
    for i, module in enumerate(steps):
        if module in left:
            returns += 1
        if i:
            left.add(steps[i - 1])
    return {
        "steps": len(steps),
        "modules": len(set(steps)),
        "returns": returns,
        "calls": len(calls),
        "functions": len(set(calls)),
        "plumbing_share": round(plumbing / max(len(calls), 1), 3),
    }


def hooks() -> dict[str, object]:
    """Hooked targets, the most hooks on one target, the modules the table names."""
    sys.path.insert(0, str(ROOT))
    from dynscalar._bridge._table import PRIVATES

    def hooks_of(p: object) -> tuple[str, ...]:  # ``hooks`` (a chain) before the stages
        return tuple(getattr(p, "hooks", None) or filter(None, [getattr(p, "hook", None)]))

    per_target = {p.target: len(hooks_of(p)) for p in PRIVATES if hooks_of(p)}
    named = sorted(
        {
            path.partition(":")[0]
            for p in PRIVATES
            for path in (*hooks_of(p), p.degraded_hook, p.inside_disabled, p.gate, p.off_hook)
            if path
        }
    )
    return {
        "targets": len(per_target),
        "hooks": sum(per_target.values()),
        "most_on_one_target": max(per_target.values()),
        "modules_named": named,
    }


def compile_state() -> dict[str, object]:
    """``CompileState``'s fields (a group's fields counted one by one; the groups, where
    it has them), and the call sites reaching the per-compile object."""
    state = (PACKAGE / "_bridge" / "_state.py").read_text()
    classes = {n.name: n for n in ast.parse(state).body if isinstance(n, ast.ClassDef)}

    def fields(name: str) -> list[ast.AnnAssign]:
        return [n for n in classes[name].body if isinstance(n, ast.AnnAssign)]

    top = fields("CompileState")
    groups = [f for f in top if ast.unparse(f.annotation) in classes]
    leaves = len(top) - len(groups) + sum(len(fields(ast.unparse(g.annotation))) for g in groups)
    sites: Counter[str] = Counter()
    for path in _library_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(
                node.func, "id", getattr(node.func, "attr", None)
            ) in ("compile_state", "peek_state"):
                sites[str(path.relative_to(PACKAGE))] += 1
    return {
        "fields": leaves,
        "groups": [ast.unparse(g.target) for g in groups],
        "modules": len(sites),
        "call_sites": sum(sites.values()),
    }


def _library_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "tools" not in p.relative_to(PACKAGE).parts]


def code_lines(path: Path) -> int:
    """Lines holding code: no docstrings, comments or blank lines."""
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            docstrings.update(range(body[0].lineno, (body[0].end_lineno or 0) + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


#: mechanism -> module prefixes (relative to dynscalar/, without .py), first match wins
MECHANISMS = {
    "write-back": ("_bridge/_writeback", "_bridge/_rebox"),
    "Python semantics": ("_bridge/_python",),
    "floats (AOT phase, forcing, restarts)": (
        "_bridge/_floats",
        "_bridge/_forc",
        "_bridge/_restarts",
    ),
    "op routing (bridge side)": ("_bridge/_ops",),
    "ops (rules, forms, admission)": ("ops/",),
    "patch plumbing (table, patch, install, safety)": (
        "_bridge/_table",
        "_bridge/_patch",
        "_bridge/_install",
        "_bridge/_safety",
        "_bridge/_torchs_own",
        "_bridge/_torch",
        "_bridge/_turned_off",
        "_bridge/__init__",
    ),
    "stages (the hooks)": ("_bridge/stages/",),
    "bridge: building symbols, guards, sources, names": ("_bridge/",),
    "public API, proxies, marks, diagnostics": ("",),
}


def lines_per_mechanism() -> dict[str, int]:
    counts: Counter[str] = Counter()
    for path in _library_files():
        relative = str(path.relative_to(PACKAGE))[:-3]
        mechanism = next(m for m, prefixes in MECHANISMS.items() if relative.startswith(prefixes))
        counts[mechanism] += code_lines(path)
    result = {m: counts[m] for m in MECHANISMS if counts[m]}
    result["total"] = sum(counts.values())
    return result


def figures() -> dict[str, object]:
    return {
        "paths": {s: traced(s) for s in ("argument", "attribute")},
        "hooks": hooks(),
        "compile_state": compile_state(),
        "lines": lines_per_mechanism(),
    }


def markdown(found: dict[str, object]) -> str:
    out = ["| scenario | steps | modules | returns | calls | functions | plumbing share |"]
    out.append("|---|---|---|---|---|---|---|")
    for name, p in found["paths"].items():  # type: ignore[union-attr]
        out.append(
            f"| {name} | {p['steps']} | {p['modules']} | {p['returns']} | {p['calls']} | "
            f"{p['functions']} | {p['plumbing_share']:.1%} |"
        )
    h = found["hooks"]
    out.append(
        f"\nhooked targets {h['targets']}, hooks {h['hooks']}, most on one target "  # type: ignore[index]
        f"{h['most_on_one_target']}; modules the table names: {', '.join(h['modules_named'])}"  # type: ignore[index]
    )
    c = found["compile_state"]
    out.append(
        f"\nCompileState: {c['fields']} fields in groups {c['groups'] or 'none'}, reached "  # type: ignore[index]
        f"from {c['modules']} modules at "  # type: ignore[index]
        f"{c['call_sites']} call sites\n"  # type: ignore[index]
    )
    out.append("| mechanism | code lines |\n|---|---|")
    out.extend(f"| {m} | {n} |" for m, n in found["lines"].items())  # type: ignore[union-attr]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    found = figures()
    print(json.dumps(found, indent=2) if args.json else markdown(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
