"""``python -m tests.nn_coverage``: measure the catalogue, write the JSON and the page.

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python -m tests.nn_coverage          # ~30 min
    python -m tests.nn_coverage --backends eager,aot_eager --no-stock --out /tmp/nn.json \\
        --page /tmp/nn.md                                                     # ~1.5 min
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.harness import machine_info, read_json, source_name, split, write_json

from .catalogue import ROWS, catalogue
from .render_docs import BACKENDS, FLOAT32_DEFAULT, JSON_PATH, PAGE_PATH, SIGMAS, render
from .runner import STAT_CALLS, run_table

# --------------------------------------------------------------------------- command line


def _merged(
    published: dict[str, Any], run: dict[str, Any], entries: list[dict[str, Any]], wall_s: float
) -> dict[str, Any]:
    """``published`` with ``entries`` in place of (or beside) its rows of the same ids."""
    by_id = {e["id"]: e for e in published["rows"]}
    by_id.update({e["id"]: e for e in entries})
    order = [row.id for row in catalogue()]
    published["rows"] = [by_id[i] for i in order if i in by_id]
    published["tolerances"] = run["tolerances"]
    published.setdefault("partial_runs", []).append(
        {
            "rows": [e["id"] for e in entries],
            "backends": run["config"]["backends"],
            "machine": run["machine"],
            "wall_s": wall_s,
        }
    )
    return published


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--rows", default="", help="comma-separated row ids (default: all)")
    parser.add_argument("--out", type=Path, default=JSON_PATH)
    parser.add_argument("--page", type=Path, default=PAGE_PATH)
    parser.add_argument("--no-stock", action="store_true", help="skip the unmarked baselines")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="with --rows: re-measure those rows into the existing --out (new rows are "
        "placed in catalogue order); the JSON records which rows each partial run measured",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on 2 shared cores, 2 threads made a tiny "
        "TransformerEncoderLayer step ~80x slower)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ids = split(args.rows, ROWS, [])
    if args.merge and not ids:
        parser.error("--merge re-measures the rows named by --rows")
    rows = [ROWS[s] for s in ids] if ids else catalogue()
    backends = [b for b in args.backends.split(",") if b]
    start = time.perf_counter()
    data: dict[str, Any] = {
        "machine": machine_info(),
        "config": {
            "backends": backends,
            "values_per_row": 4,
            "stat_calls": STAT_CALLS,
            "sigmas": SIGMAS,
            "float32_default": list(FLOAT32_DEFAULT),
            "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "(torch's default)"),
        },
        "tolerances": {},  # eager and aot_eager are compared bit for bit
    }
    measured = run_table(rows, backends, stock=not args.no_stock)
    wall_s = round(time.perf_counter() - start, 1)
    if args.merge:
        data = _merged(read_json(args.out), data, measured["rows"], wall_s)
    else:
        data.update(measured)
        data["wall_s"] = wall_s
    write_json(args.out, data)
    args.page.write_text(render(data, source_name(args.out)))
    print(f"wrote {args.out} and {args.page} in {wall_s:.0f} s")
    bad = [e["id"] for e in data["rows"] if e["status"] in ("NOT EQUAL", "error")]
    if bad:
        print(f"NOT EQUAL or error: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
