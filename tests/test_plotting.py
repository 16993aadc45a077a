"""skboost.plotting: each picture renders to a non-empty PNG and shows the
model's own numbers (importances from get_score, one box per node with its
split, curves equal to evals_result_)."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from skboost import BoostClassifier, BoostRegressor  # noqa: E402
from skboost.plotting import plot_importance, plot_metric, plot_tree  # noqa: E402

pd = pytest.importorskip("pandas")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(300, 4)),
                         columns=["income", "age", "height", "noise"])
    frame.iloc[::9, 1] = np.nan
    y = ((frame["income"] + np.nan_to_num(frame["age"]) ** 2) > 0.5).astype(int)
    train, valid = slice(0, 200), slice(200, 300)
    clf = BoostClassifier(n_estimators=8, max_depth=3, eval_metric=["logloss", "error"])
    clf.fit(frame[train], y[train],
            eval_set=[(frame[train], y[train]), (frame[valid], y[valid])])
    return clf


def _assert_png_has_content(ax, path):
    ax.figure.savefig(path)
    assert path.stat().st_size > 2000
    pixels = matplotlib.image.imread(path)
    assert pixels.std() > 0.01  # not a blank canvas


@pytest.mark.parametrize("kind", ["gain", "weight", "total_cover"])
def test_plot_importance(model, kind, tmp_path):
    ax = plot_importance(model, importance_type=kind)
    _assert_png_has_content(ax, tmp_path / "importance.png")
    score = model.get_booster().get_score(importance_type=kind)
    bars = ax.patches
    labels = [t.get_text() for t in ax.get_yticklabels()]
    widths = {label: bar.get_width() for label, bar in zip(labels, bars)}
    assert widths == pytest.approx(score)
    assert labels[-1] == max(score, key=score.get)  # largest at the top


def test_plot_importance_options(model, tmp_path):
    fig, ax = plt.subplots()
    out = plot_importance(model.get_booster(), max_num_features=2, ax=ax,
                          show_values=False, title="top two")
    assert out is ax and len(ax.patches) == 2 and ax.get_title() == "top two"
    ax = plot_importance({"a": 2.0, "b": 1.0})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["b", "a"]
    with pytest.raises(ValueError, match="max_num_features"):
        plot_importance(model, max_num_features=0)
    with pytest.raises(ValueError, match="importance_type"):
        plot_importance(model, importance_type="split")
    X = np.random.default_rng(0).normal(size=(30, 2))
    stump = BoostRegressor(n_estimators=1, gamma=1e9).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="no split"):
        plot_importance(stump)


@pytest.mark.parametrize("show_stats", [False, True])
def test_plot_tree_draws_every_node(model, show_stats, tmp_path):
    tree = model.get_booster().trees[1]
    ax = plot_tree(model, tree_index=1, show_stats=show_stats)
    _assert_png_has_content(ax, tmp_path / "tree.png")
    texts = [t.get_text() for t in ax.texts]
    boxes = [t for t in texts if t.startswith("leaf") or " < " in t]
    assert len(boxes) == tree.n_nodes
    inner = np.flatnonzero(tree.left_child != -1)
    names = list(model.feature_names_in_)
    for node in inner:
        assert any(t.startswith(f"{names[tree.feature[node]]} < ") for t in boxes)
    # two labelled edges per split, one of them taking missing values
    edges = [t for t in texts
             if t in ("yes", "no", "yes, missing", "no, missing")]
    assert len(edges) == 2 * inner.size
    assert sum("missing" in t for t in edges) == inner.size
    assert len(ax.lines) == 2 * inner.size
    assert all(("gain = " in t) == show_stats for t in boxes if " < " in t)


def test_plot_tree_bad_index(model):
    with pytest.raises(ValueError, match="tree_index"):
        plot_tree(model, tree_index=len(model.get_booster().trees))
    with pytest.raises(TypeError, match="skboost estimator or Booster"):
        plot_tree("model")


def test_plot_metric_draws_the_logged_curves(model, tmp_path):
    ax = plot_metric(model, metric="error")
    _assert_png_has_content(ax, tmp_path / "metric.png")
    log = model.evals_result_
    curves = {line.get_label(): line.get_ydata() for line in ax.lines}
    assert curves.keys() == log.keys()
    for name in log:
        np.testing.assert_array_equal(curves[name], log[name]["error"])
    ax = plot_metric(log, dataset_names=["validation_1"])
    assert len(ax.lines) == 1 and ax.get_ylabel() == "logloss"


def test_plot_metric_marks_the_best_iteration(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(scale=2.0, size=300)
    reg = BoostRegressor(n_estimators=100, learning_rate=0.5,
                         early_stopping_rounds=3).fit(
        X[:200], y[:200], eval_set=[(X[200:], y[200:])])
    ax = plot_metric(reg)
    best = [line for line in ax.lines if line.get_label().startswith("best")]
    assert len(best) == 1 and best[0].get_xdata()[0] == reg.best_iteration


def test_plot_metric_errors(model):
    X = np.random.default_rng(0).normal(size=(30, 2))
    plain = BoostRegressor(n_estimators=2).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="eval_set"):
        plot_metric(plain)
    with pytest.raises(ValueError, match="metric 'auc' was not logged"):
        plot_metric(model, metric="auc")
    with pytest.raises(ValueError, match="evaluation sets \\['test'\\]"):
        plot_metric(model, dataset_names=["test"])


def test_large_models_get_a_bounded_figure(tmp_path):
    from skboost.plotting import MAX_FIGSIZE

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 300))
    y = X[:, :20].sum(axis=1) + rng.normal(size=3000)
    reg = BoostRegressor(n_estimators=1, max_depth=0, grow_policy="lossguide",
                         max_leaves=300, min_child_weight=0).fit(X, y)
    assert reg.booster_.trees[0].n_leaves > 150
    for ax in (plot_tree(reg), plot_importance(reg, importance_type="weight")):
        width, height = ax.figure.get_size_inches()
        assert width <= MAX_FIGSIZE[0] and height <= MAX_FIGSIZE[1]
        ax.figure.savefig(tmp_path / "big.png", dpi=50)
