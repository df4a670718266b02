"""The write-back table: for each way a value made from a proxy can be stored, the class
and spec eager Python stores and the class and spec a compiled call stores.

The rows are derived, not listed by hand: every arithmetic dunder method of
``DynamicScalar`` itself (operator form, reflected form, in-place statement,
``operator.i*`` and the dunder call), then the builtins that call them (``sum``,
``math.prod``, ``pow``, ``divmod``, ``abs``, ``round``, ``math.floor``/``ceil``/``trunc``),
``max``/``min`` returning one of their operands (a proxy and a plain value, proxies with
different specs, the winner changing between calls), torch's ``sym_max``/``sym_min``, the
conversions that give plain values, and the same values stored into lists, tuples and dicts.

``tests/test_writeback.py`` checks every row (eager == compiled, one compile); the docs page
``docs/writeback.md`` is written from the same rows by ``scripts/render_writeback_table.py``.
"""

from __future__ import annotations

import math
import operator
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any

import torch

import dynscalar
from dynscalar import DynamicFloat, DynamicInt
from dynscalar._proxy import DynamicScalar

__all__ = ["BACKENDS", "Row", "Result", "describe", "expressions", "measure", "render_page"]

BACKENDS = ("eager", "aot_eager")

# The operands: `a` an int proxy with a range (operators drop it, in-place keeps it), `u` an
# unbacked strict-free int proxy, `f` a float proxy; values per call (the winner of max/min
# changes between the two calls).
OPERANDS = {
    "a": (lambda v: DynamicInt(v, min=0, max=100), (7, 9)),
    "b": (lambda v: DynamicInt(v), (8, 8)),
    "f": (lambda v: DynamicFloat(v), (2.5, 3.75)),
}

_SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "lshift": "<<",
    "rshift": ">>",
    "and": "&",
    "xor": "^",
    "or": "|",
}
_UNARY = {
    "neg": "-{x}",
    "pos": "+{x}",
    "abs": "abs({x})",
    "invert": "~{x}",
    "trunc": "math.trunc({x})",
    "floor": "math.floor({x})",
    "ceil": "math.ceil({x})",
    "round": "round({x})",
}
_INT_ONLY = {"lshift", "rshift", "and", "xor", "or", "invert"}


def _method_names() -> list[str]:
    """The arithmetic dunder methods the proxy class itself defines."""
    names = []
    for name in sorted(vars(DynamicScalar)):
        if not (name.startswith("__") and name.endswith("__")):
            continue
        core = name[2:-2]
        base = core[1:] if core[:1] in ("r", "i") and core[1:] in _SYMBOLS else core
        if base in _SYMBOLS or core in _UNARY or base == "divmod":
            names.append(name)
    return names


def expressions() -> list[tuple[str, str]]:
    """(group, Python statement assigning ``r``) for every row, in page order."""
    rows: list[tuple[str, str]] = []
    for name in _method_names():
        core = name[2:-2]
        for x in ("a", "f"):
            if x == "f" and (core.lstrip("ri") in _INT_ONLY or core in _INT_ONLY):
                continue
            if core in _UNARY:
                rows.append(("unary operator", "r = " + _UNARY[core].format(x=x)))
                rows.append(("dunder call", f"r = {x}.{name}()"))
            elif core == "divmod":
                rows.append(("builtin", f"r = divmod({x}, 3)"))
                rows.append(("dunder call", f"r = {x}.__divmod__(3)"))
            elif core == "rdivmod":
                rows.append(("builtin", f"r = divmod(17, {x})"))
                rows.append(("dunder call", f"r = {x}.__rdivmod__(17)"))
            elif core in _SYMBOLS:
                rows.append(("operator", f"r = {x} {_SYMBOLS[core]} 2"))
                rows.append(("dunder call", f"r = {x}.{name}(2)"))
            elif core[0] == "r":
                rows.append(("reflected operator", f"r = 3 {_SYMBOLS[core[1:]]} {x}"))
                rows.append(("dunder call", f"r = {x}.{name}(3)"))
            else:  # in-place
                symbol = _SYMBOLS[core[1:]]
                function = f"operator.i{core[1:]}"
                rows.append(("in-place", f"r = {x}\nr {symbol}= 2"))
                rows.append(("in-place", f"r = {function}({x}, 2)"))
                rows.append(("dunder call", f"r = {x}.{name}(2)"))
    rows += [
        ("builtin", "r = sum([a, a])"),
        ("builtin", "r = sum([2, a])"),
        ("builtin", "r = sum([f, 1.5])"),
        ("builtin", "r = math.prod([a, 2])"),
        ("builtin", "r = pow(a, 2)"),
        ("builtin", "r = pow(2, a)"),
        ("builtin", "r = pow(a, 1)"),
        ("builtin", "r = pow(f, 2)"),
        ("builtin", "r = round(f, 1)"),
        ("max/min", "r = max(a, 8)"),
        ("max/min", "r = min(a, 8)"),
        ("max/min", "r = max(8, a)"),
        ("max/min", "r = max(a, b)"),
        ("max/min", "r = min(b, a)"),
        ("max/min", "r = max([a, b])"),
        ("max/min", "r = max(a, b) + 1"),
        ("max/min", "r = max(f, 3.0)"),
        ("max/min", "r = max(a, a)"),
        ("torch", "r = torch.sym_max(a, 1)"),
        ("torch", "r = torch.sym_min(a, b)"),
        ("plain", "r = int(a)"),
        ("plain", "r = float(f)"),
        ("plain", "r = a > 3"),
        ("plain", "r = a.real"),
        ("unchanged", "r = a"),
        ("container", "r = [a + 1, 0]"),
        ("container", "r = (a * 2, f)"),
        ("container", 'r = {"k": a - 1, "n": [max(a, b)]}'),
        ("container", "r = [sum([a, 1]), (pow(a, 2),)]"),
    ]
    return rows


@dataclass(frozen=True)
class Result:
    """What one run left in ``self.r``, per call, or the error it raised."""

    stored: tuple[str, ...]
    compiles: int | None = None
    warned: str = ""


@dataclass(frozen=True)
class Row:
    group: str
    statement: str
    eager: Result
    compiled: dict[str, Result]

    @property
    def equal(self) -> bool:
        return all(r.stored == self.eager.stored for r in self.compiled.values())


def describe(value: Any) -> str:
    """Class and spec (and value) of a stored object, recursively through containers."""
    if isinstance(value, DynamicScalar):
        spec = ", ".join(f"{k}={v!r}" for k, v in value.spec.kwargs().items())
        return f"{type(value).__name__}({value.__wrapped__!r}{', ' + spec if spec else ''})"
    if type(value) in (list, tuple):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if type(value) is list else f"({inner}{',' if len(value) == 1 else ''})"
    if type(value) is dict:
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in value.items()) + "}"
    return f"{type(value).__name__}({value!r})"


def _module(statement: str) -> torch.nn.Module:
    body = textwrap.indent(statement, "        ")
    source = (
        "def forward(self, x):\n"
        "        a, b, f = self.a, self.b, self.f\n"
        f"{body}\n"
        "        self.r = r\n"
        "        return x * a\n"
    )
    namespace: dict[str, Any] = {"math": math, "operator": operator, "torch": torch}
    exec(textwrap.dedent(source), namespace)
    cls = type("Row", (torch.nn.Module,), {"forward": namespace["forward"]})
    module = cls()
    for name, (make, values) in OPERANDS.items():
        setattr(module, name, make(values[0]))
    return module


def _run(statement: str, backend: str | None) -> Result:
    module = _module(statement)
    count = [0]

    def counting(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        from torch._dynamo.backends.registry import lookup_backend

        count[0] += 1
        return lookup_backend(backend)(gm, example_inputs)

    torch._dynamo.reset()
    run = torch.compile(module, backend=counting) if backend else module
    stored = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for call in range(2):
            for name, (make, values) in OPERANDS.items():
                setattr(module, name, make(values[call]))
            try:
                run(torch.ones(2))
                stored.append(describe(module.r))
            except Exception as exc:  # noqa: BLE001 - a row may raise: recorded as such
                stored.append(f"raises {type(exc).__name__}")
    warned = sorted({w.category.__name__ for w in caught if w.category.__module__ != "builtins"})
    return Result(tuple(stored), count[0] if backend else None, ", ".join(warned))


def measure(backends: tuple[str, ...] = BACKENDS) -> list[Row]:
    """Run every row eagerly and compiled on each backend."""
    rows = []
    for group, statement in expressions():
        eager = _run(statement, None)
        compiled = {backend: _run(statement, backend) for backend in backends}
        rows.append(Row(group, statement, eager, compiled))
    torch._dynamo.reset()
    return rows


def render_page(rows: list[Row]) -> str:
    """docs/writeback.md from measured rows."""
    backends = list(rows[0].compiled) if rows else []
    lines = [
        "# Where values land: eager vs compiled",
        "",
        "<!-- Generated by scripts/render_writeback_table.py from tests/writeback_table.py;",
        "     do not edit by hand. tests/test_writeback.py checks it is current. -->",
        "",
        "Each row stores a value made from dynscalar proxies into `self.r` inside a",
        "`forward`, calls it twice (`a` = `DynamicInt(7, min=0, max=100)` then `9`,",
        "`b` = `DynamicInt(8)`, `f` = `DynamicFloat(2.5)` then `3.75`), and lists what",
        "`self.r` holds after each call: eagerly, and compiled on each backend (with the",
        "number of graphs compiled). The rows are derived from the arithmetic methods",
        "`DynamicScalar` defines (operator, reflected, in-place and dunder forms), then the",
        "builtins that call them, `max`/`min`, torch's `sym_max`/`sym_min`, conversions",
        "and containers. A compiled cell is **bold** where it differs from eager.",
        "",
        f"dynscalar {dynscalar.__version__}, torch {torch.__version__}.",
        "",
        # five columns of exact values: the table's cells are padded less (extra.css), so
        # that it fits the column at 1280 px without breaking a value inside a name
        '<div class="dense-table" markdown>',
        "",
        "| group | code | eager mode: call 1; call 2 | "
        + " | ".join(f"backend {b}: call 1; call 2 (graphs)" for b in backends)
        + " |",
        "|---|---|---|" + "---|" * len(backends),
    ]
    for row in rows:
        code = "<br>".join(f"`{line}`" for line in row.statement.splitlines())
        cells = [row.group, code, "; ".join(f"`{s}`" for s in row.eager.stored)]
        for backend in backends:
            result = row.compiled[backend]
            text = "; ".join(f"`{s}`" for s in result.stored) + f" ({result.compiles})"
            if result.warned:
                text += f" {result.warned}"
            cells.append(text if result.stored == row.eager.stored else f"**{text}**")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    differing = sum(not row.equal for row in rows)
    lines += [
        "",
        "</div>",
        "",
        f"{len(rows)} rows, {differing} with a compiled result that differs from eager.",
        "",
        "Graph counts other than 1 are torch's own: **0** where Dynamo cannot trace the",
        "expression on a symbolic value (`divmod`, float shifts that raise) and runs the",
        "frame eagerly; **4** on aot_eager where torch's float-tensorify pass cannot lower",
        "an op on a float (`math.floor`, `round`, `%`), restarts and specializes: two",
        "graphs per value, exact (see [How it works](how-it-works.md#floats)); **2** on",
        "aot_eager where that pass restarts once to drop a float the graph does not use.",
    ]
    return "\n".join(lines) + "\n"
