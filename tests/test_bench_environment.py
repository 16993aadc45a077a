"""What a benchmark records of its machine (``benchmarks/_common.
_cpu_identity``): the CPU's family/model/stepping and vector units, which
a generic model name ("Intel(R) Xeon(R) Processor") does not tell, checked
against what ``lscpu`` reports of the same CPU."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import _VECTOR_FLAGS, _cpu_identity  # noqa: E402


def _lscpu():
    if not Path("/proc/cpuinfo").exists() or shutil.which("lscpu") is None:
        pytest.skip("needs /proc/cpuinfo and lscpu (Linux)")
    env = {"LC_ALL": "C", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["lscpu"], capture_output=True, text=True,
                         env=env, check=True).stdout
    return dict((key.strip(), value.strip()) for key, _, value in
                (line.partition(":") for line in out.splitlines()))


def test_cpu_identity_agrees_with_lscpu():
    info, lscpu = _cpu_identity(), _lscpu()
    if "Model name" in lscpu and "cpu" in info:
        assert info["cpu"] == lscpu["Model name"]
    if "cpu_id" in info:
        assert info["cpu_id"] == "family {} model {} stepping {}".format(
            lscpu["CPU family"], lscpu["Model"], lscpu["Stepping"])
    flags = set(lscpu.get("Flags", "").split())
    if flags:
        assert info["cpu_vector"] == [f for f in _VECTOR_FLAGS
                                      if f in flags]
