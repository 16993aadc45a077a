"""The documentation builds in nitpicky mode (every cross-reference,
to skboost and through intersphinx to other projects, resolves) with
warnings treated as errors."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    out = tmp_path / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q",
         "-b", "html", "-d", str(tmp_path / "doctrees"),
         str(ROOT / "doc"), str(out)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / "index.html").is_file()
    assert (out / "api.html").is_file()
