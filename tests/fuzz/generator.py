"""Random small programs that use Python scalars under ``torch.compile``, as source text.

A program is a :class:`Program` (a small structure the shrinker can edit) rendered to Python
source by :func:`render`.  Two shapes:

* **module**: a class ``M(nn.Module)`` with one or two scalar attributes (``s``, ``t``), a
  list ``l`` and a dict ``d``, and a ``forward(self, x)`` built from random statements that
  read, branch on, force, update in place, write back or reset the attributes, apply
  ``math.pow``/``log``/``exp``/``sqrt`` to them (in their domains or not), or store
  values made from them elsewhere (lists, tuples and dicts built, appended to or
  item-assigned; ``sum``/``math.prod``/``pow``/``divmod``/``round``/``math.floor``, dunder
  calls, ``operator.iadd``, ``max``/``min`` between the attributes); optionally a
  ``@dynscalar.dynamic_attrs`` subclass ``MD``; several instances, marked with
  ``mark_dynamic_attr`` (random spec), holding ``DynamicInt``/``DynamicFloat`` values, or
  unmarked; then about six calls, with attribute assignments of changing types and mark
  changes in between; everything reachable from the instances is compared after each call;
* **function**: ``f(x, n)`` called with proxies and plain values of changing types, ``n``
  marked with ``mark_dynamic_args`` (random spec) or not; its body may graph-break
  between uses of ``n`` and pass ``n`` to a helper ``g`` that graph-breaks itself.

Both shapes compute sizes from floats (``int()``, ``math.ceil``, ``math.floor`` of a
float used to slice, as ``torch.topk``'s ``k``, for ``new_zeros``).

Every program is a pure function of ``(seed, index)``: :func:`generate` seeds its own
``random.Random`` from both, so program 17 of seed 0 is the same program whatever else
runs.  The rendered source calls ``fuzz.track``/``fuzz.call``/``fuzz.step`` on a harness
object (see :mod:`tests.fuzz.runner`); :func:`render` with ``script=True`` appends a small
standalone harness so that a failing program can be saved and run with ``python``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "Assign",
    "Call",
    "Instance",
    "SHAPES",
    "Mark",
    "Program",
    "Redefine",
    "Reset",
    "Spec",
    "Stmt",
    "Unmark",
    "Value",
    "generate",
    "render",
    "without_harness",
]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# ----------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Spec:
    """Keyword arguments of a mark or a proxy (``unbacked``, ``min``, ``max``, ``strict``)."""

    unbacked: bool = False
    min: int | None = None
    max: int | None = None
    strict: bool = False

    def kwargs(self) -> str:
        parts = []
        if self.unbacked:
            parts.append("unbacked=True")
        if self.min is not None:
            parts.append(f"min={self.min}")
        if self.max is not None:
            parts.append(f"max={self.max}")
        if self.strict:
            parts.append("strict=True")
        return ", ".join(parts)

    @property
    def has_range(self) -> bool:
        return self.min is not None or self.max is not None

    def admits_int(self, value: int) -> bool:
        return INT64_MIN <= value <= INT64_MAX and not (
            (self.min is not None and value < self.min)
            or (self.max is not None and value > self.max)
        )


ValueKind = Literal[
    "int",
    "bool",
    "float",
    "np.int64",
    "np.int32",
    "np.float64",
    "np.float32",
    "DynamicInt",
    "DynamicFloat",
    "str",
    "None",
    "tensor",
]


@dataclass(frozen=True)
class Value:
    """A scalar value as it appears in the program source."""

    kind: ValueKind
    payload: Any = None
    spec: Spec = Spec()

    @property
    def is_proxy(self) -> bool:
        return self.kind in ("DynamicInt", "DynamicFloat")

    def source(self, marks: bool = True) -> str:
        """Source text; with ``marks=False`` a proxy becomes its plain value."""
        p = self.payload
        if self.kind in ("int", "bool", "str"):
            return repr(p)
        if self.kind == "None":
            return "None"
        if self.kind == "float":
            return _float(p)
        if self.kind.startswith("np."):
            inner = repr(int(p)) if "int" in self.kind else _float(p)
            return f"{self.kind}({inner})"
        if self.kind == "tensor":
            return f"torch.tensor({_float(p) if isinstance(p, float) else repr(p)})"
        plain = repr(p) if self.kind == "DynamicInt" else _float(p)
        if not marks:
            return plain
        extra = self.spec.kwargs()
        return f"{self.kind}({plain}{', ' + extra if extra else ''})"


def _float(value: float) -> str:
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(value)


def mark_accepts(value: Value, spec: Spec) -> bool:
    """Whether ``mark_dynamic_attr`` documents accepting this value under ``spec``.

    Used only to keep marks made right after construction valid (a mark that raises there
    would end the program in both runs); marks later in the sequence run under
    ``fuzz.step()`` and may raise.
    """
    if value.kind in ("int", "DynamicInt"):
        return spec.admits_int(value.payload) and (
            value.kind == "int" or value.spec.admits_int(value.payload)
        )
    if value.kind in ("float", "DynamicFloat"):
        return not (spec.unbacked or spec.has_range)
    return False


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Stmt:
    """One forward statement; ``{a}``/``{b}`` are attribute (or argument) expressions."""

    template: str
    a: str  # the attribute the statement is about
    b: str  # a second attribute it may read (== a with one attribute)
    reads: bool = True
    writes: bool = False
    forces: bool = False  # range()/int(): makes a symbolic value a constant
    makes_float: bool = False  # true division or a float operand

    def source(self, expr: dict[str, str]) -> str:
        return self.template.format(a=expr[self.a], b=expr[self.b])

    def uses(self) -> set[str]:
        return {self.a} | ({self.b} if "{b}" in self.template else set())


# (template, flags).  {c} and {k} are filled with small constants at generation time.
Templates = list[tuple[str, dict[str, bool]]]
_READS: Templates = [
    ("y = y * {a}", {}),
    ("y = y + {a} / 2", {"makes_float": True}),
    ("y = y - {a} // {c}", {}),
    ("y = y + {a} % {c}", {}),
    ("y = y * ({a} - {b})", {}),
    ("k = {a} * 2 + 1\ny = y + k", {}),
    ("k = {a} / 4\ny = y * k", {"makes_float": True}),
    ("y = y + max({a}, {c})", {}),
    ("y = y * abs({a})", {}),
    ("y = y - -{a}", {}),
    ("y = y * float({a})", {"makes_float": True}),
]
_BRANCHES: Templates = [
    ("if {a} > {k}:\n    y = y + 1\nelse:\n    y = y - 1", {}),
    ("if {a} % 2 == 0:\n    y = y * 2", {}),
    ("if {a} < 0:\n    y = -y", {}),
    ("if {a} == {k}:\n    y = y + 10", {}),
    ("y = y + 1 if {a} >= {k} else y", {}),
]
# math functions on the scalars (dynscalar's math rule, torch's own math ops, stock's
# specialization): operands kept in each function's domain, or not (eager raises there:
# ValueError, OverflowError, TypeError for a str; the compiled call must raise too).
_MATH: Templates = [
    ("y = y * (1.0 - math.pow(0.9, {a}))", {"makes_float": True}),
    ("y = y * math.pow({a}, {c})", {"makes_float": True}),
    ("y = y * math.pow(abs({a}) + 1, 0.5)", {"makes_float": True}),
    ("y = y * math.pow({a}, 0.5)", {"makes_float": True}),
    ("y = y + math.pow({a}, -1)", {"makes_float": True}),
    ("y = y + math.log(abs({a}) + 1)", {"makes_float": True}),
    ("y = y + math.log({a})", {"makes_float": True}),
    ("y = y * math.exp(-abs({a}) / 4)", {"makes_float": True}),
    ("y = y * math.exp({a})", {"makes_float": True}),
    ("y = y + math.sqrt(abs({a}))", {"makes_float": True}),
    ("y = y + math.sqrt({a})", {"makes_float": True}),
]
_FORCING: Templates = [
    ("for _ in range({a} % 3):\n    y = y + 1", {"forces": True}),
    ("y = y + int({a})", {"forces": True}),
]
_WRITES: Templates = [
    ("{a} += 1", {}),
    ("{a} -= {c}", {}),
    ("{a} *= 2", {}),
    ("{a} //= 2", {}),
    ("{a} += 0.5", {"makes_float": True}),
    ("{a} = {a} * 2 + 1", {}),
    ("{a} = {a} + 1", {}),
    ("{a} = {a} / 2", {"makes_float": True}),
    ("{a} = -{a}", {}),
    ("{a} = {a} + {b}", {}),
    ("{a} = 0", {"reads": False}),
    ("{a} = 0.5", {"reads": False, "makes_float": True}),
    ("{a} = {c}", {"reads": False}),
    ("if {a} > {k}:\n    {a} = 0", {}),
    ("{a} = {a} - {c} if {a} > {k} else {a} + 1", {}),
    ("if {a} % 2 == 1:\n    {a} = {a} * 3", {}),
]
# Values that leave through other places than the attribute they came from (modules only):
# containers held by attributes (built, appended to, item-assigned, nested), builtins and
# dunder calls, max/min between two attributes (which may hold proxies with different specs).
_LANDS: Templates = [
    ("self.h = [{a} + 1]", {}),
    ("self.h = ({a} * 2, 0)", {}),
    ("self.l.append({a})\ndel self.l[:-2]", {}),
    ("self.l.append({a} - {b})\ndel self.l[:-2]", {}),
    ('self.d["k"] = {a} - 1', {}),
    ('self.d["n"] = [{a}, ({b} * 2, 1)]', {}),
    ("self.u = sum([{a}, {b}])", {}),
    ("self.u = math.prod([{a}, {c}])", {}),
    ("self.u = pow({a}, 2)", {}),
    ("self.u = {a}.__add__({c})", {}),
    ("self.u = {a}.__rsub__({c})", {}),
    ("self.u = operator.iadd({a}, 1)", {}),
    ("self.u = abs({a})", {}),
    ("self.u = round({a})", {}),
    ("self.u = math.floor({a})", {}),
    ("self.u = divmod({a}, {c})", {}),
    ("self.u = max({a}, {b})", {}),
    ("self.u = min({a}, {b})", {}),
    ("self.u = max({a}, {c})", {}),
    ("self.u = min([{a}, {b}, {c}])", {}),
    ("self.u = torch.sym_max({a}, {c})", {}),
    ("{a} = pow({a}, 1)", {}),
    ("self.u = math.pow({a}, {c})", {"makes_float": True}),
    ("self.u = math.fabs({a})", {"makes_float": True}),
]
# Sizes computed from a float (x-transformers' top-k `ceil(frac * n)`, ViTMAE's
# `int(n * (1 - ratio))`): int(), math.ceil and math.floor of a float used as a size, for a
# slice, torch.topk's k and new_zeros.  Sizes that allocate are kept small (`% 5`); a slice
# takes any value, negative and past the end included.
_SIZES: Templates = [
    ("k = int({a} * 0.75)\ny = y + y[:k].sum()", {"makes_float": True}),
    ("k = int(4 * (1 - {a} / 8))\ny = y + y[k:].sum()", {"makes_float": True}),
    ("k = math.ceil({a} / {c}) % 5\ny = y + torch.topk(y, k).values.sum()", {"makes_float": True}),
    ("k = math.floor({a} * 0.5) % 5\ny = y + y.new_zeros(k).sum() + k", {"makes_float": True}),
]
# Graph breaks between uses of an argument (functions only): in the function itself, and
# in a helper it passes the argument to, which Dynamo then compiles as a frame of its own.
_BREAKS: Templates = [
    ("torch._dynamo.graph_break()", {"reads": False}),
    ("y = g(y, {a})", {}),
]
# torch ops taking the scalars (dynscalar's op rules and Scalar arguments): half-precision
# dtypes, transposed and strided layouts, and the special values the scalars take (NaN,
# ±inf, -0.0 are among the values).
_OPS: Templates = [
    ("y = y + torch.clamp(y.to(torch.bfloat16), -abs({a}), abs({a})).float()", {}),
    ("y = y + torch.lerp(y, y.flip(0), {a} / 8)", {"makes_float": True}),
    ("y = y + (y.abs().to(torch.float16) + 1) ** ({a} / 4)", {"makes_float": True}),
    ("y = y + y.reshape(-1, 1).t().contiguous().reshape(-1)[::2].sum() * {a}", {}),
    (
        "y = y + torch.nn.functional.layer_norm(y, y.shape, eps=abs({a}) / 100 + 1e-5)",
        {"makes_float": True},
    ),
]
# Python's semantics on the scalars' values (the shapes below add one of each kind, drawn
# apart from the other statements): comparisons where IEEE and real algebra part (NaN from
# ``0 * inf``, ``x * nan``, overflow to inf, -0.0), division by zero (caught by the
# program's own ``except``, and not), and the user's own errors inside a marked frame.
_IEEE: Templates = [
    ("v = {a} * math.inf\nif v != v:\n    y = y + 1", {"makes_float": True}),
    ("if ({a} * math.nan) == ({a} * math.nan):\n    y = y * 3", {"makes_float": True}),
    ("if {a} * 1e308 * 10 > {k}:\n    y = y - 2", {"makes_float": True}),
    ("if {a} * -0.0 == 0.0:\n    y = y + 0.5", {"makes_float": True}),
    ("if {a} + math.nan < {k}:\n    y = y * 2\nelse:\n    y = y / 2", {"makes_float": True}),
    ("v = {a} * 1e308 * 10\nif v - v >= 0:\n    y = y + 4", {"makes_float": True}),
    ("y = y + ({a} * math.inf <= {k})", {"makes_float": True}),
]


def _caught(body: str, handler: str) -> str:
    """``body`` under ``try``, ``handler`` where it divides by zero (the program's own
    ``except``, which compiled code must reach as eager code does)."""
    return f"try:\n    {body}\nexcept ZeroDivisionError:\n    {handler}"


_DIVIDE: Templates = [
    (_caught("y = y * (1 / {a})", "y = y - 1"), {"makes_float": True}),
    (_caught("y = y + {c} // {a}", "y = y + 7"), {}),
    (_caught("y = y + {a} % ({a} - {k})", "y = y * 0.5"), {}),
    (_caught("q, r = divmod({c}, {a})\n    y = y + q - r", "y = y + 2"), {}),
    (_caught("y = y * ({a} ** -1)", "y = -y"), {"makes_float": True}),
    ("y = y + {a} / ({a} - {k})", {"makes_float": True}),
]
_USER_ERRORS: Templates = [
    ('if {a} == {k}:\n    y = y + "s"', {}),
    ('if {a} > {k}:\n    raise ValueError("the program\'s own error")', {}),
]
# torch ops with op rules and Scalar arguments inside ``torch.autocast`` regions: the
# dtypes eager's autocast gives each op (float32 for the losses and norms, lower precision
# for attention and matmuls), bf16 and f16
_AUTOCAST: Templates = [
    (
        'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
        "    y = y + torch.nn.functional.layer_norm(y, y.shape, eps=abs({a}) / 100 + 1e-5)",
        {"makes_float": True},
    ),
    (
        'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
        "    y = y + torch.nn.functional.cross_entropy(\n"
        "        y.reshape(1, -1), torch.tensor([1]), label_smoothing=min(abs({a}) / 8, 1.0)\n"
        "    )",
        {"makes_float": True},
    ),
    (
        'with torch.autocast("cpu", dtype=torch.float16):\n'
        "    y = y + torch.nn.functional.huber_loss(y, y.flip(0), delta=abs({a}) + 0.5)",
        {"makes_float": True},
    ),
    (
        'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
        "    q = y.reshape(1, 1, -1, 1)\n"
        "    y = y + torch.nn.functional.scaled_dot_product_attention(\n"
        "        q, q, q, scale=abs({a}) / 4 + 0.1\n"
        "    ).reshape(-1)",
        {"makes_float": True},
    ),
    (
        'with torch.autocast("cpu", dtype=torch.float16):\n'
        "    y = y + (y.reshape(-1, 1) @ y.reshape(1, -1)).sum(0) * {a}",
        {},
    ),
]
# a dict built and stored in one statement (``self.extra = {'k': self.s * 2}``)
_DICTS: Templates = [
    ('self.e = {{"k": {a} * 2}}', {}),
    ('self.e = {{"k": {a} + 1, "n": [{b} - 1]}}', {}),
]
# Integer tensors with the scalars (a marked int must keep Python's int semantics: int64
# results, exact values; ``1003 ** 3`` is 1009027027, not float32's 1009027008): powers,
# floor division, remainder, shifts.  ``.double()`` keeps every int64 a float32 would round.
_INT_TENSORS: Templates = [
    ("y = y + (torch.tensor([1003, -7, 12, 0]) ** (abs({a}) % 4)).double()", {}),
    ("y = y + (torch.tensor([1003, -7, 12, 5]) // ({a} % 5 + 1)).double()", {}),
    ("y = y + (torch.tensor([1003, -7, 12, 5]) % ({a} % 5 + 1)).double()", {}),
    ("y = y + (torch.tensor([3, -7, 12, 5]) << (abs({a}) % 8)).double()", {}),
    ("y = y + ((abs({a}) % 3 + 1) ** torch.tensor([3, 1, 0, 5])).double()", {}),
]
# Random ops with a probability made from the scalars (in [0, 0.75]): feature and alpha
# dropout and a timm-style DropPath (``bernoulli_``), which eager and stock inductor on the
# CPU draw with ATen's kernel: the same masks, the generator left in the same state.
_P = "(abs({a}) % 7) / 8"
_RANDOM_OPS: Templates = [
    (
        f"y = y + torch.nn.functional.dropout2d(y.reshape(1, 4, 1, 1), {_P}).reshape(-1)",
        {"makes_float": True},
    ),
    (
        f"y = y + torch.nn.functional.dropout1d(y.reshape(1, 2, 2), {_P}).reshape(-1)",
        {"makes_float": True},
    ),
    (f"y = y + torch.nn.functional.alpha_dropout(y, {_P}, True)", {"makes_float": True}),
    (
        f"y = y + torch.nn.functional.feature_alpha_dropout(y.reshape(2, 2, 1), {_P}, True)"
        ".reshape(-1)",
        {"makes_float": True},
    ),
    (
        f"k = 1 - {_P}\ny = y * y.new_empty(4, 1).bernoulli_(k).div_(k).reshape(-1)",
        {"makes_float": True},
    ),
]
_GROUPS = [
    (_READS, 5),
    (_BRANCHES, 3),
    (_FORCING, 1),
    (_WRITES, 4),
    (_MATH, 2),
    (_SIZES, 1),
    (_OPS, 2),
]
_FUNCTION_GROUPS = [*_GROUPS, (_BREAKS, 3)]
_MODULE_GROUPS = [*_GROUPS, (_LANDS, 4)]


def _stmt(
    rng: random.Random,
    attrs: tuple[str, ...],
    module: bool = False,
    group: Templates | None = None,
) -> Stmt:
    if group is None:
        groups = _MODULE_GROUPS if module else _FUNCTION_GROUPS
        group = rng.choices([g for g, _ in groups], weights=[w for _, w in groups])[0]
    template, flags = rng.choice(group)
    template = template.replace("{c}", str(rng.randint(2, 4))).replace(
        "{k}", str(rng.randint(-1, 6))
    )
    a = rng.choice(attrs)
    b = rng.choice([n for n in attrs if n != a] or [a])
    return Stmt(
        template=template,
        a=a,
        b=b,
        reads=flags.get("reads", True),
        writes=group is _WRITES or template.startswith("{a} =") or "    {a} =" in template,
        forces=flags.get("forces", False),
        makes_float=flags.get("makes_float", False),
    )


# ----------------------------------------------------------------------------- values
_SMALL = list(range(-3, 11))
_LARGE = [2**31 + 7, 2**40, -(2**33) - 1, 2**62, 3 * 2**31]
_OUT_OF_INT64 = [2**63 + 5, -(2**63) - 2]
_FLOATS = [0.5, 2.5, -1.25, 3.0, 7.75, 0.1, 1e10, -0.0]
_ODD_FLOATS = [math.nan, math.inf]

# kind -> weight, for an attribute that usually holds an int ("s") or a float ("t")
_INTISH = {
    "int": 30,
    "int-": 8,
    "int-large": 6,
    "int-out": 2,
    "bool": 4,
    "float": 10,
    "float-odd": 1,
    "np.int64": 4,
    "np.int32": 2,
    "np.float64": 3,
    "np.float32": 2,
    "DynamicInt": 14,
    "DynamicFloat": 4,
    "str": 3,
    "None": 1,
    "tensor": 1,
}
_FLOATISH = {
    **_INTISH,
    "int": 10,
    "int-": 3,
    "int-large": 2,
    "float": 30,
    "DynamicInt": 6,
    "DynamicFloat": 12,
    "np.float64": 5,
}


def _spec(rng: random.Random, value: int | None) -> Spec:
    """A random spec; around ``value`` (kept inside the range) when it is given."""
    unbacked = rng.random() < 0.2
    strict = rng.random() < 0.15
    lo = hi = None
    if rng.random() < 0.3:
        center = value if value is not None else rng.randint(0, 6)
        if rng.random() < 0.6:
            lo = center - rng.randint(0, 4)
        if lo is None or rng.random() < 0.7:
            hi = center + rng.randint(0, 6)
        if value is not None and not (INT64_MIN <= value <= INT64_MAX):
            lo = hi = None
        lo = None if lo is not None and lo < INT64_MIN else lo
        hi = None if hi is not None and hi > INT64_MAX else hi
    return Spec(unbacked=unbacked, min=lo, max=hi, strict=strict)


def _value(rng: random.Random, weights: dict[str, int]) -> Value:
    kind = rng.choices(list(weights), weights=list(weights.values()))[0]
    if kind == "int":
        return Value("int", rng.choice(_SMALL))
    if kind == "int-":
        return Value("int", rng.randint(-12, -1))
    if kind == "int-large":
        return Value("int", rng.choice(_LARGE))
    if kind == "int-out":
        return Value("int", rng.choice(_OUT_OF_INT64))
    if kind == "bool":
        return Value("bool", rng.random() < 0.5)
    if kind == "float":
        return Value("float", rng.choice(_FLOATS))
    if kind == "float-odd":
        return Value("float", rng.choice(_ODD_FLOATS))
    if kind in ("np.int64", "np.int32"):
        return Value(kind, rng.choice(_SMALL))  # type: ignore[arg-type]
    if kind in ("np.float64", "np.float32"):
        return Value(kind, rng.choice([0.5, 2.5, -1.25, 3.0]))  # type: ignore[arg-type]
    if kind == "DynamicInt":
        v = rng.choice(_SMALL * 3 + _LARGE)
        return Value("DynamicInt", v, _spec(rng, v))
    if kind == "DynamicFloat":
        return Value("DynamicFloat", rng.choice(_FLOATS), Spec(strict=rng.random() < 0.2))
    if kind == "str":
        return Value("str", rng.choice(["3", "a"]))
    if kind == "None":
        return Value("None")
    return Value("tensor", rng.choice([2, 0.5]))


# ----------------------------------------------------------------------------- programs
@dataclass(frozen=True)
class Instance:
    name: str
    cls: str  # "M" or "MD"
    init: tuple[Value, ...]  # one per attribute, in Program.attrs order
    mark: tuple[tuple[str, ...], Spec] | None = None  # mark_dynamic_attr right after creation


@dataclass(frozen=True)
class Call:
    target: str  # an instance name, or "f"
    arg: Value | None = None  # the scalar argument of f(x, n)


@dataclass(frozen=True)
class Assign:
    target: str
    attr: str
    value: Value


@dataclass(frozen=True)
class Mark:
    target: str
    names: tuple[str, ...]
    spec: Spec


@dataclass(frozen=True)
class Unmark:
    target: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Reset:
    """``torch._dynamo.reset()`` between two calls (compiled runs only)."""


@dataclass(frozen=True)
class Redefine:
    """``f`` defined again from the same source (a re-run notebook cell), marked as the first
    one was; the first one is dropped and collected."""


Step = Call | Assign | Mark | Unmark | Reset | Redefine


@dataclass(frozen=True)
class Program:
    seed: int
    index: int
    kind: Literal["module", "function"]
    attrs: tuple[str, ...]
    body: tuple[Stmt, ...]
    x: tuple[float, ...]
    class_mark: tuple[tuple[str, ...], Spec] | None = None
    instances: tuple[Instance, ...] = ()
    steps: tuple[Step, ...] = field(default_factory=tuple)
    arg_mark: Spec | None = None  # functions: mark_dynamic_args(f, "n", ...)
    tags: tuple[str, ...] = ()  # the shapes this program has (SHAPES), for the report
    prop_marks: tuple[str, ...] = ()  # instances whose property ``r`` is marked

    @property
    def calls(self) -> list[Call]:
        return [s for s in self.steps if isinstance(s, Call)]

    def truncated(self, calls: int) -> Program:
        """The program up to and including its ``calls``-th call."""
        out: list[Step] = []
        seen = 0
        for step in self.steps:
            if seen == calls:
                break
            out.append(step)
            seen += isinstance(step, Call)
        return replace(self, steps=tuple(out))

    def body_uses(self) -> set[str]:
        return set().union(*(s.uses() for s in self.body)) if self.body else set()


#: shape -> (the program kinds it applies to, how often): added to a program from a random
#: stream of their own, so the programs without them stay what they were
SHAPES: dict[str, tuple[tuple[str, ...], float]] = {
    "ieee comparisons": (("module", "function"), 0.2),
    "division by zero": (("module", "function"), 0.2),
    "user errors": (("module", "function"), 0.06),
    "dict written": (("module",), 0.3),
    "instances churn": (("module",), 0.25),
    "property mark": (("module",), 0.15),
    "reset mid-program": (("module", "function"), 0.08),
    "redefined function": (("function",), 0.3),
    "int tensors": (("module", "function"), 0.15),
    "random ops": (("module", "function"), 0.15),
    "autocast region": (("module", "function"), 0.15),
}
_SHAPE_STATEMENTS = {
    "ieee comparisons": _IEEE,
    "division by zero": _DIVIDE,
    "user errors": _USER_ERRORS,
    "dict written": _DICTS,
    "int tensors": _INT_TENSORS,
    "random ops": _RANDOM_OPS,
    "autocast region": _AUTOCAST,
}
#: shapes added later, each drawn from a stream of its own: the programs the earlier
#: shapes made (and the published runs of them) stay what they were
_OWN_STREAM = ("int tensors", "random ops", "autocast region")
#: the types an attribute takes in the "instances churn" shape
_CHURN = {"int": 4, "np.int64": 2, "DynamicInt": 3, "DynamicFloat": 2, "float": 2}


def generate(seed: int, index: int, *, calls: int = 6, later_shapes: bool = True) -> Program:
    """Program ``index`` of ``seed`` (independent of every other index).  Without
    ``later_shapes``, the program as the generator made it before the shapes drawn from
    streams of their own (``_OWN_STREAM``): the program a published run checked."""
    rng = random.Random(f"dynscalar-fuzz:{seed}:{index}")
    x = tuple(rng.choice([-2.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.0, 3.25]) for _ in range(4))
    if rng.random() < 0.2:
        program = _function_program(rng, seed, index, x, calls)
    else:
        program = _module_program(rng, seed, index, x, calls)
    rng = random.Random(f"dynscalar-fuzz-shapes:{seed}:{index}")
    return _with_shapes(program, rng, later_shapes)


def _with_shapes(p: Program, rng: random.Random, later_shapes: bool = True) -> Program:
    """``p`` with the shapes drawn for it (``SHAPES``)."""
    streams = {n: random.Random(f"dynscalar-fuzz-{n}:{p.seed}:{p.index}") for n in _OWN_STREAM}
    tags = tuple(
        n
        for n, (kinds, share) in SHAPES.items()
        if streams.get(n, rng).random() < share
        and p.kind in kinds
        and (later_shapes or n not in streams)
    )
    body = list(p.body)
    for tag in tags:
        if tag in _SHAPE_STATEMENTS and tag not in streams:
            stmt = _stmt(rng, p.attrs, module=p.kind == "module", group=_SHAPE_STATEMENTS[tag])
            body.insert(rng.randint(0, len(body)), stmt)
    steps = list(p.steps)
    instances = p.instances
    prop_marks: tuple[str, ...] = ()
    if "instances churn" in tags:
        steps = _churn(rng, p, len(p.calls))
    if "property mark" in tags:
        body.insert(rng.randint(0, len(body)), Stmt("y = y * self.r", p.attrs[0], p.attrs[0]))
        prop_marks = tuple(i.name for i in instances if rng.random() < 0.6) or (instances[0].name,)
    if "reset mid-program" in tags:
        steps.insert(rng.randint(1, len(steps) - 1), Reset())
    if "redefined function" in tags:
        at = [i for i, step in enumerate(steps) if isinstance(step, Call)][rng.randint(1, 3)]
        steps.insert(at, Redefine())
    for tag in tags:  # last: the earlier shapes' draws stay what they were
        if tag in streams:
            own = streams[tag]
            stmt = _stmt(own, p.attrs, module=p.kind == "module", group=_SHAPE_STATEMENTS[tag])
            body.insert(own.randint(0, len(body)), stmt)
    return replace(p, body=tuple(body), steps=tuple(steps), tags=tags, prop_marks=prop_marks)


def _churn(rng: random.Random, p: Program, calls: int) -> list[Step]:
    """Calls over the instances in turn, the called one's attribute changing type before
    each (plain int, numpy int, proxy, float), and marked or unmarked now and then."""
    steps: list[Step] = []
    weights = list(_CHURN.values())
    for _ in range(calls):
        target = rng.choice(p.instances).name
        attr = rng.choice(p.attrs)
        steps.append(Assign(target, attr, _value(rng, dict(zip(_CHURN, weights, strict=True)))))
        if rng.random() < 0.3:
            if rng.random() < 0.3:
                steps.append(Unmark(target, (attr,)))
            else:
                steps.append(Mark(target, (attr,), Spec()))
        steps.append(Call(target))
    return steps


def _function_program(
    rng: random.Random, seed: int, index: int, x: tuple[float, ...], calls: int
) -> Program:
    attrs = ("n",)
    body = tuple(_stmt(rng, attrs) for _ in range(rng.randint(2, 5)))
    steps = tuple(
        Call("f", _value(rng, _INTISH if rng.random() < 0.7 else _FLOATISH)) for _ in range(calls)
    )
    arg_mark = _spec(rng, None) if rng.random() < 0.6 else None
    return Program(seed, index, "function", attrs, body, x, steps=steps, arg_mark=arg_mark)


def _module_program(
    rng: random.Random, seed: int, index: int, x: tuple[float, ...], calls: int
) -> Program:
    attrs: tuple[str, ...] = ("s", "t") if rng.random() < 0.4 else ("s",)
    body = tuple(_stmt(rng, attrs, module=True) for _ in range(rng.randint(2, 5)))
    weights = {"s": _INTISH, "t": _FLOATISH}
    class_mark = None
    if rng.random() < 0.35:
        names = tuple(n for n in attrs if rng.random() < 0.7) or attrs[:1]
        class_mark = (names, _spec(rng, None))
    instances = []
    for i in range(rng.randint(2, 4)):
        cls = "MD" if class_mark and rng.random() < 0.5 else "M"
        init = tuple(_value(rng, weights[a]) for a in attrs)
        mark = None
        if rng.random() < 0.45:
            names = tuple(n for n in attrs if rng.random() < 0.7) or attrs[:1]
            first = init[attrs.index(names[0])]
            spec = _spec(rng, first.payload if first.kind in ("int", "DynamicInt") else None)
            if all(mark_accepts(init[attrs.index(n)], spec) for n in names):
                mark = (names, spec)
            elif all(mark_accepts(init[attrs.index(n)], Spec()) for n in names):
                mark = (names, Spec())
        instances.append(Instance(f"m{i}", cls, init, mark))

    steps: list[Step] = []
    target = rng.choice(instances).name
    for _ in range(calls):
        if rng.random() < 0.5:
            inst, attr = rng.choice(instances).name, rng.choice(attrs)
            steps.append(Assign(inst, attr, _value(rng, weights[attr])))
        if rng.random() < 0.15:
            inst = rng.choice(instances).name
            names = (rng.choice(attrs),)
            if rng.random() < 0.35:
                steps.append(Unmark(inst, names))
            else:  # often a narrower max than a typical value
                spec = _spec(rng, None)
                if rng.random() < 0.5:
                    spec = replace(spec, min=None, max=rng.randint(0, 5))
                steps.append(Mark(inst, names, spec))
        marked = [inst for inst in instances if inst.mark is not None]
        if marked and rng.random() < 0.1:  # the same mark made again (set-up code in a loop)
            inst = rng.choice(marked)
            assert inst.mark is not None
            steps.append(Mark(inst.name, *inst.mark))
        if rng.random() < 0.5:
            target = rng.choice(instances).name
        steps.append(Call(target))
    return Program(
        seed, index, "module", attrs, body, x, class_mark, tuple(instances), tuple(steps)
    )


# ----------------------------------------------------------------------------- rendering
def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def render(program: Program, *, marks: bool = True, script: bool = False, backend: str = "") -> str:
    """Python source of ``program``.

    ``marks=False``: the same program with every dynscalar mark removed (no mark calls, no
    decorator, proxies replaced by their plain values, dynscalar not imported): what stock
    torch is judged on.  ``script=True``: append a standalone harness (``python file.py``
    runs it compiled with ``backend`` and eagerly and prints both).
    """
    p = program
    lines = [
        f"# dynscalar fuzz program: seed {p.seed}, index {p.index}"
        + ("" if marks else " (dynscalar marks removed)"),
        "import gc",
        "import math",
        "import operator",
        "",
        "import numpy as np",
        "import torch",
        "",
    ]
    if marks:
        lines += ["import dynscalar", "from dynscalar import DynamicFloat, DynamicInt", ""]
    lines.append("")
    redefined = any(isinstance(step, Redefine) for step in p.steps)
    if p.kind == "function":
        expr = {"n": "n"}
        lines += [
            "def g(y, n):",  # called with the argument; graph-breaks: a frame of its own
            "    torch._dynamo.graph_break()",
            "    return y + n * 2",
            "",
            "",
        ]
        f_lines = ["def f(x, n):", "    y = x.clone()"]
        f_lines += [_indent(s.source(expr), 4) for s in p.body]
        f_lines += ["    return y"]
        if redefined:  # defined from source text, as a notebook cell is (and again later)
            lines += [
                f"F_SOURCE = {chr(10).join(f_lines) + chr(10)!r}",
                "",
                "",
                "def make_f():",  # a cell run again: the same source, the same globals
                '    exec(compile(F_SOURCE, "<cell>", "exec"), globals())',
                '    return globals()["f"]',
                "",
                "",
                "f = make_f()",
                "",
                "",
            ]
        else:
            lines += [*f_lines, "", ""]
    else:
        expr = {a: f"self.{a}" for a in p.attrs}
        args = ", ".join(p.attrs)
        lines += [
            "class M(torch.nn.Module):",
            f"    def __init__(self, {args}):",
            "        super().__init__()",
            *[f"        self.{a} = {a}" for a in p.attrs],
            "        self.l = []",
            "        self.d = {}",
            "",
            "    def forward(self, x):",
            "        y = x.clone()",
            *[_indent(s.source(expr), 8) for s in p.body],
            "        return y",
            "",
        ]
        if "property mark" in p.tags:
            lines += [
                "    @property",
                "    def r(self):",
                f"        return self.{p.attrs[0]} * 2",
                "",
            ]
        lines.append("")
        if p.class_mark is not None:
            names, spec = p.class_mark
            if marks:
                call = ", ".join([*(f'"{n}"' for n in names), *filter(None, [spec.kwargs()])])
                lines.append(f"@dynscalar.dynamic_attrs({call})")
            lines += ["class MD(M):", "    pass", "", ""]

    lines += ["def program(fuzz):"]
    if redefined:
        lines.append("    global f")
    lines.append(f"    x = torch.tensor({list(p.x)!r})")
    mark_f = ""
    if p.arg_mark is not None and marks:
        mark_f = "dynscalar.mark_dynamic_args({})".format(
            ", ".join(["f", '"n"', *filter(None, [p.arg_mark.kwargs()])])
        )
        lines.append(f"    {mark_f}")
    for inst in p.instances:
        init = ", ".join(v.source(marks) for v in inst.init)
        lines.append(f"    {inst.name} = {inst.cls}({init})")
        if inst.mark is not None and marks:
            names, spec = inst.mark
            call = ", ".join(
                [inst.name, *(f'"{n}"' for n in names), *filter(None, [spec.kwargs()])]
            )
            lines.append(f"    dynscalar.mark_dynamic_attr({call})")
    if marks:
        lines += [f'    dynscalar.mark_dynamic_attr({name}, "r")' for name in p.prop_marks]
    if p.instances:
        lines.append(f"    fuzz.track({', '.join(f'{i.name}={i.name}' for i in p.instances)})")
    for step in p.steps:
        if isinstance(step, Call):
            arg = "" if step.arg is None else ", " + step.arg.source(marks)
            lines.append(f"    fuzz.call({step.target}, x{arg})")
        elif isinstance(step, Assign):
            lines.append(f"    {step.target}.{step.attr} = {step.value.source(marks)}")
        elif marks and isinstance(step, Mark):
            call = ", ".join(
                [step.target, *(f'"{n}"' for n in step.names), *filter(None, [step.spec.kwargs()])]
            )
            lines += ["    with fuzz.step():", f"        dynscalar.mark_dynamic_attr({call})"]
        elif marks and isinstance(step, Unmark):
            call = ", ".join([step.target, *(f'"{n}"' for n in step.names)])
            lines += ["    with fuzz.step():", f"        dynscalar.unmark_dynamic_attr({call})"]
        elif isinstance(step, Reset):
            lines.append("    fuzz.reset()")
        elif isinstance(step, Redefine):
            lines += ["    fuzz.forget(f)", "    f = make_f()"]
            if mark_f:
                lines.append(f"    {mark_f}")
            lines.append("    gc.collect()")
            if mark_f:
                lines += ["    with fuzz.step():", '        fuzz.expect_marked(f, "n")']
    source = "\n".join(lines) + "\n"
    if script:
        source += SCRIPT_HARNESS.replace("BACKEND", repr(backend or "aot_eager"))
    return source


def without_harness(source: str) -> str:
    """A rendered script without its standalone harness: the program itself."""
    return source.split('\n\nif __name__ == "__main__":')[0].rstrip() + "\n"


# A standalone harness: run the program compiled and eagerly and print both, call by call.
SCRIPT_HARNESS = """

if __name__ == "__main__":
    import contextlib

    class Side:
        def __init__(self, backend=None):
            self.backend, self.mods, self.compiled, self.log = backend, {}, {}, []

        def track(self, **mods):
            self.mods = mods

        def step(self):
            return contextlib.suppress(Exception)

        def reset(self):
            if self.backend:
                torch._dynamo.reset()

        def forget(self, fn):
            self.compiled.pop(id(fn), None)

        def expect_marked(self, fn, name):
            pass

        def call(self, fn, *args):
            if self.backend:
                compiled = torch.compile(fn, backend=self.backend)
                fn = self.compiled.setdefault(id(fn), (fn, compiled))[1]
            try:
                out = fn(*args)
            except Exception as exc:  # noqa: BLE001
                out = f"raised {type(exc).__name__}: {str(exc).strip()[:200]}"
            attrs = {
                f"{n}.{a}": f"{type(v).__name__} {v!r}"
                for n, m in self.mods.items()
                for a, v in vars(m).items()
                if not a.startswith("_") and a != "training"
            }
            self.log.append((out, attrs))

    compiled, eager = Side(BACKEND), Side()
    program(compiled)
    program(eager)
    for i, ((c_out, c_attrs), (e_out, e_attrs)) in enumerate(zip(compiled.log, eager.log)):
        tensors = isinstance(c_out, torch.Tensor) and isinstance(e_out, torch.Tensor)
        same = (tensors and c_out.dtype == e_out.dtype and torch.allclose(
            c_out, e_out, rtol=0, atol=0, equal_nan=True)) or (
            isinstance(c_out, str) and isinstance(e_out, str))
        print(f"call {i}: {'same' if same and c_attrs == e_attrs else 'DIFFERENT'}")
        print(f"  compiled: {c_out}  {c_attrs}")
        print(f"  eager:    {e_out}  {e_attrs}")
"""
