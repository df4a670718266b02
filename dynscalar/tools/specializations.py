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
reads them; this module measures them:

* ``python -m dynscalar specializations`` prints the table for the installed torch;
* ``docs/concepts.md`` shows ``RECORDED`` (scripts/render_specializations.py writes it;
  tests/test_docs.py re-runs the probe and fails when they differ).
"""

from __future__ import annotations

from typing import Any

from .._constructs import CONSTRUCTS, EAGER, RAISES, SPECIALIZES, SYMBOLIC

__all__ = ["KINDS", "GraphCounter", "probe", "render_table"]

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

    import torch

    from .. import _proxy
    from .._diagnostics import SpecializationWarning

    chosen = values or _VALUES
    results: dict[str, dict[str, str]] = {}
    for construct in CONSTRUCTS:
        results[construct.key] = {}
        for kind in KINDS:
            counter = GraphCounter()
            torch.compiler.reset()
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
        instead = construct.advice if forced else construct.note or "nothing to change"
        lines.append(f"| {construct.shown} | {cells} | {instead} |")
    return "\n".join(lines) + "\n"
