"""The NDCG-at-convergence table of the ranking page
(``doc/user_guide/ranking.rst``), written from the result file of
``benchmarks/bench_ranking_convergence.py --json``
(``benchmarks/results/ranking_convergence/ranking_convergence.json``) into
``doc/_build_charts/ranking_convergence_table.inc`` at every documentation
build (``doc/conf.py``); no benchmark runs during the build.

A row per contender: its test NDCG@10 on each case (the mean over the
seeds, and its standard error where the file has it), and the difference
to the best of XGBoost's and LightGBM's defaults on that case (the bar:
a peer's row with other parameters is shown, not compared with).

Run it alone with ``python doc/_scripts/ranking_table.py [RESULT_FILE
[OUTPUT_FILE]]``.
"""

import json
import sys
from pathlib import Path

from plot_benchmarks import OUTPUT, ROOT

RESULT = (ROOT / "benchmarks" / "results" / "ranking_convergence"
          / "ranking_convergence.json")
TARGET = OUTPUT / "ranking_convergence_table.inc"
REFERENCES = ("xgboost", "lightgbm")


def best_reference(records, case):
    """The best test NDCG@10 of XGBoost's and LightGBM's defaults on
    ``case``."""
    return max(r["ndcg10"] for r in records
               if r["case"] == case and r["library"] in REFERENCES
               and not r["params"])


def cases_of(records):
    return list(dict.fromkeys(r["case"] for r in records))


def rows(records):
    """[contender, then per case: NDCG@10, its standard error, difference
    to the best reference] for each contender, in the file's order."""
    cases = cases_of(records)
    out = []
    for name in dict.fromkeys(r["contender"] for r in records):
        cells = [name]
        for case in cases:
            record = next(r for r in records
                          if r["contender"] == name and r["case"] == case)
            sem = record.get("ndcg10_sem")
            cells += [f"{record['ndcg10']:.4f}",
                      "" if sem is None else f"{sem:.4f}",
                      f"{record['ndcg10'] - best_reference(records, case):+.4f}"]
        out.append(cells)
    return out


def render(meta):
    """The rST list-table of a result file."""
    records, args = meta["results"], meta.get("args", {})
    cases = cases_of(records)
    header = ["contender"] + [f"{case} {what}" for case in cases
                              for what in ("NDCG@10", "s.e.",
                                           "vs best peer")]
    caption = (f"``{meta['command']}``, {meta.get('date', '')}: test "
               f"NDCG@10 at early stopping (patience "
               f"{args.get('patience', '?')}), letor-like: "
               f"{args.get('n_queries', 0):,} training queries, mean of "
               f"{len(args.get('seeds', []))} data sets; letor-sample: mean "
               f"of {len(args.get('sample_seeds', []))} validation draws")
    lines = [f".. list-table:: {caption}", "   :header-rows: 1",
             "   :class: bench-table", ""]
    for cells in [header] + rows(records):
        lines.append(f"   * - {cells[0]}")
        lines += [f"     - {text}" for text in cells[1:]]
    return "\n".join(lines) + "\n"


def write_table(result=RESULT, target=TARGET):
    """Write the table of ``result`` to ``target``; the path written."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(result) as f:
        target.write_text(render(json.load(f)))
    return target


if __name__ == "__main__":
    print(write_table(*sys.argv[1:3]))
