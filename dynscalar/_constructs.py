"""Python constructs that can force a marked value to a constant, and what to write instead.

Each :class:`Construct` is a construct applied to a marked ``n`` (``int(n / 2)``,
``range(n)``, ``values[n]``, ``math.log(n)``): how the docs show it, a regular expression
that finds it in a source line, and the advice.  The ``SpecializationWarning`` names the
construct found on the user's line and gives its advice (:func:`constructs_in`).  ``python
-m dynscalar specializations`` (``dynscalar/tools/specializations.py``, which holds each construct's
probe) compiles each construct to measure which ones force a value on the installed torch;
``RECORDED`` is that measure on the release the docs were built with.

Examples:
    >>> [c.key for c in constructs_in("for _ in range(self.steps):")]
    ['range()']
    >>> [c.key for c in constructs_in("x = table[self.step]", dict)]
    ['dict key']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONSTRUCTS",
    "EAGER",
    "RAISES",
    "RECORDED",
    "SPECIALIZES",
    "SYMBOLIC",
    "Construct",
    "constructs_in",
    "numpy_advice",
]

#: what the probe finds for a construct on one kind of value
SYMBOLIC = "stays symbolic"
SPECIALIZES = "forces the value"
EAGER = "not compiled (runs eagerly)"
RAISES = "raises, as in Python"


@dataclass(frozen=True)
class Construct:
    """A Python construct applied to a marked value ``n``, and what to write instead."""

    key: str  # what the warning and the table call it
    code: str  # the construct as the docs show it
    pattern: str  # a regular expression that finds it in a source line
    advice: str  # what to write instead, when it forces the value

    @property
    def shown(self) -> str:
        """The construct in prose, e.g. a list index: `values[n]` on a list or tuple."""
        kind = {
            "list index": " on a list or tuple",
            "dict key": " on a dict",
            "as a size": " (a size)",
        }.get(self.key, "")
        return f"`{self.code}`{kind}"


def _math(name: str, instead: str, code: str = "n") -> Construct:
    return Construct(
        f"math.{name}",
        f"math.{name}({code})",
        rf"\bmath\.{name}\(",
        f"`math.{name}` takes a Python number, so it needs the exact value: compute it "
        f"on a 0-d tensor instead ({instead}).",
    )


#: numpy's scalar functions -> their ``math`` twins; a marked float stays symbolic in the
#: twin (measured on torch 2.13 with dynscalar's math rule) except in ``NUMPY_FORCED``.
#: The advice is given where numpy's own call was pinned: on an int, or a function whose
#: result differs from its twin's (``dynscalar.ops._math.numpy_exact``)
NUMPY_FORCED = ("exp", "log", "log10", "expm1", "log1p")
NUMPY_MATH = {
    **{name: name for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", *NUMPY_FORCED)},
    **{name: name for name in ("sqrt", "log2", "floor", "ceil", "fabs")},
    **{f"arc{name}": f"a{name}" for name in ("sin", "cos", "tan")},
}


def numpy_advice(line: str) -> str | None:
    """The advice for the first of numpy's scalar functions called on ``line``: its
    ``math`` twin where that stays symbolic, else a 0-d tensor; None when there is none.

    Examples:
        >>> numpy_advice("c = np.sin(self.margin)")[:40]
        '`np.sin` is evaluated on the exact value'
    """
    found = re.search(r"\b(np|numpy)\.(\w+)\(", line)
    if found is None or found.group(2) not in NUMPY_MATH:
        return None
    name = f"{found.group(1)}.{found.group(2)}"
    twin, symbolic = NUMPY_MATH[found.group(2)], found.group(2) not in NUMPY_FORCED
    head = (
        f"`{name}` is evaluated on the exact value while compiling (stock torch.compile "
        "pins it too)"
    )
    if symbolic:
        return (
            f"{head}: write `math.{twin}(...)` instead, which stays symbolic (it returns a "
            f"Python float where numpy returns `np.float64`; its result may differ from "
            "numpy's in the last bit on some platforms)."
        )
    return (
        f"{head}, and so does `math.{twin}`: compute it on a 0-d tensor "
        f"(`torch.full((), n, dtype=torch.float64).{twin}()`)."
    )


def _on_float64(method: str) -> str:
    return f"`torch.full((), n, dtype=torch.float64).{method}()`"


_USE_TENSOR_OPS = (
    "write it with tensor ops (e.g. `torch.clamp(torch.full((), step / n), max=1.0)` for "
    "`min(1.0, step / n)`) or move it out of the compiled code."
)

CONSTRUCTS: tuple[Construct, ...] = (
    Construct("int()", "int(n / 2)", r"\bint\(", _USE_TENSOR_OPS),
    Construct("float()", "float(n)", r"\bfloat\(", _USE_TENSOR_OPS),
    Construct("min/max", "min(1.0, n / 10), max(n, 2)", r"\b(min|max)\(", _USE_TENSOR_OPS),
    Construct("round()", "round(n / 3)", r"\bround\(", _USE_TENSOR_OPS),
    _math("sqrt", _on_float64("sqrt")),
    _math("floor", "`n // 2` keeps an int symbolic", code="n / 2"),
    _math("log", _on_float64("log")),
    _math("exp", _on_float64("exp")),
    Construct(
        "math.pow",
        "math.pow(n, 2), math.pow(0.9, n)",
        r"\bmath\.pow\(",
        "`math.pow` takes a Python number, so it needs the exact value: write `n ** 2` or "
        "compute it on a 0-d tensor instead.",
    ),
    Construct(
        "numpy math",
        "np.sin(n)",
        r"\b(np|numpy)\.(" + "|".join(NUMPY_MATH) + r")\(",
        "On a float, `np.sin`, `np.cos` and `np.sqrt` stay symbolic where numpy returns "
        "what `math` returns, bit for bit (checked once per process); numpy's other "
        "functions, and any on an int, are evaluated on the exact value while compiling "
        "(stock torch.compile pins them too): write their `math` twin (`math.tan(n)` for "
        "`np.tan(n)`), which stays symbolic (so do `math`'s floor, ceil and the other "
        "trigonometric functions; it returns a Python float, not `np.float64`), or, for "
        "`exp` and `log`, compute on a 0-d tensor.",
    ),
    Construct(
        "as a size",
        "torch.ones(math.ceil(n / 2))",
        r"\b(math\.ceil|math\.floor|int)\(.*\b(topk|ones|zeros|new_zeros|empty)\(|"
        r"\b(topk|ones|zeros|new_zeros|empty)\(.*\b(math\.ceil|math\.floor|int)\(",
        "A size computed from a float cannot be a symbolic size on inductor (it specializes "
        "the float): compute the size from ints (`n * 3 // 4`), or leave that value "
        "unmarked on inductor.",
    ),
    Construct(
        "range()",
        "for _ in range(n)",
        r"\brange\(",
        "A loop over `range(n)` is unrolled n times, so it compiles for one n: do the work "
        "with a tensor op over `torch.arange(n)` instead of a Python loop, or leave `n` "
        "unmarked if it takes few values.",
    ),
    Construct(
        "f-string",
        'f"step {n}"',
        r"""\b[fF][rR]?["']""",
        "Formatting needs the digits: torch.compile either fixes the value or gives up on "
        "the function (it then runs uncompiled). Format the value outside the compiled "
        "code (read `model.step` after the call and log it there).",
    ),
    Construct(
        "str()",
        "str(n)",
        r"\bstr\(|\.format\(|%[ds]",
        "Formatting needs the digits: format the value outside the compiled code (read "
        "`model.step` after the call and log it there).",
    ),
    Construct(
        "list index",
        "values[n]",
        r"\[[^\]]",
        "Indexing a Python list or tuple picks one element while compiling: keep the values "
        "in a tensor built once (`table = torch.tensor(values)`) and index that "
        "(`table[n]`), which stays symbolic.",
    ),
    Construct(
        "dict key",
        "table[n]",
        r"\[[^\]]",
        "A dict lookup needs the exact key, so every new value compiles again by design: "
        "leave a value used as a dict key unmarked, or store the entries in a tensor "
        "indexed by the value.",
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
        "numpy math": {"DynamicInt": SPECIALIZES, "DynamicFloat": SYMBOLIC},
        "as a size": {"DynamicInt": SYMBOLIC, "DynamicFloat": SYMBOLIC},
        "range()": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
        "f-string": {"DynamicInt": EAGER, "DynamicFloat": EAGER},
        "str()": {"DynamicInt": SPECIALIZES, "DynamicFloat": SPECIALIZES},
        "list index": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
        "dict key": {"DynamicInt": SPECIALIZES, "DynamicFloat": RAISES},
    },
}


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
