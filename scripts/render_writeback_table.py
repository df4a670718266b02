"""Write docs/writeback.md: eager vs compiled, for each way a value made from a proxy lands.

Usage: ``python scripts/render_writeback_table.py`` (about a minute and a half on 2 cores).
The rows come from tests/writeback_table.py; tests/test_writeback.py checks the page is
current.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from tests import writeback_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = writeback_table.measure(writeback_table.BACKENDS)
    page = writeback_table.render_page(rows)
    (ROOT / "docs" / "writeback.md").write_text(page)
    print(f"docs/writeback.md: {len(rows)} rows, {sum(not r.equal for r in rows)} differ")


if __name__ == "__main__":
    main()
