"""Tables of the benchmarks page, generated from the same result files as
its charts (``benchmarks/results/*.json``, written by the benchmark scripts'
``--json PATH``; see benchmarks/README.md).

Each result file becomes one rST table per task,
``doc/_build_charts/<file>_<task>_table.inc``, which ``doc/benchmarks.rst``
pulls in with ``.. include::``. A row per record: library, method, fit
seconds (and the cores the fit kept busy), the fit time relative to
XGBoost's run of the same method (its ``hist`` method where it has no such
method: the reference of the charts), predict seconds, the single-row
latency and throughput of a prediction benchmark, peak memory of the fit
and its ratio to XGBoost's, the accuracy metric and a few script-specific
fields; a column that no record of the file fills is left out. The
table's caption says how the figures were obtained: the command, the session
or date, the machine, and whether the file was transcribed from an earlier
hand-written table. ``doc/conf.py`` calls :func:`write_all` at every build,
so a new result file updates the table together with its chart.

Each file also becomes one summary per task,
``doc/_build_charts/<file>_<task>_summary.inc`` (:func:`write_summaries`):
a bullet per skboost record with its time as a ratio to the fastest other
library that ran the same method, the test metric's difference from it
and the peak memory ratio, the ratio to ``skboost-base`` (the build before
a change, ``--baseline``) where the file has one, and the most CPU other
processes took during a fit. The pages' prose includes these lines
instead of typing a measured figure (``tests/test_docs.py`` fails on a
typed one), so a new result file updates the words with the table.

Run it alone with ``python doc/_scripts/bench_tables.py [RESULTS_DIR
[OUTPUT_DIR]]`` (tables and summaries); ``python
doc/_scripts/bench_tables.py --readme`` rewrites the README's copy of the
front page's speed table.
"""

import json
import sys
from pathlib import Path

from plot_benchmarks import NAMES, OUTPUT, RESULTS, SERVING, reference

METRIC_TITLES = {"classification": "ROC AUC", "regression": "RMSE",
                 "ranking": "NDCG@10", "multiclass": "log loss",
                 "binary": "log loss"}


def fmt_small(value):
    return f"{value:.2g}"


def fmt_leaves(value):
    return f"{value:.0f}"


# optional per-record fields shown when a file has them: (field, title,
# format)
EXTRA_FIELDS = [
    ("max_abs_dpred", "max abs difference of predictions from XGBoost's",
     fmt_small),
    ("max_abs_diff_skboost",
     "max abs difference of probabilities from skboost's predict_proba",
     fmt_small),
    ("leaves_per_tree", "leaves per tree", fmt_leaves),
    ("max_rel_diff", "max abs difference from XGBoost's / max abs value",
     fmt_small),
    ("identical", "bit for bit as skboost-base", str),
]


def fmt_seconds(value):
    """Seconds: 219.9, 10.07, 1.10, 0.036."""
    if value >= 100:
        return f"{value:.1f}"
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def fmt_ratio(value):
    """Two decimals; two significant digits below 0.1 (0.0071, not 0.01)."""
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def fmt_metric(value, task):
    """ROC AUC to six decimals, an error to six significant digits."""
    return f"{value:.6f}" if task == "classification" else f"{value:.6g}"


def fmt_mb(value):
    return f"{value:.0f}"


def fmt_count(value):
    return f"{value:,.0f}"


def fmt_cores(value):
    return f"{value:.2f}"


def fmt_microseconds(seconds):
    return f"{seconds * 1e6:.1f}"


def _ratio(value, base):
    return None if value is None or not base else value / base


def ratio_columns(records, time):
    """The ratio columns of the time ``time`` ("fit_s", or "predict_s" in
    a file that timed no fit) that apply to ``records``: (title, function
    of a record giving its ratio or None)."""
    name = time.split("_")[0]
    xgboost = {r["method"]: r for r in records if r["library"] == "xgboost"}
    lightgbm = {r["method"]: r for r in records if r["library"] == "lightgbm"}
    columns = [(f"{name} / XGBoost same method", lambda r: _ratio(
        r.get(time), reference(records, r["method"], time)))]
    if "hist" in xgboost and len(xgboost) > 1:
        columns.append((f"{name} / XGBoost hist", lambda r: _ratio(
            r.get(time), xgboost["hist"].get(time))))
    if lightgbm:
        columns.append((f"{name} / LightGBM", lambda r: _ratio(
            r.get(time), (lightgbm.get(r["method"])
                          or next(iter(lightgbm.values()))).get(time))))
    if time == "fit_s" and all("/" in r["method"] for r in records):
        # constrained variants "method/constraint": the cost of a constraint
        own = {(r["library"], r["method"]): r for r in records}

        def unconstrained(r):
            base = own.get((r["library"], r["method"].split("/")[0] + "/none"))
            return _ratio(r.get("fit_s"), base and base.get("fit_s"))
        columns.append(("fit / own unconstrained", unconstrained))
    return columns


def latency_columns(records):
    """The single-row latency (microseconds), its ratio to XGBoost's run of
    the same method, and the batch throughput (rows per second) of a
    prediction benchmark that measured them."""
    def cell(name, fmt):
        return lambda r: None if r.get(name) is None else fmt(r[name])

    def latency_ratio(r):
        value = _ratio(r.get("latency_s"),
                       reference(records, r["method"], "latency_s"))
        return None if value is None else fmt_ratio(value)

    return [("1 row µs", cell("latency_s", fmt_microseconds)),
            ("1 row / XGBoost same method", latency_ratio),
            ("rows/s", cell("rows_per_s", fmt_count))]


def table_columns(records, task, metric_title=None):
    """Every column of the table: (title, function of a record giving its
    cell text or None)."""
    def field(name, fmt):
        return lambda r: None if r.get(name) is None else fmt(r[name])

    def ratio(function):
        return lambda r: (None if function(r) is None
                          else fmt_ratio(function(r)))

    columns = [("library", lambda r: NAMES.get(r["library"], r["library"])),
               ("method", lambda r: r["method"]),
               ("rows", field("n_rows", fmt_count)),
               ("features", field("n_features", fmt_count))]
    timed = "fit_s" if any(r.get("fit_s") for r in records) else "predict_s"
    if timed == "predict_s":   # a prediction benchmark: its ratios first
        columns.append(("predict s", field("predict_s", fmt_seconds)))
    columns += [("fit s", field("fit_s", fmt_seconds)),
                ("fit CPU", field("fit_cores", fmt_cores))]
    columns += [(title, ratio(f))
                for title, f in ratio_columns(records, timed)]
    if timed == "fit_s":
        columns.append(("predict s", field("predict_s", fmt_seconds)))
    columns += latency_columns(records)
    columns += [
        ("peak MB", field("peak_mb", fmt_mb)),
        ("peak MB / XGBoost same method", ratio(lambda r: _ratio(
            r.get("peak_mb"), reference(records, r["method"], "peak_mb")))),
        (metric_title or METRIC_TITLES.get(task, "metric"),
         field("metric", lambda value: fmt_metric(value, task)))]
    columns += [(title, field(name, fmt))
                for name, title, fmt in EXTRA_FIELDS]
    return [(title, cell) for title, cell in columns
            if any(cell(r) is not None for r in records)]


def _widest_vector_unit(env):
    """AVX-512, AVX2 or None: the widest of the benchmark's CPU's vector
    units that the libraries' kernels choose between."""
    units = env.get("cpu_vector") or []
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"),
                       ("sve", "SVE"), ("asimd", "NEON")):
        if flag in units:
            return name
    return None


def caption(meta, task):
    """One line: task, command, session or date, machine, transcribed."""
    env = meta.get("environment", {})
    machine = ", ".join(str(part) for part in (
        env.get("cpu"), env.get("cpu_id"), _widest_vector_unit(env),
        env.get("cpus") and f"{env['cpus']} CPUs",
        env.get("python") and f"Python {env['python']}",
        env.get("xgboost") and f"XGBoost {env['xgboost']}",
        env.get("lightgbm") and f"LightGBM {env['lightgbm']}",
        env.get("sklearn") and f"scikit-learn {env['sklearn']}") if part)
    parts = [task]
    if meta.get("command"):
        parts.append(f"``{meta['command']}``")
    when = meta.get("session") or meta.get("date")
    if when:
        parts.append(f"session {when}")
    if machine:
        parts.append(machine)
    transcribed = meta.get("transcribed", "")
    if transcribed.startswith("converted"):
        parts.append("converted from the run's earlier output format")
    else:
        parts.append("transcribed from an earlier hand-written table"
                     if transcribed else "written by the run")
    return "; ".join(parts)


def latency_table_columns(records):
    """The serving table (``bench_latency.py``'s "latency" records, one
    per library, method and rows per call): a row per library and method,
    the median microseconds of a call for each number of rows, and the
    ratio to XGBoost's ``inplace_predict`` (its fastest call)."""
    sizes = sorted({r["rows"] for r in records})
    by = {(r["library"], r["method"], r["rows"]): r["predict_s"]
          for r in records}

    def cell(size, ratio):
        def text(row):
            value = by.get((row["library"], row["method"], size))
            base = by.get(("xgboost", "inplace_predict", size))
            if value is None or (ratio and not base):
                return None
            if ratio:
                return fmt_ratio(value / base)
            us = value * 1e6
            return f"{us:.1f}" if us < 100 else f"{us:,.0f}"
        return text

    columns = [("library", lambda r: NAMES.get(r["library"], r["library"])),
               ("method", lambda r: r["method"])]
    for size in sizes:
        rows = f"{size:,} row{'s' * (size > 1)}"
        columns += [(f"{rows} µs", cell(size, False)),
                    (f"{rows} / XGBoost inplace", cell(size, True))]
    return columns


def _one_per_method(records):
    seen, out = set(), []
    for r in records:
        if (r["library"], r["method"]) not in seen:
            seen.add((r["library"], r["method"]))
            out.append(r)
    return out


def render_table(meta, task, records, columns=None):
    """The rST of one table (a ``list-table`` with the caption as title),
    of ``columns`` (title, cell function) if given."""
    if columns is None:
        columns = table_columns(records, task, meta.get("metric_name"))
    lines = [f".. list-table:: {caption(meta, task)}", "   :header-rows: 1",
             "   :class: bench-table", ""]
    rows = [[title for title, _ in columns]]
    rows += [[cell(r) or "" for _, cell in columns] for r in records]
    # "NDCG@10" would otherwise become an e-mail link
    rows = [[text.replace("@", "\\@") for text in row] for row in rows]
    for row in rows:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {text}" if text else "     -" for text in row[1:]]
    return "\n".join(lines) + "\n"


def _records_by_task(results_dir):
    """Each result file's metadata and its records grouped by task:
    ``(path, meta, task, records)``."""
    for path in sorted(Path(results_dir).glob("*.json")):
        with open(path) as f:
            meta = json.load(f)
        by_task = {}
        for record in meta["results"]:
            by_task.setdefault(record["task"], []).append(record)
        for task, records in by_task.items():
            yield path, meta, task, records


def _write_per_task(results_dir, output_dir, suffix, render):
    """``render(meta, task, records)`` of every result file and task into
    ``output_dir/<file>_<task>_<suffix>.inc``; the paths written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path, meta, task, records in _records_by_task(results_dir):
        target = output_dir / f"{path.stem}_{task}_{suffix}.inc"
        target.write_text(render(meta, task, records))
        written.append(target)
    return written


def write_all(results_dir=RESULTS, output_dir=OUTPUT):
    """Write a table per result file and task into ``output_dir``
    (``<file>_<task>_table.inc``); the paths written."""
    return _write_per_task(results_dir, output_dir, "table", render_table)


# The front page's speed table (doc/index.rst): its columns, and its rows
# as (title, result file, task, timed field, skboost's method or None for
# its fastest method, how a row shows a library that did not run).
FRONT_LIBRARIES = ["skboost", "hessboost", "xgboost", "lightgbm", "sklearn"]
FRONT_ROWS = [
    ("fit time, 1,000,000 x 28, hist, classification / regression",
     "hist_1m", ("classification", "regression"), "fit_s", "hist"),
    ("predict time, 50,000 rows, classification", "hist_1m",
     ("classification",), "predict_s", "hist"),
    ("fit time, sparse 200,000 x 5,000 (0.5% stored), fastest method",
     "sparse", ("classification",), "fit_s", None),
    ("fit time, four categorical columns of up to 30,000 categories",
     "categorical", ("classification",), "fit_s", "hist"),
]


def _front_cell(records, library, field, method):
    """A library's ratio to XGBoost's hist in one task (skboost's run of
    ``method``, or its fastest method when None; another library's
    fastest run), with the method in brackets where it is not hist; None
    when it did not run."""
    xgboost = next((r for r in records if r["library"] == "xgboost"
                    and r["method"] == "hist"), None)
    wanted = {"xgboost": "hist", "skboost": method}.get(library)
    own = [r for r in records if r["library"] == library
           and r.get(field) is not None
           and (wanted is None or r["method"] == wanted)]
    if not own or xgboost is None:
        return None
    best = min(own, key=lambda r: r[field])
    text = fmt_ratio(best[field] / xgboost[field])
    return text if best["method"] == "hist" else f"{text} ({best['method']})"


def front_page_rows(results_dir=RESULTS):
    """The front page table's rows: a title, then per library of
    FRONT_LIBRARIES its time as a ratio to XGBoost's hist in the same
    run (tasks separated by " / "), "not run" for a library the file has
    no record of."""
    rows = []
    for title, stem, tasks, field, method in FRONT_ROWS:
        path = Path(results_dir) / f"{stem}.json"
        if not path.exists():
            continue
        with open(path) as f:
            records = json.load(f)["results"]
        cells = []
        for library in FRONT_LIBRARIES:
            per_task = [_front_cell([r for r in records if r["task"] == t],
                                    library, field, method) for t in tasks]
            cells.append(" / ".join(c for c in per_task if c) or "not run")
        rows.append([title] + cells)
    return rows


def write_front_page(results_dir=RESULTS, output_dir=OUTPUT):
    """Write the front page's speed table (``front_page_table.inc``, which
    doc/index.rst includes) from the result files; the path written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    header = [""] + [NAMES.get(name, name) for name in FRONT_LIBRARIES]
    lines = [".. list-table::", "   :header-rows: 1",
             "   :class: comparison", ""]
    for row in [header] + front_page_rows(results_dir):
        lines.append(f"   * - {row[0]}" if row[0] else "   * -")
        lines += [f"     - {text}" for text in row[1:]]
    target = output_dir / "front_page_table.inc"
    target.write_text("\n".join(lines) + "\n")
    return target


# The README's copy of the front page's table (Markdown), between these
# two lines; ``python doc/_scripts/bench_tables.py --readme`` rewrites it
# and tests/test_docs.py fails when it differs from the result files.
README_BEGIN = ("<!-- speed table: written by doc/_scripts/bench_tables.py "
                "--readme from benchmarks/results; do not edit -->")
README_END = "<!-- end of the speed table -->"


def readme_table(results_dir=RESULTS):
    """The front page's table as Markdown lines (time as a ratio to
    XGBoost's hist in the same run)."""
    header = ["time / XGBoost's hist"] + [NAMES.get(name, name)
                                          for name in FRONT_LIBRARIES]
    rows = [header, ["---"] * len(header)] + front_page_rows(results_dir)
    return ["| " + " | ".join(row) + " |" for row in rows]


def write_readme(readme=RESULTS.parents[1] / "README.md",
                 results_dir=RESULTS):
    """Replace the README's speed table (between README_BEGIN and
    README_END) by the one the result files give; the path written."""
    readme = Path(readme)
    text = readme.read_text()
    start, end = text.index(README_BEGIN), text.index(README_END)
    block = "\n".join([README_BEGIN, ""] + readme_table(results_dir) + [""])
    readme.write_text(text[:start] + block + "\n" + text[end:])
    return readme


def write_serving(result=SERVING, output_dir=OUTPUT):
    """The serving page's two tables (benchmarks/bench_latency.py):
    ``serving_latency_table.inc``, a row per library and method with the
    time of a call for each number of rows, and ``serving_batch_table.inc``,
    a row per record as on the benchmarks page; the paths written."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    latency = output_dir / "serving_latency_table.inc"
    batch = output_dir / "serving_batch_table.inc"
    figures = output_dir / "serving_figures.inc"
    if not Path(result).is_file():   # not measured yet: the page says so
        figures.write_text(f"No result file yet: run ``python benchmarks/"
                           f"bench_latency.py --json {_relative(result)}``.\n")
        return [figures]
    with open(result) as f:
        meta = json.load(f)
    by_task = {}
    for record in meta["results"]:
        by_task.setdefault(record["task"], []).append(record)
    records = by_task["latency"]
    latency.write_text(render_table(meta, "latency", _one_per_method(records),
                                    latency_table_columns(records)))
    batch.write_text(render_table(meta, "batch", by_task["batch"]))
    # one file, the tables in it (images in an included file are found
    # from the source root: "/_build_charts/...")
    figures.write_text(SERVING_FIGURES.format(latency=latency.read_text(),
                                              batch=batch.read_text()))
    return [figures, latency, batch]


def _relative(path):
    try:
        return Path(path).relative_to(RESULTS.parents[1])
    except ValueError:
        return path


# The serving page's figures (pulled in as serving_figures.inc): the tables
# and charts written from the result file, with what they show.
SERVING_FIGURES = """\
Latency: 200 trees of depth 6, the median of 2,000 calls (200 for 10,000
rows) on 1, 10, 100 and 10,000 rows. skboost-base is the code before the
change measured (``--baseline``; a build whose booster has no
``inplace_predict`` has its ``Booster.predict`` timed). onnxruntime runs
skboost's ONNX export; Treelite is skboost's Treelite export compiled by
TL2cgen, its predictor on one thread.

{latency}
.. image:: /_build_charts/serving_latency.png
   :alt: microseconds per prediction call against rows per call, for each library
   :class: bench-chart

Batch: 100 trees of depth 8 fitted on 200,000 rows, ``predict_proba`` on
1,000,000 rows of 28 features (best of 3 calls), with hessboost beside
XGBoost and LightGBM. "bit for bit" compares skboost's probabilities with
those of the code before the change.

{batch}
.. image:: /_build_charts/serving_batch.png
   :alt: batch prediction time relative to XGBoost's
   :class: bench-chart
"""


# One-line summaries of a result file's task (``<file>_<task>_summary.inc``,
# pulled in by the prose of doc/benchmarks.rst and the user guide): the
# figures a sentence would quote, computed from the same file as the table,
# so that the prose types none (tests/test_docs.py fails on a typed one).
PEERS_EXCLUDED = ("skboost", "skboost-base")
# the metrics where a larger value is better (the others are errors)
HIGHER_IS_BETTER = {"classification", "ranking"}


def _peer_records(records, method, time):
    """The other libraries' records to compare skboost's ``method`` with:
    those of the same method, else of the method it is a variant of
    ("onnx" for "onnx (ml 3)"), else their hist runs (a skboost method
    they lack, such as exact on sparse input, against their fastest
    method); none when the file's methods are cases the others did not
    run (Spark's single-node fit)."""
    peers = [r for r in records if r["library"] not in PEERS_EXCLUDED
             and r.get(time)]
    for wanted in (method, method.split(" (")[0], "hist"):
        same = [r for r in peers if r["method"] == wanted]
        if same:
            return same
    return []


def _who(record, method):
    """A library's name, with its method in brackets where it differs."""
    name = NAMES.get(record["library"], record["library"])
    return name if record["method"] == method else \
        f"{name} ({record['method']})"


def metric_phrase(record, peer, task, metric_title):
    """"at a test ROC AUC 0.0016 below LightGBM's" (an absolute difference
    for a score, a relative one for an error); "" when either lacks it."""
    mine, theirs = record.get("metric"), peer.get("metric")
    if mine is None or theirs is None:
        return ""
    if mine == theirs:
        return f" at the same test {metric_title}"
    side = "above" if mine > theirs else "below"
    if task in HIGHER_IS_BETTER:
        difference = abs(mine - theirs)
        text = f"{difference:.4f}" if difference >= 1e-3 \
            else f"{difference:.1g}"
    else:
        text = f"{abs(mine - theirs) / abs(theirs):.1%}"
    name = NAMES.get(peer["library"], peer["library"])
    return f" at a test {metric_title} {text} {side} {name}'s"


# fields of a skboost record that hold its time relative to another run of
# skboost in the same file: (field, what the ratio is to)
OWN_RATIO_FIELDS = [("ratio", "single-node skboost's time"),
                    ("ratio_to_skboost_in_core", "its in-core fit's time")]


def _peer_clause(records, record, task, time, metric_title):
    """"0.58x the time of LightGBM (hist), the fastest other library in
    this run, at a test ROC AUC ... , with 0.068x its peak memory"."""
    method = record["method"]
    peers = _peer_records(records, method, time)
    if not peers:
        return None
    fastest = min(peers, key=lambda r: r[time])
    text = f"{fmt_ratio(record[time] / fastest[time])}x the time of " \
           f"{_who(fastest, method)}"
    if len({r["library"] for r in peers}) > 1:
        text += ", the fastest other library in this run,"
    text += metric_phrase(record, fastest, task, metric_title)
    if record.get("peak_mb") and fastest.get("peak_mb"):
        text += f", with {fmt_ratio(record['peak_mb'] / fastest['peak_mb'])}"\
                f"x its peak memory"
    return text.rstrip(",")


def summary_line(records, record, task, time, metric_title):
    """One sentence on skboost's ``record``: its time against the fastest
    comparable other library, the metric and peak memory against it; the
    ratio to skboost-base's same method where the file has one, and to
    another run of skboost where the record gives it (OWN_RATIO_FIELDS)."""
    method = record["method"]
    clauses = [_peer_clause(records, record, task, time, metric_title)]
    base = next((r for r in records if r["library"] == "skboost-base"
                 and r["method"] == method and r.get(time)), None)
    if base is not None:
        clauses.append(f"{fmt_ratio(record[time] / base[time])}x the time "
                       f"of skboost-base (the build before the change)")
    clauses += [f"{fmt_ratio(record[field])}x {what}"
                for field, what in OWN_RATIO_FIELDS
                if record.get(field) is not None and record[field] != 1.0]
    clauses = [c for c in clauses if c]
    if not clauses:
        return None
    verb = time.split("_")[0]
    return f"skboost {method}: {verb} " + "; ".join(clauses) + "."


def render_summary(meta, task, records):
    """The rST of a task's summary: a bullet per skboost record, and one
    with the most CPU other processes took during a fit where the file
    recorded it (``fit_other_cores``)."""
    time = "fit_s" if any(r.get("fit_s") for r in records) else "predict_s"
    title = meta.get("metric_name") or METRIC_TITLES.get(task, "metric")
    mine = [r for r in records if r["library"] == "skboost" and r.get(time)]
    lines = [summary_line(records, r, task, time, title.replace("@", "\\@"))
             for r in mine]
    lines = [line for line in lines if line] or [
        "No other library or earlier build ran skboost's cases here."
        if mine else "skboost did not run in this file."]
    others = [r["fit_other_cores"] for r in records
              if r.get("fit_other_cores") is not None]
    if others:
        lines.append(f"Other processes on the machine kept at most "
                     f"{max(others):.2f} cores busy during these fits.")
    return "".join(f"- {line}\n" for line in lines)


def write_summaries(results_dir=RESULTS, output_dir=OUTPUT):
    """Write each result file's summary per task into ``output_dir``
    (``<file>_<task>_summary.inc``); the paths written."""
    return _write_per_task(results_dir, output_dir, "summary",
                           render_summary)


if __name__ == "__main__" and sys.argv[1:] == ["--readme"]:
    print(write_readme())
elif __name__ == "__main__":
    for written in write_all(*sys.argv[1:3]) + write_summaries(*sys.argv[1:3]):
        print(written)
