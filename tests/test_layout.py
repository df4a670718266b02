"""The package's layout as its maps say: the module maps are the modules' own docstrings,
and the library never imports the tools."""

from __future__ import annotations

import importlib.util
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
