"""Every growth case of ``_growth_cases.py`` produces, bit for bit, the model
saved in ``fixtures/growth`` before the growers were refactored onto one
growth driver (see ``fixtures/growth/make_fixtures.py``: the fixtures must not
be regenerated to make this test pass).

For each case and ``n_jobs`` in (1, 2): refit, save, and compare the parsed
model file with the fixture's, and the raw margins on the case's prediction
set with the fixture's, exactly; the fixture model, loaded, predicts the
fixture margins too.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from _growth_cases import CASES, fit_case, margins

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "growth"


def _comparable(path):
    """The parsed model file, without the fields that legitimately differ
    between the fixture and a refit of the same model:

    * ``model.skboost_version``: informative only, changes with the release;
    * ``model.params.n_jobs``: the test refits with n_jobs 1 and 2, the
      fixtures were fitted with 1 (it does not change the model: that is
      what the test checks);
    * ``checksum``: the hash of the ``model`` object, hence of the two
      fields above; everything else it covers is compared directly;
    * the parameters added since the fixtures were made
      (``PARAMS_ADDED_SINCE``), which are checked to hold their defaults
      (the cases do not set them) and then dropped.
    """
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data.pop("checksum", None)
    data["model"].pop("skboost_version")
    params = data["model"]["params"]
    params.pop("n_jobs")
    for name, default in PARAMS_ADDED_SINCE.items():
        assert params.pop(name, default) == default, name
    return data


# parameter -> default (as saved), of the parameters the estimators gained
# after the fixtures were made
PARAMS_ADDED_SINCE = {"monotone_constraints": None,
                      "interaction_constraints": None,
                      "feature_weights": None,
                      # issue 19: XGBoost's and LightGBM's parameters
                      "verbosity": None, "device": "cpu",
                      "class_weight": None,
                      "num_parallel_tree": 1,
                      "multi_strategy": "one_output_per_tree",
                      # issue 37: DART and survival:aft's parameters
                      "booster": "gbtree", "rate_drop": 0.0,
                      "one_drop": False, "skip_drop": 0.0,
                      "sample_type": "uniform", "normalize_type": "tree",
                      "aft_loss_distribution": "normal",
                      "aft_loss_distribution_scale": 1.0,
                      "lambdarank_unbiased": False,
                      "lambdarank_bias_norm": 1.0,
                      # issue 42: recoveries of a distributed fit
                      "max_recoveries": 3,
                      # issue 37: XGBoost's LambdaMART normalisation flags
                      "lambdarank_normalization": True,
                      "lambdarank_score_normalization": True}


def _first_difference(a, b, where="model file"):
    """Path of the first place two parsed JSON values differ (for the
    failure message), or None."""
    if type(a) is not type(b):
        return f"{where}: {a!r:.80} != {b!r:.80}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a.keys() ^ b.keys())} differ"
        for k in a:
            d = _first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_refit_equals_fixture(name, n_jobs, tmp_path):
    fixture_json = FIXTURES / f"{name}.json"
    fixture_margins = np.load(FIXTURES / f"{name}.npy")
    est, X_pred = fit_case(name, n_jobs)

    saved = tmp_path / f"{name}.json"
    est.save_model(saved)
    got, want = _comparable(saved), _comparable(fixture_json)
    assert got == want, (
        f"case {name!r} (n_jobs={n_jobs}): the refitted model differs from "
        f"the fixture, first at {_first_difference(got, want)}")

    got_margins = margins(est, X_pred)
    assert got_margins.dtype == fixture_margins.dtype == np.float64
    np.testing.assert_array_equal(
        got_margins, fixture_margins,
        err_msg=f"case {name!r} (n_jobs={n_jobs}): margins differ from the "
                "fixture")

    loaded = CASES[name].estimator().load_model(fixture_json)
    np.testing.assert_array_equal(
        margins(loaded, X_pred), fixture_margins,
        err_msg=f"case {name!r}: the fixture model, loaded, does not predict "
                "the fixture margins")
