"""Sphinx configuration of the skboost documentation.

Build with ``sphinx-build -n -W -b html doc doc/_build/html`` (nitpicky,
warnings are errors). skboost must be importable: install it first
(``pip install -e .``).
"""

import inspect
import os
import shutil
import sys
from pathlib import Path

import skboost

DOC_DIR = Path(__file__).resolve().parent
# The chart script of the benchmarks page (doc/_scripts/) and the gallery's
# sort key are imported from here.
sys.path.insert(0, str(DOC_DIR / "_scripts"))

project = "skboost"
author = "the skboost developers"
copyright = "skboost developers"
version = skboost.__version__
release = skboost.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# The estimators' docstrings follow the numpydoc format. The API reference
# (api.rst) lists the public classes and functions in autosummary tables;
# each gets a page of its own, generated from doc/_templates/class.rst and
# function.rst into doc/generated/ (not kept in git). The class template lists the
# methods and attributes itself, so numpydoc adds no member tables.
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

autodoc_default_options = {"member-order": "bysource"}
# Signatures already show the parameters; numpydoc renders their types.
autodoc_typehints = "none"
# "fit()" rather than "BoostClassifier.fit()" in a page's table of contents
toc_object_entries_show_parents = "hide"

exclude_patterns = ["_build", "README.md", "user_guide/out_of_core_figures.rst",
                    "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.json", "auto_examples/*.md5"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["skboost.css"]

# --- theme: the scientific Python ecosystem's (scikit-learn's, pandas') ----
html_theme = "pydata_sphinx_theme"
html_title = f"skboost {release}"
html_theme_options = {
    "navbar_end": ["theme-switcher"],
    # the front page and the gallery's pages (named one by one: two
    # wildcards matching one page are an error) keep the width for the
    # comparison table, code and figures
    "secondary_sidebar_items": {
        "**": ["page-toc"], "index": [], "auto_examples/index": [],
        **{f"auto_examples/{example.stem}": []
           for example in (DOC_DIR.parent / "examples").glob("*.py")}},
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": [],
}
# pages with no section below them: no (empty) section navigation
html_sidebars = {page: [] for page in ("index", "install", "quickstart",
                                       "benchmarks")}
html_show_sourcelink = False
# No request to any other site when a page is viewed: the theme's fonts,
# scripts and the math renderer are all in the built site's _static.


# --- formulas: MathJax served from the built site itself -------------------
# Sphinx's default loads MathJax from a CDN, so formulas stay raw LaTeX on a
# machine without network. MathJax 3 comes in a PyPI wheel
# (django-static-mathjax: only MathJax's files, it needs no Django; the
# ``doc`` extra installs it); its browser build is copied into
# _static/mathjax of the built site at the end of the build.
def _mathjax_dir():
    try:
        import mathjax
    except ImportError as exc:
        raise RuntimeError(
            "the documentation serves MathJax itself: install the doc extra "
            "(pip install -e '.[doc]', which brings django-static-mathjax)"
        ) from exc
    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


MATHJAX_DIR = _mathjax_dir()
mathjax_path = "mathjax/tex-chtml.js"
# What tex-chtml.js loads at view time: fonts, the TeX extensions it
# autoloads (\boldsymbol, \texttt...), the menu and its accessibility parts.
_MATHJAX_PARTS = ["tex-chtml.js", "input/tex/extensions", "output/chtml",
                  "ui", "a11y", "adaptors"]


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in _MATHJAX_PARTS:
        source = MATHJAX_DIR / part
        if source.is_dir():
            shutil.copytree(source, target / part, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / part)


# --- charts and tables of the benchmarks page ------------------------------
# Drawn and written at every build from the committed result files of
# benchmarks/ (benchmarks/results/*.json, written by the scripts' --json
# option) into doc/_build_charts/ (not kept in git): a chart (.png) and an
# rST table (.inc, pulled in by benchmarks.rst's ``.. include::``) per file
# and task; no benchmark runs here.
import bench_tables  # noqa: E402  (doc/_scripts, on sys.path above)
import plot_benchmarks  # noqa: E402

plot_benchmarks.draw_all()
bench_tables.write_all()
# the one-line summaries the pages' prose includes in place of typed figures
bench_tables.write_summaries()
# the front page's speed table (doc/index.rst), from the same files
bench_tables.write_front_page()
# the uncertainty page's chart and table (benchmarks/results/uncertainty/)
import uncertainty_chart  # noqa: E402

uncertainty_chart.write_all()
# the threads page's table (benchmarks/results/contention/contention.json)
import contention_table  # noqa: E402

contention_table.write_table()
# the serving page's charts and tables (benchmarks/results/serving/)
plot_benchmarks.draw_serving()
bench_tables.write_serving()
# the Dask page's recovery table (benchmarks/results/recovery/)
import recovery_table  # noqa: E402

recovery_table.write_table()
# the ranking page's NDCG-at-convergence table
# (benchmarks/results/ranking_convergence/)
import ranking_table  # noqa: E402

ranking_table.write_table()


# --- the example gallery ----------------------------------------------------
# Every examples/*.py is executed at build time (a failing example fails the
# build); its printed output and matplotlib figures go into its page, its
# first figure becomes the thumbnail. Scripts starting with "_" are helpers.
sphinx_gallery_conf = {
    "examples_dirs": str(DOC_DIR.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",
    "ignore_pattern": r"(__init__|/_[^/]*)\.py$",
    "within_subsection_order": "gallery_order.GalleryOrder",
    "backreferences_dir": "generated/backreferences",
    "doc_module": ("skboost",),
    "reference_url": {"skboost": None},
    "abort_on_example_error": True,
    # an example's first argument: its output directory under
    # SKBOOST_GALLERY_OUTPUT (the test suite's docs build), else none
    "reset_argv": "gallery_argv.example_argv",
    # SKBOOST_GALLERY_RERUN=1 (the test suite's docs build) runs every
    # example again, even those unchanged since the last build.
    "run_stale_examples": os.environ.get("SKBOOST_GALLERY_RERUN") == "1",
    "min_reported_time": 1,
    "show_signature": False,
    "remove_config_comments": True,
    "write_computation_times": False,
}


# --- links to other projects' documentation -------------------------------
# References to Python, numpy, scipy, pandas, scikit-learn, matplotlib and
# XGBoost
# objects (and the glossary terms and labels of scikit-learn that inherited
# docstrings such as ``score`` and ``set_params`` use) resolve through their
# object inventories. Each project's published ``objects.inv`` is tried
# first; the copy kept in ``doc/_intersphinx/`` is the offline fallback
# (see its README for how it is made and refreshed).
_INVENTORIES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "_intersphinx")


def _inventory(url, name):
    return (url, (None, os.path.join(_INVENTORIES, f"{name}.inv")))


intersphinx_mapping = {
    "python": _inventory("https://docs.python.org/3/", "python"),
    "numpy": _inventory("https://numpy.org/doc/stable/", "numpy"),
    "scipy": _inventory("https://docs.scipy.org/doc/scipy/", "scipy"),
    "pandas": _inventory("https://pandas.pydata.org/docs/", "pandas"),
    "sklearn": _inventory("https://scikit-learn.org/stable/", "sklearn"),
    "matplotlib": _inventory("https://matplotlib.org/stable/",
                             "matplotlib"),
    "xgboost": _inventory("https://xgboost.readthedocs.io/en/stable/",
                          "xgboost"),
}
intersphinx_timeout = 5

# Every cross-reference must resolve (sphinx-build -n -W).
nitpicky = True


# The estimators define ``__new__(cls, *args, **kwargs)`` (to name XGBoost's
# and LightGBM's parameters in a TypeError), and autodoc takes a class's
# signature from ``__new__`` before ``__init__``; the class's own signature
# (what ``inspect.signature`` and scikit-learn see) is the one to show.
def _class_signature(app, what, name, obj, options, signature, annotation):
    if what == "class" and signature == "(*args, **kwargs)":
        try:
            return str(inspect.signature(obj)), annotation
        except (TypeError, ValueError):
            return None
    return None


# The Spark estimators inherit pyspark.ml's methods and Params (copy,
# explainParams, fitMultiple, ...): pyspark documents those, and their
# docstrings refer to pyspark's own pages, which have no inventory here.
def _skip_pyspark_members(app, what, name, obj, skip, options):
    # a property's module is its getter's
    module = getattr(getattr(obj, "fget", obj), "__module__", None) or ""
    if isinstance(module, str) and module.startswith("pyspark"):
        return True
    return None


# skboost.spark's docstrings name pyspark's types (DataFrame, Param...),
# which no inventory here can resolve.
nitpick_ignore_regex = [("py:class", r"pyspark\..*")]


def setup(app):
    app.connect("build-finished", _copy_mathjax)
    app.connect("autodoc-process-signature", _class_signature)
    app.connect("autodoc-skip-member", _skip_pyspark_members)
