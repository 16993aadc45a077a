"""Model files and pickles written by the version before the boosting layer
was restructured (issue 34; main 750de8e, see ``fixtures/legacy``) load with
the current code and predict bit for bit what they predicted then.

Oracle: the predictions, margins, leaf indices and tree dumps that the old
version computed and stored beside its files (``*.expected.npz``).
"""

import pickle
from pathlib import Path

import numpy as np
import pytest

from _legacy_cases import CASES, outputs

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "legacy"


def _expected(name):
    with np.load(FIXTURES / f"{name}.expected.npz") as stored:
        arrays = dict(stored)
    if "X_test" in arrays:
        X_test = arrays.pop("X_test")
    else:
        pd = pytest.importorskip("pandas")
        X_test = pd.read_pickle(FIXTURES / f"{name}.X.pkl")
    return arrays, X_test


def _assert_same(estimator, name):
    expected, X_test = _expected(name)
    got = outputs(estimator, X_test)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)


def _estimator_class(name):
    with open(FIXTURES / f"{name}.estimator.pkl", "rb") as f:
        return type(pickle.load(f))


@pytest.mark.parametrize("name", sorted(CASES))
def test_estimator_pickle(name):
    if name.startswith("dask"):
        pytest.importorskip("distributed")
    with open(FIXTURES / f"{name}.estimator.pkl", "rb") as f:
        estimator = pickle.load(f)
    _assert_same(estimator, name)


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_estimator_model_file(name, suffix):
    if name.startswith("dask"):
        pytest.importorskip("distributed")
    estimator = _estimator_class(name)()
    estimator.load_model(FIXTURES / f"{name}{suffix}")
    _assert_same(estimator, name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_booster_pickle_and_file(name):
    """A pickled booster, and the booster's own model file, predict the old
    margins."""
    from skboost import Booster

    expected, X_test = _expected(name)
    with open(FIXTURES / f"{name}.booster.pkl", "rb") as f:
        pickled = pickle.load(f)
    loaded = Booster(model_file=FIXTURES / f"{name}.booster.json")
    for booster in (pickled, loaded):
        np.testing.assert_array_equal(
            booster.get_dump(with_stats=True), expected["dump"])
    margin = loaded.predict(X_test, output_margin=True)
    np.testing.assert_array_equal(np.asarray(margin).reshape(
        expected["margin"].shape), expected["margin"])
