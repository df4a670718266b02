"""Write the package's module maps from the modules' own docstrings.

    python scripts/render_module_map.py          # rewrite the maps
    python scripts/render_module_map.py --check  # exit 1 if a map differs from the code

One row per module of ``dynscalar``: its path and the first sentence of its docstring (a
module says what it owns in that sentence).  Two pages hold a map: the whole package in
docs/how-it-works.md, the bridge in dynscalar/_bridge/README.md.  tests/test_layout.py
checks that both are current, so a module that moves, appears or changes its job changes
its docstring and the map with it.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dynscalar"
START, END = "<!-- module-map:start -->\n", "<!-- module-map:end -->\n"
#: page -> the folder of the package its map covers
PAGES = {
    ROOT / "docs" / "how-it-works.md": PACKAGE,
    PACKAGE / "_bridge" / "README.md": PACKAGE / "_bridge",
}


def concern(path: Path) -> str:
    """The first sentence of ``path``'s module docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path)))
    if not doc:
        raise SystemExit(f"{path.relative_to(ROOT)} has no module docstring: say what it owns")
    paragraph = " ".join(doc.split("\n\n")[0].split())
    match = re.match(r"(.+?\.)(\s|$)", paragraph)
    sentence = (match.group(1) if match else paragraph).rstrip(".")
    return sentence.replace("``", "`").replace("|", "\\|")


def _package_first(path: Path) -> tuple[tuple[str, ...], bool, str]:
    return path.parent.parts, path.name != "__init__.py", path.name


def render(folder: Path) -> str:
    """The map of ``folder``: a table of its modules, packages' ``__init__`` first."""
    rows = []
    for path in sorted(folder.rglob("*.py"), key=_package_first):
        name = path.relative_to(PACKAGE.parent).with_suffix("").as_posix()
        if path.name == "__init__.py":
            name = name.removesuffix("__init__")
        rows.append(f"| `{name}` | {concern(path)} |")
    header = (
        f"{START}<!-- generated from the modules' docstrings: scripts/render_module_map.py -->\n\n"
        "| module | what it owns |\n|---|---|\n"
    )
    return header + "\n".join(rows) + "\n\n" + END


def replace_block(page: str, block: str, where: Path) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(page):
        raise SystemExit(f"{where} has no {START.strip()} block")
    return pattern.sub(lambda _: block, page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a map is out of date")
    options = parser.parse_args()
    stale = []
    for page, folder in PAGES.items():
        text = page.read_text()
        new = replace_block(text, render(folder), page.relative_to(ROOT))
        if new != text:
            stale.append(str(page.relative_to(ROOT)))
            if not options.check:
                page.write_text(new)
    if options.check and stale:
        print("out of date: " + ", ".join(stale) + " (python scripts/render_module_map.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
