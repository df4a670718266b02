"""The private torch surface is data: every private name the package reads is an entry of the
bridge's table, spelled in one module (``_bridge/_torch.py``), and one that moved sends the
bridge into its degraded mode with one warning instead of failing while a model traces."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from dynscalar._bridge import _table, _torch

from .helpers import COUNTER_SOURCE, ROOT, run_python

PACKAGE = ROOT / "dynscalar"
NAMESPACE = PACKAGE / "_bridge" / "_torch.py"


def _private(dotted: str) -> bool:
    """A module path or attribute chain under torch that is not public API."""
    parts = dotted.split(".")
    if parts[0] != "torch" or dotted.startswith("torch.ops."):  # operators are public
        return False
    if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
        return True
    return dotted.startswith(("torch.fx.experimental", "torch.fx.passes"))


def _dotted(node: ast.expr) -> str | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(names)])


def _spellings(path: Path, root: Path = ROOT) -> Iterator[str]:
    """``file:line  text`` of each private torch import or attribute chain in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            found = [_dotted(node) or ""]
        for dotted in found:
            if _private(dotted):
                yield f"{path.relative_to(root)}:{node.lineno}  {dotted}"
                break


def _reads(path: Path) -> Iterator[tuple[str, int]]:
    """Each ``_torch.<name>`` read in ``path``: (name, line)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "_torch"
        ):
            yield node.attr, node.lineno


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != NAMESPACE)


def test_no_private_torch_name_is_spelled_outside_the_namespace() -> None:
    spelled = [line for path in _modules() for line in _spellings(path)]
    assert not spelled, "read these through dynscalar._bridge._torch:\n" + "\n".join(spelled)


def test_the_checker_sees_the_spellings_it_forbids(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "import torch._dynamo\n"
        "from torch._dynamo.source import AttrSource\n"
        "from torch.fx.experimental import symbolic_shapes\n"
        "x = torch._C._nn\n"
        "y = torch.__version__, torch.fx.Node\n"
    )
    found = sorted(line.split("  ")[1] for line in _spellings(source, tmp_path))
    assert found == sorted(
        ["torch._dynamo", "torch._dynamo.source", "torch.fx.experimental", "torch._C._nn"]
    )


def test_every_name_read_through_the_namespace_is_an_entry_that_resolves() -> None:
    import torch._dynamo  # noqa: F401 - some entries are Dynamo's submodules

    missing = []
    for path in _modules():
        for name, line in _reads(path):
            entry = _table.named(name)
            where = f"{path.relative_to(ROOT)}:{line}  _torch.{name}"
            if entry is None:
                missing.append(f"{where}: no entry")
            else:
                try:
                    entry.resolve()
                except (ImportError, AttributeError) as exc:
                    missing.append(f"{where}: {exc}")
    assert not missing, "\n".join(missing)


def test_short_names_are_unambiguous() -> None:
    roots: dict[str, str] = {}
    for entry in _table.PRIVATES:
        module, _, qualname = entry.target.partition(":")
        root = f"{module}:{qualname.split('.')[0]}"
        assert roots.setdefault(entry.short, root) == root, (
            f"_torch.{entry.short} would be both {roots[entry.short]} and {root}: give one an alias"
        )


def test_a_name_not_in_the_table_is_refused_with_a_clear_error() -> None:
    with pytest.raises(
        AttributeError, match=r"LocalSauce is not a private torch name.*add an entry"
    ):
        _torch.LocalSauce


MOVED_READ_ONLY_NAME = (
    """
import dataclasses, warnings
import dynscalar, dynscalar._bridge._install as bridge, dynscalar._bridge._table as table
# a torch release that renamed a class the bridge only reads (never patches)
entry = next(p for p in table.PRIVATES if p.target.endswith(":LocalSource"))
moved = dataclasses.replace(entry, target="torch._dynamo.source:LocalSourceRenamed")
table.PRIVATES = tuple(moved if p is entry else p for p in table.PRIVATES)
"""
    + COUNTER_SOURCE
    + """
model, eager = dynscalar.mark_dynamic_attr(M(), "step"), M()
graphs = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    compiled = torch.compile(model, backend=lambda gm, _: graphs.append(gm) or gm.forward)
    for _ in range(3):
        x = torch.randn(2)
        torch.testing.assert_close(compiled(x), eager(x))
assert int(model.step) == eager.step == 3 and len(graphs) == 3, len(graphs)
ours = [w for w in caught if issubclass(w.category, dynscalar.DynscalarWarning)]
assert len(ours) == 1, [str(w.message) for w in caught]
assert "has no torch._dynamo.source.LocalSourceRenamed" in str(ours[0].message)
assert not bridge.is_installed()
print("ok")
"""
)


def test_a_renamed_read_only_name_degrades_with_one_warning() -> None:
    result = run_python(MOVED_READ_ONLY_NAME)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip() == "ok"
