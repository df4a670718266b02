"""Regenerate every generated docs page, its figures and the README blocks.

python -m benchmarks.render              # from the published JSON (seconds)
python -m benchmarks.render --live       # + the pages measured live (~2 min on 2 cores)
python -m benchmarks.render --no-plots   # pages only (no matplotlib needed)"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from benchmarks import render_overhead, render_strategies
from benchmarks.harness import HERE, PUBLISHED, ROOT, read_json, source_name

LIVE = ("scripts/render_writeback_table.py", "scripts/render_specializations.py")


def render_all(docs: Path = ROOT / "docs", plots: bool = True) -> list[Path]:
    """Every page that comes from published JSON, written under ``docs``."""
    from tests.fuzz import render_docs as fuzz
    from tests.nn_coverage import render_docs as nn_coverage

    readme = HERE / "README.md"
    written = render_strategies.write(list(render_strategies.PUBLISHED), docs, readme, plots)
    written += render_overhead.write(PUBLISHED / "overhead.json", docs, readme, plots)
    written += nn_coverage.write(nn_coverage.JSON_PATH, docs)
    fuzzing = read_json(fuzz.PUBLISHED)
    (docs / "fuzzing.md").write_text(fuzz.render(fuzzing, source_name(fuzz.PUBLISHED)))
    return [*written, docs / "fuzzing.md"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="also the live-measured pages")
    parser.add_argument("--no-plots", action="store_true", help="pages only, no figures")
    args = parser.parse_args(argv)
    for path in render_all(plots=not args.no_plots):
        print(f"wrote {source_name(path)}")
    for script in LIVE if args.live else ():
        subprocess.run([sys.executable, script], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
