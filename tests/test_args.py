"""Argument marks: plain int/float arguments, symbolic from the first compile.

Every test compares the compiled function with the same function run eagerly on the same
arguments and asserts the exact number of compiled graphs.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend

BACKENDS = ["eager", "aot_eager"]


class Denoiser(torch.nn.Module):
    """torch's own DynamicInt test pattern: the argument goes into torch.tensor([...])."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, timestep: int, scale: float = 1.0) -> torch.Tensor:
        t = torch.tensor([timestep], dtype=x.dtype)  # needs a plain int: no proxy gets here
        return self.layer(x) * t * scale + timestep


def same(
    compiled: Callable[..., Any], eager: Callable[..., Any], *args: Any, **kwargs: Any
) -> None:
    torch.testing.assert_close(compiled(*args, **kwargs), eager(*args, **kwargs), rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["torch.compile(module)", "module.compile()"])
def test_module_arguments_compile_once_and_stay_plain(how: str, backend: str) -> None:
    model = ds.mark_dynamic_args(Denoiser(), "timestep", "scale")
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    if how == "module.compile()":
        compiled: Callable[..., Any] = model
        model.compile(backend=counter, fullgraph=True)
    else:
        compiled = torch.compile(model, backend=counter, fullgraph=True)
    x = torch.randn(3, 4)
    for step in range(6):
        same(compiled, eager, x, step, scale=0.5 + step)  # keyword
        same(compiled, eager, x, step + 10, 0.25 * step)  # positional
    same(compiled, eager, x, 99)  # the default scale: still the same graph
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_arguments_compile_once(backend: str) -> None:
    def step_fn(x: torch.Tensor, n: int, lr: float = 0.1) -> torch.Tensor:
        return x * n + torch.tensor([n]) * lr

    ds.mark_dynamic_args(step_fn, "n", "lr")
    counter = CountingBackend(backend)
    compiled = torch.compile(step_fn, backend=counter)
    for n in range(-4, 8):
        same(compiled, step_fn, torch.randn(3), n, lr=0.01 * n)
    assert counter.frame_count == 1


def test_stock_plain_arguments_baseline() -> None:
    """The same function unmarked: one static graph first, then automatic dynamic."""

    def step_fn(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    counter = CountingBackend("eager")
    compiled = torch.compile(step_fn, backend=counter)
    for n in range(5):
        same(compiled, step_fn, torch.randn(3), n)
    assert counter.frame_count == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_decorator_on_forward_unbacked_with_negative_values(backend: str) -> None:
    class Shift(torch.nn.Module):
        @ds.dynamic_args("offset", unbacked=True)
        def forward(self, x: torch.Tensor, offset: int) -> torch.Tensor:
            return x + offset

    model = Shift()
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    for offset in range(-5, 5):
        same(compiled, Shift(), torch.randn(3), offset)
    assert counter.frame_count == 1
    # marked through the function: every instance shares the mark
    same(torch.compile(Shift(), backend=counter, fullgraph=True), Shift(), torch.ones(3), 7)
    assert counter.frame_count == 1


def test_branch_on_marked_argument_compiles_once_per_path() -> None:
    def branchy(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n if n % 2 == 0 else x - n

    ds.mark_dynamic_args(branchy, "n")
    counter = CountingBackend("eager")
    compiled = torch.compile(branchy, backend=counter)
    for n in range(10):
        same(compiled, branchy, torch.randn(3), n)
    assert counter.frame_count == 2


def test_range_is_enforced_with_a_clear_error() -> None:
    def clipped(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    ds.mark_dynamic_args(clipped, "n", min=0, max=10)
    compiled = torch.compile(clipped, backend=CountingBackend("eager"))
    same(compiled, clipped, torch.ones(2), 10)
    with pytest.raises(ds.OutOfRangeError, match=r"clipped\(n\): value 11 is outside"):
        compiled(torch.ones(2), 11)


def test_other_instances_of_the_class_are_not_marked() -> None:
    marked, plain = ds.mark_dynamic_args(Denoiser(), "timestep"), Denoiser()
    plain.load_state_dict(marked.state_dict())
    counter = CountingBackend("eager")
    c_marked = torch.compile(marked, backend=counter)
    c_plain = torch.compile(plain, backend=counter)
    x = torch.randn(2, 4)
    for step in range(4):
        same(c_marked, marked, x, step)
        same(c_plain, plain, x, step)
    # marked: one graph; the plain twin like stock torch: static 0, then automatic dynamic
    assert counter.frame_count == 3


def test_unmark_and_mark_after_compiling_take_effect_at_the_next_call() -> None:
    def scale(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    counter = CountingBackend("eager")
    compiled = torch.compile(scale, backend=counter)
    same(compiled, scale, torch.ones(2), 1)  # unmarked: a static graph
    ds.mark_dynamic_args(scale, "n", strict=True)
    for n in (1, 2, 3):
        same(compiled, scale, torch.ones(2), n)
    assert counter.frame_count == 2  # the static graph, then the marked one
    ds.unmark_dynamic_args(scale, "n")
    for n in (4, 5, 6):
        same(compiled, scale, torch.ones(2), n)
    # unmarked again: torch's automatic dynamic already saw `n` change, so its one new
    # graph is dynamic (stock torch's behaviour for this argument's history)
    assert counter.frame_count == 3


def test_a_float_for_an_int_mark_recompiles_exactly() -> None:
    def scale(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * n

    ds.mark_dynamic_args(scale, "n")
    counter = CountingBackend("eager")
    compiled = torch.compile(scale, backend=counter)
    for n in (2, 3, 2.5, 3.5, ds.DynamicInt(4)):
        same(compiled, scale, torch.ones(2), n)
    assert counter.frame_count == 3  # int graph, float graph, DynamicInt graph


def test_marks_survive_deepcopy_and_pickle() -> None:
    model = ds.mark_dynamic_args(Denoiser(), "timestep")
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        counter = CountingBackend("eager")
        compiled = torch.compile(twin, backend=counter)
        for step in range(3):
            same(compiled, twin, torch.ones(1, 4), step)
        assert counter.frame_count == 1


@pytest.mark.parametrize(
    ("target", "names", "match"),
    [
        (Denoiser(), ("timestamp",), r"Denoiser\.forward has no parameter 'timestamp'.*'timestep'"),
        (Denoiser(), ("self",), r"has no parameter 'self'"),
        (lambda x, *args: x, ("args",), r"cannot be marked by name"),
        (42, ("n",), r"expected a Python function or a torch\.nn\.Module, got int"),
    ],
)
def test_bad_marks_fail_clearly(target: Any, names: tuple[str, ...], match: str) -> None:
    with pytest.raises(ds.DynscalarTypeError, match=match):
        ds.mark_dynamic_args(target, *names)


def test_marking_through_the_compiled_wrapper() -> None:
    def scale(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    counter = CountingBackend("eager")
    compiled = ds.mark_dynamic_args(torch.compile(scale, backend=counter), "n")
    for n in range(4):
        same(compiled, scale, torch.ones(2), n)
    assert counter.frame_count == 1


@pytest.mark.inductor
def test_inductor_module_arguments() -> None:
    model = ds.mark_dynamic_args(Denoiser(), "timestep", "scale")
    eager = copy.deepcopy(model)
    counter = CountingBackend("inductor")
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    x = torch.randn(3, 4)
    for step in range(4):
        torch.testing.assert_close(compiled(x, step, scale=0.5 * step), eager(x, step, 0.5 * step))
    assert counter.frame_count == 1


def _wrapped_like_transformers(forward: Callable[..., Any]) -> Callable[..., Any]:
    """transformers' ``deprecate_kwarg``: a ``wrapped_func(*args, **kwargs)`` around forward."""
    import functools

    @functools.wraps(forward)
    def wrapped_func(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("old_name", None)
        return forward(*args, **kwargs)

    return wrapped_func


class KeywordsOnly(torch.nn.Module):
    """A Hugging Face forward: the value arrives in ``**kwargs`` through a decorator whose
    frame holds the module in ``args[0]``."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)

    @_wrapped_like_transformers
    def forward(self, x: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return self.layer(x).sum() / kwargs["num_items_in_batch"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_argument_arriving_through_kwargs_can_be_marked(backend: str) -> None:
    model = ds.mark_dynamic_args(KeywordsOnly(), "num_items_in_batch")
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(2, 4)
    for n in range(3, 9):
        same(compiled, model, x, num_items_in_batch=n)
    assert counter.frame_count == 1
    other = KeywordsOnly()  # unmarked instance of the class: stock (static, then dynamic)
    counter_other = CountingBackend(backend)
    compiled_other = torch.compile(other, backend=counter_other)
    for n in range(3, 9):
        same(compiled_other, other, x, num_items_in_batch=n)
    assert counter_other.frame_count == 2


def test_a_typo_is_still_caught_without_kwargs() -> None:
    with pytest.raises(ds.DynscalarTypeError, match=r"Did you mean 'timestep'"):
        ds.mark_dynamic_args(Denoiser(), "timestpe")


def test_a_shortened_argument_name_gets_did_you_mean_as_an_attribute_name_does() -> None:
    """`temp` for `temperature`: too short for difflib's ratio, a prefix all the same; the
    traceback names the public class, dynscalar.DynscalarTypeError."""

    class Sampler(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.temperature = 1.0

        def forward(self, logits: torch.Tensor, temperature: float) -> torch.Tensor:
            return logits / temperature

    for name in ("temp", "temprature"):
        with pytest.raises(ds.DynscalarTypeError, match=r"Did you mean 'temperature'\?") as raised:
            ds.mark_dynamic_args(Sampler(), name)
        assert raised.type.__module__ == "dynscalar"
        with pytest.raises(ds.DynscalarAttributeError, match=r"Did you mean 'temperature'\?"):
            ds.mark_dynamic_attr(Sampler(), name)
    with pytest.raises(ds.DynscalarTypeError) as raised:
        ds.mark_dynamic_args(Sampler(), "tau")
    assert "Did you mean" not in str(raised.value)  # nothing close: no guess


def test_errors_print_with_their_public_path() -> None:
    """A traceback's last line names the class where users import it from."""
    import traceback

    try:
        ds.mark_dynamic_args(Denoiser(), "timestpe")
    except ds.DynscalarError as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1]
    assert last.startswith("dynscalar.DynscalarTypeError: dynscalar: "), last
    import dynscalar._diagnostics as diagnostics

    for name in diagnostics.__all__:
        public = getattr(diagnostics, name)
        if isinstance(public, type):
            assert public.__module__ == "dynscalar" and getattr(ds, name) is public, name


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_marked_argument_stays_marked_after_a_graph_break(backend: str) -> None:
    """The frame after a graph break is Dynamo's resume function; the mark follows it."""

    def f(x: torch.Tensor, n: int) -> torch.Tensor:
        y = x * n
        torch._dynamo.graph_break()
        return y + n

    counter = CountingBackend(backend)
    compiled = ds.mark_dynamic_args(torch.compile(f, backend=counter), "n")
    for n in range(2, 8):
        same(compiled, f, torch.ones(2), n)
    assert counter.frame_count == 2  # one graph before the break, one after: for every n


@pytest.mark.parametrize("backend", BACKENDS)
def test_marks_see_through_torch_decorators(backend: str) -> None:
    """torch.compile of a ``@torch.no_grad()`` function compiles ``wrap_inline``'s
    ``inner(*args, **kwargs)``, whose closure holds the marked function."""

    @torch.no_grad()
    def update(ema: torch.Tensor, p: torch.Tensor, step: int) -> torch.Tensor:
        return ema.lerp(p, 1 / (step + 1))

    counter = CountingBackend(backend)
    compiled = torch.compile(ds.mark_dynamic_args(update, "step"), backend=counter)
    for step in range(5):
        same(compiled, update, torch.zeros(3), torch.ones(3), step)
    assert counter.frame_count == 1


# ----------------------------------------------------------------------------- graph breaks
class Codebook(torch.nn.Module):
    """vector-quantize-pytorch's ``EuclideanCodebook.forward(x, sample_codebook_temp)``:
    a graph break first (its ``init_embed_`` branches on a buffer, ``if self.initted``),
    then Gumbel sampling at the temperature it was passed.  The noise is a buffer, so the
    compiled and eager twins sample alike."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Parameter(torch.randn(8, 4))
        self.register_buffer("noise", -torch.log(-torch.log(torch.rand(6, 8))))

    def forward(self, x: torch.Tensor, sample_codebook_temp: float) -> torch.Tensor:
        torch._dynamo.graph_break()
        logits = x @ self.embed.T
        if sample_codebook_temp > 0:
            logits = logits / sample_codebook_temp + self.noise
        onehot = torch.nn.functional.one_hot(logits.argmax(-1), 8).to(x.dtype)
        return onehot @ self.embed


class Quantizer(torch.nn.Module):
    """vector-quantize-pytorch's ``VectorQuantize.forward(x, sample_codebook_temp=None)``,
    which hands the temperature to its codebook module."""

    def __init__(self) -> None:
        super().__init__()
        self.project = torch.nn.Linear(4, 4)
        self.codebook = Codebook()
        self.sample_codebook_temp = 1.0

    def forward(self, x: torch.Tensor, sample_codebook_temp: float | None = None) -> torch.Tensor:
        temp = sample_codebook_temp if sample_codebook_temp is not None else 1.0
        return self.codebook(self.project(x), sample_codebook_temp=temp) * temp


def _anneal(model: torch.nn.Module, backend: str, proxy: bool) -> int:
    """A Gumbel temperature annealed over eight steps; every call compared with eager."""
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.linspace(-1.0, 1.0, 24).reshape(6, 4)
    with torch.no_grad():  # Dynamo reads `.grad` of a non-leaf input tensor, and warns
        for step in range(8):
            temp = 1.0 - 0.1 * step
            value = ds.DynamicFloat(temp) if proxy else temp
            same(compiled, eager, x, sample_codebook_temp=value)
    return counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_marked_argument_follows_into_a_module_that_graph_breaks(backend: str) -> None:
    """The marked temperature reaches ``Codebook.forward``, a frame of its own (it graph
    breaks): there it is marked too, as a ``DynamicFloat`` argument would be."""
    with ds.disabled():
        stock = _anneal(Quantizer(), backend, proxy=False)
    proxy = _anneal(Quantizer(), backend, proxy=True)
    marked = _anneal(ds.mark_dynamic_args(Quantizer(), "sample_codebook_temp"), backend, False)
    # stock: one graph per temperature in the codebook's frame, on aot_eager also a
    # restart per value (torch's tensorify pass specializes the changing float)
    assert (stock, proxy, marked) == {"eager": (6, 3, 3), "aot_eager": (13, 3, 3)}[backend]


def _inner(x: torch.Tensor, u: float) -> torch.Tensor:
    torch._dynamo.graph_break()
    return x * u + u


def _marked_caller(x: torch.Tensor, t: float) -> torch.Tensor:
    return _inner(x + 1, t) * t


def _unmarked_caller(x: torch.Tensor, s: float) -> torch.Tensor:
    return _inner(x - 1, s) * 3


def _callers(backend: str) -> tuple[int, int]:
    """Graphs compiled by four calls through the marked caller, then four through an
    unmarked caller of the same function (the second count includes the first)."""
    counter = CountingBackend(backend)
    marked = torch.compile(_marked_caller, backend=counter)
    unmarked = torch.compile(_unmarked_caller, backend=counter)
    x = torch.linspace(-1.0, 1.0, 4)
    for t in (0.5, 0.25, 0.75, 1.5):
        same(marked, _marked_caller, x, t)
    first = counter.frame_count
    for s in (0.5, 2.0, 3.0, 4.0):
        same(unmarked, _unmarked_caller, x, s)
    return first, counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_marked_argument_is_followed_only_where_a_marked_frame_passes_it(
    backend: str,
) -> None:
    """``_inner`` compiles as a frame of its own; the marked caller's compiled code records
    that the call it makes after its graph hands the marked ``t`` on, so ``_inner``'s ``u``
    is compiled symbolic.  That graph is correct for any value: called later with plain
    values from an unmarked caller, it runs them (no guard walks the callers on every
    call), so the unmarked calls compile exactly what stock compiles for them, with
    eager's numbers.  (Before: a Python guard walked the calling frames on every call and
    sent the unmarked values to one more compile than stock: (3, 7) and (3, 8).)"""
    with ds.disabled():
        stock = _callers(backend)
    ds.mark_dynamic_args(_marked_caller, "t")
    try:
        marked = _callers(backend)
    finally:
        ds.unmark_dynamic_args(_marked_caller, "t")
    # (graphs after the marked calls, graphs after all calls)
    expected = {"eager": ((6, 9), (3, 6)), "aot_eager": ((9, 13), (3, 7))}[backend]
    assert (stock, marked) == expected
    assert marked[1] - marked[0] == stock[1] - stock[0]


def _marked_sum(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n


def _unmarked_sum(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n + 1


def test_a_mark_does_not_reach_another_function_through_a_shared_wrapper() -> None:
    """torch.compile's wrapper code (``compile_wrapper``) is one code object for every
    compiled function: a mark (min/max) on one function must not apply to another called
    through the same wrapper code.  The unmarked function compiles as stock torch does
    (static, then automatic dynamic: 2 graphs), with no range error."""
    ds.mark_dynamic_args(_marked_sum, "n", min=0, max=10)
    try:
        ds.explain(torch.compile(_marked_sum, backend="eager"), show=False)
        counter = CountingBackend("eager")
        compiled = torch.compile(_unmarked_sum, backend=counter)
        x = torch.ones(3)
        for n in range(1000, 1004):
            assert torch.equal(compiled(x, n), _unmarked_sum(x, n))
        assert counter.frame_count == 2
    finally:
        ds.unmark_dynamic_args(_marked_sum, "n")
