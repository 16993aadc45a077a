"""Feature importances, get_score, get_dump and trees_to_dataframe.

Oracles: XGBoost's exact method on the same data (its trees are the same,
checked first through the margins, so its get_score and dump are the
reference), and a naive recount over the text dump.
"""

import re

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skboost import BoostClassifier, BoostRegressor
from skboost._model.importance import IMPORTANCE_TYPES

xgboost = pytest.importorskip("xgboost")
pd = pytest.importorskip("pandas")


def _data(objective, n=500, d=5, seed=0):
    """Continuous features without ties (so both libraries find the same
    splits), missing values, weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    signal = np.sin(2 * Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.3 * Z[:, 3]
    noise = rng.normal(scale=0.3, size=n)
    y = signal + noise if objective == "reg" else (signal + noise > 0.1).astype(int)
    return X, y, rng.uniform(0.2, 3.0, size=n)


@pytest.fixture(scope="module", params=["reg", "binary"])
def pair(request):
    """(skboost model, XGBoost model, X) trained identically."""
    X, y, w = _data(request.param)
    kw = dict(n_estimators=6, max_depth=3, tree_method="exact", n_jobs=1,
              base_score=0.5)
    if request.param == "reg":
        ours, theirs = BoostRegressor(**kw), xgboost.XGBRegressor(**kw)
    else:
        ours, theirs = BoostClassifier(**kw), xgboost.XGBClassifier(**kw)
    ours.fit(X, y, sample_weight=w)
    theirs.fit(X, y, sample_weight=w)
    margins = theirs.predict(X, output_margin=True)
    # precondition: the same trees (whole leaf values apart otherwise)
    np.testing.assert_allclose(ours.predict(X, output_margin=True), margins,
                               atol=1e-5)
    return ours, theirs, X


def test_get_score_matches_xgboost(pair):
    ours, theirs, _ = pair
    for kind in IMPORTANCE_TYPES:
        mine = ours.get_booster().get_score(importance_type=kind)
        ref = theirs.get_booster().get_score(importance_type=kind)
        assert mine.keys() == ref.keys(), kind
        # XGBoost's gain omits the 1/2 of the paper's equation 7
        scale = 2.0 if kind in ("gain", "total_gain") else 1.0
        for name in ref:
            assert scale * mine[name] == pytest.approx(ref[name], rel=1e-4), (
                kind, name)


@pytest.mark.parametrize("kind", IMPORTANCE_TYPES)
def test_feature_importances_match_xgboost(pair, kind):
    ours, theirs, _ = pair
    ours = ours.set_params(importance_type=kind)
    theirs = theirs.set_params(importance_type=kind)
    np.testing.assert_allclose(ours.feature_importances_,
                               theirs.feature_importances_, rtol=1e-4,
                               atol=1e-7)
    assert ours.feature_importances_.sum() == pytest.approx(1.0)


_SPLIT = re.compile(r"^(\t*)(\d+):\[(.+)<([^\]]+)\] yes=(\d+),no=(\d+),"
                    r"missing=(\d+)(?:,gain=([^,]+),cover=(.+))?$")
_LEAF = re.compile(r"^(\t*)(\d+):leaf=([^,]+)(?:,cover=(.+))?$")


def _parse_dump(text):
    """{node id: parsed line} of one tree's text dump."""
    nodes = {}
    for line in text.rstrip("\n").split("\n"):
        if m := _SPLIT.match(line):
            depth, nid, feat, thr, yes, no, miss, gain, cover = m.groups()
            nodes[int(nid)] = dict(depth=len(depth), feature=feat,
                                   threshold=float(thr), yes=int(yes),
                                   no=int(no), missing=int(miss),
                                   gain=gain and float(gain),
                                   cover=cover and float(cover))
        else:
            m = _LEAF.match(line)
            assert m, line
            depth, nid, leaf, cover = m.groups()
            nodes[int(nid)] = dict(depth=len(depth), leaf=float(leaf),
                                   cover=cover and float(cover))
    return nodes


def test_text_dump_matches_xgboost(pair):
    """Same node ids, features, thresholds, children and leaf values; gain
    in XGBoost's units is twice skboost's. (The missing direction of a node
    without missing values is a convention and may differ.)"""
    ours, theirs, _ = pair
    mine = ours.get_booster().get_dump(with_stats=True)
    ref = theirs.get_booster().get_dump(with_stats=True)
    assert len(mine) == len(ref)
    for a_text, b_text in zip(mine, ref):
        a, b = _parse_dump(a_text), _parse_dump(b_text)
        assert a.keys() == b.keys()
        for nid in a:
            x, y = a[nid], b[nid]
            assert x["depth"] == y["depth"]
            assert x["cover"] == pytest.approx(y["cover"], rel=1e-5)
            if "leaf" in y:
                assert x["leaf"] == pytest.approx(y["leaf"], rel=1e-4, abs=1e-6)
                continue
            assert (x["feature"], x["yes"], x["no"]) == (y["feature"], y["yes"], y["no"])
            assert x["threshold"] == pytest.approx(y["threshold"], rel=1e-6)
            assert 2 * x["gain"] == pytest.approx(y["gain"], rel=1e-4)


def _naive_scores(dumps):
    """Oracle: count splits and add gains and covers, line by line."""
    weight, gain, cover = {}, {}, {}
    for text in dumps:
        for node in _parse_dump(text).values():
            if "feature" in node:
                f = node["feature"]
                weight[f] = weight.get(f, 0) + 1
                gain[f] = gain.get(f, 0.0) + node["gain"]
                cover[f] = cover.get(f, 0.0) + node["cover"]
    return {"weight": weight, "total_gain": gain, "total_cover": cover,
            "gain": {f: gain[f] / weight[f] for f in weight},
            "cover": {f: cover[f] / weight[f] for f in weight}}


@pytest.fixture(scope="module")
def multiclass():
    """A 3-class hist model on a DataFrame with named columns, one of them
    pure noise the model may or may not use, one constant (never used)."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"size": rng.normal(size=400),
                       "age years": rng.normal(size=400),
                       "noise": rng.normal(size=400),
                       "constant": np.ones(400)})
    y = np.digitize(df["size"] + 0.5 * df["age years"], [-0.5, 0.5])
    return BoostClassifier(n_estimators=4, max_depth=4).fit(df, y), df


def test_get_score_matches_a_recount_of_the_dump(multiclass):
    clf, _ = multiclass
    booster = clf.get_booster()
    naive = _naive_scores(booster.get_dump(with_stats=True))
    for kind in IMPORTANCE_TYPES:
        score = booster.get_score(importance_type=kind)
        assert score.keys() == naive[kind].keys()
        assert "constant" not in score  # never split on: absent, as in XGBoost
        for name, value in score.items():
            assert value == pytest.approx(naive[kind][name], rel=1e-7)


def test_feature_importances_normalise_get_score(multiclass):
    clf, df = multiclass
    for kind in IMPORTANCE_TYPES:
        clf.set_params(importance_type=kind)
        score = clf.get_booster().get_score(importance_type=kind)
        expected = np.array([score.get(c, 0.0) for c in df.columns])
        np.testing.assert_allclose(clf.feature_importances_,
                                   expected / expected.sum())
    assert clf.feature_importances_[list(df.columns).index("constant")] == 0


def test_trees_to_dataframe_describes_every_node(multiclass):
    clf, _ = multiclass
    booster = clf.get_booster()
    nodes = booster.trees_to_dataframe()
    assert list(nodes.columns) == ["Tree", "Node", "ID", "Feature", "Split",
                                   "Yes", "No", "Missing", "Gain", "Cover",
                                   "Value"]
    assert len(nodes) == sum(t.n_nodes for t in booster.trees)
    names = list(clf.feature_names_in_)
    for (t, tree_nodes), tree in zip(nodes.groupby("Tree"), booster.trees,
                                     strict=True):
        inner = tree.left_child != -1
        rows = tree_nodes.set_index("Node").loc[np.arange(tree.n_nodes)]
        assert list(rows["Feature"][~inner]) == ["Leaf"] * int((~inner).sum())
        assert list(rows["Feature"][inner]) == [names[f] for f in tree.feature[inner]]
        assert list(rows["Yes"][inner]) == [f"{t}-{c}" for c in tree.left_child[inner]]
        assert list(rows["No"][inner]) == [f"{t}-{c}" for c in tree.right_child[inner]]
        np.testing.assert_array_equal(rows["Split"][inner], tree.threshold[inner])
        np.testing.assert_array_equal(rows["Gain"][inner], tree.gain[inner])
        np.testing.assert_array_equal(rows["Gain"][~inner], tree.value[~inner])
        np.testing.assert_array_equal(rows["Cover"], tree.cover)
    # totals per feature agree with get_score
    splits = nodes[nodes["Feature"] != "Leaf"]
    total = splits.groupby("Feature")["Gain"].sum().to_dict()
    assert total == pytest.approx(booster.get_score(importance_type="total_gain"))


def test_json_dump_has_the_same_nodes_as_the_text_dump(multiclass):
    import json

    clf, _ = multiclass
    booster = clf.get_booster()
    for text, js in zip(booster.get_dump(with_stats=True),
                        booster.get_dump(with_stats=True, dump_format="json")):
        flat = {}
        stack = [json.loads(js)]
        while stack:
            node = stack.pop()
            flat[node["nodeid"]] = node
            stack.extend(node.get("children", []))
        parsed = _parse_dump(text)
        assert flat.keys() == parsed.keys()
        for nid, node in flat.items():
            if "leaf" in node:
                assert node["leaf"] == pytest.approx(parsed[nid]["leaf"], rel=1e-8)
            else:
                assert node["split"] == parsed[nid]["feature"]
                assert (node["yes"], node["no"], node["missing"]) == (
                    parsed[nid]["yes"], parsed[nid]["no"], parsed[nid]["missing"])


def test_model_without_splits_has_zero_importances():
    X = np.random.default_rng(0).normal(size=(50, 3))
    reg = BoostRegressor(n_estimators=2, gamma=1e9).fit(X, X[:, 0])
    np.testing.assert_array_equal(reg.feature_importances_, np.zeros(3))
    assert reg.get_booster().get_score() == {}
    trees = reg.get_booster().trees
    assert [t.n_nodes for t in trees] == [1, 1]
    assert reg.get_booster().get_dump() == [f"0:leaf={t.value[0]:.9g}\n"
                                            for t in trees]


def test_bad_importance_type_and_dump_arguments():
    X = np.random.default_rng(0).normal(size=(50, 3))
    reg = BoostRegressor(n_estimators=2, importance_type="split")
    with pytest.raises(InvalidParameterError, match="importance_type"):
        reg.fit(X, X[:, 0])
    booster = reg.set_params(importance_type="gain").fit(X, X[:, 0]).get_booster()
    with pytest.raises(ValueError, match="importance_type must be one of"):
        booster.get_score(importance_type="split")
    with pytest.raises(ValueError, match="dump_format"):
        booster.get_dump(dump_format="dot")
    with pytest.raises(TypeError, match="with_stats"):
        booster.get_dump(with_stats="yes")


@pytest.mark.parametrize("params", [
    dict(tree_method="hist"), dict(tree_method="approx"),
    dict(tree_method="exact"),
    dict(tree_method="hist", grow_policy="lossguide", max_leaves=12),
    dict(tree_method="hist", reg_lambda=5.0, min_child_weight=3.0),
], ids=lambda p: "-".join(f"{v}" for v in p.values()))
def test_split_statistics_follow_the_paper(params):
    """Oracle: the closed forms. A node's cover is its hessian sum H (the
    children's covers add up to it; the root's is the weighted row count for
    squared error) and its value is ``-lr G / (H + lambda)``, which gives G;
    a split's stored gain must be equation 7 of those sums."""
    X, y, w = _data("reg", n=800)
    lr, lam = 0.3, params.get("reg_lambda", 1.0)
    reg = BoostRegressor(n_estimators=4, max_depth=5, learning_rate=lr,
                         **params).fit(X, y, sample_weight=w)
    for tree in reg.get_booster().trees:
        assert tree.cover[0] == pytest.approx(w.sum(), rel=1e-9)
        inner = np.flatnonzero(tree.left_child != -1)
        assert inner.size > 0
        left, right = tree.left_child[inner], tree.right_child[inner]
        np.testing.assert_allclose(tree.cover[left] + tree.cover[right],
                                   tree.cover[inner], rtol=1e-9)
        G = -tree.value * (tree.cover + lam) / lr

        def score(nodes):
            return G[nodes] ** 2 / (tree.cover[nodes] + lam)

        expected = 0.5 * (score(left) + score(right) - score(inner))
        np.testing.assert_allclose(tree.gain[inner], expected, rtol=1e-6)
