"""Smoke tests of an installed skboost, run from outside the source tree.

    python tools/smoke_test.py [pytest arguments]

``python`` is the interpreter whose installed skboost is tested. The script
copies ``tests/`` and ``examples/quickstart.py`` into a temporary directory
(no ``skboost/`` beside them, so nothing can be imported from the source
tree), runs the quick start there, then pytest on SMOKE_TESTS with
``SKBOOST_EXPECT_INSTALLED=1``, under which ``tests/test_installed.py``
checks that skboost is the environment's own, with every module of
setup.py's build table compiled. It needs pytest and nothing else.

``tools/check_dist.sh`` runs it in a fresh environment for a wheel (no
compiler) and for the sdist; cibuildwheel runs it for every wheel it builds
(``pyproject.toml``).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# about half a minute on two cores, pytest the only requirement
SMOKE_TESTS = [
    "tests/test_installed.py",        # the installed package, complete
    "tests/test_estimators.py",       # fit, predict, scikit-learn behaviour
    "tests/test_booster.py",          # the boosting loop against its oracles
    "tests/test_predictor.py",        # the prediction kernels
    "tests/test_threads.py",          # the package's own OpenMP runtime
    "tests/test_legacy_fixtures.py",  # files and pickles of earlier versions
]


def main(pytest_args):
    with tempfile.TemporaryDirectory(prefix="skboost-smoke-") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "tests", work / "tests",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "examples" / "quickstart.py", work)
        env = {**os.environ, "SKBOOST_EXPECT_INSTALLED": "1",
               "SKBOOST_SOURCE_TREE": str(ROOT), "MPLBACKEND": "Agg"}
        env.pop("PYTHONPATH", None)
        print("quick start, with the installed skboost:", flush=True)
        subprocess.run([sys.executable, "quickstart.py"], cwd=work, env=env,
                       check=True)
        pytest = [sys.executable, "-m", "pytest", "-q", "-rs",
                  "-p", "no:cacheprovider"]
        return subprocess.run([*pytest, *(pytest_args or SMOKE_TESTS)],
                              cwd=work, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
