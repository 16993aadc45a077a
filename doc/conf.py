"""Sphinx configuration of the skboost documentation.

Build with ``sphinx-build -n -W -b html doc doc/_build/html`` (nitpicky,
warnings are errors). skboost must be importable: install it first
(``pip install -e .``).
"""

import os
import re

import skboost

project = "skboost"
author = "the skboost developers"
copyright = "skboost developers"
version = skboost.__version__
release = skboost.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
]

# The estimators' docstrings follow the numpydoc format. Methods are listed
# explicitly in api.rst with autoclass ``:members:``, so numpydoc need not
# generate its own member tables (they would need autosummary stubs).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

autodoc_default_options = {"member-order": "bysource"}
# Signatures already show the parameters; numpydoc renders their types.
autodoc_typehints = "none"

exclude_patterns = ["_build"]
templates_path = []
html_static_path = []
html_theme = "alabaster"
html_theme_options = {
    "description": "Regularised gradient-boosted trees for scikit-learn",
}


# --- links to other projects' documentation -------------------------------
# References to Python, numpy, scipy, pandas, scikit-learn and XGBoost
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
    "xgboost": _inventory("https://xgboost.readthedocs.io/en/stable/",
                          "xgboost"),
}
intersphinx_timeout = 5

# Every cross-reference must resolve (sphinx-build -n -W).
nitpicky = True

# A trailing underscore makes ``n_features_in_`` a reST reference to an
# undefined target ("Unknown target name") when the estimators' docstrings
# write it bare, as in "ndarray of shape (n_features_in_,)". Escape it.
_BARE_TRAILING_UNDERSCORE = re.compile(r"(?<![`\\\w])(n_features_in)_(?=[,)\s])")


def _fix_docstring(app, what, name, obj, options, lines):
    for i, line in enumerate(lines):
        lines[i] = _BARE_TRAILING_UNDERSCORE.sub(r"\1\\_", line)


def setup(app):
    # Run before numpydoc (priority 500) so it sees the fixed text.
    app.connect("autodoc-process-docstring", _fix_docstring, priority=400)
