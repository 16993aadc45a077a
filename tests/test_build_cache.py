"""setup.py's cache of compiled extensions (ExtensionCache): a module is
reused only when everything it is made from is the same, and the cache
keeps the entries used last.

The oracle is the definition of the key: the bytes of the sources, the
extension's flags, the compiler's command line and Python. Each test
changes one of them and expects a new key, or none and expects the same
one. The compiler is distutils' own, set up as build_ext sets it up; no
code is compiled (the README's second command compiling nothing is
measured in the issue's closing note, and CI's wheel build takes every
module from the cache).
"""

import importlib.util
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("setuptools")


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("skboost_setup",
                                                  ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the build; setup() not run
    return module


@pytest.fixture
def compiler():
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler
    compiler = new_compiler()
    customize_compiler(compiler)
    return compiler


def extension(build, tmp_path, source=b"int f(void) { return 1; }\n"):
    path = tmp_path / "kernel.c"
    path.write_bytes(source)
    return build.make_extension("skboost.tree._kernel", str(path))


def test_same_inputs_same_key(build, compiler, tmp_path):
    first = build.ExtensionCache(tmp_path / "cache", compiler)
    second = build.ExtensionCache(tmp_path / "cache", compiler)
    ext = extension(build, tmp_path)
    assert first.key(ext) == second.key(extension(build, tmp_path))


def test_a_changed_source_byte_changes_the_key(build, compiler, tmp_path):
    cache = build.ExtensionCache(tmp_path / "cache", compiler)
    before = cache.key(extension(build, tmp_path))
    after = cache.key(extension(build, tmp_path,
                                b"int f(void) { return 2; }\n"))
    assert before != after


def test_changed_flags_change_the_key(build, compiler, tmp_path):
    cache = build.ExtensionCache(tmp_path / "cache", compiler)
    ext = extension(build, tmp_path)
    before = cache.key(ext)
    ext.extra_compile_args = ["-O0", "-g"] + ext.extra_compile_args[2:]
    assert cache.key(ext) != before


def test_another_compiler_command_changes_the_key(build, compiler, tmp_path):
    ext = extension(build, tmp_path)
    before = build.ExtensionCache(tmp_path / "cache", compiler).key(ext)
    compiler.compiler_so = compiler.compiler_so + ["-march=native"]
    after = build.ExtensionCache(tmp_path / "cache", compiler).key(ext)
    assert before != after


def test_temporary_build_environment_paths_are_not_in_the_key(
        build, compiler, tmp_path):
    """pip builds each time in a new temporary environment: its include
    directories must not make every build a cache miss."""
    cache = build.ExtensionCache(tmp_path / "cache", compiler)
    ext = extension(build, tmp_path)
    before = cache.key(ext)
    ext.include_dirs = ["/tmp/pip-build-env-abc/overlay/include"]
    assert cache.key(ext) == before


def test_fetch_gives_back_what_was_stored(build, compiler, tmp_path):
    cache = build.ExtensionCache(tmp_path / "cache", compiler)
    ext = extension(build, tmp_path)
    key = cache.key(ext)
    target = tmp_path / "lib" / "skboost" / "tree" / "_kernel.so"
    assert not cache.fetch(ext, key, str(target))
    built = tmp_path / "built.so"
    built.write_bytes(os.urandom(4096))
    built.chmod(0o755)
    cache.store(ext, key, str(built))
    assert cache.fetch(ext, key, str(target))
    assert target.read_bytes() == built.read_bytes()
    assert os.access(target, os.X_OK)


def test_the_entries_used_last_are_kept(build, compiler, tmp_path):
    cache = build.ExtensionCache(tmp_path / "cache", compiler)
    ext = extension(build, tmp_path)
    built = tmp_path / "built.so"
    keys = [f"{i:024x}" for i in range(cache.KEEP + 1)]
    for key in keys[:cache.KEEP]:
        built.write_bytes(key.encode())
        cache.store(ext, key, str(built))
        time.sleep(0.01)  # distinct modification times
    # the first stored is used again, so the second is now the oldest
    assert cache.fetch(ext, keys[0], str(tmp_path / "out.so"))
    time.sleep(0.01)
    built.write_bytes(b"new")
    cache.store(ext, keys[-1], str(built))
    kept = {p.name.split(".")[-2] for p in (tmp_path / "cache").iterdir()}
    assert kept == {keys[0]} | set(keys[2:])
