"""Write-back: attributes a compiled frame assigned keep the class eager would give them."""

from __future__ import annotations

from typing import Any

from .._proxy import DynamicScalar, _derive


def _make_setattr(original: Any) -> Any:
    from torch._dynamo.eval_frame import skip_code

    def object_setattr_ignore_descriptor(obj: Any, name: str, value: Any) -> None:
        try:
            old = object.__getattribute__(obj, "__dict__").get(name)
        except AttributeError:
            old = None
        if isinstance(old, DynamicScalar) and type(value) in (int, float):
            # the proxy eager would have produced: `self.step += 1` keeps class and spec
            value = _derive(value, old.spec, same_variable=True)
        original(obj, name, value)

    # It runs right after a compiled frame, with Dynamo's frame callback still active: Dynamo
    # must not trace it.  skip_code marks the code object once (a C-level check per call);
    # torch._dynamo.disable would wrap every call in a context manager (~5 us per step).
    skip_code(object_setattr_ignore_descriptor.__code__)
    object_setattr_ignore_descriptor.__wrapped_original__ = original  # type: ignore[attr-defined]
    return object_setattr_ignore_descriptor
