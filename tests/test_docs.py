"""The documentation builds in nitpicky mode (every cross-reference,
to skboost and through intersphinx to other projects, resolves) with
warnings treated as errors, and shows what a reader expects: the example
gallery with every example executed and its figures, an API page per public
class and function, the benchmarks page's charts, and formulas rendered by
a MathJax served from the built site itself (no CDN)."""

import fcntl
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_examples import check_ranking_output

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py")
                  if not p.name.startswith("_"))
# examples whose figures the gallery must show (the others print only)
WITH_FIGURES = ["quickstart", "pandas_workflow", "early_stopping",
                "sparse_data", "categorical_data", "ranking",
                "monotone_constraints", "explain_shap", "multi_output",
                "approx_proposals",
                "tree_methods", "uncertainty"]
API_PAGES = ["skboost.BoostClassifier", "skboost.BoostRegressor",
             "skboost.BoostRanker", "skboost.BoostRFClassifier",
             "skboost.BoostRFRegressor", "skboost.Booster",
             "skboost.plotting.plot_importance", "skboost.plotting.plot_tree",
             "skboost.plotting.plot_metric", "skboost.onnx.to_onnx",
             "skboost.treelite.to_treelite", "skboost.metrics.get_metric",
             "skboost.callback.EarlyStopping",
             "skboost.BoostDistributionRegressor",
             "skboost.conformal.predict_interval"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the documentation once per test session (every example
    executed again).

    Under pytest-xdist each worker process asks for this fixture, but the
    build writes into the source tree (the gallery's ``doc/auto_examples``,
    ``doc/_build_charts``): two builds at once would write the same files
    together. The first worker builds, under a lock on a file in the
    directory the workers share (pytest-xdist's own recipe); the others wait
    and read the same site.
    """
    for module in ("sphinx", "numpydoc", "sphinx_gallery",
                   "pydata_sphinx_theme", "mathjax", "matplotlib", "pandas",
                   "shap", "onnx", "skl2onnx", "onnxruntime", "treelite"):
        pytest.importorskip(module)
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent   # the workers' common base directory
    tmp = shared / "docs_site"
    with open(shared / "docs_site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _built_site(tmp)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _built_site(tmp):
    """The site built into ``tmp/html``, built now unless an earlier call
    (another worker) did; a failed build is reported to every caller."""
    out = tmp / "html"
    failure = tmp / "build_failure.txt"
    if not (tmp / "built").exists():
        tmp.mkdir(exist_ok=True)
        # every example run again, each given a directory of its own for
        # its files (doc/_scripts/gallery_argv.py; _example_files)
        env = {**os.environ, "SKBOOST_GALLERY_RERUN": "1",
               "MPLBACKEND": "Agg",
               "SKBOOST_GALLERY_OUTPUT": str(tmp / "example_output")}
        result = subprocess.run(
            [sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q",
             "-b", "html", "-d", str(tmp / "doctrees"),
             str(ROOT / "doc"), str(out)],
            capture_output=True, text=True, timeout=900, env=env)
        if result.returncode != 0:
            failure.write_text(result.stdout + result.stderr)
        (tmp / "built").touch()
    assert not failure.exists(), failure.read_text()
    return out


def test_docs_build_without_warnings(site):
    assert (site / "index.html").is_file()
    assert (site / "api.html").is_file()


@pytest.mark.parametrize("name", API_PAGES)
def test_api_page_per_public_object(site, name):
    page = (site / "generated" / f"{name}.html").read_text()
    assert f'id="{name}"' in page


def test_estimator_pages_list_their_methods(site):
    page = (site / "generated" / "skboost.BoostClassifier.html").read_text()
    for member in ("fit", "predict_proba", "get_booster", "save_model",
                   "feature_importances_"):
        assert f'id="skboost.BoostClassifier.{member}"' in page, member


def test_gallery_has_every_example_with_its_figures(site):
    index = (site / "auto_examples" / "index.html").read_text()
    for name in EXAMPLES:
        assert f'href="{name}.html"' in index, name
        page = (site / "auto_examples" / f"{name}.html").read_text()
        # the example ran: its printed output is on the page
        assert "sphx-glr-script-out" in page, name
        figures = re.findall(rf"images/sphx_glr_{name}_\d+\.png", page)
        if name in WITH_FIGURES:
            assert figures, f"{name} shows no figure"
            for figure in set(figures):
                assert (site / "_images" / Path(figure).name).stat().st_size \
                    > 5000
        assert f'{name}.py"' in page and "download" in page, name


def test_benchmarks_page_has_charts(site):
    page = (site / "benchmarks.html").read_text()
    charts = set(re.findall(r'src="(_images/[a-z0-9_]+\.png)"', page))
    results = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert len(charts) >= len(results) >= 5, charts
    for chart in charts:
        assert (site / chart).stat().st_size > 5000



LIBRARY_NAMES = {"skboost": "skboost", "xgboost": "XGBoost",
                 "lightgbm": "LightGBM", "sklearn": "scikit-learn",
                 "hessboost": "hessboost"}


def _html_tables(page):
    """(caption, rows of cell texts) of every table of an HTML page."""
    def text(fragment):
        return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()

    tables = []
    for body in re.findall(r"<table.*?</table>", page, flags=re.DOTALL):
        caption = re.search(r"<caption>(.*?)</caption>", body, re.DOTALL)
        rows = [[text(cell) for cell in re.findall(
            r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.DOTALL)]
            for row in re.findall(r"<tr.*?</tr>", body, flags=re.DOTALL)]
        tables.append((text(caption.group(1)) if caption else "", rows))
    return tables


def _xgboost_reference(records, method, time):
    """XGBoost's ``time`` for ``method``, else for the method it is a
    variant of ("onnx" for "onnx (ml 3)"), else for hist, else for its only
    method (the reference the page states)."""
    xgboost = {r["method"]: r.get(time) for r in records
               if r["library"] == "xgboost"}
    for candidate in (method, re.sub(r" \(.*\)$", "", method), "hist"):
        if candidate in xgboost:
            return xgboost[candidate]
    return next(iter(xgboost.values())) if len(xgboost) == 1 else None


@pytest.mark.parametrize("path", sorted(
    (ROOT / "benchmarks" / "results").glob("*.json")), ids=lambda p: p.stem)
def test_benchmark_tables_show_their_result_files(site, path):
    """Each result file's table (found by its caption: task and command)
    has a row per record with the file's fit seconds (predict seconds in a
    file that timed no fit), and the ratios to XGBoost's run of the same
    method computed here from the file."""
    import json

    meta = json.loads(path.read_text())
    tables = _html_tables((site / "benchmarks.html").read_text())
    by_task = {}
    for record in meta["results"]:
        by_task.setdefault(record["task"], []).append(record)
    for task, records in by_task.items():
        found = [rows for caption, rows in tables
                 if caption.startswith(task) and meta["command"] in caption]
        assert len(found) == 1, (task, meta["command"])
        header, *rows = found[0]
        assert len(rows) == len(records)
        time = ("fit_s" if any(r.get("fit_s") for r in records)
                else "predict_s")
        name = time.split("_")[0]
        seconds = header.index(f"{name} s")
        ratio = header.index(f"{name} / XGBoost same method")
        for record, row in zip(records, rows):
            assert row[:2] == [LIBRARY_NAMES.get(record["library"],
                                                 record["library"]),
                               record["method"]]
            assert float(row[seconds]) == pytest.approx(record[time],
                                                        rel=5e-3)
            base = _xgboost_reference(records, record["method"], time)
            if base is None:
                assert row[ratio] == ""
            else:
                assert float(row[ratio]) == pytest.approx(
                    record[time] / base, abs=0.006)
            _check_optional_cells(meta, records, record, header, row)


def _number(text):
    return float(text.replace(",", ""))


def _check_optional_cells(meta, records, record, header, row):
    """The columns a file has only in some benchmarks: the fit's busy
    cores, a prediction's single-row latency (and its ratio to XGBoost's)
    and throughput, and the metric under the file's name for it."""
    metric_title = meta.get("metric_name") or {
        "classification": "ROC AUC", "regression": "RMSE"}.get(
        record["task"])
    expected = {
        "fit CPU": (record.get("fit_cores"), {"abs": 0.006}),
        "1 row µs": (record.get("latency_s") and record["latency_s"] * 1e6,
                     {"abs": 0.06}),
        "rows/s": (record.get("rows_per_s"), {"abs": 1}),
        # six decimals (ROC AUC) or six significant digits
        metric_title: (record.get("metric"), {"abs": 1e-6, "rel": 1e-5})}
    latency = record.get("latency_s")
    base = _xgboost_reference(records, record["method"], "latency_s")
    if latency is not None and base:
        expected["1 row / XGBoost same method"] = (latency / base,
                                                   {"abs": 0.006})
    for title, (value, tolerance) in expected.items():
        if value is None:
            continue
        assert title in header, (title, header)
        assert _number(row[header.index(title)]) == pytest.approx(
            value, **tolerance), (title, record)


def test_serving_page_tables_show_the_latency_results(site):
    """The serving page's latency table has a row per library and method
    of ``benchmarks/results/serving/serving.json`` with the median
    microseconds of a call for each number of rows, and its batch table a
    row per batch record with its seconds."""
    import json

    result = ROOT / "benchmarks" / "results" / "serving" / "serving.json"
    # committed with the page it feeds (bench_latency.py --json)
    assert result.is_file(), f"{result} is missing"
    meta = json.loads(result.read_text())
    tables = _html_tables((site / "user_guide" / "serving.html").read_text())
    latency = [r for r in meta["results"] if r["task"] == "latency"]
    batch = [r for r in meta["results"] if r["task"] == "batch"]
    (header, *rows), = [rows for caption, rows in tables
                        if caption.startswith("latency")]
    # (Sphinx's smart quotes: "skboost's" is typeset "skboost’s")
    cells = {(row[0], row[1].replace("\u2019", "'")): row for row in rows}
    assert len(cells) == len({(r["library"], r["method"]) for r in latency})
    for r in latency:
        row = cells[(LIBRARY_NAMES.get(r["library"], r["library"]),
                     r["method"])]
        title = f"{r['rows']:,} row{'s' * (r['rows'] > 1)} µs"
        assert _number(row[header.index(title)]) == pytest.approx(
            r["predict_s"] * 1e6, abs=0.06, rel=5e-3), (title, r)
    (header, *rows), = [rows for caption, rows in tables
                        if caption.startswith("batch")]
    assert len(rows) == len(batch)
    for r, row in zip(batch, rows):
        assert float(row[header.index("predict s")]) == pytest.approx(
            r["predict_s"], rel=5e-3)


def test_threads_page_table_shows_the_contention_results(site):
    """The threads page's table has a row per case and load of
    ``benchmarks/results/contention/contention.json`` with each library's
    median seconds, the ratio to its own n_jobs=1 and skboost's ratio to
    XGBoost, computed here from the file's records."""
    import json
    import statistics

    meta = json.loads((ROOT / "benchmarks" / "results" / "contention"
                       / "contention.json").read_text())
    tables = _html_tables(
        (site / "user_guide" / "threads.html").read_text())
    found = [rows for caption, rows in tables
             if meta["command"] in caption]
    assert len(found) == 1
    header, *rows = found[0]
    medians = {}
    for record in meta["results"]:
        assert record["seconds"] == pytest.approx(
            statistics.median(record["runs"]))
        medians.setdefault((record["case"], record["load"]), {})[
            record["contender"]] = record["seconds"]
    assert len(rows) == len(medians)
    columns = {"skboost": "skboost", "XGBoost": "xgboost",
               "LightGBM": "lightgbm"}
    for row, (key, times) in zip(rows, medians.items()):
        assert row[1] == key[1]
        for title, library in columns.items():
            seconds, *ratio = row[header.index(title)].split()
            assert float(seconds) == pytest.approx(times[library], abs=6e-4)
            single = times.get(f"{library} n_jobs=1")
            if single:
                assert float(ratio[0].strip("()")) == pytest.approx(
                    times[library] / single, abs=0.006)
        assert float(row[header.index("skboost / XGBoost")]) == \
            pytest.approx(times["skboost"] / times["xgboost"], abs=0.006)


def test_dask_page_table_shows_the_recovery_results(site):
    """The Dask page's recovery table has a row per case of
    ``benchmarks/results/recovery/dask_recovery.json`` with its figures,
    the recovery's cost the sum of its parts and the bound checked here
    from the file's records."""
    import json

    meta = json.loads((ROOT / "benchmarks" / "results" / "recovery"
                       / "dask_recovery.json").read_text())
    tables = _html_tables((site / "user_guide" / "dask.html").read_text())
    found = [rows for caption, rows in tables
             if meta["command"] in caption]
    assert len(found) == 1
    header, *rows = found[0]
    assert len(rows) == len(meta["results"])
    for row, record in zip(rows, meta["results"]):
        assert row[0] == record["case"]
        for title, key in (("lost (s)", "lost_s"), ("set-up (s)", "setup_s"),
                           ("round (s)", "round_s")):
            assert float(row[header.index(title)]) == pytest.approx(
                record[key], abs=0.006)
        cost = record["lost_s"] + record["setup_s"]
        assert float(row[header.index("recovery = lost + set-up (s)")]) == \
            pytest.approx(cost, abs=0.011)
        met = cost <= record["round_s"] + 2.0
        assert row[header.index("bound: round + 2 s")].endswith(
            "(met)" if met else "(not met)")
        assert row[header.index("same model")] == (
            "yes" if record["identical"] else "NO")


def test_ranking_page_table_shows_the_convergence_results(site):
    """The ranking page's NDCG-at-convergence table has a row per
    contender of ``benchmarks/results/ranking_convergence/
    ranking_convergence.json`` with each case's mean test NDCG@10 and its
    standard error (both checked here against the file's per-seed
    figures) and its difference to the best of XGBoost's and LightGBM's
    defaults, computed here."""
    import json

    import numpy

    meta = json.loads((ROOT / "benchmarks" / "results" / "ranking_convergence"
                       / "ranking_convergence.json").read_text())
    tables = _html_tables((site / "user_guide" / "ranking.html").read_text())
    found = [rows for caption, rows in tables if meta["command"] in caption]
    assert len(found) == 1
    header, *rows = found[0]
    records = meta["results"]
    names = list(dict.fromkeys(r["contender"] for r in records))
    # (the page shows the names' apostrophes as typographic ones)
    shown = [row[0].replace("\u2019", "'") for row in rows]
    assert shown == names
    for name, row in zip(shown, rows):
        for record in (r for r in records if r["contender"] == name):
            case = record["case"]
            assert record["ndcg10"] == pytest.approx(
                sum(record["ndcg10_per_seed"])
                / len(record["ndcg10_per_seed"]), abs=1e-12)
            seeds = numpy.asarray(record["ndcg10_per_seed"])
            assert record["ndcg10_sem"] == pytest.approx(
                seeds.std(ddof=1) / numpy.sqrt(seeds.shape[0]), abs=1e-12)
            cell = row[header.index(f"{case} s.e.")]
            assert float(cell) == pytest.approx(record["ndcg10_sem"],
                                                abs=6e-5)
            best = max(r["ndcg10"] for r in records if r["case"] == case
                       and r["library"] in ("xgboost", "lightgbm")
                       and not r["params"])
            cell = row[header.index(f"{case} NDCG@10")]
            assert float(cell) == pytest.approx(record["ndcg10"], abs=6e-5)
            cell = row[header.index(f"{case} vs best peer")]
            assert float(cell) == pytest.approx(record["ndcg10"] - best,
                                                abs=6e-5)


def test_math_is_served_by_the_site_itself(site):
    page = (site / "user_guide" / "model.html").read_text()
    scripts = re.findall(r'<script[^>]*src="([^"?]*mathjax[^"?]*)', page,
                         flags=re.IGNORECASE)
    assert scripts == ["../_static/mathjax/tex-chtml.js"], scripts
    assert "cdn.jsdelivr" not in page and "://" not in scripts[0]
    static = site / "_static" / "mathjax"
    assert (static / "tex-chtml.js").stat().st_size > 500_000
    fonts = list((static / "output" / "chtml" / "fonts" / "woff-v2")
                 .glob("*.woff"))
    assert len(fonts) > 10


def _example_output(site, name):
    """The printed output of an example, as its gallery page shows it."""
    page = (site / "auto_examples" / f"{name}.html").read_text()
    blocks = re.findall(r'sphx-glr-script-out.*?<pre>(.*?)</pre>', page,
                        flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", "\n".join(blocks)))


def _example_files(site, name):
    """The directory the gallery gave an example as its argument, with
    the files it wrote (doc/_scripts/gallery_argv.py)."""
    return site.parent / "example_output" / name


def test_figure_3_local_proposals_need_fewer_candidates(site):
    out = _example_output(site, "approx_proposals")
    exact = float(re.search(r"exact greedy: test AUC ([0-9.]+)", out)[1])
    auc = {int(b): (float(g), float(l)) for b, g, l in re.findall(
        r"max_bin +(\d+): global ([0-9.]+), local ([0-9.]+)", out)}
    assert sorted(auc) == [2, 4, 8, 16, 64, 256], out
    for few in (2, 4):
        assert auc[few][1] > auc[few][0] + 0.01, out
    # with many candidates both proposals reach the exact method's accuracy
    assert abs(auc[256][0] - exact) < 0.015 and abs(auc[256][1] - exact) \
        < 0.015, out


def test_tree_methods_accuracy_against_max_bin(site):
    out = _example_output(site, "tree_methods")
    exact = float(re.search(r"exact: fit [0-9.]+ s, test RMSE ([0-9.]+)",
                            out)[1])
    rmse = {(m, int(b)): float(r) for m, b, r in re.findall(
        r"(hist|approx), max_bin +(\d+): fit [0-9.]+ s, test RMSE ([0-9.]+)",
        out)}
    for method in ("hist", "approx"):
        assert rmse[method, 4] > 1.5 * exact, out
        assert rmse[method, 256] < 1.05 * exact, out


def test_early_stopping_example_stops_at_the_best_round(site):
    out = _example_output(site, "early_stopping")
    rounds, best = map(int, re.search(
        r"stopped after (\d+) rounds; best_iteration (\d+)", out).groups())
    assert rounds == best + 21, out
    full, stopped, cut = map(float, re.search(
        r"all 400 rounds ([0-9.]+); early-stopped model ([0-9.]+); the full "
        r"model cut at the same round ([0-9.]+)", out).groups())
    assert stopped < full and stopped == cut, out


def test_sparse_and_categorical_examples(site):
    out = _example_output(site, "sparse_data")
    assert 'sparse_absent="zero" gives the dense model: True' in out, out
    out = _example_output(site, "categorical_data")
    assert "categories in another order: True" in out, out
    auc = dict(re.findall(r"(native categorical|integer codes): fit "
                          r"[0-9.]+ s, test AUC ([0-9.]+)", out))
    assert float(auc["native categorical"]) > float(auc["integer codes"]), out


# --- the examples' own checks, on the gallery's run ------------------------
# The gallery runs every example once; these check what each printed (on its
# page) and wrote (_example_files) in that run, instead of running it again.
# tests/test_examples.py keeps the runs the gallery does not make (no
# argument, another data folder) and the quick-start page's check.

def test_quickstart_example_prints_metrics(site):
    out = _example_output(site, "quickstart")
    for line in ("classifier test accuracy:", "classifier test ROC AUC:",
                 "regressor test RMSE:", "regressor test R^2:"):
        assert line in out, out
    accuracy = float(re.search(r"classifier test accuracy:\s*([0-9.]+)",
                               out).group(1))
    assert accuracy > 0.9, out


def test_pandas_workflow_example_saves_a_model(site):
    """The DataFrame example: accuracy, early stopping, an identical
    reloaded model, a valid saved file and a non-empty plot."""
    out = _example_output(site, "pandas_workflow")
    out_dir = _example_files(site, "pandas_workflow")
    assert f"output directory: {out_dir}" in out, out
    assert "identical predictions after loading: True" in out, out
    kept, total = map(int, re.search(r"early stopping kept (\d+) of (\d+) "
                                      r"rounds", out).groups())
    assert kept < 500 and total < 500, out
    accuracy = float(re.search(r"test accuracy:\s*([0-9.]+)", out).group(1))
    assert accuracy > 0.9, out
    from skboost import BoostClassifier

    loaded = BoostClassifier.load(out_dir / "model.json")
    assert "clinic" in loaded.feature_names_in_
    if "importance plot skipped" not in out:
        assert (out_dir / "importance.png").stat().st_size > 2000


def test_ranking_example_ranks_on_the_shared_data(site):
    """The ranking example on the repository's LETOR sample (the data
    folder's; tests/test_examples.py runs it without the files)."""
    out = _example_output(site, "ranking")
    assert "not found" not in out, out
    check_ranking_output(out)


def test_deploy_onnx_example_matches_skboost(site):
    """The deployment example: ONNX alone, a pipeline and Treelite predict
    as skboost does."""
    out = _example_output(site, "deploy_onnx")
    assert out.count("labels equal: True") == 2, out
    for difference in re.findall(r"difference ([0-9.e+-]+)", out):
        assert float(difference) < 1e-5, out
    assert (_example_files(site, "deploy_onnx") / "pipeline.onnx").is_file()


def test_monotone_constraints_example(site):
    """The constraints example: the constrained price never falls with the
    area, the unconstrained one does, age shifts every price equally, and
    the plot is written."""
    out = _example_output(site, "monotone_constraints")
    assert "constrained: price falls with area for 0 of 200 flats" in out
    falls = int(re.search(r"unconstrained: price falls with area for (\d+)",
                          out).group(1))
    assert falls > 0, out
    low, high = map(float, re.search(
        r"effect of age 10 -> 80 years: ([-0-9.]+) \.\. ([-0-9.]+)",
        out).groups())
    assert low == high != 0.0, out
    out_dir = _example_files(site, "monotone_constraints")
    assert (out_dir / "monotone_pdp.png").stat().st_size > 10_000


def test_explain_shap_example_saves_plots(site):
    """The SHAP example: contributions adding up to the predictions, and
    the two plots written (the docs build needs shap: site)."""
    out = _example_output(site, "explain_shap")
    gap = float(re.search(r"add up to the predictions: max gap (\S+)",
                          out).group(1))
    assert gap < 1e-6, out
    assert "strongest interaction:" in out, out
    for name in ("shap_beeswarm.png", "shap_waterfall.png"):
        assert (_example_files(site, "explain_shap") / name).stat().st_size \
            > 1000, out


def test_multi_output_example(site):
    """The multi-output example: the same predictions as
    MultiOutputRegressor, sensible errors, a one-round forest."""
    out = _example_output(site, "multi_output")
    assert "the same predictions as MultiOutputRegressor: True" in out, out
    rmses = [float(v) for v in re.findall(r"test RMSE ([0-9.]+)", out)]
    assert len(rmses) == 4 and max(rmses) < 0.5, out
    f1 = float(re.search(r"test micro-F1 ([0-9.]+)", out).group(1))
    assert f1 > 0.6, out
    assert "1 round of 100 trees" in out, out


def test_out_of_core_example_matches_in_core(site):
    """The out-of-core example trains the in-core model from chunk files."""
    out = _example_output(site, "out_of_core")
    assert "same predictions: True" in out, out
    auc = float(re.search(r"test AUC ([0-9.]+)", out).group(1))
    assert auc > 0.95, out


def test_survival_example_matches_xgboost(site):
    out = _example_output(site, "survival_analysis")
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    ours = float(lines["Cox"].split("concordance ")[1].split()[0])
    assert 0.6 < ours < 0.8      # clearly better than chance (0.5)
    if "XGBoost Cox" in lines:
        theirs = float(lines["XGBoost Cox"].split("concordance ")[1])
        assert ours >= theirs - 0.005


def test_uncertainty_example(site):
    """The uncertainty example: conformal coverage within what the
    guarantee allows for 89 test rows (the coverage of one calibration set
    is Beta distributed: a loose band), distributions with varying spread."""
    out = _example_output(site, "uncertainty")
    coverages = [float(v) for v in re.findall(r"coverage ([0-9.]+)%", out)]
    assert len(coverages) == 2 and all(75 < c <= 100 for c in coverages), out
    low, high = map(float, re.search(
        r"standard deviations: ([0-9.]+) to ([0-9.]+)", out).groups())
    assert 0 < low < high, out


def test_dask_example_matches_single_node(site):
    """The Dask example (tests/test_dask.py tests the engine itself)."""
    out = _example_output(site, "dask_training")
    assert "identical to BoostClassifier: True" in out, out
    accuracy = float(out.split("training accuracy:")[1].split()[0])
    assert accuracy > 0.8, out


def _expected_front_page():
    """The front page's speed table computed here from the result files:
    {(row title prefix, library name): cell text}, each time a ratio to
    XGBoost's hist in the same file and task."""
    import json

    def load(stem):
        return json.loads((ROOT / "benchmarks" / "results"
                           / f"{stem}.json").read_text())["results"]

    def ratio(records, task, library, method, field="fit_s"):
        xgb = next(r for r in records if r["library"] == "xgboost"
                   and r["method"] == "hist" and r["task"] == task)
        own = [r for r in records if r["library"] == library
               and r["task"] == task and (method is None
                                          or r["method"] == method)]
        best = min(own, key=lambda r: r[field])
        value = best[field] / xgb[field]
        text = f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"
        return text if best["method"] == "hist" else \
            f"{text} ({best['method']})"

    hist = load("hist_1m")
    expected = {}
    for library in {r["library"] for r in hist} - {"skboost-base"}:
        method = "hist" if library in ("skboost", "xgboost") else None
        name = LIBRARY_NAMES.get(library, library)
        expected["fit time, 1,000,000", name] = " / ".join(
            ratio(hist, task, library, method)
            for task in ("classification", "regression"))
        expected["predict time", name] = ratio(
            hist, "classification", library, method, "predict_s")
    sparse = load("sparse")
    expected["fit time, sparse", "skboost"] = ratio(
        sparse, "classification", "skboost", None)
    expected["fit time, sparse", "LightGBM"] = ratio(
        sparse, "classification", "lightgbm", None)
    return expected


def _front_page_cells(rows):
    """{(row title, column title): text} of a table given as rows."""
    header = rows[0]
    return {(row[0], title): text for row in rows[1:]
            for title, text in zip(header[1:], row[1:])}


def _matching(cells, prefix, name):
    return [text for (title, column), text in cells.items()
            if title.startswith(prefix) and column == name]


def test_front_page_table_is_generated_from_result_files(tmp_path):
    """The front page types no time: it includes the generated table,
    whose cells are the ratios computed here from the result files."""
    index = (ROOT / "doc" / "index.rst").read_text()
    assert ".. include:: _build_charts/front_page_table.inc" in index
    assert not re.search(r"\d\.\d\d\b", index), "a figure typed in index.rst"
    sys.path.insert(0, str(ROOT / "doc" / "_scripts"))
    try:
        import bench_tables
    finally:
        sys.path.remove(str(ROOT / "doc" / "_scripts"))
    text = bench_tables.write_front_page(output_dir=tmp_path).read_text()
    rows = []   # the list-table's rows: "* - first cell", "  - next"
    for line in text.splitlines():
        if line.startswith("   * -"):
            rows.append([line[len("   * -"):].strip()])
        elif line.startswith("     -"):
            rows[-1].append(line[len("     -"):].strip())
    cells = _front_page_cells(rows)
    for (prefix, name), value in _expected_front_page().items():
        assert _matching(cells, prefix, name) == [value], (prefix, name)


def test_readme_speed_table_is_generated_from_result_files():
    """The README's speed table is the one the result files give (its
    cells the ratios computed here), and its Performance section types no
    ratio outside it."""
    sys.path.insert(0, str(ROOT / "doc" / "_scripts"))
    try:
        import bench_tables
    finally:
        sys.path.remove(str(ROOT / "doc" / "_scripts"))
    readme = (ROOT / "README.md").read_text()
    start = readme.index(bench_tables.README_BEGIN)
    end = readme.index(bench_tables.README_END)
    lines = [line for line in readme[start:end].splitlines()
             if line.startswith("|")]
    assert lines == bench_tables.readme_table(), (
        "stale: run python doc/_scripts/bench_tables.py --readme")
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in lines if not line.startswith("| ---")]
    cells = _front_page_cells(rows)
    for (prefix, name), value in _expected_front_page().items():
        assert _matching(cells, prefix, name) == [value], (prefix, name)
    section = readme[readme.index("## Performance"):start]
    section += readme[end:readme.index("## Documentation")]
    assert not re.search(r"\d\.\d\dx", section), "a ratio typed in README"


def test_front_page_shows_the_result_files(site):
    """The built front page's speed table holds the same ratios."""
    page = (site / "index.html").read_text()
    tables = [rows for _, rows in _html_tables(page)
              if rows and "hessboost" in rows[0]]
    assert len(tables) == 1
    cells = _front_page_cells(tables[0])
    for (prefix, name), value in _expected_front_page().items():
        assert _matching(cells, prefix, name) == [value], (prefix, name)


# ---------------------------------------------------------------------------
# No measured figure typed by hand: the benchmarks page and the user guide
# quote measurements only through files generated from benchmarks/results
# (tables, charts, and the one-line summaries of bench_tables.py), pulled in
# with ``.. include::``. History (what an earlier version measured) lives in
# CHANGELOG.md's dated "Benchmark records".

# A ratio (0.41x), a time, size or rate with its unit (140 s, 4.5 ns,
# 224 MB, 1.5 GB/s), a percentage (45%), a decimal "times" (1.46 times), or
# a metric written to four decimals or more (0.9555).
TYPED_FIGURE = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)*"
    r"(?:x\b|\s?%|\s?(?:s|ms|us|µs|ns|B|KB|kB|KiB|MB|MiB|GB|GiB)(?:/s)?\b"
    r"|\s(?:(?:nano|micro|milli)?seconds|minutes)\b)"
    r"|(?<![\w.])\d+\.\d+\stimes\b"
    r"|(?<![\w.])0\.\d{4,}\b")
# directives whose bodies are code, generated files or pictures, not prose
NOT_PROSE = ("code-block", "code", "sourcecode", "literalinclude",
             "include", "image", "figure", "math", "raw", "testcode",
             "testoutput", "doctest", "plot", "autosummary")
# figures that are inputs (configuration, data sets, tolerances of the
# tests, defaults), not measurements: (page, phrase holding the figure)
CONFIGURATION = [
    ("benchmarks.rst", "0.5% of the entries stored"),
    ("benchmarks.rst", "drawn from 10% of the columns"),
    ("benchmarks.rst", "2% missing"),
    ("benchmarks.rst", "A block of 500-feature rows"),
    ("dask.rst", "no worker left in the cluster for 10 s"),
    ("dask.rst", "not recomputed within 300 s"),
    ("dask.rst", "redone plus 2 s"),
    ("dask.rst", "opened within 10 s"),
    ("dask.rst", "up to 32 MiB are kept for reuse"),
    ("dask.rst", "every block above 128 KiB"),
    ("dask.rst", "is refreshed every 2 s"),    # distributed's own refresh
    ("dask.rst", "at most 5 s more"),          # train.SETTLE_SECONDS
    ("out_of_core.rst", "1.5 MiB by default"),
    ("threads.rst", "windows of at least 0.1 s"),
    ("random_forests.rst", "within 2% of XGBoost's"),
    ("uncertainty.rst", "Conformal: 90% intervals"),
]
FIGURE_PAGES = ["benchmarks.rst"] + sorted(
    f"user_guide/{page.name}"
    for page in (ROOT / "doc" / "user_guide").glob("*.rst"))


def _prose(text):
    """The prose of an rST page: its paragraphs (whitespace collapsed)
    without literal blocks (after "::"), the bodies of NOT_PROSE
    directives, comments and targets, inline literals and roles."""
    kept, skip_indent = [], None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if not line.strip() or indent > skip_indent:
                continue
            skip_indent = None
        stripped = line.strip()
        directive = re.match(r"\.\.\s+([\w-]+)::", stripped)
        if stripped.startswith("..") and (
                directive is None or directive.group(1) in NOT_PROSE):
            skip_indent = indent   # a comment, target or code: skip body
            continue
        if directive is not None:   # a prose directive (note, list-table)
            kept.append(stripped[directive.end():])
            continue
        kept.append(line)
        if stripped.endswith("::"):
            skip_indent = indent
    prose = "\n".join(kept)
    prose = re.sub(r"``.+?``", "``code``", prose, flags=re.S)
    prose = re.sub(r":[\w:]+:`[^`]*`", "`role`", prose)
    return " ".join(prose.split())


def typed_figures(text, page):
    """The measured figures typed in the prose of ``text`` (the rST of
    doc/``page``), with a little context each; empty when there is none."""
    prose = _prose(text)
    for name, phrase in CONFIGURATION:
        if page.endswith(name):
            prose = prose.replace(phrase, "")
    return [prose[max(m.start() - 40, 0):m.end() + 20]
            for m in TYPED_FIGURE.finditer(prose)]


@pytest.mark.parametrize("page", FIGURE_PAGES)
def test_no_measured_figure_typed_in_the_docs(page):
    """Figures on the benchmarks page and in the user guide come from
    result files (included .inc files), never from the page's own text."""
    found = typed_figures((ROOT / "doc" / page).read_text(), page)
    assert not found, (f"doc/{page} types measured figures; use the "
                       f"generated tables and summaries of "
                       f"doc/_scripts/bench_tables.py: {found}")


def test_typed_figure_check_catches_the_old_page():
    """The check flags the kinds of figure the benchmarks page used to type
    (sentences of its earlier text, a hand-typed table) and nothing in a
    literal block, an include or an inline literal."""
    typed = """\
The exact method on the dense classification case above took 140 s
against XGBoost's 314 s the same day (0.45x; 0.39x in a run before).

Measured in the process: building histograms is about 45% of a fit, at
0.32 ns per row and feature update; 224 MB a level on 1,000,000 x 28.

skboost.dask took 2.10 s, **1.46 times single-node skboost**.

======================  ========  =========
library                 seed 0    seed 1
======================  ========  =========
skboost                 0.9555    0.9554
======================  ========  =========
"""
    assert len(typed_figures(typed, "benchmarks.rst")) == 11
    untouched = """\
Run it::

    python benchmarks/bench_hist.py  # 0.41x in 140 s

.. include:: _build_charts/hist_1m_classification_summary.inc

.. code-block:: text

   fit 7.06 s, ROC AUC 0.989998 (45%)

``subsample=0.8`` draws 1,000,000 x 28 rows with ``max_bin=256``.
"""
    assert typed_figures(untouched, "benchmarks.rst") == []


def test_summaries_are_computed_from_the_result_files(tmp_path):
    """Each result file's summary quotes skboost's time over the fastest
    other library of the same case and over skboost-base, as computed here
    from the file (checked on the dense hist case)."""
    import json
    sys.path.insert(0, str(ROOT / "doc" / "_scripts"))
    try:
        import bench_tables
    finally:
        sys.path.remove(str(ROOT / "doc" / "_scripts"))
    written = bench_tables.write_summaries(output_dir=tmp_path)
    meta = json.loads((ROOT / "benchmarks" / "results"
                       / "hist_1m.json").read_text())
    for task in ("classification", "regression"):
        records = [r for r in meta["results"] if r["task"] == task]
        mine = next(r for r in records if r["library"] == "skboost")
        base = next(r for r in records if r["library"] == "skboost-base")
        fastest = min((r for r in records
                       if r["library"] not in ("skboost", "skboost-base")),
                      key=lambda r: r["fit_s"])
        text = (tmp_path / f"hist_1m_{task}_summary.inc").read_text()
        name = LIBRARY_NAMES[fastest["library"]]
        assert f"{mine['fit_s'] / fastest['fit_s']:.2f}x the time of " \
               f"{name}," in text, text
        assert f"{mine['fit_s'] / base['fit_s']:.2f}x the time of " \
               f"skboost-base" in text, text
        if task == "classification":
            side = "above" if mine["metric"] > fastest["metric"] else "below"
            difference = abs(mine["metric"] - fastest["metric"])
            shown = (f"{difference:.4f}" if difference >= 1e-3
                     else f"{difference:.1g}")
            assert f"ROC AUC {shown} {side} {name}'s" in text, text
    names = {path.name for path in written}
    for result in (ROOT / "benchmarks" / "results").glob("*.json"):
        tasks = {r["task"] for r in json.loads(result.read_text())["results"]}
        assert {f"{result.stem}_{task}_summary.inc"
                for task in tasks} <= names, result.name


def test_every_summary_is_on_a_page():
    """Every table of a result file on the benchmarks page has its
    summary beside it."""
    page = (ROOT / "doc" / "benchmarks.rst").read_text()
    for table in re.findall(r"_build_charts/(\w+)_table\.inc", page):
        assert f"_build_charts/{table}_summary.inc" in page, table


def test_a_chart_without_an_xgboost_record_is_a_clear_error(tmp_path):
    """The charts are ratios to XGBoost's record of the task: a result file
    without one names itself instead of failing inside matplotlib."""
    pytest.importorskip("matplotlib")
    sys.path.insert(0, str(ROOT / "doc" / "_scripts"))
    try:
        import plot_benchmarks
    finally:
        sys.path.remove(str(ROOT / "doc" / "_scripts"))
    records = [{"library": "skboost", "method": "hist", "fit_s": 1.0}]
    with pytest.raises(ValueError, match="sparse_dask classification"):
        plot_benchmarks.draw_case(records, "sparse_dask classification",
                                  tmp_path / "chart.png")
    records.append({"library": "xgboost", "method": "hist", "fit_s": 2.0})
    plot_benchmarks.draw_case(records, "sparse_dask classification",
                              tmp_path / "chart.png")
    assert (tmp_path / "chart.png").stat().st_size > 1000
