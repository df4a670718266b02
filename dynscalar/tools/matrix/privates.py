"""The private torch names the exactness harness reads, as entries of the bridge's table type.

Kept here, not in the bridge's table: the library never reads them, and importing
``torch._dynamo.testing`` changes Dynamo's state, so they are resolved only when the harness
runs.

Examples:
    >>> from dynscalar.tools.matrix.privates import COMPILE_COUNTER
    >>> COMPILE_COUNTER.name
    'testing.CompileCounterWithBackend'
"""

from __future__ import annotations

from ..._bridge._table import Private

__all__ = ["COMPILE_COUNTER", "FUNCTORCH_CONFIG"]

#: ``torch._functorch.config``: the harness compiles with AOTAutograd's cache off
FUNCTORCH_CONFIG = Private(
    "torch._functorch:config",
    alias="functorch_config",
    phase="tools",
    why="the exactness harness compiles with AOTAutograd's cache off",
)
#: the backend that counts the graphs inductor compiles
COMPILE_COUNTER = Private(
    "torch._dynamo.testing:CompileCounterWithBackend",
    phase="tools",
    why="the exactness harness counts the graphs inductor compiles",
)
