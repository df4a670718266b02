"""``python -m tests.optim_sweep``: run the optimizer x scheduler sweep, write the JSON and page.

python -m tests.optim_sweep                          # both backends (~2.5 h on 2 cores)
python -m tests.optim_sweep --backends aot_eager     # the aot_eager column (~1.5 h)
python -m tests.optim_sweep --rows "AdamW single OneCycleLR inductor" --merge
python -m tests.optim_sweep --render                 # the page from the published JSON
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from .catalogue import find, rows
from .render_docs import JSON_PATH, PAGE_PATH, render
from .runner import STEPS, run_row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="aot_eager,inductor")
    parser.add_argument("--rows", default="", help="';'-separated row keys (default: all)")
    parser.add_argument("--merge", action="store_true", help="merge into the published JSON")
    parser.add_argument("--render", action="store_true", help="only render the page")
    parser.add_argument("--out", type=Path, default=JSON_PATH)
    parser.add_argument("--page", type=Path, default=PAGE_PATH)
    args = parser.parse_args(argv)
    if not args.render:
        torch.set_num_threads(1)
        chosen = (
            [find(k.strip()) for k in args.rows.split(";") if k.strip()]
            if args.rows
            else rows(tuple(args.backends.split(",")))
        )
        old = json.loads(args.out.read_text()) if args.merge and args.out.exists() else {}
        records = {r["key"]: r for r in old.get("rows", [])}
        start = time.perf_counter()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        for row in chosen:
            record = run_row(row)
            record["key"] = row.key
            records[row.key] = record
            print(
                json.dumps({k: record[k]["graphs"] for k in ("paths", "stock", "marked")}),
                row.key,
                flush=True,
            )
            data = {  # written after every row: a long run interrupted keeps what it measured
                "torch": torch.__version__,
                "steps": STEPS,
                "rows": sorted(records.values(), key=lambda r: r["key"]),
                "wall_s": round(time.perf_counter() - start, 1) + old.get("wall_s", 0.0),
            }
            args.out.write_text(json.dumps(data, indent=1) + "\n")
    data = json.loads(args.out.read_text())
    args.page.write_text(render(data))
    print(f"{len(data['rows'])} rows; wrote {args.out} and {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
