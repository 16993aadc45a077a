"""The quick-start example runs and prints sensible metrics."""

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_pandas_workflow_runs_and_saves_a_model(tmp_path):
    """The DataFrame example: accuracy, early stopping, an identical
    reloaded model, a valid saved file and a non-empty plot."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "pandas_workflow.py"),
         str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "identical predictions after loading: True" in out, out
    kept, total = map(int, re.search(r"early stopping kept (\d+) of (\d+) "
                                      r"rounds", out).groups())
    assert kept < 500 and total < 500, out
    accuracy = float(re.search(r"test accuracy:\s*([0-9.]+)", out).group(1))
    assert accuracy > 0.9, out
    from skboost import BoostClassifier

    loaded = BoostClassifier.load(tmp_path / "model.json")
    assert "clinic" in loaded.feature_names_in_
    if "importance plot skipped" not in out:
        assert (tmp_path / "importance.png").stat().st_size > 2000


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


@pytest.mark.parametrize("data", ["shared", "synthetic"])
def test_ranking_example_runs_and_ranks(data, tmp_path):
    # "synthetic": a data folder without the LETOR files
    env = dict(os.environ)
    if data == "synthetic":
        env["SKBOOST_DATA"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ranking.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # the repository's data folder holds the LETOR sample
    assert ("not found" in out) == (data == "synthetic"), out
    for line in ("best round:", "ranker test NDCG@10:",
                 "grid search test NDCG@10:"):
        assert line in out, out
    ndcg = float(re.search(r"ranker test NDCG@10:\s*([0-9.]+)", out).group(1))
    random = float(re.search(r"random-score test NDCG@10:\s*([0-9.]+)",
                             out).group(1))
    # the oracle: the same queries ranked at random
    assert ndcg > random + 0.03, out


def test_deploy_onnx_example_matches_skboost(tmp_path):
    """The deployment example: ONNX alone, a pipeline and Treelite predict
    as skboost does."""
    for module in ("onnx", "skl2onnx", "onnxruntime", "treelite", "pandas"):
        pytest.importorskip(module)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "deploy_onnx.py"),
         str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.count("labels equal: True") == 2, out
    for difference in re.findall(r"difference ([0-9.e+-]+)", out):
        assert float(difference) < 1e-5, out
    assert (tmp_path / "pipeline.onnx").is_file()


def test_monotone_constraints_example(tmp_path):
    """The constraints example: the constrained price never falls with the
    area, the unconstrained one does, age shifts every price equally, and
    the plot is written."""
    pytest.importorskip("matplotlib")
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "monotone_constraints.py"),
         str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "constrained: price falls with area for 0 of 200 flats" in out
    falls = int(re.search(r"unconstrained: price falls with area for (\d+)",
                          out).group(1))
    assert falls > 0, out
    low, high = map(float, re.search(
        r"effect of age 10 -> 80 years: ([-0-9.]+) \.\. ([-0-9.]+)",
        out).groups())
    assert low == high != 0.0, out
    assert (tmp_path / "monotone_pdp.png").stat().st_size > 10_000


def test_explain_shap_runs_and_saves_plots(tmp_path):
    """The SHAP example: contributions adding up to the predictions, and
    (with shap installed) the two plots written."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "explain_shap.py"),
         str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    gap = float(re.search(r"add up to the predictions: max gap (\S+)",
                          out).group(1))
    assert gap < 1e-6, out
    assert "strongest interaction:" in out, out
    try:
        import shap  # noqa: F401
    except ImportError:
        assert "plots skipped" in out
        return
    for name in ("shap_beeswarm.png", "shap_waterfall.png"):
        assert (tmp_path / name).stat().st_size > 1000, out


def test_multi_output_example_runs():
    """The multi-output example: the same predictions as
    MultiOutputRegressor, sensible errors, a one-round forest."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "multi_output.py")],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "the same predictions as MultiOutputRegressor: True" in out, out
    rmses = [float(v) for v in re.findall(r"test RMSE ([0-9.]+)", out)]
    assert len(rmses) == 4 and max(rmses) < 0.5, out
    f1 = float(re.search(r"test micro-F1 ([0-9.]+)", out).group(1))
    assert f1 > 0.6, out
    assert "1 round of 100 trees" in out, out


def test_out_of_core_example_matches_in_core():
    """The out-of-core example trains the in-core model from chunk files."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "out_of_core.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "same predictions: True" in result.stdout, result.stdout
    auc = float(re.search(r"test AUC ([0-9.]+)", result.stdout).group(1))
    assert auc > 0.95, result.stdout


def test_survival_example_runs_and_matches_xgboost():
    pytest.importorskip("sksurv")
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "survival_analysis.py")],
        capture_output=True, text=True, timeout=300, check=True)
    lines = {line.split(":")[0]: line for line in result.stdout.splitlines()}
    ours = float(lines["Cox"].split("concordance ")[1].split()[0])
    assert 0.6 < ours < 0.8      # clearly better than chance (0.5)
    if "XGBoost Cox" in lines:
        theirs = float(lines["XGBoost Cox"].split("concordance ")[1])
        assert ours >= theirs - 0.005
def test_uncertainty_example_runs():
    """The uncertainty example: conformal coverage within what the
    guarantee allows for 89 test rows (the coverage of one calibration set
    is Beta distributed: a loose band), distributions with varying spread."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "uncertainty.py")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    coverages = [float(v) for v in re.findall(r"coverage ([0-9.]+)%", out)]
    assert len(coverages) == 2 and all(75 < c <= 100 for c in coverages), out
    low, high = map(float, re.search(
        r"standard deviations: ([0-9.]+) to ([0-9.]+)", out).groups())
    assert 0 < low < high, out
