"""What a user meets first: the README's example, the CLI, the version, the changelog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dynscalar

from .helpers import run_interpreter, run_python

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
RST_MARKUP = re.compile(r"``|:(class|func|meth|mod|attr|exc):`")


@pytest.mark.broad
@pytest.mark.inductor
def test_readme_first_example_runs_as_shown() -> None:
    """The first ```python block, unchanged, then a count of the graphs it compiled."""
    example = re.search(r"```python\n(.*?)```", README, re.DOTALL)
    assert example is not None
    code = example[1] + (
        "\nfrom torch._dynamo.utils import counters\n"
        "print('graphs', counters['stats']['unique_graphs'])\n"
    )
    result = run_python(code, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    # what the README shows under the example, then torch's own count of the graphs
    assert result.stdout.splitlines() == ["step 20 (int), 1 compile", "graphs 1"], result.stdout


def test_readme_links_are_absolute() -> None:
    """Relative links break on a package index page (PyPI renders the README alone)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", README)
    assert targets
    assert [t for t in targets if not t.startswith("https://")] == []


def test_version_has_one_source() -> None:
    """The package metadata reads ``__version__`` (hatch's version source); CI checks the wheel."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert not re.search(r"^version\s*=", pyproject, re.MULTILINE)
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.MULTILINE)
    path = re.search(r'^\[tool\.hatch\.version\]\npath = "([^"]+)"', pyproject, re.MULTILINE)
    assert path is not None
    assert f'__version__ = "{dynscalar.__version__}"' in (ROOT / path[1]).read_text()


def test_changelog_lists_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog
    released = re.findall(r"^## \[(\d[^\]]*)\]", changelog, re.MULTILINE)
    assert released and released[0] == dynscalar.__version__


def test_cli_version() -> None:
    result = run_interpreter("-m", "dynscalar", "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"dynscalar {dynscalar.__version__} (torch "), result.stdout


@pytest.mark.parametrize(
    "command",
    [
        [],
        *(
            pytest.param(c, marks=pytest.mark.broad)
            for c in (["demo"], ["doctor"], ["measure"], ["specializations"])
        ),
    ],
    ids=["main", "demo", "doctor", "measure", "specializations"],
)
def test_cli_help_is_plain_text(command: list[str]) -> None:
    result = run_interpreter("-m", "dynscalar", *command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m dynscalar")
    assert not RST_MARKUP.search(result.stdout), result.stdout


def test_compiling_a_marked_model_imports_no_tool() -> None:
    """``dynscalar/tools`` (demo, doctor, specializations, explain's table) is for the command
    line: importing dynscalar, compiling a marked model, running it and warning about a
    value it forces (the construct's advice) import none of it."""
    code = """
        import sys, warnings
        import torch, dynscalar
        model = torch.nn.Linear(2, 2)
        model.step = 0
        dynscalar.mark_dynamic_attr(model, "step")
        def train_step(x):
            model.step += 1
            for _ in range(model.step):  # forces the value: a SpecializationWarning
                x = x + 1
            return model(x)
        compiled = torch.compile(train_step, backend="eager")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                compiled(torch.ones(2))
        print(model.step, sorted({w.category.__name__ for w in caught}))
        print(sorted(name for name in sys.modules if name.startswith("dynscalar.tools")))
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["3 ['SpecializationWarning']", "[]"], result.stdout
