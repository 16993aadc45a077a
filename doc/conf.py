"""Sphinx configuration of the skboost documentation.

Build with ``sphinx-build -W -b html doc doc/_build/html`` (warnings are
errors). skboost must be importable: install it first (``pip install -e .``).
"""

import skboost

project = "skboost"
author = "the skboost developers"
copyright = "skboost developers"
version = skboost.__version__
release = skboost.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
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


# --- docstring fixes applied at build time (skboost/ is not edited here) ---
import re  # noqa: E402

# Inherited scikit-learn docstrings (score, get_params, ...) refer to labels
# and glossary terms of scikit-learn's own documentation, e.g.
# :ref:`accuracy <accuracy_score>`, which do not exist here: keep their text,
# drop the link.
_SKLEARN_REF = re.compile(
    r":(?:ref|term):`([^`<]*?)\s*<[^`>]*>`|:(?:ref|term):`([^`]*)`")

# A trailing underscore makes ``n_features_in_`` a reST reference to an
# undefined target ("Unknown target name") when the estimators' docstrings
# write it bare, as in "ndarray of shape (n_features_in_,)". Escape it.
_BARE_TRAILING_UNDERSCORE = re.compile(r"(?<![`\\\w])(n_features_in)_(?=[,)\s])")


def _fix_docstring(app, what, name, obj, options, lines):
    owner = getattr(obj, "__module__", "") or ""
    for i, line in enumerate(lines):
        if owner.startswith("sklearn"):
            line = _SKLEARN_REF.sub(lambda m: m.group(1) or m.group(2), line)
        lines[i] = _BARE_TRAILING_UNDERSCORE.sub(r"\1\\_", line)


def setup(app):
    # Run before numpydoc (priority 500) so it sees the fixed text.
    app.connect("autodoc-process-docstring", _fix_docstring, priority=400)
