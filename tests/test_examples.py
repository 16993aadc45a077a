"""The examples' runs the gallery does not make: the quick start against
the output typed on its page, the DataFrame example without an output
directory, the ranking example without the LETOR files. The gallery runs
every example once (the documentation build of tests/test_docs.py), and
the checks of what each prints and writes there are in that file."""

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _quickstart_output_on_the_page():
    """The lines of the quick-start page's "Output" code block."""
    page = (ROOT / "doc" / "quickstart.rst").read_text()
    block = page.split("Output\n------", 1)[1].split(".. code-block:: text",
                                                     1)[1]
    lines = []
    for line in block.splitlines()[1:]:
        if line.strip() and not line.startswith("   "):
            break
        lines.append(line[3:])
    return [line for line in lines if line.strip()]


@pytest.mark.skipif(not (sys.platform == "linux"
                         and platform.machine() == "x86_64"),
                    reason="the page shows the output on Linux x86-64")
def test_quickstart_page_shows_what_the_script_prints():
    """The output typed on the quick-start page is the script's output,
    line for line (the gallery page shows it too, executed; this keeps the
    hand-written page from going stale), and the figures its prose quotes
    round the printed ones; the linear model's R^2 it quotes is computed
    here with scikit-learn on the same split."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stdout + result.stderr
    printed = [line for line in result.stdout.splitlines()
               if line.strip() and not line.startswith("plot skipped")]
    assert printed == _quickstart_output_on_the_page()

    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0)
    linear_r2 = LinearRegression().fit(X_train, y_train).score(X_test, y_test)
    rmse = float(re.search(r"regressor test RMSE: ([0-9.]+)",
                           result.stdout).group(1))
    r2 = float(re.search(r"regressor test R\^2:\s*([0-9.]+)",
                         result.stdout).group(1))
    prose = " ".join((ROOT / "doc" / "quickstart.rst").read_text().split())
    assert (f"the test R² is about {r2:.2f} and RMSE about {rmse:.0f} "
            f"(a linear model reaches R² {linear_r2:.2f}") in prose
    script = (ROOT / "examples" / "quickstart.py").read_text()
    assert f"R^2 {linear_r2:.2f}." in script


def test_pandas_workflow_writes_into_a_temporary_directory(tmp_path):
    """Without an argument nothing is written where it runs: the files go
    to a new temporary directory, whose path it prints."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "pandas_workflow.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []
    out_dir = Path(re.search(r"output directory: (.+)", result.stdout)
                   .group(1).strip())
    try:
        assert out_dir.name.startswith("skboost-example-")
        assert (out_dir / "model.json").is_file()
    finally:
        for path in out_dir.iterdir():
            path.unlink()
        out_dir.rmdir()


def test_ranking_example_runs_without_the_letor_files(tmp_path):
    """A data folder without the LETOR files: the example says so and
    ranks a synthetic data set (the gallery's run, on the repository's
    files, is checked in tests/test_docs.py)."""
    env = {**os.environ, "SKBOOST_DATA": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ranking.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "not found" in out, out
    check_ranking_output(out)


def check_ranking_output(out):
    """The ranking example's printed results: its lines, and the ranker's
    NDCG@10 above the same queries ranked at random (the oracle)."""
    for line in ("best round:", "ranker test NDCG@10:",
                 "grid search test NDCG@10:"):
        assert line in out, out
    ndcg = float(re.search(r"ranker test NDCG@10:\s*([0-9.]+)", out).group(1))
    random = float(re.search(r"random-score test NDCG@10:\s*([0-9.]+)",
                             out).group(1))
    assert ndcg > random + 0.03, out
