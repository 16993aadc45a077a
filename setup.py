"""Build of skboost's Cython kernels.

Every compiled module is declared in ``EXTENSIONS`` below; they all share the
same compiler flags (OpenMP, -O3) and the same Cython directives.

Set ``SKBOOST_DEBUG=1`` in the environment to build with bounds checking,
wraparound and initialisation checks turned on (slow, for debugging kernels).
Set ``SKBOOST_SANITIZE=1`` to build with AddressSanitizer and
UndefinedBehaviorSanitizer (``tools/sanitize.sh`` builds a copy that way and
runs the kernel and fuzz tests under it).
"""

import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# module name -> source, relative to the project root. One line per kernel.
EXTENSIONS = {
    "skboost._openmp_helpers": "skboost/_openmp_helpers.pyx",
    "skboost._objectives": "skboost/_objectives.pyx",
    "skboost._ranking": "skboost/_ranking.pyx",
    "skboost.tree._gain": "skboost/tree/_gain.pyx",
    "skboost.tree._sketch": "skboost/tree/_sketch.pyx",
    "skboost.tree._context": "skboost/tree/_context.pyx",
    "skboost.tree._candidate_order": "skboost/tree/_candidate_order.pyx",
    "skboost.tree._presorted": "skboost/tree/_presorted.pyx",
    "skboost.tree._node_blocks": "skboost/tree/_node_blocks.pyx",
    "skboost.tree._exact_scan": "skboost/tree/_exact_scan.pyx",
    "skboost.tree._binning": "skboost/tree/_binning.pyx",
    "skboost.tree._histogram": "skboost/tree/_histogram.pyx",
    "skboost.tree._bounded_offer": "skboost/tree/_bounded_offer.pyx",
    "skboost.tree._hist_split": "skboost/tree/_hist_split.pyx",
    "skboost.tree._categorical_scan": "skboost/tree/_categorical_scan.pyx",
    "skboost.tree._column_scan": "skboost/tree/_column_scan.pyx",
    "skboost.tree._approx": "skboost/tree/_approx.pyx",
    "skboost.tree._partition": "skboost/tree/_partition.pyx",
    "skboost.tree._predictor": "skboost/tree/_predictor.pyx",
    "skboost.tree._sparse": "skboost/tree/_sparse.pyx",
    "skboost.tree._shap": "skboost/tree/_shap.pyx",
}

DEBUG = os.environ.get("SKBOOST_DEBUG", "0") not in ("", "0")
SANITIZE = os.environ.get("SKBOOST_SANITIZE", "0") not in ("", "0")

if sys.platform == "win32":
    OPENMP_COMPILE, OPENMP_LINK = ["/openmp"], []
    OPT = ["/O2"]
else:
    OPENMP_COMPILE, OPENMP_LINK = ["-fopenmp"], ["-fopenmp"]
    # no contraction into fused multiply-adds (which vector clones may
    # use): every build computes the same float results
    OPT = (["-O0", "-g"] if DEBUG else ["-O3"]) + ["-ffp-contract=off"]
    if SANITIZE:
        # Python itself is not instrumented: run with libasan preloaded
        # (tools/sanitize.sh). -O1 keeps the reports' stacks readable.
        SANITIZER = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                     "-fsanitize-recover=address"]
        OPT = ["-O1", "-g"] + SANITIZER + ["-ffp-contract=off"]
        OPENMP_LINK = OPENMP_LINK + SANITIZER

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}


def make_extension(name, source):
    return Extension(
        name,
        [source],
        include_dirs=[np.get_include()],
        extra_compile_args=OPT + OPENMP_COMPILE,
        extra_link_args=OPENMP_LINK,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
    )


setup(
    ext_modules=cythonize(
        [make_extension(name, src) for name, src in EXTENSIONS.items()],
        compiler_directives=COMPILER_DIRECTIVES,
        nthreads=int(os.environ.get("SKBOOST_BUILD_JOBS", "2")),
    ),
)
