"""The recovery table of the Dask page (``doc/user_guide/dask.rst``),
written from the result file of ``benchmarks/bench_dask_recovery.py
--json`` (``benchmarks/results/recovery/dask_recovery.json``) into
``doc/_build_charts/recovery_table.inc`` at every documentation build
(``doc/conf.py``); no benchmark runs during the build.

A row per case: the uninterrupted fit and the fit with a worker killed,
the recovery's lost time and set-up, the mean round, the recovery's cost
against the bound (the round redone plus 2 s), and whether the model was
the uninterrupted one bit for bit.

Run it alone with ``python doc/_scripts/recovery_table.py [RESULT_FILE
[OUTPUT_FILE]]``.
"""

import json
import sys
from pathlib import Path

from plot_benchmarks import OUTPUT, ROOT

RESULT = ROOT / "benchmarks" / "results" / "recovery" / "dask_recovery.json"
TARGET = OUTPUT / "recovery_table.inc"

HEADER = ["case", "fit (s)", "fit, worker killed (s)", "lost (s)",
          "set-up (s)", "round (s)", "recovery = lost + set-up (s)",
          "bound: round + 2 s", "same model"]


def row(record):
    return [record["case"], f"{record['fit_s']:.2f}",
            f"{record['killed_fit_s']:.2f}", f"{record['lost_s']:.2f}",
            f"{record['setup_s']:.2f}", f"{record['round_s']:.2f}",
            f"{record['recovery_s']:.2f}",
            f"{record['bound_s']:.2f} "
            f"({'met' if record['within_bound'] else 'not met'})",
            "yes" if record["identical"] else "NO"]


def render(meta):
    """The rST list-table of a result file."""
    args, env = meta.get("args", {}), meta.get("environment", {})
    caption = (f"``{meta['command']}``, {meta.get('date', '')}, "
               f"{env.get('cpus', '?')} CPUs, {args.get('n_rows', '?'):,} x "
               f"{args.get('n_features', '?')}, {args.get('n_rounds', '?')} "
               f"rounds of depth {args.get('max_depth', '?')}, a worker "
               f"killed after round {args.get('kill_at', '?')}")
    lines = [f".. list-table:: {caption}", "   :header-rows: 1",
             "   :class: bench-table", ""]
    for cells in [HEADER] + [row(r) for r in meta["results"]]:
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
