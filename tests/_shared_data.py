"""The real data sets of the repository's ``data`` folder (gzipped copies
of small public data sets: see its README). A test needing one skips,
saying so, if a checkout lacks it."""

from pathlib import Path

import numpy as np
import pytest

DATA_DIR = Path(__file__).resolve().parents[1] / "data"


def shared_data_path(name):
    """Path of a data file (stored gzipped); skips the test when it is
    absent."""
    path = DATA_DIR / f"{name}.gz"
    if not path.exists():
        pytest.skip(f"data set {name} not found at {path}")
    return path


def load_tsv(name):
    """(X, y) of a tab-separated shared file with the label first."""
    data = np.loadtxt(shared_data_path(name), dtype=np.float64)
    return data[:, 1:], data[:, 0]
