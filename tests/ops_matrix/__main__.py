"""``python -m tests.ops_matrix``: run the exactness matrix, write the JSON and the page.

python -m tests.ops_matrix                      # the eager/aot_eager column (~2 min)
python -m tests.ops_matrix --inductor           # also measure inductor (~an hour)
python -m tests.ops_matrix --forms --inductor-only   # the scalar forms' inductor cells (~50 min)
python -m tests.ops_matrix --forms aten::add.Tensor,prims::fma --inductor-only
python -m tests.ops_matrix --rules dropout,layer_norm --out /tmp/m.json --page /tmp/m.md
python -m tests.ops_matrix --render                 # the page from the published JSON files
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch._inductor.inductor_prims

from .render_docs import INDUCTOR_PATH, JSON_PATH, PAGE_PATH, render
from .run import DTYPES, dtype_name, inductor_column, python_column


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="", help="comma-separated rule names (default: all)")
    parser.add_argument("--out", type=Path, default=JSON_PATH)
    parser.add_argument("--page", type=Path, default=PAGE_PATH)
    parser.add_argument("--inductor", action="store_true", help="also measure inductor")
    parser.add_argument("--inductor-out", type=Path, default=INDUCTOR_PATH)
    parser.add_argument(
        "--forms",
        nargs="?",
        const="all",
        default="",
        help="with --inductor/--inductor-only: measure the scalar forms (all, or these ops) "
        "instead of the rules",
    )
    parser.add_argument(
        "--inductor-only",
        action="store_true",
        help="measure the inductor column only (merged into --inductor-out), keep --out",
    )
    parser.add_argument("--render", action="store_true", help="only render the page")
    args = parser.parse_args(argv)
    if args.render:
        measured = json.loads(args.inductor_out.read_text()) if args.inductor_out.exists() else {}
        args.page.write_text(render(json.loads(args.out.read_text()), measured))
        print(f"wrote {args.page}")
        return 0
    rules = [r for r in args.rules.split(",") if r] or None
    torch.set_num_threads(1)
    if not args.inductor_only:
        start = time.perf_counter()
        entries = python_column(rules)
        data = {
            "torch": torch.__version__,
            "dtypes": [dtype_name(d) for d in DTYPES],
            "entries": entries,
            "wall_s": round(time.perf_counter() - start, 1),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=1) + "\n")
    if args.inductor or args.inductor_only:
        if args.forms:
            from .forms import form_column

            chosen = None if args.forms == "all" else args.forms.split(",")
            measured_now = form_column(chosen)
        else:
            measured_now = inductor_column(rules)
        # read after measuring (an hour): another run may have written cells meanwhile
        old = json.loads(args.inductor_out.read_text()) if args.inductor_out.exists() else {}
        cells = {**old.get("cells", {}), **measured_now}
        inductor = {"torch": torch.__version__, "cells": dict(sorted(cells.items()))}
        args.inductor_out.write_text(json.dumps(inductor, indent=1) + "\n")
    measured = json.loads(args.inductor_out.read_text()) if args.inductor_out.exists() else {}
    data = json.loads(args.out.read_text())  # as it is now (another run may have written it)
    args.page.write_text(render(data, measured))
    admitted = sum(e["admitted"] for e in data["entries"])
    print(f"{len(data['entries'])} cells, {admitted} admitted; wrote {args.out} and {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
