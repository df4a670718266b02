"""Check the built sdist and wheel: what a package index and ``pip install`` will get.

Usage: python .ci/check_dist.py DIST_DIR   (the output folder of ``python -m build``)
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(dist: Path) -> list[str]:
    version = re.search(
        r'^__version__ = "([^"]+)"', (ROOT / "dynscalar" / "__init__.py").read_text(), re.M
    )
    assert version is not None, "no __version__ in dynscalar/__init__.py"
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    problems: list[str] = []
    if [w.name for w in wheels] != [f"dynscalar-{version[1]}-py3-none-any.whl"]:
        return [f"expected one wheel for version {version[1]}, found {[w.name for w in wheels]}"]
    if len(sdists) != 1:
        return [f"expected one sdist, found {[s.name for s in sdists]}"]

    info = f"dynscalar-{version[1]}.dist-info"
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
    for required in (
        f"{info}/licenses/LICENSE",
        "dynscalar/py.typed",
        "dynscalar/_proxy_typing.pyi",  # users' type checkers read the int/float view here
        "dynscalar/__main__.py",
        "dynscalar/_bridge/_table.py",  # a subpackage module: subpackages are shipped
    ):
        if required not in names:
            problems.append(f"wheel lacks {required}")
    stray = sorted(n for n in names if n.split("/")[0] not in ("dynscalar", info))
    if stray:
        problems.append(f"wheel ships files outside the package (tests? examples?): {stray}")
    if any("/tests/" in n or n.startswith("tests/") for n in names):
        problems.append("wheel ships tests")

    expected = {
        "Version": version[1],
        "License-Expression": "BSD-3-Clause",
        "Requires-Python": ">=3.10",
    }
    for key, value in expected.items():
        if metadata.get(key) != value:
            problems.append(f"wheel METADATA {key}: {metadata.get(key)!r}, expected {value!r}")
    classifiers = set(metadata.get_all("Classifier") or [])
    for needed in [f"Programming Language :: Python :: 3.{minor}" for minor in range(10, 14)] + [
        "Development Status :: 3 - Alpha",
        "Operating System :: OS Independent",
        "Typing :: Typed",
    ]:
        if needed not in classifiers:
            problems.append(f"wheel METADATA lacks classifier {needed!r}")
    urls = " ".join(metadata.get_all("Project-URL") or [])
    for url in ("https://github.com/dynscalar/dynscalar", "https://dynscalar.github.io/dynscalar"):
        if url not in urls:
            problems.append(f"wheel METADATA lacks project URL {url}")

    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for required in ("LICENSE", "README.md", "pyproject.toml", "dynscalar/py.typed", "tests"):
        if required not in members and not any(m.startswith(required + "/") for m in members):
            problems.append(f"sdist lacks {required}")
    return problems


if __name__ == "__main__":
    found = main(Path(sys.argv[1]))
    for problem in found:
        print("check_dist:", problem)
    print("check_dist:", "FAILED" if found else "sdist and wheel OK")
    sys.exit(1 if found else 0)
