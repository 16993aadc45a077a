"""The arguments the gallery runs an example with (``sphinx_gallery_conf
["reset_argv"]`` names :func:`example_argv`).

An example that writes files takes the directory as its first argument and
otherwise makes a new temporary one. A documentation build gets no
argument. The test suite's build (``tests/test_docs.py``) sets
``SKBOOST_GALLERY_OUTPUT``: each example then gets a directory of its own
under it, where the tests find the files the gallery's run wrote, so that
they check that run instead of running the example a second time."""

import os
from pathlib import Path


def example_argv(gallery_conf, script_vars):
    """``sys.argv[1:]`` for the example ``script_vars["src_file"]``."""
    root = os.environ.get("SKBOOST_GALLERY_OUTPUT")
    if not root:
        return []
    directory = Path(root) / Path(script_vars["src_file"]).stem
    directory.mkdir(parents=True, exist_ok=True)
    return [str(directory)]
