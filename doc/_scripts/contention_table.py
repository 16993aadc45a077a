"""The table of the threads page (``doc/user_guide/threads.rst``), written
from the result file of ``benchmarks/contention.py --json``
(``benchmarks/results/contention/contention.json``) into
``doc/_build_charts/contention_table.inc`` at every documentation build
(``doc/conf.py``); no benchmark runs during the build.

A row per case and load: each library's median seconds with its default
``n_jobs``, and in brackets its ratio to its own ``n_jobs=1`` (the grid
search runs the defaults only); skboost's ratio to XGBoost's default.

Run it alone with ``python doc/_scripts/contention_table.py [RESULT_FILE
[OUTPUT_FILE]]``.
"""

import json
import sys
from pathlib import Path

from plot_benchmarks import OUTPUT, ROOT

RESULT = ROOT / "benchmarks" / "results" / "contention" / "contention.json"
TARGET = OUTPUT / "contention_table.inc"

CASE_TITLES = {
    "small": "5,000 x 20, 100 trees of depth 6",
    "medium": "100,000 x 28, 30 trees of depth 8",
    "grid": "``GridSearchCV(n_jobs=2)``, 12 fits of 50 trees on 5,000 x 20",
}
COLUMNS = [("skboost", "skboost"), ("skboost-base", "skboost before"),
           ("xgboost", "XGBoost"), ("lightgbm", "LightGBM")]


def medians(results):
    """{(case, load): {contender: median seconds}}, in the file's order."""
    rows = {}
    for record in results:
        key = record["case"], record["load"]
        rows.setdefault(key, {})[record["contender"]] = record["seconds"]
    return rows


def cell(times, library):
    """"seconds (ratio to the library's own n_jobs=1)", or the seconds
    alone when the case ran no n_jobs=1 fit, or empty."""
    seconds = times.get(library)
    if seconds is None:
        return ""
    single = times.get(f"{library} n_jobs=1")
    if single:
        return f"{seconds:.3f} ({seconds / single:.2f})"
    return f"{seconds:.3f}"


def render(meta):
    """The rST list-table of a result file."""
    rows = medians(meta["results"])
    present = [(library, title) for library, title in COLUMNS
               if any(library in times for times in rows.values())]
    header = (["case", "load"] + [title for _, title in present]
              + ["skboost / XGBoost"])
    body = []
    for (case, load), times in rows.items():
        ratio = (f"{times['skboost'] / times['xgboost']:.2f}"
                 if times.get("skboost") and times.get("xgboost") else "")
        body.append([CASE_TITLES.get(case, case), load]
                    + [cell(times, library) for library, _ in present]
                    + [ratio])
    env = meta.get("environment", {})
    caption = (f"``{meta['command']}``, {meta.get('date', '')}, "
               f"{env.get('cpus', '?')} CPUs: median seconds of the default "
               "n_jobs (its ratio to n_jobs=1)")
    lines = [f".. list-table:: {caption}", "   :header-rows: 1",
             "   :class: bench-table", ""]
    for row in [header] + body:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {text}" if text else "     -" for text in row[1:]]
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
