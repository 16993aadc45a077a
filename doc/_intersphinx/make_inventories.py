"""Write the offline object inventories of doc/_intersphinx/.

The documentation links to Python, numpy, scipy, pandas, scikit-learn,
matplotlib and XGBoost with ``sphinx.ext.intersphinx`` (doc/conf.py). Sphinx fetches each
project's published ``objects.inv`` first; the files here are the fallback
for a build without network (the test suite's, a packager's sandbox).

Two ways to make them:

``python doc/_intersphinx/make_inventories.py --download``
    Download every project's real ``objects.inv`` (needs network); use this
    to refresh them.

``python doc/_intersphinx/make_inventories.py``
    Write inventories of the objects these docs reference (the table
    below), in Sphinx's inventory format version 2, with each project's URL
    scheme. This is how the committed files were made: the machine that
    set the docs up had no network. A reference added to the docs that is
    not in the table fails the nitpicky build offline: add it to the table
    (or download the real inventories).
"""

import os
import sys
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

URLS = {
    "python": "https://docs.python.org/3/",
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "pandas": "https://pandas.pydata.org/docs/",
    "sklearn": "https://scikit-learn.org/stable/",
    "matplotlib": "https://matplotlib.org/stable/",
    "xgboost": "https://xgboost.readthedocs.io/en/stable/",
}

# project -> [(name, domain:role, uri, display name)]; in the uri "$" stands
# for the name (expanded when written), display "-" for the name itself
OBJECTS = {
    "python": [
        ("logging", "py:module", "library/logging.html#module-$", "-"),
        ("logging.Logger", "py:class", "library/logging.html#$", "-"),
        ("pathlib.Path", "py:class", "library/pathlib.html#$", "-"),
        ("tempfile.TemporaryDirectory", "py:class",
         "library/tempfile.html#$", "-"),
        ("TypeError", "py:exception", "library/exceptions.html#$", "-"),
        ("ValueError", "py:exception", "library/exceptions.html#$", "-"),
    ],
    "numpy": [
        ("numpy.ndarray", "py:class", "reference/generated/$.html#$", "-"),
        ("numpy.nan", "py:data", "reference/constants.html#$", "-"),
        ("numpy.loadtxt", "py:function", "reference/generated/$.html#$",
         "-"),
        ("numpy.random.Generator", "py:class",
         "reference/random/generator.html#$", "-"),
        ("numpy.random.RandomState", "py:class",
         "reference/random/legacy.html#$", "-"),
    ],
    "scipy": [
        ("scipy.sparse", "py:module", "reference/sparse.html#module-$", "-"),
        ("scipy.sparse.csr_matrix", "py:class",
         "reference/generated/$.html#$", "-"),
        ("scipy.sparse.csc_matrix", "py:class",
         "reference/generated/$.html#$", "-"),
    ],
    "pandas": [
        ("pandas.DataFrame", "py:class", "reference/api/$.html#$", "-"),
        ("pandas.CategoricalDtype", "py:class", "reference/api/$.html#$",
         "-"),
    ],
    "sklearn": [
        ("sklearn.pipeline.Pipeline", "py:class",
         "modules/generated/$.html#$", "-"),
        ("sklearn.model_selection.GridSearchCV", "py:class",
         "modules/generated/$.html#$", "-"),
        ("sklearn.compose.ColumnTransformer", "py:class",
         "modules/generated/$.html#$", "-"),
        ("sklearn.multioutput.MultiOutputRegressor", "py:class",
         "modules/generated/$.html#$", "-"),
        ("sklearn.metrics.accuracy_score", "py:function",
         "modules/generated/$.html#$", "-"),
        ("sklearn.metrics.r2_score", "py:function",
         "modules/generated/$.html#$", "-"),
        ("sklearn.utils.class_weight.compute_sample_weight", "py:function",
         "modules/generated/$.html#$", "-"),
        # labels and glossary terms of inherited docstrings (score, ...)
        ("accuracy_score", "std:label", "modules/model_evaluation.html"
         "#accuracy-score", "Accuracy score"),
        ("r2_score", "std:label", "modules/model_evaluation.html#r2-score",
         "R² score, the coefficient of determination"),
        ("metadata_routing", "std:label",
         "metadata_routing.html#metadata-routing", "Metadata Routing"),
    ],
    "matplotlib": [
        ("matplotlib.axes.Axes", "py:class", "api/_as_gen/$.html#$", "-"),
        ("matplotlib.figure.Figure", "py:class", "api/_as_gen/$.html#$",
         "-"),
        ("matplotlib.pyplot.subplots", "py:function", "api/_as_gen/$.html#$",
         "-"),
    ],
    "xgboost": [
        ("xgboost.XGBClassifier", "py:class", "python/python_api.html#$",
         "-"),
        ("xgboost.XGBRegressor", "py:class", "python/python_api.html#$",
         "-"),
        ("xgboost.XGBRanker", "py:class", "python/python_api.html#$", "-"),
        ("xgboost.Booster", "py:class", "python/python_api.html#$", "-"),
        ("xgboost.DMatrix", "py:class", "python/python_api.html#$", "-"),
    ],
}


def inventory_bytes(project, objects):
    """An objects.inv (format version 2) holding ``objects``."""
    header = ("# Sphinx inventory version 2\n"
              f"# Project: {project}\n"
              "# Version: \n"
              "# The remainder of this file is compressed using zlib.\n")
    lines = "".join(f"{name} {role} 1 {uri.replace('$', name)} {display}\n"
                    for name, role, uri, display in objects)
    return header.encode("utf-8") + zlib.compress(lines.encode("utf-8"))


def main(download):
    for project, url in URLS.items():
        path = os.path.join(HERE, f"{project}.inv")
        if download:
            with urllib.request.urlopen(url + "objects.inv", timeout=30) as f:
                data = f.read()
        else:
            data = inventory_bytes(project, OBJECTS[project])
        with open(path, "wb") as f:
            f.write(data)
        print(f"wrote {path} ({len(data)} bytes)")


if __name__ == "__main__":
    main(download="--download" in sys.argv[1:])
