"""scipy.sparse input (issue 4): every method trains on sparse X without
densifying it, and the model equals the one trained on the dense
equivalent.

Oracle: the same estimator fitted on the dense form of the matrix, where
an absent entry is NaN (missing, the default semantics) and a stored value
is itself. The dense growers (row partition, histograms with subtraction,
dense binning) and the sparse ones (presorted stored entries, column-wise
histogram scan, binary search in CSR rows) share no code path between the
input and the split arithmetic, so equal trees are strong evidence.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skboost import BoostClassifier, BoostRegressor
from _shared_data import shared_data_path

METHODS = [("exact", "global"), ("hist", "global"), ("approx", "global"),
           ("approx", "local")]


def sparse_problem(seed, n_rows=1500, n_features=25, density=0.3,
                   task="classification"):
    """CSR matrix with few distinct values per column (so that binned
    methods see the same cut points either way), explicit stored zeros, and
    its dense equivalent with NaN where nothing is stored."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_features, density=density, format="csr",
                  random_state=rng, dtype=np.float64,
                  data_rvs=lambda k: np.round(rng.normal(size=k), 1))
    # some stored entries are explicit zeros: values, not missing
    X.data[rng.random(X.data.shape[0]) < 0.05] = 0.0
    dense = np.full(X.shape, np.nan)
    coo = X.tocoo()
    dense[coo.row, coo.col] = coo.data
    filled = np.nan_to_num(dense, nan=-0.5)
    signal = filled[:, 0] + 2 * filled[:, 1] - filled[:, 2] * filled[:, 3]
    noise = rng.normal(scale=0.5, size=n_rows)
    y = (signal + noise > 0).astype(int) if task == "classification" else (
        signal + noise)
    weight = rng.uniform(0.2, 3.0, n_rows)
    return X, dense, y, weight


def fitted(task, X, y, weight, **params):
    kind = BoostClassifier if task == "classification" else BoostRegressor
    return kind(n_estimators=8, max_depth=4, n_jobs=2, **params).fit(
        X, y, sample_weight=weight)


def outputs(model, X):
    if isinstance(model, BoostClassifier):
        return model.predict_proba(X)
    return model.predict(X)


def assert_same_trees(a, b):
    trees_a, trees_b = a.get_booster().trees, b.get_booster().trees
    assert len(trees_a) == len(trees_b)
    for ta, tb in zip(trees_a, trees_b):
        for name in ("left_child", "right_child", "feature", "threshold",
                     "default_left", "value"):
            np.testing.assert_array_equal(getattr(ta, name),
                                          getattr(tb, name), err_msg=name)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("method, proposal", METHODS)
def test_sparse_model_equals_dense_model_with_nan(task, method, proposal):
    X, dense, y, weight = sparse_problem(0, task=task)
    params = dict(tree_method=method, approx_proposal=proposal)
    on_sparse = fitted(task, X, y, weight, **params)
    on_dense = fitted(task, dense, y, weight, **params)
    assert_same_trees(on_sparse, on_dense)
    # predictions: sparse rows and dense rows give the same numbers
    np.testing.assert_array_equal(outputs(on_sparse, X),
                                  outputs(on_dense, dense))
    np.testing.assert_array_equal(outputs(on_sparse, dense),
                                  outputs(on_sparse, X))
    np.testing.assert_array_equal(on_sparse.apply(X), on_dense.apply(dense))


@pytest.mark.parametrize("method, proposal", METHODS)
def test_sparse_model_with_subsampling_and_column_sampling(method, proposal):
    # rows outside the tree's sample are predicted through the sparse
    # predictor; sampling draws the same random numbers either way. (Not
    # colsample_bynode: the dense hist grower visits a level's nodes in
    # another order, so their masks differ.)
    X, dense, y, weight = sparse_problem(1)
    params = dict(tree_method=method, approx_proposal=proposal,
                  subsample=0.7, colsample_bytree=0.8, colsample_bylevel=0.7,
                  random_state=3)
    assert_same_trees(fitted("classification", X, y, weight, **params),
                      fitted("classification", dense, y, weight, **params))


@pytest.mark.parametrize("convert", [
    sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array,
    lambda X: X.astype(np.float32)], ids=["csc", "coo", "csr_array",
                                          "csc_array", "float32"])
def test_every_sparse_format_gives_the_same_model(convert):
    X, _, y, weight = sparse_problem(2)
    reference = fitted("classification", X, y, weight)
    model = fitted("classification", convert(X), y, weight)
    assert_same_trees(model, reference)
    np.testing.assert_array_equal(outputs(model, convert(X)),
                                  outputs(reference, X))


def test_input_matrix_is_not_modified():
    X, _, y, weight = sparse_problem(3)
    X = X.tocsr()
    X.data[:5] = -999.0
    before = X.copy()
    BoostClassifier(n_estimators=2, missing=-999.0).fit(X, y)
    assert (X != before).nnz == 0 and X.data[0] == -999.0


def test_stored_missing_marker_and_nan_are_missing():
    # stored NaN and stored values equal to ``missing`` behave like absent
    # entries: the model equals the one on the matrix without them
    X, _, y, weight = sparse_problem(4)
    marked = X.copy()
    rng = np.random.default_rng(0)
    chosen = rng.random(marked.data.shape[0]) < 0.2
    marked.data[chosen] = np.where(rng.random(chosen.sum()) < 0.5, np.nan,
                                   -999.0)
    for method in ("exact", "hist"):
        a = fitted("classification", marked, y, weight, tree_method=method,
                   missing=-999.0)
        b = fitted("classification", _without(X, chosen), y, weight,
                   tree_method=method)
        assert_same_trees(a, b)


def _without(X, drop):
    """X without the stored entries where ``drop``."""
    coo = X.tocoo()
    keep = ~drop
    return sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])),
                         shape=X.shape)


def test_explicit_zero_is_a_value_and_absent_is_missing():
    # the label is whether feature 0 holds a stored 0.0 (1) or nothing (0):
    # only a model that tells them apart can learn it
    rng = np.random.default_rng(5)
    n = 400
    stored = rng.random(n) < 0.5
    rows = np.flatnonzero(stored)
    X = sp.csr_matrix((np.zeros(rows.size), (rows, np.zeros(rows.size,
                                                            int))),
                      shape=(n, 3))
    X.data[:] = 0.0   # explicit zeros survive construction from COO
    assert X.nnz == rows.size
    y = stored.astype(int)
    for method, proposal in METHODS:
        model = BoostClassifier(n_estimators=5, tree_method=method,
                                approx_proposal=proposal).fit(X, y)
        assert (model.predict(X) == y).all(), method


def test_declared_shape_is_kept():
    # trailing all-absent columns and all-absent rows are part of the data
    X, dense, y, weight = sparse_problem(6, n_features=10)
    wide = sp.hstack([X, sp.csr_matrix((X.shape[0], 7))]).tocsr()
    wide = sp.vstack([wide, sp.csr_matrix((3, wide.shape[1]))]).tocsr()
    y = np.r_[y, [0, 1, 0]]
    weight = np.r_[weight, [1.0, 1.0, 1.0]]
    model = fitted("classification", wide, y, weight)
    assert model.n_features_in_ == 17
    assert outputs(model, wide).shape == (wide.shape[0], 2)
    with pytest.raises(ValueError, match="features"):
        model.predict(X)   # 10 columns: not the 17 of training
    with pytest.raises(ValueError, match="features"):
        model.predict(dense)


@pytest.fixture(scope="module")
def huge_sparse():
    """100,000 x 1,000,000 with 20 stored entries a row: its dense float32
    form would take 400 GB."""
    rng = np.random.default_rng(0)
    n, p, per_row = 100_000, 1_000_000, 20
    indices = rng.integers(0, p, (n, per_row))
    # the label: whether column 654,321 is stored in the row (30% of rows)
    indices[:, 0] = np.where(rng.random(n) < 0.3, 654_321, indices[:, 0])
    X = sp.csr_matrix((np.ones(n * per_row, np.float32), indices.ravel(),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, p))
    X.sum_duplicates()
    y = (X[:, 654_321].toarray().ravel() > 0).astype(int)
    return X, y


@pytest.mark.parametrize("method, proposal", METHODS)
def test_trains_on_a_matrix_too_large_to_densify(huge_sparse, method,
                                                 proposal):
    X, y = huge_sparse
    model = BoostClassifier(n_estimators=3, max_depth=3, n_jobs=2,
                            tree_method=method,
                            approx_proposal=proposal).fit(X, y)
    # one split on column 654,321 (present vs absent) separates the classes
    root = model.get_booster().trees[0]
    assert root.feature[0] == 654_321
    assert (model.predict(X) == y).all()


# --------------------------------------------------------------------------
# sparse_absent="zero": absent entries are the value 0.0
# --------------------------------------------------------------------------

def zero_problem(seed, task="classification"):
    """A sparse problem with stored NaN and ``missing``-marked entries, and
    its dense form (absent entries 0.0, missing ones NaN)."""
    X, _, y, weight = sparse_problem(seed, task=task)
    X = X.tocsr()
    rng = np.random.default_rng(seed)
    chosen = rng.random(X.data.shape[0]) < 0.08
    X.data[chosen] = np.where(rng.random(chosen.sum()) < 0.5, np.nan, -999.0)
    dense = X.toarray()
    dense[dense == -999.0] = np.nan
    return X, dense, y, weight


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("method", ["hist", "approx"])
def test_zero_absent_model_equals_dense_model_with_zeros(task, method):
    # binned methods: the implicit zero block's sums are exact integers
    # (totals minus stored entries), so the trees are bit-identical
    X, dense, y, weight = zero_problem(0, task)
    params = dict(tree_method=method, missing=-999.0)
    on_sparse = fitted(task, X, y, weight, sparse_absent="zero", **params)
    on_dense = fitted(task, dense, y, weight, **params)
    assert_same_trees(on_sparse, on_dense)
    np.testing.assert_array_equal(outputs(on_sparse, X),
                                  outputs(on_dense, dense))


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_zero_absent_exact_model_equals_dense_model_to_rounding(task):
    # exact: the zero block's float sums are the node's totals minus its
    # stored entries', not a row-by-row sum, so gains agree to rounding.
    # Where two candidates partition a node's rows identically (true ties,
    # common in small deep nodes) rounding picks one, differently in the
    # two forms: the partitions, hence the training outputs, still agree,
    # and so does every tree's root split.
    X, dense, y, weight = zero_problem(1, task)
    on_sparse = fitted(task, X, y, weight, tree_method="exact",
                       sparse_absent="zero", missing=-999.0)
    on_dense = fitted(task, dense, y, weight, tree_method="exact",
                      missing=-999.0)
    for ta, tb in zip(on_sparse.get_booster().trees,
                      on_dense.get_booster().trees):
        for name in ("feature", "threshold", "default_left"):
            assert getattr(ta, name)[0] == getattr(tb, name)[0], name
    np.testing.assert_allclose(outputs(on_sparse, X),
                               outputs(on_dense, dense), rtol=1e-9,
                               atol=1e-12)


def test_zero_absent_stored_zeros_equal_absent_ones():
    X, _, y, weight = zero_problem(2)
    explicit = X.tocoo()
    # store a zero in every empty cell of the first three columns
    rows = np.setdiff1d(np.arange(X.shape[0]), explicit.row[explicit.col == 0])
    with_zeros = sp.csr_matrix((
        np.r_[explicit.data, np.zeros(rows.size)],
        (np.r_[explicit.row, rows], np.r_[explicit.col, np.zeros(rows.size,
                                                                 int)])),
        shape=X.shape)
    for method in ("exact", "hist"):
        a = fitted("classification", X, y, weight, tree_method=method,
                   sparse_absent="zero", missing=-999.0)
        b = fitted("classification", with_zeros, y, weight,
                   tree_method=method, sparse_absent="zero", missing=-999.0)
        assert_same_trees(a, b)


def test_zero_absent_round_trips_through_a_saved_model(tmp_path):
    X, _, y, weight = zero_problem(3)
    model = fitted("classification", X, y, weight, sparse_absent="zero",
                   missing=-999.0)
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = BoostClassifier.load(path)
    np.testing.assert_array_equal(outputs(loaded, X), outputs(model, X))


def test_zero_absent_with_local_proposals_is_a_clear_error():
    X, _, y, _ = zero_problem(4)
    with pytest.raises(ValueError, match="local"):
        BoostClassifier(tree_method="approx", approx_proposal="local",
                        sparse_absent="zero").fit(X, y)


@pytest.mark.parametrize("method", ["exact", "hist", "approx"])
def test_zero_absent_trains_on_a_matrix_too_large_to_densify(huge_sparse,
                                                             method):
    X, y = huge_sparse
    model = BoostClassifier(n_estimators=3, max_depth=3, n_jobs=2,
                            tree_method=method, sparse_absent="zero").fit(X, y)
    assert model.get_booster().trees[0].feature[0] == 654_321
    assert (model.predict(X) == y).all()


# --------------------------------------------------------------------------
# The mushroom data (sparse one-hot, LibSVM) next to XGBoost
# --------------------------------------------------------------------------

def load_agaricus(part):
    from sklearn.datasets import load_svmlight_file

    path = shared_data_path(f"agaricus.txt.{part}")
    X, y = load_svmlight_file(str(path), zero_based=True, n_features=127)
    return X.astype(np.float32), y.astype(int)


@pytest.mark.parametrize("method", ["exact", "hist", "approx"])
@pytest.mark.parametrize("rounds, depth", [(2, 2), (10, 4)])
def test_agaricus_test_error_equals_xgboost(method, rounds, depth):
    xgboost = pytest.importorskip("xgboost")
    X_train, y_train = load_agaricus("train")
    X_test, y_test = load_agaricus("test")
    params = dict(n_estimators=rounds, max_depth=depth, learning_rate=1.0,
                  tree_method=method, n_jobs=1)
    ours = BoostClassifier(**params).fit(X_train, y_train)
    theirs = xgboost.XGBClassifier(**params).fit(X_train, y_train)
    error_ours = np.mean(ours.predict(X_test) != y_test)
    error_theirs = np.mean(theirs.predict(X_test) != y_test)
    assert error_ours == error_theirs
    # the same trees, as far as the probabilities show
    np.testing.assert_allclose(ours.predict_proba(X_test),
                               theirs.predict_proba(X_test), atol=1e-5)


@pytest.mark.parametrize("seed", range(8))
def test_lines_sorted_unique_matches_a_numpy_check(seed):
    """The one-pass check of the sparse input (every row's columns strictly
    increasing) against a row-by-row numpy oracle, on matrices with empty
    rows, unsorted rows and repeated columns, for int32 and int64 index
    arrays; an indptr that decreases or leaves the indices gives None (the
    numpy checks then speak), not a read out of bounds."""
    from skboost.tree._sparse import lines_sorted_unique

    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 40))
    lengths = rng.integers(0, 6, n_rows)
    lengths[rng.random(n_rows) < 0.3] = 0
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    rows = [np.sort(rng.choice(20, size=k, replace=False)) for k in lengths]
    if seed % 3 == 1 and lengths.max() > 1:    # one row out of order
        r = int(np.argmax(lengths))
        rows[r] = rows[r][::-1]
    if seed % 3 == 2 and lengths.max() > 1:    # one repeated column
        r = int(np.argmax(lengths))
        rows[r][1] = rows[r][0]
    indices = np.concatenate(rows + [np.zeros(0, int)])
    expected = all(np.all(np.diff(row) > 0) for row in rows)
    for ptr_type in (np.int32, np.int64):
        for index_type in (np.int32, np.int64):
            assert lines_sorted_unique(indptr.astype(ptr_type),
                                       indices.astype(index_type)) is expected
    bad = indptr.copy()
    bad[-1] = indices.shape[0] + 5          # beyond the indices
    assert lines_sorted_unique(bad, indices) is None
    if n_rows > 1:
        bad = indptr.copy()
        bad[1] = bad[-1] + 1                # rises past, then decreases
        assert lines_sorted_unique(bad, np.zeros(bad[1] - 1, np.int32)) is None
    assert lines_sorted_unique(indptr.astype(np.int16), indices) is None


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_sparse_cuts_of_long_and_short_columns_equal_dense_cuts(n_jobs):
    # the sparse cuts sketch short columns in the calling thread and long
    # ones (more entries than MIN_ROWS_TO_SHARE_COLUMNS) on threads; the
    # oracle: the dense binning of the same values with NaN for absent
    # entries, which sketches every column on its own
    from skboost._threads import MIN_ROWS_TO_SHARE_COLUMNS
    from skboost._input.sparse import sparse_rows
    from skboost.tree._presort import presort_sparse
    from skboost.tree.binning import BinMapper

    rng = np.random.default_rng(7)
    n_rows = MIN_ROWS_TO_SHARE_COLUMNS + 5000
    density = np.array([1.0, 0.9, 0.02, 0.01, 0.05, 0.003])
    dense = rng.normal(size=(n_rows, density.size)).astype(np.float32)
    dense[rng.random(dense.shape) >= density] = np.nan
    X = sp.csr_matrix(np.nan_to_num(dense, nan=0.0))
    X.data[:] = dense[~np.isnan(dense)]   # stored zeros stay values
    lengths = np.diff(X.tocsc().indptr)
    # every column sketched (more distinct values than its 63 value bins)
    assert lengths.max() >= MIN_ROWS_TO_SHARE_COLUMNS > lengths.min() > 64
    weight = rng.uniform(0.5, 2.0, n_rows)
    sparse_mapper = BinMapper(64).fit_columns(
        presort_sparse(sparse_rows(X)), weight, n_threads=n_jobs)
    dense_mapper = BinMapper(64).fit(dense, weight, n_threads=1)
    np.testing.assert_array_equal(sparse_mapper.has_missing_,
                                  dense_mapper.has_missing_)
    for sparse_cuts, dense_cuts in zip(sparse_mapper.cuts_,
                                       dense_mapper.cuts_):
        np.testing.assert_array_equal(sparse_cuts, dense_cuts)


@pytest.mark.parametrize("with_nan", [False, True])
def test_presorted_sparse_columns_equal_a_naive_sort(with_nan):
    # oracle: each column's stored non-NaN entries sorted by value with
    # Python's stable sort (ties in row order), -0.0 read as +0.0; values
    # of both signs, zeros of both signs, infinities and ties
    from skboost._input.sparse import sparse_rows
    from skboost.tree._presort import presort_sparse

    rng = np.random.default_rng(11)
    X = sp.random(300, 7, density=0.4, format="csr", random_state=rng,
                  dtype=np.float32)
    pool = np.array([-np.inf, -2.5, -1e-30, -0.0, 0.0, 1e-30, 3.0, np.inf],
                    dtype=np.float32)
    X.data[:] = rng.choice(pool, X.data.shape[0])
    if with_nan:
        X.data[rng.random(X.data.shape[0]) < 0.1] = np.nan
    columns = presort_sparse(sparse_rows(X))
    csc = X.tocsc()
    csc.sort_indices()
    for j in range(X.shape[1]):
        block = slice(csc.indptr[j], csc.indptr[j + 1])
        entries = [(float(v) + 0.0, int(r)) for v, r in
                   zip(csc.data[block], csc.indices[block]) if not np.isnan(v)]
        expected = sorted(entries, key=lambda e: e[0])   # stable: row order
        stored = slice(columns.col_ptr[j], columns.col_ptr[j + 1])
        assert [(float(v), int(r)) for v, r in zip(
            np.asarray(columns.values)[stored],
            np.asarray(columns.rows)[stored])] == expected
        # no -0.0 left among the stored values
        assert not np.any(np.signbit(np.asarray(columns.values)[stored])
                          & (np.asarray(columns.values)[stored] == 0))


@pytest.mark.parametrize("method", ["hist", "approx"])
@pytest.mark.parametrize("params", [
    dict(grow_policy="lossguide", max_leaves=12, max_depth=0),
    dict(monotone_constraints=(1, 0, -1) + (0,) * 22, reg_alpha=0.5,
         max_delta_step=0.8, min_child_weight=3.0, max_depth=6),
    dict(max_depth=7, min_child_weight=20.0)],
    ids=["lossguide", "monotone-l1", "early-leaves"])
def test_grouped_sparse_scan_equals_dense_model(method, params):
    # sparse hist and global approx keep the entries' bins grouped by node
    # (regrouped when lossguide re-slots rows, shrinking as leaves close);
    # oracle: the dense hist grower on the matrix with NaN
    X, dense, y, weight = sparse_problem(8)

    def fit(data, n_jobs=2):
        return BoostClassifier(**{"n_estimators": 8, "max_depth": 4,
                                  **params}, tree_method=method,
                               n_jobs=n_jobs).fit(data, y,
                                                  sample_weight=weight)

    on_sparse = fit(X)
    assert_same_trees(on_sparse, fit(dense))
    assert_same_trees(on_sparse, fit(X, n_jobs=1))
