"""Charts of the benchmarks page, drawn from the result files that the
benchmark scripts write (``python benchmarks/bench_hist.py --json
benchmarks/results/hist_1m.json`` and so on; see benchmarks/README.md).

Each result file becomes one chart per task: the fit time of every library
and method relative to XGBoost's, and the peak memory the fit adds relative
to XGBoost's where it was measured. The reference is XGBoost's run of the
same method, or its ``hist`` method where XGBoost has no such method (as in
the tables of the page). ``doc/conf.py`` calls :func:`draw_all` at every
documentation build, so a new result file updates the charts; no benchmark
runs during the build.

Run it alone with ``python doc/_scripts/plot_benchmarks.py [RESULTS_DIR
[OUTPUT_DIR]]``.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
OUTPUT = ROOT / "doc" / "_build_charts"

NAMES = {"skboost": "skboost", "xgboost": "XGBoost", "lightgbm": "LightGBM",
         "sklearn": "scikit-learn", "hessboost": "hessboost"}
COLORS = {"skboost": "#1f77b4", "xgboost": "#7f7f7f", "lightgbm": "#2ca02c",
          "sklearn": "#ff7f0e", "hessboost": "#d62728",
          "skboost-base": "#9ecae1"}   # a build before a change (--baseline)


def load_results(path):
    """The records of one result file, grouped by task."""
    with open(path) as f:
        records = json.load(f)["results"]
    by_task = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    return by_task


def reference(records, method, field):
    """XGBoost's value of ``field`` for ``method``, else for the method
    that ``method`` is a variant of ("onnx" for "onnx (ml 3)"), else for
    hist, else for its only method if it ran one."""
    xgboost = {r["method"]: r for r in records if r["library"] == "xgboost"}
    chosen = (xgboost.get(method) or xgboost.get(method.split(" (")[0])
              or xgboost.get("hist"))
    if chosen is None and len(xgboost) == 1:
        chosen = next(iter(xgboost.values()))
    return None if chosen is None else chosen.get(field)


def ratios(records, field):
    """(label, library, ratio to XGBoost) of each record that has ``field``."""
    rows = []
    for record in records:
        value = record.get(field)
        base = reference(records, record["method"], field)
        if value is None or not base:
            continue
        label = f"{NAMES.get(record['library'], record['library'])} " \
                f"{record['method']}"
        rows.append((label, record["library"], value / base))
    return rows


def draw_panel(ax, rows, title):
    labels = [label for label, _, _ in rows][::-1]
    values = [value for _, _, value in rows][::-1]
    colors = [COLORS.get(library, "#9467bd") for _, library, _ in rows][::-1]
    ax.barh(labels, values, color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    for y, value in enumerate(values):
        text = f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"
        ax.text(value, y, f" {text}", va="center", fontsize=9)
    ax.set_xlim(0, max(values) * 1.18)
    ax.set_title(title, fontsize=10)
    ax.tick_params(labelsize=9)
    ax.grid(axis="x", alpha=0.3)


def draw_case(records, title, path):
    """One chart: fit time (or predict time where no fit was timed), the
    single-row latency and the peak memory where measured, relative to
    XGBoost."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(ratios(records, "fit_s"), "fit time / XGBoost's")]
    if not panels[0][0]:   # a prediction benchmark: no fits timed
        panels = [(ratios(records, "predict_s"), "predict time / XGBoost's")]
    if not panels[0][0]:
        raise ValueError(
            f"{title}: no record to chart relative to XGBoost's (the charts "
            "are ratios to an XGBoost record of the same task: run the "
            "benchmark with XGBoost among its libraries)")
    latency = ratios(records, "latency_s")
    if latency:   # prediction of a batch and of one row
        panels = [(panels[0][0], "batch predict time / XGBoost's"),
                  (latency, "1-row latency / XGBoost's")]
    memory = ratios(records, "peak_mb")
    if memory:
        panels.append((memory, "peak memory / XGBoost's"))
    height = 1.4 + 0.3 * len(panels[0][0])
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5, height),
                             squeeze=False, sharey=True)
    for ax, (rows, panel_title) in zip(axes[0], panels):
        draw_panel(ax, rows, panel_title)
    fig.suptitle(title + "  (below 1: less than XGBoost)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


LATENCY_STYLES = {"skboost-base": ":", "xgboost": "--"}


def draw_latency(records, title, path):
    """The serving chart (``bench_latency.py``'s "latency" records):
    microseconds per call against rows per call, one line per library and
    method, both axes logarithmic."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = {}
    for r in records:
        lines.setdefault((r["library"], r["method"]), []).append(
            (r["rows"], r["predict_s"] * 1e6))
    fig, ax = plt.subplots(figsize=(9.0, 4.4))
    for (library, method), points in lines.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                linestyle=LATENCY_STYLES.get(library, "-"),
                label=f"{NAMES.get(library, library)} {method}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows per call")
    ax.set_ylabel("microseconds per call (median)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_all(results_dir=RESULTS, output_dir=OUTPUT):
    """Draw a chart per result file and task into ``output_dir``
    (``<file>_<task>.png``); the paths written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(Path(results_dir).glob("*.json")):
        for task, records in load_results(path).items():
            target = output_dir / f"{path.stem}_{task}.png"
            name = path.stem.replace("_", " ")
            draw_case(records, name if name == task else f"{name}, {task}",
                      target)
            written.append(target)
    return written


# The serving page's result file (benchmarks/bench_latency.py): not on the
# benchmarks page, whose tables have a row per record
SERVING = RESULTS / "serving" / "serving.json"


def draw_serving(result=SERVING, output_dir=OUTPUT):
    """The serving page's two charts: ``serving_latency.png`` (time per
    call against rows per call) and ``serving_batch.png`` (batch time
    relative to XGBoost's); the paths written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if not Path(result).is_file():   # not measured yet: the page says so
        return []
    by_task = load_results(result)
    latency = output_dir / "serving_latency.png"
    batch = output_dir / "serving_batch.png"
    draw_latency(by_task["latency"], "serving: one call", latency)
    rows = max(r.get("n_rows", 0) for r in by_task["batch"])
    draw_case(by_task["batch"], f"serving: a batch of {rows:,} rows", batch)
    return [latency, batch]


if __name__ == "__main__":
    for written in draw_all(*sys.argv[1:3]):
        print(written)
