"""Extract the Python blocks of a Markdown page and run them in order, as a reader pasting them.

Used by tests/test_docs.py. A block is exempt when the line just before its opening fence is
``<!-- fragment -->`` (an HTML comment: invisible on GitHub, PyPI and the site), e.g. a list
of signatures. A ```` ```text ```` block that follows a Python block with nothing but blank lines
between them is what that block prints: the runner compares it with the block's stdout.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .helpers import run_python

FENCE = re.compile(r"^```(\w*)\s*$")
FRAGMENT = "<!-- fragment -->"
SEPARATOR = "\x1e--dynscalar-doc-block--\x1e"


@dataclass
class Block:
    """One fenced block: its language, the line of its opening fence, and its text."""

    lang: str
    line: int
    text: str
    fragment: bool = False
    expected: str | None = None  # the text block printed right after it


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a page, top-level fences only (no indented ones)."""
    lines = markdown.splitlines()
    found: list[Block] = []
    i = 0
    previous_end = -10
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        start = i
        end = next(j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```")
        block = Block(match.group(1), start + 1, "\n".join(lines[start + 1 : end]) + "\n")
        block.fragment = start > 0 and lines[start - 1].strip() == FRAGMENT
        gap = lines[previous_end + 1 : start] if previous_end >= 0 else ["x"]
        if (
            block.lang == "text"
            and found
            and found[-1].lang == "python"
            and all(not g.strip() for g in gap)
        ):
            found[-1].expected = block.text
        found.append(block)
        previous_end = end
        i = end + 1
    return found


RUNNER = """
import json, sys
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}
for name, source in blocks:
    exec(compile(source, name, "exec"), namespace)
    sys.stdout.flush()
    print(SEPARATOR, flush=True)
""".replace("SEPARATOR", repr(SEPARATOR))


def run_page(path: Path, cwd: Path, timeout: float = 600) -> tuple[list[Block], list[str], str]:
    """Run a page's non-fragment Python blocks in one fresh interpreter, in order.

    Returns the blocks run, the stdout of each, and stderr. Raises AssertionError with the
    failing block's location when one raises.
    """
    runnable = [b for b in blocks(path.read_text()) if b.lang == "python" and not b.fragment]
    payload = json.dumps([(f"{path.name}:{b.line}", b.text) for b in runnable])
    result = run_python(RUNNER, input=payload, cwd=cwd, timeout=timeout)
    assert result.returncode == 0, f"{path.name}: a block failed:\n{result.stderr[-4000:]}"
    outputs = result.stdout.split(SEPARATOR + "\n")
    assert len(outputs) == len(runnable) + 1, result.stdout
    return runnable, outputs[:-1], result.stderr
