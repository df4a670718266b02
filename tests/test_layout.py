"""The package's layout as its maps say: the module maps are the modules' own docstrings,
and the library never imports the tools."""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import sys

from .helpers import COUNTER_SOURCE, ROOT, run_python


def _map_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "render_module_map", ROOT / "scripts" / "render_module_map.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_module_maps_are_the_modules_docstrings() -> None:
    script = _map_script()
    for page, folder in script.PAGES.items():
        current = script.replace_block(page.read_text(), script.render(folder), page)
        assert current == page.read_text(), (
            f"{page.relative_to(ROOT)} is out of date: python scripts/render_module_map.py"
        )


def test_every_module_is_in_the_package_map() -> None:
    script = _map_script()
    page = (ROOT / "docs" / "how-it-works.md").read_text()
    for path in (ROOT / "dynscalar").rglob("*.py"):
        name = path.relative_to(ROOT).with_suffix("").as_posix().removesuffix("__init__")
        assert f"| `{name}` | {script.concern(path)} |" in page, name


def test_the_library_imports_no_tool_and_no_test() -> None:
    result = run_python(
        COUNTER_SOURCE
        + """
import sys
m = dynscalar.mark_dynamic_attr(M(), "step")
torch.compile(m, backend="eager")(torch.ones(2))
records = list(dynscalar.explain(m, show=False))  # collected, not printed
outside = ("dynscalar.tools", "tests", "benchmarks")
print([n for n in sys.modules if n.startswith(outside)])
"""
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"


def test_the_path_of_one_marked_value_is_a_traced_compile() -> None:
    """docs/how-it-works.md lists the modules and functions one marked int passes, as a
    traced compile enters them (``scripts/render_value_path.py``)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render_value_path.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ----------------------------------------------------------------------------- import graph
def _import_graph() -> dict[str, dict[str, list[str]]]:
    """module -> imported module -> where (``line N in function``), for every module of
    the package: module-level and function-level imports, relative and absolute; an
    import of a package's submodule (``from . import _torch``) is an edge to it.  An
    ``if TYPE_CHECKING:`` block is not an import at run time (the type checker's own
    graph): ``tools/explain.py`` names ``_explain``'s record type there."""
    import ast

    root = ROOT / "dynscalar"
    paths = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in root.rglob("*.py")
    }
    graph: dict[str, dict[str, list[str]]] = {name: {} for name in paths}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        scopes: list[tuple[ast.AST, str]] = [(tree, "module level")]
        while scopes:
            node, scope = scopes.pop()
            for child in ast.iter_child_nodes(node):
                if (
                    isinstance(child, ast.If)
                    and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"
                ):
                    scopes.append((ast.Module(body=child.orelse, type_ignores=[]), scope))
                    continue
                inner = scope
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    inner = f"in {child.name}"
                scopes.append((child, inner))
                targets: list[str] = []
                if isinstance(child, ast.Import):
                    targets = [alias.name for alias in child.names]
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        parts = package.split(".")
                        base = ".".join(parts[: len(parts) - (child.level - 1)])
                        base = f"{base}.{child.module}" if child.module else base
                    else:
                        base = child.module or ""
                    subs = [f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in paths]
                    targets = subs or [base]
                for target in targets:
                    if target in paths and target != name:
                        where = f"line {child.lineno} {scope}"
                        graph[name].setdefault(target, []).append(where)
    return graph


def _cycles(graph: dict[str, dict[str, list[str]]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def _describe(graph: dict[str, dict[str, list[str]]], component: set[str]) -> str:
    edges = [
        f"  {source} -> {target} ({', '.join(where)})"
        for source in sorted(component)
        for target, where in sorted(graph[source].items())
        if target in component
    ]
    return f"{len(component)} modules: {', '.join(sorted(component))}\n" + "\n".join(edges)


def test_the_import_graph_finds_function_level_and_relative_imports() -> None:
    graph = _import_graph()
    # module level, relative: the namespace reads the table
    assert "dynscalar._bridge._table" in graph["dynscalar._bridge._torch"]
    # function level: the installer is imported when torch._dynamo is
    where = graph["dynscalar._bridge"]["dynscalar._bridge._install"]
    assert any("in _on_dynamo_import" in w for w in where), where
    # an import only the type checker runs is no edge
    assert "dynscalar._explain" not in graph["dynscalar.tools.explain"]
    # a cycle is found, with its edges
    toy = {"a": {"b": ["line 1 module level"]}, "b": {"a": ["line 2 in f"]}, "c": {}}
    assert _cycles(toy) == [{"a", "b"}]
    assert "b -> a (line 2 in f)" in _describe(toy, {"a", "b"})


def test_no_import_cycle_in_the_bridge_or_through_it() -> None:
    """The bridge is layered: no module of ``dynscalar._bridge`` imports, at module level
    or inside a function, one that leads back to it, and no bridge module reaches back up
    to the package's public layer in a way that closes a cycle."""
    graph = _import_graph()
    through = [c for c in _cycles(graph) if any(m.startswith("dynscalar._bridge") for m in c)]
    assert not through, "import cycles through the bridge:\n" + "\n".join(
        _describe(graph, c) for c in through
    )


def test_no_import_cycle_in_the_package() -> None:
    graph = _import_graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(_describe(graph, c) for c in cycles)


# ----------------------------------------------------------------------------- stages
#: the bridge's patch layer: the table of private names and the mechanism wrapping them
PATCH_LAYER = {"dynscalar._bridge._table", "dynscalar._bridge._patch"}
#: the modules that may import it: the bridge's entry, the namespace, the installer
PATCH_LAYER_USERS = {"dynscalar._bridge", "dynscalar._bridge._torch", "dynscalar._bridge._install"}


def test_every_hook_lives_in_a_stage_module() -> None:
    """The table names only functions of ``dynscalar._bridge.stages`` (the hook, and its
    forms for ``disabled()``, the degraded mode, a frame compiled as stock, its gate), and
    each exists there."""
    from dynscalar._bridge._table import PRIVATES

    paths = [
        (entry.name, path)
        for entry in PRIVATES
        for path in (
            entry.hook,
            entry.degraded_hook,
            entry.off_hook,
            entry.disabled_hook,
            entry.gate,
        )
        if path
    ]
    assert paths
    outside = [(name, path) for name, path in paths if not path.startswith("stages.")]
    assert not outside, outside
    for _, path in paths:
        module, _, function = path.partition(":")
        assert callable(getattr(importlib.import_module(f"dynscalar._bridge.{module}"), function))


def test_no_torch_target_has_two_hooks() -> None:
    """One hook per torch function: where concerns meet at one call, the stage's hook calls
    them in order (an ``instead_of`` entry is the same target's alternative for another
    torch release, applied only where the other is not)."""
    from collections import Counter

    from dynscalar._bridge._table import PRIVATES

    hooked = Counter(p.target for p in PRIVATES if p.hook and p.instead_of is None)
    assert [t for t, n in hooked.items() if n > 1] == []


def test_rules_and_ops_never_import_the_patch_layer() -> None:
    """The rules (the bridge's modules apart from its entry, namespace, installer and the
    stage modules, which the patch mechanism imports) and ``dynscalar.ops`` import neither
    the table nor the patch mechanism."""
    graph = _import_graph()
    offenders = {
        module: sorted(PATCH_LAYER & set(targets))
        for module, targets in graph.items()
        if module.startswith(("dynscalar._bridge", "dynscalar.ops"))
        and module not in PATCH_LAYER | PATCH_LAYER_USERS
        and PATCH_LAYER & set(targets)
    }
    assert offenders == {}, offenders


def test_the_bridge_reaches_ops_through_the_package_alone() -> None:
    """The bridge imports ``dynscalar.ops`` (its roles: ``ops.custom``, ``ops.forms``, ...),
    never one of its private modules."""
    graph = _import_graph()
    private = {
        module: sorted(t for t in targets if t.startswith("dynscalar.ops."))
        for module, targets in graph.items()
        if module.startswith("dynscalar._bridge")
    }
    assert {m: t for m, t in private.items() if t} == {}
    assert any("dynscalar.ops" in targets for targets in graph.values())


def _module_level_tables(path: pathlib.Path) -> list[str]:
    """Module-level assignments of a weak-keyed table or an ``int``-keyed dict or set (an
    ``id()`` table): ``name (line)``."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign):
            target, value, annotation = node.target, node.value, ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value, annotation = node.targets[0], node.value, ""
        else:
            continue
        text = ast.unparse(value) if value is not None else ""
        weak = "WeakKeyDictionary" in text or "WeakValueDictionary" in text
        by_id = annotation.startswith(("dict[int", "set[tuple[int", "set[int"))
        if weak or by_id:
            found.append(f"{ast.unparse(target)} (line {node.lineno})")
    return found


def test_per_compile_state_lives_in_the_compile_state() -> None:
    """No module of the bridge but ``_state`` keeps a weak-keyed or ``id()``-keyed table
    of its own: what one compile needs is a field of ``CompileState`` (a compile's
    restarts, which outlive its ShapeEnv, are kept by its ``CompileContext`` through
    ``_caches.ObjectKeyed``)."""
    bridge = ROOT / "dynscalar" / "_bridge"
    found = {
        str(path.relative_to(bridge)): tables
        for path in sorted(bridge.rglob("*.py"))
        if path.name != "_state.py" and (tables := _module_level_tables(path))
    }
    assert found == {}
    # the check finds the tables _state keeps
    assert _module_level_tables(bridge / "_state.py") == [f"_states (line {_line_of('_states')})"]


def _line_of(name: str) -> int:
    source = (ROOT / "dynscalar" / "_bridge" / "_state.py").read_text().splitlines()
    return next(i for i, line in enumerate(source, 1) if line.startswith(f"{name}:"))
