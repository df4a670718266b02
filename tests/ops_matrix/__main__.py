"""``python -m tests.ops_matrix``: run the exactness matrix, write the admitted cells and the page.

Every measured column goes into ``dynscalar/ops/admitted.json`` (the library's only source
of admission), under the installed torch's release and the device measured (cpu); the
``python`` column's cases also into ``published/ops-matrix.json``, for the page.

python -m tests.ops_matrix                      # the eager/aot_eager column (~2 min)
python -m tests.ops_matrix --inductor           # also measure inductor (~an hour)
python -m tests.ops_matrix --forms --inductor-only   # the scalar forms' inductor cells (~50 min)
python -m tests.ops_matrix --forms aten::add.Tensor,prims::fma --inductor-only
python -m tests.ops_matrix --rules dropout,layer_norm --out /tmp/m.json --page /tmp/m.md
python -m tests.ops_matrix --render                 # the page from the published JSON files
python -m tests.ops_matrix --import gpu-check.json  # columns measured elsewhere (a GPU)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch
import torch._inductor.inductor_prims

from dynscalar.ops import _admission
from dynscalar.tools.matrix.harness import verdicts
from dynscalar.tools.matrix.run import DTYPES, dtype_name, inductor_column, python_column

from .render_docs import ADMITTED_PATH, JSON_PATH, PAGE_PATH, render


def write_column(path: Path, backend: str, cells: dict[str, Any], merge: bool) -> None:
    """``cells`` as the installed torch's cpu column of ``backend`` in ``path`` (``merge``:
    over the cells the column holds); the other columns as they are."""
    # read now (a measurement takes minutes): another run may have written meanwhile
    data = json.loads(path.read_text()) if path.exists() else {}
    columns = data.get("columns", {})
    name = _admission.column(backend, "cpu")
    if merge:
        cells = {**columns.get(name, {}).get("cells", {}), **cells}
    columns[name] = {"torch": torch.__version__, "cells": dict(sorted(cells.items()))}
    data = {"about": ABOUT, "columns": dict(sorted(columns.items()))}
    path.write_text(json.dumps(data, indent=1) + "\n")


def import_columns(path: Path, found: dict[str, Any]) -> None:
    """Columns measured elsewhere (another device or release, by the same harness), merged
    cell by cell into ``path``; the other columns as they are."""
    data = _read(path)
    columns = data.get("columns", {})
    for name, column in found.items():
        cells = {**columns.get(name, {}).get("cells", {}), **column["cells"]}
        columns[name] = {"torch": column["torch"], "cells": dict(sorted(cells.items()))}
    data = {"about": ABOUT, "columns": dict(sorted(columns.items()))}
    path.write_text(json.dumps(data, indent=1) + "\n")


ABOUT = (
    "Admitted cells of dynscalar's op rules and scalar forms, one column per backend, torch "
    "release and device; written by python -m tests.ops_matrix, read by "
    "dynscalar.ops._admission. A cell not here is not admitted. Do not edit by hand."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="", help="comma-separated rule names (default: all)")
    parser.add_argument("--out", type=Path, default=JSON_PATH)
    parser.add_argument("--page", type=Path, default=PAGE_PATH)
    parser.add_argument("--inductor", action="store_true", help="also measure inductor")
    parser.add_argument("--admitted", type=Path, default=ADMITTED_PATH)
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
        help="measure the inductor column only (merged into --admitted), keep --out",
    )
    parser.add_argument("--render", action="store_true", help="only render the page")
    parser.add_argument(
        "--import",
        dest="imported",
        type=Path,
        help="merge the columns of a measured.json (python -m dynscalar measure) or a "
        "scripts/gpu_check.py JSON into --admitted, then render the page",
    )
    args = parser.parse_args(argv)
    if args.imported:
        import_columns(args.admitted, json.loads(args.imported.read_text())["columns"])
        args.page.write_text(render(json.loads(args.out.read_text()), _read(args.admitted)))
        print(f"merged the columns of {args.imported} into {args.admitted}; wrote {args.page}")
        return 0
    if args.render:
        args.page.write_text(render(json.loads(args.out.read_text()), _read(args.admitted)))
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
        write_column(args.admitted, "python", verdicts(entries), merge=rules is not None)
    if args.inductor or args.inductor_only:
        if args.forms:
            from dynscalar.tools.matrix.forms import form_column

            chosen = None if args.forms == "all" else args.forms.split(",")
            measured_now = form_column(chosen)
        else:
            measured_now = inductor_column(rules)
        write_column(args.admitted, "inductor", measured_now, merge=True)
    data = json.loads(args.out.read_text())  # as it is now (another run may have written it)
    args.page.write_text(render(data, _read(args.admitted)))
    admitted = sum(e["admitted"] for e in data["entries"])
    print(
        f"{len(data['entries'])} cells, {admitted} admitted; "
        f"wrote {args.out}, {args.admitted} and {args.page}"
    )
    return 0


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


if __name__ == "__main__":
    raise SystemExit(main())
