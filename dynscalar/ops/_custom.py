"""dynscalar's custom ops: an ATen op whose ``float`` parameters take a ``Scalar``.

``torch.dropout(x, p, train)`` cannot receive a symbolic float: the argument parser forces
``p`` to a constant while Dynamo traces the call.  ``torch.ops.dynscalar.dropout(x, p,
train)`` can: its schema is ATen's with ``float p`` read as ``Scalar p``, so a SymFloat is a
graph argument like any other, and the graph hands the op the Python float at run time.
The implementation calls the ATen op with that float: eager's kernel, bit for bit (the
exactness matrix checks it case by case).

* **Gradients** (:func:`op_for`): a generic op's backward is another custom op,
  ``<name>_vjp``, which recomputes the ATen op under autograd and returns ATen's own
  gradients; so the numbers are eager's, and no float is forced while AOTAutograd traces
  the backward either.  An op that writes some inputs (``batch_norm``'s running
  statistics) recomputes on copies of them.
* **Fake tensors**: the ATen op on fake tensors, with each marked float replaced by its
  trace-time value (the output's shape, dtype and strides never depend on it).
* **Hand-written kernels** (dropout, which must keep its random noise for the gradient)
  are defined in ``_kernels``, through :func:`define`.
* **Random ops** (``define(..., random=True)``; rules with ``Rule.random``) are tagged
  ``nondeterministic_seeded``, as ATen tags its own: AOTAutograd's partitioner then
  replays their draws where it recomputes them for the backward (activation checkpoint
  regions: ``run_and_save_rng_state`` in the forward, ``run_with_rng_state`` in the
  backward), nothing deletes a draw whose result is unused, and :data:`random_defined`
  tells the bridge, which keeps two equal draws from being merged into one.  A random
  rule's generic op also returns the generator's state before its call, and its
  ``<name>_vjp`` recomputes the op from that state and puts the generator back where it
  found it: the gradient uses the draws the forward made, as eager's autograd does.

Everything here is made on first use (``torch.library`` registrations are process-wide,
made once); importing this module registers nothing.

Examples:
    >>> from dynscalar.ops._custom import derive_schema
    >>> derive_schema("aten::dropout(Tensor input, float p, bool train) -> Tensor", ("p",))
    '(Tensor input, Scalar p, bool train) -> Tensor'
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ._table import Rule

__all__ = [
    "NAMESPACE",
    "as_eager",
    "autocast_region",
    "autograd_on",
    "autocast_state",
    "define",
    "derive_schema",
    "entry_for",
    "hint",
    "laid_out",
    "meta_gradients",
    "op_for",
    "outside_modes",
    "random_defined",
    "random_ops",
    "requiring_for",
    "required",
    "requiring_grad",
    "size_hint",
    "with_autocast",
]

#: A context manager that leaves every active dispatch mode (fake tensors, AOTAutograd's
#: functionalization) for a moment: what runs inside uses plain meta or CPU tensors.  The
#: bridge installs torch's own (a private function); this default leaves modes alone.
outside_modes: list[Callable[[], Any]] = [contextlib.nullcontext]

#: A context manager in which autograd records again inside a custom op's kernel (which
#: runs below autograd's dispatch key): ATen picks some kernels by whether an input
#: requires grad, and autocast's casts of such an input require grad in eager.  The
#: bridge installs one made of torch's private dispatch-key guards; this default changes
#: nothing.
autograd_on: list[Callable[[], Any]] = [contextlib.nullcontext]

#: Called with the ``OpOverloadPacket`` of each random op when it is defined: the bridge
#: adds it to the random ops torch's common-subexpression pass never merges (a list of
#: ATen packets there, not the tag).  This default does nothing.
random_defined: list[Callable[[Any], None]] = [lambda packet: None]

NAMESPACE = "dynscalar"

_lock = threading.RLock()
_library: torch.library.Library | None = None
_ops: dict[str, Any] = {}
_signatures: dict[str, Any] = {}  # rule name -> its _Signature
_random: list[Any] = []  # the packets of the random ops defined so far


def random_ops() -> list[Any]:
    """The ``OpOverloadPacket``s of the random ops defined so far."""
    with _lock:
        return list(_random)


def derive_schema(aten_schema: str, scalars: Sequence[str]) -> str:
    """The custom op's schema (without its name): ATen's, with the ``float`` parameters in
    ``scalars`` taking a ``Scalar``.

    Examples:
        >>> derive_schema("aten::f(Tensor x, float? eps=None) -> Tensor", ("eps",))
        '(Tensor x, Scalar? eps=None) -> Tensor'
    """
    signature = aten_schema[aten_schema.index("(") :]
    for name in scalars:
        signature, count = re.subn(rf"\bfloat(\??) {name}\b", rf"Scalar\1 {name}", signature)
        if count != 1:
            raise ValueError(f"{aten_schema}: no float parameter {name!r}")
    return signature


def aten_overload(rule: Rule) -> Any:
    """The ATen ``OpOverload`` a rule is about."""
    base, overload = rule.overload
    return getattr(getattr(torch.ops.aten, base), overload)


def define(
    name: str,
    schema: str,
    impl: Callable[..., Any],
    fake: Callable[..., Any],
    backward: Callable[..., Any] | None = None,
    setup_context: Callable[..., Any] | None = None,
    *,
    random: bool = False,
) -> Any:
    """Define ``dynscalar::<name>`` once, with its eager and fake implementations and, if
    given, its autograd formula; returns its ``OpOverload``.  ``random``: the op draws
    from a generator (tagged ``nondeterministic_seeded``, announced to
    :data:`random_defined`)."""
    global _library
    with _lock:
        found = _ops.get(name)
        if found is not None:
            return found
        if _library is None:  # the ``dynscalar`` op library, made on first use
            _library = torch.library.Library(NAMESPACE, "DEF")  # type: ignore[no-untyped-call]
        lib = _library
        tags = (torch.Tag.nondeterministic_seeded,) if random else ()
        lib.define(name + schema, tags=tags)  # type: ignore[no-untyped-call]
        lib.impl(name, impl, "CompositeExplicitAutograd")  # type: ignore[no-untyped-call]
        packet = getattr(getattr(torch.ops, NAMESPACE), name)
        op = packet.default
        torch.library.register_fake(op, fake, lib=lib)
        if backward is not None:
            torch.library.register_autograd(op, backward, setup_context=setup_context, lib=lib)
        _ops[name] = op
        if random:
            _random.append(packet)
            random_defined[0](packet)
        return op


def hint(value: Any) -> float:
    """A float for a traced value: a SymFloat's trace-time value (no guard), else itself."""
    if isinstance(value, torch.SymFloat | torch.SymInt):
        found = value.node.hint
        return 0.5 if found is None else float(found)
    return float(value)


def autocast_state(device_type: str) -> str | None:
    """The autocast state a call on ``device_type`` tensors runs under now, as a custom op's
    ``autocast`` argument (``"cpu:bfloat16"``), or None where autocast is off there.

    A custom op is registered for ``CompositeExplicitAutograd`` only, so autocast's
    dispatch key passes it by: its inputs arrive uncast, and a compiled graph may run it
    where autocast is not on at all (AOTAutograd's graphs hold explicit casts instead).
    The state the call was traced under is therefore one of its arguments, and the op runs
    eager's kernel under that state (:func:`autocast_region`): the kernel's own autocast
    policy casts the inputs, as eager's call does."""
    if not torch.amp.is_autocast_available(device_type):  # meta tensors: no autocast
        return None
    if not torch.is_autocast_enabled(device_type):
        return None
    dtype = str(torch.get_autocast_dtype(device_type)).removeprefix("torch.")
    return f"{device_type}:{dtype}"


def autocast_region(state: str | None) -> Any:
    """A context in which ATen's kernels see the autocast ``state`` (``"cpu:bfloat16"``)
    of :func:`autocast_state`; None: the state around it, unchanged.  Forward calls only:
    a gradient is taken outside it, where eager's backward runs (autocast is not on in
    a backward pass)."""
    if state is None:
        return contextlib.nullcontext()
    device_type, _, dtype = state.partition(":")
    return torch.autocast(device_type, dtype=getattr(torch, dtype), cache_enabled=False)


def as_eager(
    call: Callable[[list[Any]], Any],
    values: Sequence[Any],
    requiring: Sequence[bool] | None,
    autocast: str | None,
) -> Any:
    """``call(values)`` as eager's call runs it: under the ``autocast`` state, and with the
    tensors at ``requiring`` requiring grad, grad mode on (ATen picks kernels by it: a CPU
    attention whose mask requires grad takes the math path, and autocast's cast of such a
    mask requires grad too); the outputs detached, an output that is an input given back
    as that input.  ``requiring`` None or all False: the call as it is, under ``autocast``."""
    if not requiring or not any(requiring):
        with autocast_region(autocast):
            return call(list(values))
    copies = list(values)
    with autograd_on[0](), torch.enable_grad():
        for i, needed in enumerate(requiring):
            value = copies[i] if i < len(copies) else None
            if needed and isinstance(value, torch.Tensor) and value.is_floating_point():
                copies[i] = value.detach().requires_grad_(True)
        with autocast_region(autocast):
            out = call(copies)
    originals = {id(c): v for c, v in zip(copies, values, strict=True)}

    def plain(o: Any) -> Any:
        if not isinstance(o, torch.Tensor):
            return o
        return originals[id(o)] if id(o) in originals else o.detach()

    if isinstance(out, (tuple, list)):
        return type(out)(plain(o) for o in out)
    return plain(out)


def requiring_for(rule: Rule, args: Sequence[Any], kwargs: dict[str, Any]) -> list[bool] | None:
    """Which inputs of a call of ``rule``'s op require grad (example values: fake or real
    tensors), in the ATen schema's order; None where none does (or grad mode is off)."""
    if not torch.is_grad_enabled():
        return None
    names = [a.name for a in aten_overload(rule)._schema.arguments]
    values = list(args) + [kwargs.get(n) for n in names[len(args) :]]
    found = [isinstance(v, torch.Tensor) and v.requires_grad for v in values]
    return found if any(found) else None


def with_autocast(schema: str, *more: str) -> str:
    """``schema`` with keyword-only ``more`` arguments and ``str? autocast=None`` last.

    Examples:
        >>> with_autocast("(Tensor x, Scalar p) -> Tensor")
        '(Tensor x, Scalar p, *, str? autocast=None) -> Tensor'
        >>> with_autocast("(Tensor x, *, Scalar? s=None) -> Tensor", "bool[]? requiring=None")
        '(Tensor x, *, Scalar? s=None, bool[]? requiring=None, str? autocast=None) -> Tensor'
    """
    head, arrow, tail = schema.rpartition(") ->")
    separator = ", " if "*" in head else ", *, "
    added = ", ".join((*more, "str? autocast=None"))
    return f"{head}{separator}{added}{arrow}{tail}"


def requiring_grad(needs: Any, count: int) -> list[bool]:
    """Which of ``count`` inputs required grad in the forward, from an autograd ``ctx``'s
    ``needs_input_grad`` (positional inputs; the others: False).  A gradient recomputes
    the op with exactly these requiring grad: ATen picks kernels by it (a CPU attention
    whose float mask requires grad takes the math path, not the flash kernel eager took)."""
    flags = [bool(n) for n in needs][:count]
    return flags + [False] * (count - len(flags))


class _Signature:
    """Positional access to a call of an ATen overload, defaults filled in."""

    def __init__(self, overload: Any, rule: Rule) -> None:
        arguments = overload._schema.arguments
        self.names = [a.name for a in arguments]
        self.defaults = [a.default_value if a.has_default_value() else None for a in arguments]
        self.scalar_at = [i for i, n in enumerate(self.names) if n in rule.scalars]
        self.mutated_at = [i for i, n in enumerate(self.names) if n in rule.mutates]
        self.tensor_at = [
            i for i, a in enumerate(arguments) if str(a.type) in ("Tensor", "Optional[Tensor]")
        ]
        self.positional = sum(1 for a in arguments if not a.kwarg_only)
        self.overload = overload

    def call(self, values: list[Any]) -> Any:
        """The ATen op on ``values`` (keyword-only parameters by name)."""
        keywords = dict(zip(self.names[self.positional :], values[self.positional :], strict=True))
        return self.overload(*values[: self.positional], **keywords)

    def full(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> list[Any]:
        values = list(args) + self.defaults[len(args) :]
        for key, value in (kwargs or {}).items():
            values[self.names.index(key)] = value
        return values

    def plain(self, values: list[Any], convert: Callable[[Any], Any] = float) -> list[Any]:
        out = list(values)
        for i in self.scalar_at:
            if out[i] is not None:
                out[i] = convert(out[i])
        return out


def _unaliased(out: Any, inputs: Sequence[Any]) -> Any:
    """A custom op may not return one of its inputs: a copy where the ATen op does."""
    if isinstance(out, torch.Tensor) and any(out is i for i in inputs):
        return out.clone()
    return out


def op_for(rule: Rule) -> Any:
    """The custom op for a rule: the ATen op with the rule's floats as Scalars, its
    gradient recomputed by ``<name>_vjp``.  An op that writes some of its inputs
    (``rule.mutates``) is made functional: it returns ``(output, [new values of the
    written inputs that are not None])``, and :func:`entry_for` writes them back.  A
    random op with a gradient (``rule.random``) returns ``(output, the generator's state
    before the call)``: its ``_vjp`` recomputes it from that state."""
    found = _ops.get(rule.name)
    if found is not None:
        return found
    overload = aten_overload(rule)
    signature = _signatures[rule.name] = _Signature(overload, rule)
    base = derive_schema(str(overload._schema), rule.scalars)
    replays = rule.random and rule.differentiable
    if rule.mutates and rule.random:
        raise ValueError(f"{rule.name}: a random op that writes its inputs is not supported")
    schema = base
    if rule.mutates:
        schema = schema[: schema.rindex("->")] + "-> (Tensor, Tensor[])"
    elif replays:
        schema = schema[: schema.rindex("->")] + "-> (Tensor, Tensor)"

    def run(
        values: list[Any],
        state: Callable[[list[Any]], Any],
        requiring: list[bool] | None,
        autocast: str | None,
    ) -> Any:
        before = state(values) if replays else None  # the generator's, before the op draws
        written = []
        for i in signature.mutated_at:
            if values[i] is not None:
                values[i] = values[i].clone()
                written.append(values[i])
        out = _unaliased(as_eager(signature.call, values, requiring, autocast), values)
        if rule.mutates:
            return out, written
        return (out, before) if replays else out

    def impl(
        *args: Any, requiring: list[bool] | None = None, autocast: str | None = None, **kwargs: Any
    ) -> Any:
        values = signature.plain(signature.full(args, kwargs))
        return run(values, lambda values: state_of(generator_for(values)), requiring, autocast)

    def fake(
        *args: Any, requiring: list[bool] | None = None, autocast: str | None = None, **kwargs: Any
    ) -> Any:
        values = signature.plain(signature.full(args, kwargs), hint)
        return run(values, _fake_state, requiring, autocast)

    schema = with_autocast(schema, "bool[]? requiring=None")
    if not rule.differentiable:
        return define(rule.name, schema, impl, fake, random=rule.random)
    vjp = _vjp_for(rule, signature, base)

    def setup_context(
        ctx: Any,
        inputs: tuple[Any, ...],
        output: Any,
        keyword_only_inputs: dict[str, Any] | None = None,
    ) -> None:
        keywords = dict(keyword_only_inputs or {})
        ctx.autocast = keywords.pop("autocast", None)
        keywords.pop("requiring", None)  # the backward reads ctx.needs_input_grad
        values = signature.full(inputs, keywords)
        ctx.values = [None if i in signature.tensor_at else v for i, v in enumerate(values)]
        if rule.mutates:  # the new statistics carry no gradient, as eager's in-place update
            ctx.mark_non_differentiable(*output[1])
        # the inputs the op writes are written back after it: their values as it read them
        saved = [
            values[i].clone() if i in signature.mutated_at and values[i] is not None else values[i]
            for i in signature.tensor_at
        ]
        if replays:
            ctx.mark_non_differentiable(output[1])
            saved.append(output[1])
        ctx.save_for_backward(*saved)

    def backward(ctx: Any, grad: Any, *_grad_other: Any) -> tuple[Any, ...]:
        values = list(ctx.values)
        saved = list(ctx.saved_tensors)
        state = [saved.pop()] if replays else []
        for i, tensor in zip(signature.tensor_at, saved, strict=True):
            values[i] = tensor
        requiring = requiring_grad(ctx.needs_input_grad, len(values))
        grads = iter(vjp(grad, *state, *values, requiring=requiring, autocast=ctx.autocast))
        result: list[Any] = [None] * len(values)
        for i in _needed(signature, values, requiring):
            result[i] = next(grads)
        return tuple(result[: signature.positional])  # keyword-only inputs get none

    return define(rule.name, schema, impl, fake, backward, setup_context, random=rule.random)


def generator_for(values: Sequence[Any]) -> torch.Generator:
    """The default generator of the device of the first tensor in ``values`` (the one an
    ATen op on them draws from)."""
    device = _device(values)
    if device is None or device.type == "cpu":
        return torch.default_generator
    module: Any = torch.get_device_module(device)
    if not module.default_generators and hasattr(module, "init"):
        module.init()  # CUDA fills its generators when it initializes (lazily)
    index = device.index if device.index is not None else module.current_device()
    return module.default_generators[index]  # type: ignore[no-any-return]


def state_of(generator: torch.Generator) -> torch.Tensor:
    """``generator.get_state()`` (a CPU byte tensor: a CUDA generator's seed and Philox
    offset, read on the host without a synchronization); inside a CUDA graph capture,
    where the offset lives on the device and cannot be read, a clear error."""
    if generator.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            "dynscalar: a random op with a marked float replays its draws from the CUDA "
            "generator's state, which cannot be read inside a CUDA graph capture; compile "
            "with inductor (mode='reduce-overhead' draws inside the graph) or do not mark "
            "the value"
        )
    return generator.get_state()


def _fake_state(values: Sequence[Any]) -> torch.Tensor:
    """A tensor like a generator's state (a CPU byte tensor), while fake tensors trace."""
    device = str(_device(values))
    size = _state_sizes.get(device)
    if size is None:
        with outside_modes[0]():
            size = _state_sizes[device] = generator_for(values).get_state().numel()
    return torch.empty(size, dtype=torch.uint8, device="cpu")


def _device(values: Sequence[Any]) -> Any:
    return next((v.device for v in values if isinstance(v, torch.Tensor)), None)


_state_sizes: dict[str, int] = {}


def entry_for(rule: Rule) -> Callable[..., Any]:
    """The function a ``"python"`` backend traces for a ``"custom"`` rule: its custom op,
    and for an op that writes some inputs, the copy of their new values into them."""
    op = op_for(rule)
    if not rule.mutates:
        return op  # type: ignore[no-any-return]
    signature = _signatures[rule.name]
    names = tuple(signature.names[i] for i in signature.mutated_at)
    positions = tuple(signature.mutated_at)

    def entry(*args: Any, **kwargs: Any) -> Any:
        out, written = op(*args, **kwargs)
        targets = [
            kwargs[name] if name in kwargs else args[i] if i < len(args) else None
            for name, i in zip(names, positions, strict=True)
        ]
        for target, new in zip([t for t in targets if t is not None], written, strict=True):
            target.copy_(new)
        return out

    entry.__name__ = rule.name
    return entry


def size_hint(value: Any) -> int:
    """A size of a traced tensor as a plain int (its trace-time value)."""
    if isinstance(value, torch.SymInt):
        hint = value.node.hint
        return 1 if hint is None else int(hint)
    return int(value)


def _differentiable(signature: _Signature, values: Sequence[Any]) -> list[int]:
    """Positions of the inputs that get a gradient from the op (eager's autograd gives the
    others ``None``): found by running the op on meta tensors, which costs no data."""
    candidates = [  # the floating-point tensor inputs the op does not write
        i
        for i in signature.tensor_at
        if isinstance(values[i], torch.Tensor)
        and values[i].is_floating_point()
        and i not in signature.mutated_at
    ]
    if not candidates:
        return []
    key = (
        id(signature),
        *(_shape_key(v) for i, v in enumerate(values) if i not in signature.scalar_at),
    )
    found = _defined.get(key)
    if found is None:
        with outside_modes[0]():  # AOTAutograd traces the backward under its modes
            meta = signature.plain(list(values), hint)
            found = _defined[key] = meta_gradients(signature.call, meta, candidates)
    return found


def precompute(rule: Rule, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Find, before AOTAutograd traces the call, which inputs of ``rule``'s op get a
    gradient for a call like ``args``/``kwargs`` (example values: fake tensors, symbolic
    floats, constants).  AOTAutograd traces gradients below autograd, where the meta run
    that finds them sees no autograd at all; the answer is kept for it."""
    if not rule.differentiable or (rule.python != "custom" and rule.name not in _signatures):
        # a rule whose kernel calls no generic op (dropout: its own ops); SDPA's kernel
        # calls one, which needs the answer as much as a "custom" rule's: without it, the
        # meta run happened while AOTAutograd traced the backward below autograd and
        # failed (an SDPA with a boolean mask: "'NoneType' object has no attribute
        # 'next_functions'", the frame compiled as stock)
        return
    op_for(rule)
    signature = _signatures[rule.name]
    _differentiable(signature, signature.full(args, kwargs))


def _needed(
    signature: _Signature, values: Sequence[Any], requiring: list[bool] | None
) -> list[int]:
    """The inputs a gradient is computed for: those with a gradient from the op that
    required grad in the forward (``requiring``; None: every one with a gradient)."""
    return required(_differentiable(signature, values), requiring)


def required(positions: list[int], requiring: Sequence[bool] | None) -> list[int]:
    """The ``positions`` whose input required grad in the forward (``requiring``; None:
    all of them): the inputs a gradient is computed for."""
    return positions if requiring is None else [i for i in positions if requiring[i]]


def _shape_key(value: Any) -> Any:
    if isinstance(value, torch.Tensor):  # empty or not: ATen returns early on empty inputs
        empty = any(size_hint(d) == 0 for d in value.shape)
        return ("tensor", value.dtype, value.dim(), empty)
    if isinstance(value, (list, tuple)):
        return tuple(_shape_key(v) for v in value)
    if isinstance(value, torch.SymInt | torch.SymFloat):
        return type(value).__name__
    return value


#: which inputs of a call get gradients, by the call's tensor dtypes, ranks and options
_defined: dict[Any, list[int]] = {}


def meta_gradients(
    call: Callable[[list[Any]], Any], values: Sequence[Any], candidates: list[int]
) -> list[int]:
    """The positions among ``candidates`` whose input gets a gradient from ``call(values)``
    (eager's autograd gives the others ``None``; an input an op does not differentiate,
    such as a class weight, has no edge): ``call`` run on meta tensors like the tensors
    of ``values``, one candidate at a time (an input an op refuses to differentiate
    raises), reading the autograd graph; no data, no backward kernel."""
    found = []
    for i in candidates:
        meta = [_meta(v) for v in values]
        with torch.enable_grad():
            meta[i].requires_grad_(True)
            try:
                out = call(meta)
            except RuntimeError:  # "not differentiable with respect to argument 'weight'"
                continue
        leaf = id(torch.autograd.graph.get_gradient_edge(meta[i]).node)
        seen: set[int] = set()
        stack: list[Any] = [o.grad_fn for o in _flat(out) if isinstance(o, torch.Tensor)]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            if id(node) == leaf:
                found.append(i)
                break
            seen.add(id(node))
            stack.extend(next_node for next_node, _ in node.next_functions)
    return found


def _meta(value: Any) -> Any:
    """A meta tensor like the traced tensor ``value`` (anything else: ``value``)."""
    if not isinstance(value, torch.Tensor):
        return value
    shape, stride = ([size_hint(d) for d in sizes] for sizes in (value.shape, value.stride()))
    return torch.empty_strided(shape, stride, dtype=value.dtype, device="meta")


def _flat(out: Any) -> list[Any]:
    return [out] if isinstance(out, torch.Tensor) else list(out)


def _vjp_for(rule: Rule, signature: _Signature, schema: str) -> Any:
    """``<name>_vjp(grad, *inputs) -> Tensor[]``: ATen's gradients of every floating-point
    tensor input, by running the op again under autograd (on copies of what it writes).
    A random op's (``<name>_vjp(grad, rng_state, *inputs)``) runs from the generator state
    its forward started from, and puts the generator back where it found it."""
    inputs = schema[schema.index("(") + 1 : schema.rindex("->")].rstrip().removesuffix(")")
    inputs = inputs.replace("*, ", "")  # every input positional: backward passes them so
    replays = rule.random
    state_input = "Tensor rng_state, " if replays else ""
    vjp_schema = with_autocast(
        f"(Tensor grad, {state_input}{inputs}) -> Tensor[]", "bool[]? requiring=None"
    )

    def gradients(
        grad: Any, args: tuple[Any, ...], requiring: list[bool] | None, autocast: str | None
    ) -> list[Any]:
        values = signature.plain(signature.full(args))
        for i in signature.mutated_at:
            if values[i] is not None:
                values[i] = values[i].clone()
        positions = _needed(signature, values, requiring)
        with torch.enable_grad():
            for i in signature.tensor_at:  # as in the forward: ATen picks kernels by it
                if i in positions or (requiring is not None and requiring[i]):
                    values[i] = values[i].detach().requires_grad_(True)
            with autocast_region(autocast):  # the forward's casts, recorded by autograd
                out = signature.call(values)
            leaves = [values[i] for i in positions]
            grads = torch.autograd.grad(out, leaves, grad, allow_unused=True)
        return [laid_out(leaf, g) for leaf, g in zip(leaves, grads, strict=True)]

    def impl(
        grad: Any, *args: Any, requiring: list[bool] | None = None, autocast: str | None = None
    ) -> list[Any]:
        if not replays:
            return gradients(grad, args, requiring, autocast)
        state, args = args[0], args[1:]
        generator = generator_for(args)
        now = state_of(generator)
        generator.set_state(state)  # the draws the forward made
        try:
            return gradients(grad, args, requiring, autocast)
        finally:
            generator.set_state(now)  # eager's backward draws nothing

    def fake(
        grad: Any, *args: Any, requiring: list[bool] | None = None, autocast: str | None = None
    ) -> list[Any]:
        values = signature.full(args[1:] if replays else args)
        return [torch.empty_like(values[i]) for i in _needed(signature, values, requiring)]

    return define(f"{rule.name}_vjp", vjp_schema, impl, fake)


def laid_out(leaf: torch.Tensor, gradient: torch.Tensor | None) -> torch.Tensor:
    """A gradient in the layout the fake implementation promises (``empty_like`` of the
    input): AOTAutograd traced the backward's views on that layout.  Copying changes no
    value."""
    out = torch.empty_like(leaf)
    if gradient is None:
        return out.zero_()
    if out.stride() == gradient.stride():
        return gradient
    return out.copy_(gradient)
