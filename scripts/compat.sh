#!/usr/bin/env bash
# Run dynscalar's test suite against one torch release, in a venv of its own.
#
# Usage:
#   bash scripts/compat.sh VERSION [pytest args...]
#
#   bash scripts/compat.sh 2.14.1                    # the whole suite on torch 2.14.1
#   bash scripts/compat.sh 2.15.0 -q -m "not inductor"
#   bash scripts/compat.sh 2.15.0 --co -q            # just build the venv and collect
#
# What it does:
#   1. Creates (or reuses) a venv at ${DYNSCALAR_COMPAT_DIR:-/tmp/dynscalar-compat}/torch-VERSION
#      with `python3.11 -m venv`.
#   2. Installs `torch==VERSION` into it FIRST, with the exact pin, then the project itself with
#      `pip install -e "<repo>[test]"`. The project asks for torch>=2.13, which the pinned torch
#      already satisfies, so pip keeps it; the script checks that torch was not replaced.
#   3. Prints the torch and wrapt versions, then runs `python -m pytest ARGS` from the repo root
#      (no ARGS: the whole suite) with a per-version TORCHINDUCTOR_CACHE_DIR, and exits with
#      pytest's status.
#
# Where torch comes from on this project's machines (Python 3.11, x86_64):
#   - 2.13.0 (what CI uses): a CPU build lying on this disk; `pip install torch==2.13.0` takes it.
#   - 2.14.1: a file on this disk, a CUDA build that runs fine on the CPU (~5.5 GB in the venv).
#   - 2.15.0 and newer: only from PyPI (a CUDA build, several GB of downloads). The machine's pip
#     configuration (/etc/xdg/pip) caps torch at 2.14.1 through a constraints file, so for these
#     versions every pip call in the dedicated venv runs with PIP_CONFIG_FILE=/dev/null, which
#     skips the config files (and that cap) for this venv only. Older versions keep the cap.
#
# Environment:
#   DYNSCALAR_COMPAT_DIR   where the venvs and inductor caches live (default /tmp/dynscalar-compat)
#
# A venv whose install finished is marked with a stamp file and reused as is, except that the
# project is reinstalled each run (cheap; picks up changed dependencies). Delete the venv folder
# to rebuild it from scratch.
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    [[ $# -lt 1 ]] && exit 2 || exit 0
fi

version="$1"
shift

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
compat_dir="${DYNSCALAR_COMPAT_DIR:-/tmp/dynscalar-compat}"
venv="$compat_dir/torch-$version"
stamp="$venv/.dynscalar-compat-torch"
py="$venv/bin/python"

# True when $1 >= $2 as versions (sort -V knows 2.10 > 2.9).
version_ge() {
    [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" == "$2" ]]
}

# Versions past the machine's cap come from PyPI with the machine's pip config switched off.
if version_ge "$version" "2.15"; then
    pip_env=(env PIP_CONFIG_FILE=/dev/null)
    echo "compat: torch $version is past the machine's pip cap; pip runs with PIP_CONFIG_FILE=/dev/null"
else
    pip_env=(env)
fi

# pip in the venv. The machine's local indexes make pip print a "Location 'file:///opt/...'
# is ignored" warning for every package they lack; those lines are dropped, nothing else is.
pip() {
    "${pip_env[@]}" "$py" -m pip "$@" 2>&1 | { grep -v "^WARNING: Location 'file://" || true; }
}

installed_torch() {
    "$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || true
}

mkdir -p "$compat_dir"

if [[ ! -x "$py" ]]; then
    echo "compat: creating $venv"
    python3.11 -m venv "$venv"
    rm -f "$stamp"
fi

if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$version" ]]; then
    echo "compat: installing torch==$version into $venv (this can take several minutes)"
    pip install --quiet --upgrade pip
    pip install --quiet "torch==$version"
    echo "$version" > "$stamp"
else
    echo "compat: reusing $venv"
fi

torch_before="$(installed_torch)"
echo "compat: installing dynscalar[test] from $repo"
pip install --quiet -e "$repo[test]"
torch_after="$(installed_torch)"

# The project's own install must keep the pinned torch (torch>=2.13 is already satisfied).
if [[ "$torch_before" != "$torch_after" ]]; then
    echo "compat: ERROR: installing the project replaced torch $torch_before with $torch_after" >&2
    exit 3
fi
case "$torch_after" in
    "$version" | "$version"+*) ;;
    *)
        echo "compat: ERROR: expected torch $version in $venv, found '${torch_after:-none}'" >&2
        exit 3
        ;;
esac

"$py" -c "import torch, wrapt; print('torch', torch.__version__, '| wrapt', wrapt.__version__)"

# One inductor cache per torch version: cached kernels of one release are not reused by another.
export TORCHINDUCTOR_CACHE_DIR="$compat_dir/inductor-cache-$version"

cd "$repo"
echo "compat: torch $version, TORCHINDUCTOR_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR"
echo "compat: python -m pytest$(printf ' %q' "$@")"
status=0
"$py" -m pytest "$@" || status=$?
exit "$status"
