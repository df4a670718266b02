"""Extract the Python blocks of a Markdown page and run them in order, as a reader pasting them.

Used by tests/test_docs.py. A block is exempt when the line just before its opening fence is
``<!-- fragment -->`` (an HTML comment: invisible on GitHub, PyPI and the site), e.g. a list
of signatures. A ```` ```text ```` block that follows a Python block with nothing but blank lines
between them is what that block prints: the runner compares it with the block's stdout.
A ```` ```text ```` block right after the line ``<!-- output: BACKEND -->`` (prose may stand
between it and the Python block) is what the last Python block before it prints when the
page's ``"aot_eager"`` is replaced by ``"BACKEND"``: a page states each count and each
comparison with eager for the backend it measured, and ``run_page(..., backend=...)``
checks it there.

With ``prompt=True`` the blocks are typed into the plain ``python`` prompt instead, one line at a
time (``code.InteractiveConsole``, which compiles input as the interactive interpreter does): a
blank line ends an indented block there, a statement right after an indented block without a
blank line between them is a syntax error, and an expression statement prints its value. A page
run that way must paste as it stands and print nothing the page does not show.
:func:`prompt_form` is what such a block looks like: ruff's formatting without the blank lines
inside indented bodies.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .helpers import run_python

FENCE = re.compile(r"^```(\w*)\s*$")
FRAGMENT = "<!-- fragment -->"
OUTPUT_ON = re.compile(r"^<!-- output: (\w+) -->$")
#: The backend the pages' blocks compile with; ``run_page(backend=...)`` replaces it.
PAGE_BACKEND = '"aot_eager"'
SEPARATOR = "\x1e--dynscalar-doc-block--\x1e"


@dataclass
class Block:
    """One fenced block: its language, the line of its opening fence, and its text."""

    lang: str
    line: int
    text: str
    fragment: bool = False
    expected: str | None = None  # the text block printed right after it
    #: what it prints on another backend (``<!-- output: inductor -->`` text blocks)
    on_backend: dict[str, str] = field(default_factory=dict)


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
        on = OUTPUT_ON.match(lines[start - 1].strip()) if start > 0 else None
        python = [b for b in found if b.lang == "python" and not b.fragment]
        if block.lang == "text" and on is not None and python:
            python[-1].on_backend[on.group(1)] = block.text
        elif (
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


# Both runners give the pasted code the interpreter's own `__main__` module, emptied of the
# runner's names, as a reader's prompt has: Dynamo's guards look globals up in the module
# named by `__name__` (on inductor a guard on `torch` reads `__main__.torch`).
RUNNER = """
def run():
    import json, sys, __main__
    blocks = json.loads(sys.stdin.read())
    namespace = __main__.__dict__
    for key in [k for k in namespace if not k.startswith("__")]:
        del namespace[key]
    for name, source in blocks:
        exec(compile(source, name, "exec"), namespace)
        sys.stdout.flush()
        print(SEPARATOR, flush=True)


run()
""".replace("SEPARATOR", repr(SEPARATOR))


PROMPT_RUNNER = """
def run():
    import code, json, sys, __main__

    class Prompt(code.InteractiveConsole):
        # The plain prompt, except that an error stops the run, naming the block's line.
        line = ""

        def showsyntaxerror(self, filename=None, **kwargs):
            super().showsyntaxerror(filename, **kwargs)
            raise SystemExit(
                f"{self.filename}: does not paste at the python prompt: {self.line!r}"
            )

        def showtraceback(self):
            super().showtraceback()
            raise SystemExit(f"{self.filename}: raised at the python prompt")

    blocks = json.loads(sys.stdin.read())
    namespace = __main__.__dict__
    for key in [k for k in namespace if not k.startswith("__")]:
        del namespace[key]
    prompt = Prompt(namespace)
    for name, source in blocks:
        prompt.filename = name
        more = False
        for prompt.line in source.splitlines():
            more = prompt.push(prompt.line)
        if more:  # the Enter that ends the block's last indented body
            prompt.push("")
        sys.stdout.flush()
        print(SEPARATOR, flush=True)


run()
""".replace("SEPARATOR", repr(SEPARATOR))


def prompt_form(code: str) -> str:
    """``code`` without the blank lines inside indented bodies (between methods, after a
    docstring, around a nested function): the plain ``python`` prompt ends a block at a blank
    line, so a block written for it has none there."""
    lines = code.split("\n")
    kept = []
    for i, line in enumerate(lines):
        following = next((rest for rest in lines[i + 1 :] if rest.strip()), "")
        if not line.strip() and following[:1] in (" ", "\t"):
            continue
        kept.append(line)
    return "\n".join(kept)


def run_page(
    path: Path,
    cwd: Path,
    timeout: float = 600,
    *,
    prompt: bool = False,
    backend: str | None = None,
) -> tuple[list[Block], list[str], str]:
    """Run a page's non-fragment Python blocks in one fresh interpreter, in order: as one
    ``exec`` each, or with ``prompt=True`` line by line as the plain ``python`` prompt reads
    pasted text; with ``backend``, every ``"aot_eager"`` in them replaced by it.

    Returns the blocks run, the stdout of each, and stderr. Raises AssertionError with the
    failing block's location when one raises (or, at the prompt, does not paste).
    """
    runnable = [b for b in blocks(path.read_text()) if b.lang == "python" and not b.fragment]
    sources = [
        b.text if backend is None else b.text.replace(PAGE_BACKEND, f'"{backend}"')
        for b in runnable
    ]
    names = [f"{path.name}:{b.line}" for b in runnable]
    payload = json.dumps(list(zip(names, sources, strict=True)))
    runner = PROMPT_RUNNER if prompt else RUNNER
    result = run_python(runner, input=payload, cwd=cwd, timeout=timeout)
    assert result.returncode == 0, f"{path.name}: a block failed:\n{result.stderr[-4000:]}"
    outputs = result.stdout.split(SEPARATOR + "\n")
    assert len(outputs) == len(runnable) + 1, result.stdout
    return runnable, outputs[:-1], result.stderr
