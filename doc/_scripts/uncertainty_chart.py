"""The uncertainty benchmark's chart and table, from its result file
(``benchmarks/results/uncertainty/uncertainty.json``, written by
``benchmarks/bench_uncertainty.py --json``): no figure typed by hand.

Writes ``doc/_build_charts/uncertainty.png`` (held-out NLL of skboost and
NGBoost, fit-time ratio, coverage and width of the 90% intervals per data
set) and ``uncertainty_table.inc`` (the same figures as an rST table).
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "uncertainty" / "uncertainty.json"
OUTPUT = ROOT / "doc" / "_build_charts"


def load(path=RESULT):
    with open(path) as f:
        return json.load(f)


def _bars(ax, names, series, title, reference=None):
    import numpy as np
    width = 0.8 / len(series)
    x = np.arange(len(names))
    for k, (label, values, color) in enumerate(series):
        ax.bar(x + (k - (len(series) - 1) / 2) * width, values, width,
               label=label, color=color)
    if reference is not None:
        low, high = reference
        ax.axhspan(low, high, color="#2ca02c", alpha=0.15)
    ax.set_xticks(x, names, rotation=30, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7)


def draw(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["results"]
    names = [r["dataset"] for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(11, 3.2))
    # NLL relative to NGBoost's: a difference (it is a log-density)
    _bars(axes[0], names, [
        ("skboost - NGBoost", [r["nll_difference"] for r in rows], "#1f77b4")],
        "held-out NLL difference (below 0: better)")
    axes[0].axhline(0.0, color="black", linewidth=0.8)
    _bars(axes[1], names, [
        ("skboost / NGBoost", [r["time_ratio"] for r in rows], "#1f77b4")],
        "fit time ratio (target <= 0.1)")
    axes[1].axhline(0.1, color="black", linewidth=0.8)
    _bars(axes[2], names, [
        ("skboost CQR", [r["skboost_cqr_coverage"] for r in rows], "#1f77b4"),
        ("MAPIE CQR", [r["mapie_cqr_coverage"] for r in rows], "#7f7f7f"),
        ("skboost split", [r["skboost_split_coverage"] for r in rows],
         "#9ecae1")],
        "coverage of 90% intervals", reference=(0.885, 0.915))
    axes[2].set_ylim(0.8, 1.0)
    _bars(axes[3], names, [
        ("skboost CQR / MAPIE CQR", [r["width_ratio_cqr"] for r in rows],
         "#1f77b4")], "mean width ratio (target <= 1)")
    axes[3].axhline(1.0, color="black", linewidth=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(data):
    header = ["data set", "rows", "NLL skboost", "NLL NGBoost",
              "fit time ratio", "CQR coverage", "MAPIE CQR coverage",
              "split coverage", "CQR width / MAPIE's"]
    lines = [".. list-table::", "   :header-rows: 1", ""]
    cells = [header] + [[
        r["dataset"], f"{r['rows']:,}", f"{r['skboost_nll']:.3f}",
        f"{r['ngboost_nll']:.3f}", f"{r['time_ratio']:.3f}",
        f"{r['skboost_cqr_coverage']:.3f}", f"{r['mapie_cqr_coverage']:.3f}",
        f"{r['skboost_split_coverage']:.3f}", f"{r['width_ratio_cqr']:.3f}"]
        for r in data["results"]]
    for row in cells:
        lines.append("   * - " + row[0])
        lines += [f"     - {cell}" for cell in row[1:]]
    return "\n".join(lines) + "\n"


def write_all(result=RESULT, output_dir=OUTPUT):
    """Draw the chart and write the table; the paths written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    data = load(result)
    chart = output_dir / "uncertainty.png"
    draw(data, chart)
    inc = output_dir / "uncertainty_table.inc"
    inc.write_text(table(data))
    return [chart, inc]


if __name__ == "__main__":
    for written in write_all(*sys.argv[1:3]):
        print(written)
