#!/usr/bin/env bash
# Install a release artefact as a user would, in a fresh virtual
# environment, and run the smoke tests against the installed package, not
# the source tree (tools/smoke_test.py).
#
#   tools/check_dist.sh wheelhouse/skboost-*-manylinux*.whl
#   tools/check_dist.sh dist/skboost-*.tar.gz
#
# A wheel installs with CC=/bin/false, CXX=/bin/false, no compiler on PATH
# (the environment's own scripts only) and pip's --only-binary :all:, so
# nothing can be compiled; the smoke tests then run the same way. An sdist
# is built from source by pip, in an isolated build environment (a C
# compiler with OpenMP needed).
# Environment: PYTHON, the interpreter of the new environment (python3).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 WHEEL_OR_SDIST" >&2; exit 2; }
artefact="$(realpath "$1")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${PYTHON:-python3}" -m venv "$work/venv"
bin="$work/venv/bin"
case "$artefact" in
*.whl)
    echo "== $artefact: installed without a compiler"
    if PATH="$bin" /bin/sh -c 'command -v cc || command -v gcc || command -v c++ || command -v clang'; then
        echo "a compiler is still on PATH" >&2; exit 1
    fi
    run=(env CC=/bin/false CXX=/bin/false PATH="$bin")
    "${run[@]}" "$bin/pip" install -q --only-binary :all: "$artefact" pytest
    ;;
*.tar.gz)
    echo "== $artefact: built from source"
    run=(env)
    "$bin/pip" install -q "$artefact" pytest
    ;;
*) echo "not a wheel or an sdist: $artefact" >&2; exit 2 ;;
esac
"${run[@]}" "$bin/python" "$root/tools/smoke_test.py"
