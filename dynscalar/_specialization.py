"""Which Python constructs force a marked value to a constant, measured on the installed torch.

Whether ``int(n)``, ``min(1.0, n / 10)`` or ``math.log(n)`` keeps a symbolic ``n`` symbolic
is a property of the torch release, not of dynscalar: torch 2.13 keeps ``int()``, ``min``
and most of ``math`` symbolic, and forces a value for ``range(n)``, ``str(n)``, list and
dict indexing and ``math.log``/``math.exp``.  Advice written from memory goes stale, so
:func:`probe` measures it: each construct is compiled (public ``torch.compile`` with a
counting backend) and called with four values of a ``DynamicInt`` and of a
``DynamicFloat``; one compile means it stayed symbolic, one per value means it specialized,
and where Python itself raises for that type (``range(2.5)``) the compiled call must raise
the same error.

* ``python -m dynscalar specializations`` prints the table for the installed torch;
* ``docs/concepts.md`` shows the table for the release the docs were built with
  (``RECORDED``; tests/test_docs.py re-runs the probe and fails when they differ);
* the ``SpecializationWarning`` names the construct it found on the user's line and gives
  that construct's advice (:func:`constructs_in`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONSTRUCTS",
    "RAISES",
    "RECORDED",
    "Construct",
    "constructs_in",
    "probe",
    "probe_alternatives",
    "render_table",
    "TYPES",
    "VALUES",
]

_LIST = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


# torch is imported when the probe runs, not with dynscalar (import dynscalar stays light).
def torch_full64(n: Any) -> Any:
    import torch

    return torch.full((), n, dtype=torch.float64)


def torch_ones(n: Any) -> Any:
    import torch

    return torch.ones(n)


def torch_tensor(values: Any) -> Any:
    import torch

    return torch.tensor(values)


_DICT = {i: float(i) for i in range(10)}

SYMBOLIC = "stays symbolic"
SPECIALIZES = "forces the value"
EAGER = "not compiled (runs eagerly)"
RAISES = "raises, as Python does"

#: the proxy types the probe marks a value with, and the values it calls each construct with
TYPES = ("DynamicInt", "DynamicFloat")
VALUES: dict[str, tuple[Any, ...]] = {
    "DynamicInt": (3, 4, 5, 6),
    "DynamicFloat": (3.5, 4.5, 5.5, 6.5),
}


@dataclass(frozen=True)
class Construct:
    """A Python construct applied to a marked value ``n``, and what to write instead."""

    key: str  # what the warning and the table call it
    code: str  # the construct as the docs show it
    pattern: str  # a regular expression that finds it in a source line
    advice: str  # what to write instead, when it forces the value
    run: Callable[[Any, Any], Any]  # (tensor, n) -> tensor, the probe
    instead: Callable[[Any, Any], Any] | None = None  # the advice's code, probed too

    @property
    def shown(self) -> str:
        """The construct in prose, e.g. a list index: `values[n]` on a list or tuple."""
        kind = {
            "list index": " on a list or tuple",
            "dict key": " on a dict",
            "as a size": " (a size)",
        }.get(self.key, "")
        return f"`{self.code}`{kind}"


def _math(
    name: str,
    call: Callable[[Any, Any], Any],
    instead: str,
    instead_run: Callable[[Any, Any], Any],
    code: str = "n",
) -> Construct:
    return Construct(
        f"math.{name}",
        f"math.{name}({code})",
        rf"\bmath\.{name}\(",
        f"`math.{name}` takes a Python number, so it needs the exact value: compute it "
        f"on a 0-d tensor instead ({instead}).",
        call,
        instead_run,
    )


_USE_TENSOR_OPS = (
    "write it with tensor ops (e.g. `torch.clamp(torch.full((), step / n), max=1.0)` for "
    "`min(1.0, step / n)`) or move it out of the compiled code."
)

CONSTRUCTS: tuple[Construct, ...] = (
    Construct("int()", "int(n / 2)", r"\bint\(", _USE_TENSOR_OPS, lambda x, n: x * int(n / 2)),
    Construct("float()", "float(n)", r"\bfloat\(", _USE_TENSOR_OPS, lambda x, n: x * float(n)),
    Construct(
        "min/max",
        "min(1.0, n / 10), max(n, 2)",
        r"\b(min|max)\(",
        _USE_TENSOR_OPS,
        lambda x, n: x * min(1.0, n / 10) + max(n, 2),
    ),
    Construct(
        "round()", "round(n / 3)", r"\bround\(", _USE_TENSOR_OPS, lambda x, n: x * round(n / 3)
    ),
    _math(
        "sqrt",
        lambda x, n: x * math.sqrt(n),
        "`torch.full((), n, dtype=torch.float64).sqrt()`",
        lambda x, n: x * torch_full64(n).sqrt(),
    ),
    _math(
        "floor",
        lambda x, n: x * math.floor(n / 2),
        "`n // 2` keeps an int symbolic",
        lambda x, n: x * (n // 2),
        code="n / 2",
    ),
    _math(
        "log",
        lambda x, n: x * math.log(n),
        "`torch.full((), n, dtype=torch.float64).log()`",
        lambda x, n: x * torch_full64(n).log(),
    ),
    _math(
        "exp",
        lambda x, n: x * math.exp(n),
        "`torch.full((), n, dtype=torch.float64).exp()`",
        lambda x, n: x * torch_full64(n).exp(),
    ),
    _math(
        "pow",
        lambda x, n: x * math.pow(n, 2),
        "`n ** 2`",
        lambda x, n: x * n**2,
        code="n, 2",
    ),
    Construct(
        "as a size",
        "torch.ones(math.ceil(n / 2))",
        r"\b(math\.ceil|math\.floor|int)\(.*\b(topk|ones|zeros|new_zeros|empty)\(|"
        r"\b(topk|ones|zeros|new_zeros|empty)\(.*\b(math\.ceil|math\.floor|int)\(",
        "A size computed from a float cannot be a symbolic size on inductor (it specializes "
        "the float): compute the size from ints (`n * 3 // 4`), or leave that value "
        "unmarked on inductor.",
        lambda x, n: x * torch_ones(math.ceil(n / 2)).sum(),
    ),
    Construct(
        "range()",
        "for _ in range(n)",
        r"\brange\(",
        "A loop over `range(n)` is unrolled n times, so it compiles for one n: do the work "
        "with a tensor op over `torch.arange(n)` instead of a Python loop, or leave `n` "
        "unmarked if it takes few values.",
        lambda x, n: x + sum(1.0 for _ in range(n)),
        lambda x, n: x + torch_ones(n).sum(),
    ),
    Construct(
        "f-string",
        'f"step {n}"',
        r"""\b[fF][rR]?["']""",
        "Formatting needs the digits: torch.compile either fixes the value or gives up on "
        "the function (it then runs uncompiled). Format the value outside the compiled "
        "code (read `model.step` after the call and log it there).",
        lambda x, n: x + len(f"step {n}"),
    ),
    Construct(
        "str()",
        "str(n)",
        r"\bstr\(|\.format\(|%[ds]",
        "Formatting needs the digits: format the value outside the compiled code (read "
        "`model.step` after the call and log it there).",
        lambda x, n: x + float(str(n)),
    ),
    Construct(
        "list index",
        "values[n]",
        r"\[[^\]]",
        "Indexing a Python list or tuple picks one element while compiling: keep the values "
        "in a tensor built once (`table = torch.tensor(values)`) and index that "
        "(`table[n]`), which stays symbolic.",
        lambda x, n: x * _LIST[n],
        lambda x, n: x * torch_tensor(_LIST)[n],
    ),
    Construct(
        "dict key",
        "table[n]",
        r"\[[^\]]",
        "A dict lookup needs the exact key, so every new value compiles again by design: "
        "leave a value used as a dict key unmarked, or store the entries in a tensor "
        "indexed by the value.",
        lambda x, n: x * _DICT[n],
        lambda x, n: x * torch_tensor([_DICT[i] for i in range(10)])[n],
    ),
)

# The probe's results on the release the documentation was built with (docs/concepts.md).
RECORDED: dict[str, Any] = {
    "torch": "2.13.0",
    "results": {
        "int()": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "float()": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "min/max": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "round()": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "math.sqrt": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "math.floor": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "math.log": {"DynamicInt": SPECIALIZES, "DynamicFloat": SPECIALIZES},
        "math.exp": {"DynamicInt": SPECIALIZES, "DynamicFloat": SPECIALIZES},
        "math.pow": {"DynamicInt": SPECIALIZES, "DynamicFloat": SPECIALIZES},
        "as a size": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "range()": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
        "f-string": {"DynamicInt": EAGER, "DynamicFloat": EAGER},
        "str()": {"DynamicInt": SPECIALIZES, "DynamicFloat": SPECIALIZES},
        "list index": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
        "dict key": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
    },
}


def probe() -> dict[str, dict[str, str]]:
    """Compile each construct on a ``DynamicInt`` and on a ``DynamicFloat`` and call it
    with that type's :data:`VALUES`.

    Returns ``{construct key: {type name: SYMBOLIC | SPECIALIZES | EAGER | RAISES}}``; a
    construct whose result differs from eager's (or that raises something else than eager
    does) raises ``AssertionError`` (it never has).  Takes a few seconds: the counting
    backend runs the graphs as Python, nothing is code-generated.
    """
    from ._proxy import DynamicFloat, DynamicInt

    kinds = {"DynamicInt": DynamicInt, "DynamicFloat": DynamicFloat}
    results: dict[str, dict[str, str]] = {}
    for construct in CONSTRUCTS:
        results[construct.key] = {
            name: _probe_one(construct, kinds[name], VALUES[name]) for name in TYPES
        }
    import torch

    torch._dynamo.reset()
    return results


def _probe_one(construct: Construct, kind: Any, values: tuple[Any, ...]) -> str:
    import warnings

    import torch

    from ._diagnostics import SpecializationWarning

    graphs: list[Any] = []

    def backend(gm: Any, example_inputs: Any, graphs: list[Any] = graphs) -> Any:
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(construct.run, backend=backend)
    x = torch.ones(2)
    raised = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecializationWarning)
        for value in values:
            try:
                want = construct.run(x, value)
            except Exception as error:
                try:
                    compiled(x, kind(value))
                except type(error):
                    raised += 1
                    continue
                raise AssertionError(
                    (construct.key, value, "compiled did not raise", error)
                ) from error
            got = compiled(x, kind(value))
            assert torch.equal(got, want), (construct.key, value, got, want)
    if raised == len(values):
        return RAISES
    if not graphs:
        return EAGER
    return SPECIALIZES if len(graphs) >= len(values) else SYMBOLIC


def probe_alternatives(values: tuple[int, ...] = (3, 4, 5, 6)) -> dict[str, bool]:
    """For each construct with a suggested replacement: whether that replacement compiles
    once over ``values`` and gives the construct's results (what the advice promises)."""
    import torch

    from ._proxy import DynamicInt

    checked: dict[str, bool] = {}
    for construct in CONSTRUCTS:
        if construct.instead is None:
            continue
        graphs: list[Any] = []

        def backend(gm: Any, example_inputs: Any, graphs: list[Any] = graphs) -> Any:
            graphs.append(gm)
            return gm.forward

        torch._dynamo.reset()
        compiled = torch.compile(construct.instead, backend=backend)
        x = torch.ones(2, dtype=torch.float64)
        same = all(torch.allclose(compiled(x, DynamicInt(v)), construct.run(x, v)) for v in values)
        checked[construct.key] = same and len(graphs) == 1
    torch._dynamo.reset()
    return checked


def render_table(results: dict[str, dict[str, str]]) -> str:
    """The Markdown table of :func:`probe`'s results, with the advice for each construct."""
    lines = [
        f"| on a marked `n` | {' | '.join(f'`{t}`' for t in TYPES)} | instead |",
        "|---|" + "---|" * len(TYPES) + "---|",
    ]
    for construct in CONSTRUCTS:
        found = results[construct.key]
        forced = any(found[t] not in (SYMBOLIC, RAISES) for t in TYPES)
        instead = construct.advice if forced else "nothing to change"
        cells = " | ".join(found[t] for t in TYPES)
        lines.append(f"| {construct.shown} | {cells} | {instead} |")
    return "\n".join(lines) + "\n"


_SUBSCRIPT_KEYS = ("list index", "dict key")


def constructs_in(line: str, container: type | None = None) -> list[Construct]:
    """The constructs found in a source line, those that force a value on the recorded
    release first.  ``container`` (the type indexed on that line, when the caller could
    tell) picks between a list index and a dict key; unknown, both are returned."""
    found = [c for c in CONSTRUCTS if re.search(c.pattern, line)]
    if container is not None and issubclass(container, dict):
        found = [c for c in found if c.key != "list index"]
    elif container is not None and issubclass(container, (list, tuple)):
        found = [c for c in found if c.key != "dict key"]
    recorded = RECORDED["results"]
    found.sort(key=lambda c: SPECIALIZES not in recorded.get(c.key, {}).values())
    return found
