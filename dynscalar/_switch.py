"""``dynscalar.disabled()``: torch.compile exactly as if dynscalar were not installed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["disabled"]


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Inside this block, torch.compile behaves as if dynscalar were not installed.

    Every patch the bridge put into torch is taken out (Dynamo's tracing hooks, the float
    AOT hooks, the ``torch.export`` wrapper), and Dynamo's caches are cleared on entering
    and on leaving (``torch._dynamo.reset()``), so code compiled inside is stock torch's
    and code compiled outside it is dynscalar's.  Marks stay on their modules and
    functions and work again after the block; blocks nest.  What is kept concerns only
    ``DynamicInt``/``DynamicFloat`` objects: stock Dynamo cannot trace a proxy at all, so
    inside the block a proxy is compiled as its plain value (a constant, one compile per
    value), exactly what stock torch does with that plain value; and every object the
    compiled code leaves behind is what eager leaves - a proxy stays a proxy with eager's
    spec, in attributes, containers, return values and values handed on at a graph
    break - so the marks it carries hold again after the block.  A program without proxies
    compiles exactly as stock torch compiles it (same graphs, guards and outputs).

    Use it to tell whether a problem comes from dynscalar: if it also happens inside
    ``dynscalar.disabled()``, it is torch's (please say so in a bug report).  It changes
    process-wide state: do not compile in another thread meanwhile.

    Examples:
        >>> import torch, dynscalar
        >>> class Net(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__(); self.step = 0
        ...     def forward(self, x):
        ...         self.step += 1
        ...         return x * self.step
        >>> net = dynscalar.mark_dynamic_attr(Net(), "step")
        >>> with dynscalar.disabled():  # stock torch: one graph per value of step
        ...     compiled = torch.compile(net, backend="eager")
        ...     _ = [compiled(torch.ones(1)) for _ in range(3)]
        >>> net.step
        3
        >>> held = Net()
        >>> held.step = dynscalar.DynamicInt(0, max=100)
        >>> with dynscalar.disabled():  # compiled as the plain 0
        ...     _ = torch.compile(held, backend="eager")(torch.ones(1))
        >>> held.step
        DynamicInt(1, max=100)
    """
    from ._bridge._install import disabled as bridge_disabled

    with bridge_disabled():
        yield
