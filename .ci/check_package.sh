#!/usr/bin/env bash
# The packaging as a user meets it: build the sdist and wheel, check them (twine, and
# .ci/check_dist.py: LICENSE, py.typed, the typing stub, no tests, metadata), install the
# wheel into a fresh venv and run it from outside the source tree.
#
# Usage: bash .ci/check_package.sh CONSTRAINTS_FILE   (pins torch, e.g. torch==2.13.0)
set -euo pipefail
cd "$(dirname "$0")/.."
constraints="$1"
work="$(mktemp -d "${TMPDIR:-/tmp}/dynscalar-package.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "--- build sdist and wheel"
python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
ls "$work/dist"
twine check --strict "$work"/dist/*
python .ci/check_dist.py "$work/dist"

echo "--- install the wheel into a fresh venv"
python -m venv "$work/venv"
py="$work/venv/bin/python"
# pip's own chatter (index warnings) goes to a log, shown when the install fails.
"$py" -m pip install --quiet -c "$constraints" "$work"/dist/*.whl >"$work/pip.log" 2>&1 \
    || { tail -40 "$work/pip.log"; exit 1; }
cd "$work"  # away from the checkout: `import dynscalar` must find the installed wheel

echo "--- run it"
"$py" -c "import dynscalar; print(dynscalar.__version__)"
"$py" - <<'PY'
import pathlib, sys, dynscalar
where = pathlib.Path(dynscalar.__file__).resolve()
assert where.is_relative_to(pathlib.Path(sys.prefix).resolve()), f"imported {where}"
assert (where.parent / "py.typed").is_file()
PY
"$py" -m dynscalar --version
"$py" -m dynscalar demo --backend eager --steps 3
