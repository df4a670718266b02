"""Which kind of backend a compile hands its graph to: how a marked float can reach an op.

The op rules (``dynscalar.ops``) differ by backend, because backends run a graph
differently:

* ``"python"`` - ``eager``, ``aot_eager``, ``aot_eager_decomp_partition``: the graph runs as
  Python code calling ATen ops, so a marked float can reach an op as the Python float it
  is at run time, exactly as in eager (torch's float-tensorify pass is kept away from it);
* ``"inductor"`` - inductor generates kernels: a marked float must become a tensor
  (the tensorify pass, or an op rule's tensor form), else it is specialized as stock
  torch specializes it;
* ``"other"`` - any other backend: nothing is assumed about it; marked floats that would
  need an op rule are specialized as stock torch specializes them.

The kind is read from the compile's backend (``OutputGraph.compiler_fn``), through the
wrappers ``torch.compile`` and Dynamo put around it (``_TorchCompileWrapper``,
``WrapBackendDebug``) and counting wrappers that name a registered backend
(``torch._dynamo.testing.CompileCounterWithBackend``).
"""

from __future__ import annotations

from typing import Any, Literal

from .. import _caches
from . import _torch

__all__ = ["Kind", "backend_kind"]

Kind = Literal["python", "inductor", "other"]

_PYTHON = ("eager", "aot_eager", "aot_eager_decomp_partition")
_INDUCTOR = ("inductor",)


#: torch's registered backend functions with their kind, looked up at the first compile
#: and held (compared by identity, never by ``id()``), forgotten with ``torch._dynamo.reset()``
_known: list[tuple[Any, Kind]] = []
_caches.register(_known.clear)


def _learn_backends() -> None:
    """Fill ``_known`` with torch's backend functions for the kinds' names."""
    groups: tuple[tuple[tuple[str, ...], Kind], ...] = (
        (_PYTHON, "python"),
        (_INDUCTOR, "inductor"),
    )
    for names, kind in groups:
        for name in names:
            try:
                _known.append((_torch.lookup_backend(name), kind))
            except Exception:  # noqa: BLE001 - a backend this torch does not register
                continue


def _kind_of(fn: Any) -> Kind:
    if not _known:
        _learn_backends()
    seen: set[int] = set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        if isinstance(fn, str):
            return "python" if fn in _PYTHON else "inductor" if fn in _INDUCTOR else "other"
        if type(fn).__name__ == "_TorchCompileInductorWrapper":
            return "inductor"
        for known, kind in _known:  # torch's registered backends, by identity
            if known is fn:
                return kind
        fn = next(
            (
                inner
                for inner in (
                    getattr(fn, "_torchdynamo_orig_backend", None),  # WrapBackendDebug
                    getattr(fn, "compiler_fn", None),  # _TorchCompileWrapper
                    getattr(fn, "backend", None),  # CompileCounterWithBackend
                )
                if inner is not None
            ),
            None,
        )
    return "other"


def backend_kind(tx: Any) -> Kind:
    """The kind of backend the compile ``tx`` belongs to (see module docstring).

    Examples:
        >>> backend_kind(None)
        'other'
    """
    output = getattr(tx, "output", None)
    return _kind_of(getattr(output, "compiler_fn", None))
