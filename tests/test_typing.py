"""Types for users: mypy (strict, as configured) on the samples in tests/static_typing/.

``usage.py`` must type-check cleanly and run; ``negative.py`` must fail exactly where its
``# E: <code>`` comments say.  CI's mypy step checks usage.py too; this test adds the
negative sample and the run-time agreement.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .helpers import run_interpreter

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path("tests", "static_typing")
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
EXPECT = re.compile(r"  # E: (?P<code>[a-z-]+)$")

pytest.importorskip("mypy", reason="the typing tests need mypy (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def mypy_errors() -> dict[str, set[tuple[int, str]]]:
    """mypy's errors per sample file, from one run over both samples."""
    result = run_interpreter(
        "-m", "mypy", str(SAMPLES / "usage.py"), str(SAMPLES / "negative.py"), timeout=600
    )
    if "error:" not in result.stdout and result.returncode not in (0, 1):
        pytest.fail(f"mypy did not run:\n{result.stdout}\n{result.stderr}")
    errors: dict[str, set[tuple[int, str]]] = {"usage.py": set(), "negative.py": set()}
    for line in result.stdout.splitlines():
        match = ERROR.match(line)
        # Errors in dynscalar's own modules are the CI mypy step's business, not this test's.
        if match and Path(match["file"]).parent == SAMPLES:
            errors[Path(match["file"]).name].add((int(match["line"]), match["code"]))
    return errors


@pytest.mark.broad
def test_usage_sample_type_checks(mypy_errors: dict[str, set[tuple[int, str]]]) -> None:
    assert mypy_errors["usage.py"] == set()


def test_negative_sample_fails_exactly_where_expected(
    mypy_errors: dict[str, set[tuple[int, str]]],
) -> None:
    lines = (ROOT / SAMPLES / "negative.py").read_text().splitlines()
    expected = {
        (number, match["code"])
        for number, line in enumerate(lines, start=1)
        if (match := EXPECT.search(line))
    }
    assert expected, "negative.py lost its expectations"
    assert mypy_errors["negative.py"] == expected


def test_usage_sample_runs() -> None:
    """The static types claimed in usage.py are the classes the code produces."""
    from tests.static_typing.usage import usage

    usage()
