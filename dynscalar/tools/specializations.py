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

The constructs, their advice and ``RECORDED`` (the table for the release the docs were built
with) live in the library, ``dynscalar/_constructs.py``, since the ``SpecializationWarning``
reads them; this module holds each construct's probe (:data:`PROBES`) and measures them:

* ``python -m dynscalar specializations`` prints the table for the installed torch;
* ``docs/concepts.md`` shows ``RECORDED`` (scripts/render_specializations.py writes it;
  tests/test_docs.py re-runs the probe and fails when they differ).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._constructs import CONSTRUCTS, EAGER, RAISES, SPECIALIZES, SYMBOLIC

__all__ = ["KINDS", "PROBES", "GraphCounter", "Probe", "probe", "render_table"]

_LIST = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
_DICT = {i: float(i) for i in range(10)}


@dataclass(frozen=True)
class Probe:
    """The code that measures a construct, and what the docs say where it stays symbolic."""

    run: Callable[[Any, Any], Any]  # (tensor, n) -> tensor, the probe
    instead: Callable[[Any, Any], Any] | None = None  # the advice's code, probed too
    note: str = ""  # shown instead of "nothing to change" where it stays symbolic


def _on_float64(method: str) -> Callable[[Any, Any], Any]:
    """The advice's probe for ``math.<method>(n)``: the tensor method on a 0-d float64
    tensor holding ``n``."""
    return lambda x, n: x * getattr(torch.full((), n, dtype=torch.float64), method)()


#: construct key (``dynscalar._constructs.CONSTRUCTS``) -> its probe
PROBES: dict[str, Probe] = {
    "int()": Probe(lambda x, n: x * int(n / 2)),
    "float()": Probe(lambda x, n: x * float(n)),
    "min/max": Probe(lambda x, n: x * min(1.0, n / 10) + max(n, 2)),
    "round()": Probe(lambda x, n: x * round(n / 3)),
    "math.sqrt": Probe(lambda x, n: x * math.sqrt(n), _on_float64("sqrt")),
    "math.floor": Probe(lambda x, n: x * math.floor(n / 2), lambda x, n: x * (n // 2)),
    "math.log": Probe(lambda x, n: x * math.log(n), _on_float64("log")),
    "math.exp": Probe(lambda x, n: x * math.exp(n), _on_float64("exp")),
    "math.pow": Probe(
        lambda x, n: x * math.pow(n, 2) * (1.0 - math.pow(0.9, n)),
        lambda x, n: x * n**2 * (1.0 - 0.9**n),
        note="Traced as `**` on the `eager` and `aot_eager` backends; `inductor` forces the "
        "value (its tensor power returns `inf` where `math.pow` raises `OverflowError`).",
    ),
    "numpy math": Probe(lambda x, n: x * np.sin(n), lambda x, n: x * math.sin(n)),
    "as a size": Probe(lambda x, n: x * torch.ones(math.ceil(n / 2)).sum()),
    "range()": Probe(
        lambda x, n: x + sum(1.0 for _ in range(n)),
        lambda x, n: x + torch.ones(n).sum(),
    ),
    "f-string": Probe(lambda x, n: x + len(f"step {n}")),
    "str()": Probe(lambda x, n: x + float(str(n))),
    "list index": Probe(lambda x, n: x * _LIST[n], lambda x, n: x * torch.tensor(_LIST)[n]),
    "dict key": Probe(
        lambda x, n: x * _DICT[n],
        lambda x, n: x * torch.tensor([_DICT[i] for i in range(10)])[n],
    ),
}


#: the proxy types the probe marks values with, in the table's column order
KINDS = ("DynamicInt", "DynamicFloat")


#: the values each kind is probed with (floats with a fraction: `range(2.5)` raises)
_VALUES: dict[str, tuple[float, ...]] = {
    "DynamicInt": (3, 4, 5, 6),
    "DynamicFloat": (1.5, 2.5, 3.5, 4.5),
}


class GraphCounter:
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

    from .. import _proxy
    from .._diagnostics import SpecializationWarning

    chosen = values or _VALUES
    results: dict[str, dict[str, str]] = {}
    for construct in CONSTRUCTS:
        run = PROBES[construct.key].run
        results[construct.key] = {}
        for kind in KINDS:
            counter = GraphCounter()
            torch.compiler.reset()
            compiled = torch.compile(run, backend=counter)
            x = torch.ones(2)
            raised = 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SpecializationWarning)
                for value in chosen[kind]:
                    try:
                        want = run(x, value)
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
    torch.compiler.reset()
    return results


def render_table(results: dict[str, dict[str, str]]) -> str:
    """The Markdown table of :func:`probe`'s results, one column per proxy type, with the
    advice for each construct that forces a value (or its note where it does not)."""
    header = " | ".join(f"`{kind}`" for kind in KINDS)
    lines = [f"| on a marked `n` | {header} | instead |", "|---|---|---|---|"]
    for construct in CONSTRUCTS:
        by_kind = results[construct.key]
        cells = " | ".join(by_kind[kind] for kind in KINDS)
        forced = SPECIALIZES in by_kind.values() or EAGER in by_kind.values()
        note = PROBES[construct.key].note or "nothing to change"
        lines.append(f"| {construct.shown} | {cells} | {construct.advice if forced else note} |")
    return "\n".join(lines) + "\n"
