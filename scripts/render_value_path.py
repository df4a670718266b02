"""Write the paths of a marked value through dynscalar, traced from real compiles.

    python scripts/render_value_path.py          # rewrite the lists in docs/how-it-works.md
    python scripts/render_value_path.py --check  # exit 1 if the page differs from a trace

Two scenarios (``structure_figures.SCENARIOS``), each compiled on ``aot_eager`` in a fresh
process: once (the bridge installed, caches warm), then, after ``torch._dynamo.reset()``,
again for a new value under ``sys.setprofile``: every function of ``dynscalar`` entered, in
the order first entered, without the table, its wrapper (``_patch``), the safety net and the
wrapper's call of torch's function (``_torchs_own``: the plumbing every hook call passes).
Consecutive functions of one module make one step of the list, so a newcomer reads, top
down, which module handles the value next and by which functions.  The trace is
``structure_figures``' (the same figures the bridge's structure is judged by).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from pathlib import Path

from structure_figures import ROOT, SCENARIOS, events, first_entered, steps_of

PAGE = ROOT / "docs" / "how-it-works.md"
#: the page's block per scenario
BLOCKS = {"argument": "value-path", "attribute": "value-path-attribute"}
#: a scenario whose path depends on the torch release: the release the page shows (CI's).
#: On torch 2.15 Dynamo reaches the attribute's mark in another order (measured); the
#: argument's path is the same on every supported release and is checked on each.
PAGE_RELEASE = {"attribute": "2.13"}


def render(scenario: str) -> str:
    """One scenario's steps as a numbered Markdown list: a module, then its functions."""
    steps = steps_of(first_entered(events(scenario)))
    lines = [
        f"{i}. `dynscalar.{module}`: {', '.join(f'`{n}`' for n in names)}"
        for i, (module, names) in enumerate(steps, 1)
    ]
    return "\n".join(lines) + "\n"


def _torch_release() -> str:
    return importlib.metadata.version("torch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs")
    args = parser.parse_args(argv)
    text = new = PAGE.read_text()
    for scenario in SCENARIOS:
        start, end = f"<!-- {BLOCKS[scenario]}:start -->\n", f"<!-- {BLOCKS[scenario]}:end -->\n"
        head, found, rest = new.partition(start)
        old, found_end, tail = rest.partition(end)
        if not (found and found_end):
            raise SystemExit(f"{PAGE} has no {start.strip()} ... {end.strip()} block")
        traced = render(scenario)  # traced on every release: the trace checks eager's result
        release = PAGE_RELEASE.get(scenario)
        if release is not None and not _torch_release().startswith(release + "."):
            traced = old  # the page shows another release's path
        new = head + start + traced + end + tail
    if args.check:
        if new != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: python {Path(__file__).name}")
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
