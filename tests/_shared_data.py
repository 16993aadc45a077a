"""The real data sets of ``../shared/data`` (beside the repository, not part
of it: see its README). Tests comparing with the reference libraries on them
skip, saying so, where a checkout has no such folder beside it."""

from pathlib import Path

import numpy as np
import pytest

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data_path(name):
    """Path of a shared data file; skips the test when it is absent."""
    path = DATA_DIR / name
    if not path.exists():
        pytest.skip(f"shared data set {name} not found at {path}: the "
                    "../shared/data folder is not part of the repository")
    return path


def load_tsv(name):
    """(X, y) of a tab-separated shared file with the label first."""
    data = np.loadtxt(shared_data_path(name), dtype=np.float64)
    return data[:, 1:], data[:, 0]
