"""Which Python constructs force a marked value to a constant, measured on the installed torch.

Whether ``int(n)``, ``min(1.0, n / 10)`` or ``math.log(n)`` keeps a symbolic ``n`` symbolic
is a property of the torch release (and of dynscalar's rules for ``math``), not something
to remember: torch 2.13 keeps ``int()``, ``min`` and ``math.sqrt`` symbolic, dynscalar's
``math`` rule keeps ``math.pow`` symbolic, and ``range(n)``, ``str(n)``, list and dict
indexing and ``math.log``/``math.exp`` force a value.  Advice written from memory goes
stale, so :func:`probe` measures it: each construct is compiled (public ``torch.compile``
with a counting backend that runs the graph as Python, as the ``eager`` backend does) and
called with four values of a ``DynamicInt``, then of a ``DynamicFloat``; one compile means
it stayed symbolic, one per value means it specialized.  A construct Python refuses for a
float (``range(2.5)``) raises in compiled code too.

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
    "KINDS",
    "RECORDED",
    "Construct",
    "constructs_in",
    "probe",
    "probe_alternatives",
    "render_table",
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
RAISES = "raises, as in Python"

#: the proxy types the probe marks values with, in the table's column order
KINDS = ("DynamicInt", "DynamicFloat")


@dataclass(frozen=True)
class Construct:
    """A Python construct applied to a marked value ``n``, and what to write instead."""

    key: str  # what the warning and the table call it
    code: str  # the construct as the docs show it
    pattern: str  # a regular expression that finds it in a source line
    advice: str  # what to write instead, when it forces the value
    run: Callable[[Any, Any], Any]  # (tensor, n) -> tensor, the probe
    instead: Callable[[Any, Any], Any] | None = None  # the advice's code, probed too
    note: str = ""  # shown instead of "nothing to change" where it stays symbolic

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
    Construct(
        "math.pow",
        "math.pow(n, 2), math.pow(0.9, n)",
        r"\bmath\.pow\(",
        "`math.pow` takes a Python number, so it needs the exact value: write `n ** 2` or "
        "compute it on a 0-d tensor instead.",
        lambda x, n: x * math.pow(n, 2) * (1.0 - math.pow(0.9, n)),
        lambda x, n: x * n**2 * (1.0 - 0.9**n),
        note="Traced as `**` on the `eager` and `aot_eager` backends; `inductor` forces the "
        "value (its tensor power returns `inf` where `math.pow` raises `OverflowError`).",
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
        "math.pow": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "as a size": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "range()": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
        "f-string": {"DynamicInt": EAGER, "DynamicFloat": EAGER},
        "str()": {"DynamicInt": SPECIALIZES, "DynamicFloat": SPECIALIZES},
        "list index": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
        "dict key": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
    },
}

#: the values each kind is probed with (floats with a fraction: `range(2.5)` raises)
_VALUES: dict[str, tuple[float, ...]] = {
    "DynamicInt": (3, 4, 5, 6),
    "DynamicFloat": (1.5, 2.5, 3.5, 4.5),
}


class _Counter:
    """Counts the graphs of a compile and runs them as Python code, as the ``eager``
    backend does; ``backend`` names that backend for dynscalar's rules."""

    backend = "eager"

    def __init__(self) -> None:
        self.graphs: list[Any] = []

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs.append(gm)
        return gm.forward


def probe(values: dict[str, tuple[float, ...]] | None = None) -> dict[str, dict[str, str]]:
    """Compile each construct on a ``DynamicInt`` and on a ``DynamicFloat`` and call it with
    four values of each (``values``: kind name -> values).

    Returns ``{construct key: {kind name: SYMBOLIC | SPECIALIZES | EAGER | RAISES}}``; a
    construct whose result differs from eager's, or that raises where eager does not (or
    the other way round), raises ``AssertionError`` (it never has).  Takes a few seconds:
    the graphs run as Python, nothing is code-generated.
    """
    import warnings

    import torch

    from . import _proxy
    from ._diagnostics import SpecializationWarning

    chosen = values or _VALUES
    results: dict[str, dict[str, str]] = {}
    for construct in CONSTRUCTS:
        results[construct.key] = {}
        for kind in KINDS:
            counter = _Counter()
            torch._dynamo.reset()
            compiled = torch.compile(construct.run, backend=counter)
            x = torch.ones(2)
            raised = 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SpecializationWarning)
                for value in chosen[kind]:
                    try:
                        want = construct.run(x, value)
                    except Exception as exc:  # Python refuses the value (range(2.5))
                        try:
                            compiled(x, getattr(_proxy, kind)(value))
                        except type(exc):
                            raised += 1
                            continue
                        raise AssertionError((construct.key, kind, value, "did not raise")) from exc
                    got = compiled(x, getattr(_proxy, kind)(value))
                    assert torch.equal(got, want), (construct.key, kind, value, got, want)
            count = len(counter.graphs)
            if raised == len(chosen[kind]):
                results[construct.key][kind] = RAISES
            elif not count:
                results[construct.key][kind] = EAGER
            elif count >= len(chosen[kind]) - raised:
                results[construct.key][kind] = SPECIALIZES
            else:
                results[construct.key][kind] = SYMBOLIC
    torch._dynamo.reset()
    return results


def probe_alternatives(values: tuple[int, ...] = (3, 4, 5, 6)) -> dict[str, bool]:
    """For each construct with a suggested replacement: whether that replacement compiles
    once over ``values`` and gives the construct's results (what the advice promises)."""
    import torch

    from ._proxy import DynamicInt

    checked: dict[str, bool] = {}
    for construct in CONSTRUCTS:
        if construct.instead is None:
            continue
        counter = _Counter()
        torch._dynamo.reset()
        compiled = torch.compile(construct.instead, backend=counter)
        x = torch.ones(2, dtype=torch.float64)
        same = all(torch.allclose(compiled(x, DynamicInt(v)), construct.run(x, v)) for v in values)
        checked[construct.key] = same and len(counter.graphs) == 1
    torch._dynamo.reset()
    return checked


def render_table(results: dict[str, dict[str, str]]) -> str:
    """The Markdown table of :func:`probe`'s results, one column per proxy type, with the
    advice for each construct that forces a value (or its note where it does not)."""
    header = " | ".join(f"`{kind}`" for kind in KINDS)
    lines = [f"| on a marked `n` | {header} | instead |", "|---|---|---|---|"]
    for construct in CONSTRUCTS:
        by_kind = results[construct.key]
        cells = " | ".join(by_kind[kind] for kind in KINDS)
        forced = SPECIALIZES in by_kind.values() or EAGER in by_kind.values()
        instead = construct.advice if forced else construct.note or "nothing to change"
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
