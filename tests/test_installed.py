"""skboost as installed from a wheel or an sdist.

``tools/smoke_test.py`` runs this file with ``SKBOOST_EXPECT_INSTALLED=1``
from a copy of the tests outside the source tree (with the other smoke
tests, which train and predict on the installed package): the package
imported is the environment's own, not a source tree's, and holds every
module of setup.py's build table compiled, its own OpenMP runtime (Linux),
and no sources or build leftovers. Skipped in the ordinary suite, which
runs on the editable tree.
"""

import ast
import importlib
import importlib.machinery
import os
import sys
import sysconfig
from pathlib import Path

import pytest

import skboost
from _build_table import build_table

pytestmark = pytest.mark.skipif(
    os.environ.get("SKBOOST_EXPECT_INSTALLED") != "1",
    reason="checks an installed skboost: tools/smoke_test.py sets "
           "SKBOOST_EXPECT_INSTALLED=1")

PACKAGE = Path(skboost.__file__).resolve().parent


def table():
    """setup.py's build table, read from the source tree the smoke tests
    came from: the oracle of what the package must hold."""
    return build_table(Path(os.environ["SKBOOST_SOURCE_TREE"]) / "setup.py")


def test_skboost_is_the_environments_own():
    site_packages = {Path(sysconfig.get_paths()[key]).resolve()
                     for key in ("purelib", "platlib")}
    assert PACKAGE.parent in site_packages, (PACKAGE, site_packages)
    assert Path(sys.prefix).resolve() in PACKAGE.parents
    # no source tree around it (an editable install's package is one)
    assert not (PACKAGE.parent / "setup.py").exists()


def test_every_module_of_the_build_table_is_installed_compiled():
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    modules = table()
    assert len(modules) > 20
    for name in modules:
        path = Path(importlib.import_module(name).__file__).resolve()
        assert PACKAGE in path.parents, (name, path)
        assert path.name.endswith(suffixes), (name, path)


def test_no_sources_or_build_leftovers_installed():
    leftovers = [path for path in PACKAGE.rglob("*")
                 if path.suffix in (".c", ".pyx", ".pxd", ".o", ".orig")]
    assert leftovers == []


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="the private OpenMP runtime is built on Linux")
def test_the_package_carries_its_openmp_runtime():
    from skboost._openmp_runtime import PRIVATE_RUNTIME, load_private_runtime
    runtime = Path(PRIVATE_RUNTIME).resolve()
    assert runtime.is_file() and PACKAGE in runtime.parents
    assert load_private_runtime() is not None
