"""The quick-start example runs and prints sensible metrics."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs_and_prints_metrics():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for line in ("classifier test accuracy:", "classifier test ROC AUC:",
                 "regressor test RMSE:", "regressor test R^2:"):
        assert line in out, out
    accuracy = float(re.search(r"classifier test accuracy:\s*([0-9.]+)",
                               out).group(1))
    assert accuracy > 0.9, out
