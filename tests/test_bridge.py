"""The bridge: lazy, idempotent installation and loud failure when internals move."""

from __future__ import annotations

import dataclasses

import pytest

from dynscalar import BridgeError
from dynscalar._bridge import _install, _table

from .helpers import run_python


def test_import_does_not_import_dynamo() -> None:
    result = run_python(
        """
        import sys, dynscalar
        m = dynscalar.mark_dynamic_attr(__import__("torch").nn.Linear(1, 1), "in_features")
        x = dynscalar.DynamicInt(3) + 1
        assert "torch._dynamo" not in sys.modules, "import dynscalar imported torch._dynamo"
        from dynscalar._bridge._install import is_installed
        assert not is_installed()
        import torch._dynamo
        assert is_installed(), "post-import hook did not install the bridge"
        print("ok")
        """,
        flags=("-W", "error"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_bridge_installs_when_dynamo_was_imported_first() -> None:
    result = run_python(
        """
        import torch._dynamo, dynscalar
        from dynscalar._bridge._install import is_installed
        assert is_installed()
        print("ok")
        """,
        flags=("-W", "error"),
    )
    assert result.returncode == 0, result.stderr


def test_install_is_idempotent() -> None:
    from torch._dynamo.variables.builder import VariableBuilder

    _install.install()
    before = VariableBuilder.__dict__["_wrap"]
    _install.install()
    assert VariableBuilder.__dict__["_wrap"] is before
    assert _install.is_installed()


def test_moved_internal_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = next(p for p in _table.PRIVATES if p.target.endswith(":VariableBuilder.wrap_symint"))
    moved = dataclasses.replace(entry, params=("self", "value", "dynamism"))
    table = tuple(moved if p is entry else p for p in _table.PRIVATES)
    monkeypatch.setattr(_table, "PRIVATES", table)
    with pytest.raises(BridgeError, match=r"changed VariableBuilder\.wrap_symint"):
        _table.check("dynamo")


def test_old_torch_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from dynscalar import _compat

    monkeypatch.setattr(_compat, "TORCH_SUPPORTED", False)
    with pytest.raises(BridgeError, match=r"needs torch>=2\.13"):
        _table.check("dynamo")


def test_bridge_installs_cleanly_when_torch_compile_imports_dynamo() -> None:
    """torch.compile imports torch._inductor, which imports torch._dynamo: no import cycle."""
    result = run_python(
        """
        import torch, dynscalar
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__(); self.step = 0; self.scale = 0.5
            def forward(self, x):
                self.step += 1
                self.scale = self.scale * 0.5
                return x * self.step * self.scale
        m = dynscalar.mark_dynamic_attr(M(), "step", "scale")
        from torch._dynamo.backends.registry import lookup_backend
        graphs = []
        def counting(gm, inputs):
            graphs.append(gm)
            return lookup_backend("aot_eager")(gm, inputs)
        compiled = torch.compile(m, backend=counting, fullgraph=True)
        eager = M()
        for _ in range(3):
            torch.testing.assert_close(compiled(torch.ones(2)), eager(torch.ones(2)))
        from dynscalar._bridge._install import is_installed
        assert is_installed() and len(graphs) == 1
        assert m.step == eager.step == 3 and m.scale == eager.scale == 0.0625
        print("ok")
        """,
        flags=("-W", "error"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_import_is_lazy() -> None:
    """``import dynscalar`` loads the public API, the bridge's hook and its table only, and
    runs no tensor op (kernels are probed at first use)."""
    result = run_python(
        """
        import sys, torch
        from torch.utils._python_dispatch import TorchDispatchMode
        ops = []
        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                ops.append(str(func))
                return func(*args, **(kwargs or {}))
        with Record():
            import dynscalar
        bridge = sorted(m for m in sys.modules if m.startswith("dynscalar._bridge"))
        # the bridge, its patch mechanism, its table and the namespace
        names = ("", "._patch", "._table", "._torch")
        assert bridge == [f"dynscalar._bridge{name}" for name in names], bridge
        assert not ops, ops
        assert "torch._dynamo" not in sys.modules
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
