"""The op rules: every torch op a marked float can reach, and how it is traced there.

Two kinds of parameter take a Python float in a torch op's schema, and they need
different things:

* **``Scalar``** (``clamp``'s bounds, ``lerp``'s weight, ``add``'s ``alpha``,
  ``leaky_relu``'s slope, ``pow``'s exponent, the ``_foreach_*`` scalars): Dynamo traces a
  symbolic float into them as it is.  Only torch's float-tensorify pass (AOTAutograd)
  specializes it, and only for ops it cannot rewrite with a tensor.  On a ``"python"``
  backend the bridge keeps that pass away from marked floats: the op receives the Python
  float at run time, which is eager's own call, bit for bit, for every dtype and layout.
  On inductor the float must be a tensor: ``_forms.FORMS`` gives such ATen overloads a
  form with the float a 0-d tensor operand (``clamp`` -> ``clamp.Tensor``,
  ``_foreach_add(alpha=s)`` -> ``_foreach_add(_foreach_mul(other, s))``); the bridge rewrites
  an op to its form where the inductor column admits it, and leaves the rest to torch.
* **``float``** (dropout ``p``, the norms' ``eps``, ``batch_norm``'s ``momentum``,
  ``cross_entropy``'s ``label_smoothing``): torch's argument parser forces a symbolic float
  to a constant while Dynamo traces the call.  :data:`RULES` lists them; on a ``"python"``
  backend the bridge traces the rule's entry, which calls a dynscalar custom op
  (``torch.ops.dynscalar.*``, made by ``_custom`` from the ATen schema with ``float`` read
  as ``Scalar``) whose implementation is the ATen op itself, called with the Python float;
  on inductor the rule's tensor form (``_tensor``, a decomposition in plain torch ops) where
  the matrix admits it, else the call boxed (``_apply.boxed_op``: eager's kernel, the
  float handed over as a 0-d tensor) where the matrix admits that, else the value is
  specialized as stock torch specializes it.

Whatever no rule covers, or a rule does not admit for a case (a dtype, a layout, a value),
is compiled as stock torch compiles it, with one ``SpecializationWarning`` naming the op
and the reason (``strict=True`` marks raise).  The exactness matrix (``python -m
tests.ops_matrix``, in the tests) admits rules per case and writes the cells the library
reads (``_admission``) and the coverage page.

Examples:
    >>> from dynscalar.ops import RULES
    >>> sorted(RULES["dropout"].scalars)
    ['p']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["NATIVE_METHODS", "RULES", "Rule", "resolve_callable"]


@dataclass(frozen=True)
class Rule:
    """How calls of one torch op with a marked ``float`` argument are traced."""

    #: the ATen overload (``"aten::dropout"``, ``"aten::bernoulli.p"``): its schema makes
    #: the custom op (``float`` parameters in ``scalars`` read as ``Scalar``)
    aten: str
    #: the Python callables Dynamo meets for it: ``"torch.dropout"``, ``"Tensor.bernoulli_"``
    callables: tuple[str, ...]
    #: the parameters that take the marked float
    scalars: tuple[str, ...]
    #: what a ``"python"`` backend traces: ``"custom"`` (the custom op, arguments as given)
    #: or ``"<function>"`` of ``_kernels`` (the op's value-dependent paths, then custom ops)
    python: str = "custom"
    #: what inductor traces: a function of ``_tensor``; None: specialized as stock does
    inductor: str | None = None
    #: the parameters the tensor form keeps symbolic on inductor (None: every one of
    #: ``scalars``); a marked float reaching another one is specialized there, as stock does
    inductor_scalars: tuple[str, ...] | None = None
    #: parameters the op writes in place (``batch_norm``'s running statistics)
    mutates: tuple[str, ...] = ()
    #: False: no gradient flows through the op (``bernoulli``)
    differentiable: bool = True
    #: the op draws random numbers: its custom ops are tagged ``nondeterministic_seeded``
    #: (replayed where torch recomputes them); a generic op's gradient replays its draws
    random: bool = False
    #: why the rule exists and what it keeps exact, in a few words
    why: str = ""
    #: filled in by ``RULES``: the rule's name (the ATen name, ``bernoulli_p``...)
    name: str = field(default="", compare=False)

    @property
    def overload(self) -> tuple[str, str]:
        """``("dropout", "default")`` for ``"aten::dropout"``."""
        name = self.aten.partition("::")[2]
        base, _, overload = name.partition(".")
        return base, overload or "default"


_DROPOUT = "dropout: eager's kernel and generator in a custom op (its noise kept for the gradient)"
_RECOMPUTE = "eager's kernel in a custom op; the gradient recomputes it under autograd"
_STATISTICS = ("running_mean", "running_var")
_RUNNING = _RECOMPUTE + " (running statistics updated once, by the forward)"


def _fused(
    op: str, scalars: tuple[str, ...], module: str = "torch", why: str = _RECOMPUTE, **more: Any
) -> Rule:
    """A rule for ``aten::<op>``, reached as ``<module>.<op>``: eager's fused kernel in a
    custom op, its gradient recomputed, and ``_tensor.<op>`` on inductor."""
    return Rule(f"aten::{op}", (f"{module}.{op}",), scalars, inductor=op, why=why, **more)


_RULE_LIST: tuple[Rule, ...] = (
    # ---- random: same draws as eager (the custom ops call eager's kernels)
    *(
        Rule(
            f"aten::{op}",
            (f"torch.{op}", f"torch.{op}_"),
            ("p",),
            python=op,
            inductor=op,
            random=True,
            why=_DROPOUT,
        )
        for op in ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")
    ),
    Rule(
        "aten::bernoulli.p",
        ("torch.bernoulli", "Tensor.bernoulli", "Tensor.bernoulli_"),
        ("p",),
        python="bernoulli",
        inductor="bernoulli",
        differentiable=False,
        random=True,
        why="bernoulli: eager's kernel and generator in a custom op",
    ),
    # ---- norms: eager's fused kernels
    _fused("layer_norm", ("eps",)),
    _fused("group_norm", ("eps",)),
    _fused("rms_norm", ("eps",)),
    _fused("batch_norm", ("momentum", "eps"), mutates=_STATISTICS, why=_RUNNING),
    _fused("instance_norm", ("momentum", "eps"), mutates=_STATISTICS, why=_RUNNING),
    # ---- losses and distances
    _fused("cross_entropy_loss", ("label_smoothing",), "torch._C._nn"),
    _fused("huber_loss", ("delta",), "torch._C._nn"),
    _fused("smooth_l1_loss", ("beta",), "torch._C._nn"),
    _fused("margin_ranking_loss", ("margin",)),
    _fused("hinge_embedding_loss", ("margin",)),
    _fused("triplet_margin_loss", ("margin", "p", "eps")),
    _fused("cosine_embedding_loss", ("margin",)),
    _fused("poisson_nll_loss", ("eps",)),
    _fused("cosine_similarity", ("eps",)),
    # the norm's order is linalg.vector_norm's Scalar `ord`, which the tensorify pass cannot
    # lower: a marked p is eager's kernel taking it as a 0-d tensor (boxed)
    _fused("pairwise_distance", ("p", "eps"), inductor_scalars=("eps",)),
    Rule(
        "aten::scaled_dot_product_attention",
        ("torch._C._nn.scaled_dot_product_attention",),
        ("dropout_p", "scale"),
        python="scaled_dot_product_attention",
        inductor="scaled_dot_product_attention",
        # at dropout_p == 0 the form is ATen's own op (CPU: the flash kernel), which no
        # tensor form matches bit for bit: a marked scale is eager's kernel taking it as a
        # 0-d tensor on inductor (boxed)
        inductor_scalars=("dropout_p",),
        random=True,
        why="eager's kernel in a custom op that keeps the generator state it started from; "
        "the gradient recomputes it from that state under autograd (the same dropout draws)",
    ),
)


def _named(rules: tuple[Rule, ...]) -> dict[str, Rule]:
    named: dict[str, Rule] = {}
    for rule in rules:
        base, overload = rule.overload
        name = base if overload == "default" else f"{base}_{overload}"
        object.__setattr__(rule, "name", name)
        named[name] = rule
    return named


#: rule name -> rule, for the torch ops whose ``float`` parameter Dynamo would force
RULES: dict[str, Rule] = _named(_RULE_LIST)

_ARITHMETIC = ("add", "sub", "mul", "truediv")
_COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")

#: tensor methods Dynamo and torch's passes handle symbolically on their own (arithmetic
#: whose derivative is arithmetic too, comparisons, shape and dtype methods)
NATIVE_METHODS: frozenset[str] = frozenset(
    {
        *(f"__{kind}{op}__" for op in _ARITHMETIC for kind in ("", "r", "i")),
        *(f"__{op}__" for op in ("neg", "pos", *_COMPARISONS)),
        *(f"{op}{suffix}" for op in ("add", "sub", "mul", "div") for suffix in ("", "_")),
        *("neg", *_COMPARISONS),
        *("size", "view", "reshape", "expand", "to", "type", "item", "tolist"),
        *("new_full", "new_zeros", "new_ones", "new_empty"),
    }
)


def resolve_callable(name: str) -> Any:
    """``"torch.dropout"`` -> the function; ``"Tensor.bernoulli_"`` -> the method name."""
    if name.startswith("Tensor."):
        return name.removeprefix("Tensor.")
    import torch

    owner: Any = torch
    for part in name.split(".")[1:]:
        owner = getattr(owner, part)
    return owner
