"""Write the specialization table of docs/concepts.md from the probe on the installed torch.

    python scripts/render_specializations.py          # rewrite the table in docs/concepts.md
    python scripts/render_specializations.py --check  # exit 1 if the page differs

The table says which Python constructs force a marked value to a constant
(dynscalar/tools/specializations.py compiles each one on a DynamicInt and on a DynamicFloat).
Run it after a torch upgrade, and update ``RECORDED`` in dynscalar/_constructs.py with the
printed results; tests/test_docs.py checks both against the probe.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "concepts.md"
START, END = "<!-- specializations:start -->\n", "<!-- specializations:end -->\n"


def render_block(results: dict[str, str], torch_version: str) -> str:
    from dynscalar.tools.specializations import render_table

    return (
        f"{START}Measured on torch {torch_version} by `python -m dynscalar specializations` "
        "(run it to see your torch):\n\n" + render_table(results) + END
    )


def replace_block(page: str, block: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    assert pattern.search(page), f"{PAGE} has no {START.strip()} block"
    return pattern.sub(lambda _: block, page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args()
    import torch

    from dynscalar.tools.specializations import probe

    results = probe()
    version = torch.__version__.split("+")[0]
    page = PAGE.read_text()
    new = replace_block(page, render_block(results, version))
    print(results)
    if args.check:
        return 0 if new == page else 1
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
