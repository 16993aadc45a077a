#!/usr/bin/env bash
# Build skboost's Cython extensions with AddressSanitizer and
# UndefinedBehaviorSanitizer, and run the kernel and fuzz tests under them.
#
#   tools/sanitize.sh [pytest arguments...]
#
# The build goes into a copy of the committed-or-not working tree
# ($SKBOOST_SANITIZE_DIR, default /tmp/skboost-sanitize), so the normal
# build in the source tree is left alone. Python itself is not instrumented,
# hence libasan (and libubsan) are preloaded into the interpreter.
# Leak detection is off: the interpreter keeps memory alive on purpose.
# Every report is written to $SKBOOST_SANITIZE_DIR/reports/<pid>; the script
# ends by listing them (none: the run was clean).
#
# Environment:
#   PYTHON                the interpreter (default: python3)
#   CYTHON_PATH           a PYTHONPATH entry holding Cython, if the
#                         interpreter does not have it
#   SKBOOST_FUZZ_EXAMPLES hypothesis examples per fuzz test (tests/test_fuzz.py)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dir="${SKBOOST_SANITIZE_DIR:-/tmp/skboost-sanitize}"
python="${PYTHON:-python3}"
mkdir -p "$dir" "$dir/reports"
rm -f "$dir"/reports/*
# the sources (no build products) into the copy
(cd "$src" && git ls-files --cached --others --exclude-standard -z) |
    (cd "$src" && xargs -0 cp -p --parents -t "$dir")
cd "$dir"
libasan="$(gcc -print-file-name=libasan.so)"
libubsan="$(gcc -print-file-name=libubsan.so)"
SKBOOST_SANITIZE=1 SKBOOST_BUILD_JOBS=1 \
    PYTHONPATH="${CYTHON_PATH:-}" "$python" setup.py build_ext --inplace -j 1 \
    > "$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }

tests=(tests/test_histogram.py tests/test_partition.py tests/test_predictor.py
       tests/test_exact.py tests/test_hist_split.py tests/test_approx.py
       tests/test_binning.py tests/test_sketch.py tests/test_sparse.py
       tests/test_categorical.py tests/test_shap.py tests/test_gain.py
       tests/test_context.py tests/test_candidate_order.py
       tests/test_row_partition.py tests/test_presort.py
       tests/test_serialization.py tests/test_fuzz.py tests/test_hardening.py)
status=0
LD_PRELOAD="$libasan:$libubsan" \
ASAN_OPTIONS="detect_leaks=0:halt_on_error=0:log_path=$dir/reports/asan:allocator_may_return_null=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0:log_path=$dir/reports/ubsan" \
PYTHONPATH="$dir" "$python" -m pytest -q -p no:cacheprovider "${@:-${tests[@]}}" \
    || status=$?
if compgen -G "$dir/reports/*" > /dev/null; then
    echo "sanitizer reports:"; ls "$dir/reports"
    grep -h -A3 -E "ERROR: AddressSanitizer|runtime error" "$dir"/reports/* | head -60
    exit 1
fi
echo "no sanitizer reports"
exit $status
