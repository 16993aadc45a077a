"""The release artefacts ``tools/build_wheels.sh`` made, in the directory
``SKBOOST_DIST_DIR`` names (``wheelhouse/``; skipped without it, as in the
ordinary suite; ``.ci/run`` sets it).

The sdist holds exactly what a source build needs: every tracked ``.py``,
``.pyx`` and ``.pxd`` file of the package (``git ls-files`` is the
oracle), the build files and the licence, and no build product, test or
data. The wheel holds every module of setup.py's build table compiled, the
package's ``.py`` files, its OpenMP runtime, nothing else, has this
platform's manylinux tag, and its extensions look for libraries only
beside themselves (``$ORIGIN``), never in the build machine's directories.
"""

import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from _build_table import build_table

ROOT = Path(__file__).resolve().parents[1]
DIST = os.environ.get("SKBOOST_DIST_DIR")
pytestmark = pytest.mark.skipif(
    not DIST, reason="checks built artefacts: set SKBOOST_DIST_DIR "
                     "(tools/build_wheels.sh writes wheelhouse/)")

# the files of the sdist's top directory besides the package
BUILD_FILES = {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md",
               "LICENSE", "CHANGELOG.md"}
# written by setuptools into every sdist
SDIST_METADATA = re.compile(r"PKG-INFO|setup\.cfg|skboost\.egg-info/.+")


def tracked_package_files(suffixes):
    out = subprocess.run(["git", "ls-files", "skboost"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return {name for name in out.split() if name.endswith(suffixes)}


def only(pattern):
    found = sorted(Path(DIST).glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def test_sdist_holds_the_sources_and_no_build_product():
    sdist = only("skboost-*.tar.gz")
    top = sdist.name[:-len(".tar.gz")] + "/"
    with tarfile.open(sdist) as archive:
        members = {m.name[len(top):] for m in archive.getmembers()
                   if m.isfile()}
    ours = {name for name in members if not SDIST_METADATA.fullmatch(name)}
    expected = BUILD_FILES | tracked_package_files((".py", ".pyx", ".pxd"))
    assert ours == expected, (sorted(ours - expected),
                              sorted(expected - ours))


def wheel_members():
    wheel = only("skboost-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return wheel, {name for name in archive.namelist()
                       if not name.endswith("/")}


def test_wheel_has_this_platforms_manylinux_tag():
    if not sys.platform.startswith("linux"):
        pytest.skip("manylinux wheels are Linux wheels")
    wheel, _ = wheel_members()
    tag = rf"-manylinux_\d+_\d+_{platform.machine()}\.whl"
    assert re.search(tag, wheel.name), wheel.name


def test_wheel_holds_the_package_compiled_and_nothing_else():
    _, members = wheel_members()
    compiled = {}
    for name in members:
        match = re.fullmatch(r"(skboost/.+?)\.[^/]*\.so", name)
        if match:
            compiled[match.group(1).replace("/", ".")] = name
    assert sorted(compiled) == sorted(build_table(ROOT / "setup.py"))
    sources = tracked_package_files((".py",))
    assert sources <= members
    private = ({"skboost/.libs/libgomp-skboost.so.1"}
               if sys.platform.startswith("linux") else set())
    assert private <= members
    metadata = {name for name in members if ".dist-info/" in name}
    assert any(name.endswith("/LICENSE") for name in metadata)
    rest = members - sources - set(compiled.values()) - private - metadata
    assert rest == set()


@pytest.mark.skipif(shutil.which("readelf") is None,
                    reason="readelf (binutils) reads the ELF headers")
def test_wheel_extensions_look_for_libraries_beside_themselves(tmp_path):
    wheel, members = wheel_members()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path)
    for name in members:
        if not name.endswith(".so"):
            continue
        dynamic = subprocess.run(["readelf", "-d", str(tmp_path / name)],
                                 capture_output=True, text=True,
                                 check=True).stdout
        for paths in re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dynamic):
            for entry in paths.split(":"):
                assert entry.startswith("$ORIGIN"), (name, entry)
        if "libgomp" in dynamic:  # the kernels: the package's own copy
            assert "libgomp-skboost.so.1" in dynamic, name
            assert "[libgomp.so.1]" not in dynamic, name
