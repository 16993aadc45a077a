"""Out-of-core training (skboost.ExternalData): the oracle is the in-core
estimator on the concatenated chunks (the same model bit for bit), naive
numpy versions of the page kernel, and the chunks themselves for the
checks of bad input."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from skboost import BoostClassifier, BoostRanker, BoostRegressor, ExternalData
from skboost.tree._context import SplitContext
from skboost.tree._paged import PagePartition, checksum

TREE_FIELDS = ("feature", "threshold", "default_left", "left_child",
               "right_child", "value", "gain", "cover")


def assert_same_model(a, b):
    trees_a, trees_b = a.get_booster().trees, b.get_booster().trees
    assert len(trees_a) == len(trees_b)
    for ta, tb in zip(trees_a, trees_b):
        for field in TREE_FIELDS:
            np.testing.assert_array_equal(getattr(ta, field),
                                          getattr(tb, field), err_msg=field)


def make_data(n=6000, d=6, seed=0, missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1] * 2)           # few distinct values
    X[rng.random((n, d)) < missing] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1])
    y = (signal + rng.normal(size=n) > 0).astype(np.int64)
    return X, y, signal


def chunked(*arrays, bounds):
    """A chunks() callable cutting the arrays at ``bounds``."""
    def chunks():
        for a, b in zip(bounds[:-1], bounds[1:]):
            yield tuple(None if x is None else x[a:b] for x in arrays)
    return chunks


# Uneven chunks, one of a single row, none aligned with the sketch's
# 65536-row blocks or with the pages.
BOUNDS = [0, 1000, 1001, 3500, 6000]


@pytest.mark.parametrize("n_classes", [25, 3100])
def test_many_classes_warning_counts_the_rows(tmp_path, n_classes):
    """Out of core the classes are checked on the distinct labels; the
    warning about more classes than half the samples counts the samples,
    as scikit-learn's check of every label does (the oracle)."""
    import warnings

    from sklearn.utils.multiclass import check_classification_targets

    X, _, _ = make_data()
    y = np.arange(X.shape[0]) % n_classes

    def warned(fit):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        return any("unique classes" in str(w.message) for w in caught)

    expected = warned(lambda: check_classification_targets(y))
    assert expected == (n_classes > X.shape[0] / 2)
    with ExternalData(chunked(X, y, bounds=BOUNDS), cache_dir=tmp_path,
                      page_bytes=1 << 20) as data:
        assert warned(lambda: BoostClassifier(
            n_estimators=1, max_depth=1).fit(data)) == expected
    assert warned(lambda: BoostClassifier(
        n_estimators=1, max_depth=1).fit(X, y)) == expected


@pytest.mark.parametrize("max_bin", [256, 32])
@pytest.mark.parametrize("params", [
    dict(),
    dict(subsample=0.7, colsample_bynode=0.6, colsample_bytree=0.8),
    dict(grow_policy="lossguide", max_leaves=12, max_depth=0),
    dict(reg_alpha=0.5, gamma=0.2, min_child_weight=3.0,
         monotone_constraints=(1, 0, 0, 0, 0, 0)),
])
def test_classifier_equals_in_core(tmp_path, max_bin, params):
    X, y, _ = make_data()
    p = dict(dict(n_estimators=6, max_depth=5, max_bin=max_bin, n_jobs=2,
                  random_state=3), **params)
    in_core = BoostClassifier(**p).fit(X, y)
    with ExternalData(chunked(X, y, bounds=BOUNDS), cache_dir=tmp_path,
                      page_bytes=4096) as data:
        out = BoostClassifier(**p).fit(data)
        proba = out.predict_proba(data)
    assert_same_model(in_core, out)
    np.testing.assert_array_equal(proba, in_core.predict_proba(X))


@pytest.mark.parametrize("kernel_reads, params", [
    (True, dict(subsample=1.0)), (True, dict(subsample=0.7)),
    (False, dict(subsample=0.7)),
    (True, dict(grow_policy="lossguide", max_leaves=40, max_depth=0))])
def test_threads_taking_whole_pages_equal_in_core(tmp_path, monkeypatch,
                                                  kernel_reads, params):
    """Enough rows for two threads and 40 pages: the threads take whole
    pages, with private histogram copies at the shallow levels and the
    pool under locks at the deep ones (depth 7: levels building 8 to 32
    histograms), or (``kernel_reads`` False: no POSIX pread) the pages
    read on a helper thread and shared; the model equals in core."""
    import skboost.tree.finders.paged as paged_finder

    if not kernel_reads:
        monkeypatch.setattr(paged_finder, "CAN_READ_PAGES", False)
    X, y, _ = make_data(n=41_000, d=5, seed=4)
    p = dict(dict(n_estimators=3, max_depth=7, max_bin=64, n_jobs=2,
                  random_state=1), **params)
    in_core = BoostClassifier(**p).fit(X, y)
    bounds = [0, 9_000, 20_000, 41_000]
    with ExternalData(chunked(X, y, bounds=bounds), cache_dir=tmp_path,
                      page_bytes=1024 * 5) as data:
        out = BoostClassifier(**p).fit(data)
    assert_same_model(in_core, out)


def late_missing_data(n=140_000, seed=0):
    """Features whose first missing value comes in the sketch's first
    65,536-row block (1), in a later one (2, 3) or never (0, 4: few
    distinct values): with max_bin=256 their caps are 255, 255, 255, 256,
    256 value bins, and the first block cannot tell 2 and 3 from 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[:, 4] = np.round(X[:, 4] * 3)
    X[rng.random(n) < 0.1, 1] = np.nan
    X[100_000, 2] = np.nan
    X[65_536, 3] = np.nan
    y = (np.nan_to_num(X[:, 0]) + X[:, 4] + rng.normal(size=n) > 0)
    return X, y.astype(np.int64)


@pytest.mark.parametrize("weighted", [False, True])
def test_streaming_sketch_of_late_missing_values_equals_bin_mapper(weighted):
    """A feature whose first missing value comes after its first block is
    summarised for the wrong cap: it is reported late, sketched again
    whole, and the cuts are BinMapper.fit's on the concatenated rows."""
    from skboost.external import StreamingSketch
    from skboost.tree.binning import BinMapper

    X, _ = late_missing_data()
    w = np.random.default_rng(1).random(X.shape[0]) if weighted else None
    sketch = StreamingSketch(5, 256, weighted=weighted, n_threads=2)
    for a, b in [(0, 70000), (70000, 70001), (70001, X.shape[0])]:
        sketch.push(X[a:b], None if w is None else w[a:b])
    late = sketch.late_features()
    np.testing.assert_array_equal(late, [2, 3])
    with pytest.raises(RuntimeError, match="late features"):
        sketch.mapper()
    again = StreamingSketch(2, 256, weighted=weighted, n_threads=1,
                            has_missing=np.ones(2, bool))
    again.push(np.ascontiguousarray(X[:, late]), w)
    assert again.late_features().size == 0
    sketch.replace(late, again)
    mapper = sketch.mapper()
    reference = BinMapper(256).fit(X, w, 2)
    np.testing.assert_array_equal(mapper.has_missing_,
                                  reference.has_missing_)
    for got, expected in zip(mapper.cuts_, reference.cuts_):
        np.testing.assert_array_equal(got, expected)


def test_late_missing_values_fit_equals_in_core(tmp_path):
    """Through ExternalData: the scan re-sketches the late features (one
    more pass over the chunks) and the model is the in-core model."""
    X, y = late_missing_data()
    p = dict(n_estimators=3, max_depth=4, max_bin=256, n_jobs=2)
    in_core = BoostClassifier(**p).fit(X, y)
    calls = []

    def chunks():
        calls.append(1)
        return chunked(X, y, bounds=[0, 50_000, 90_000, 140_000])()

    with ExternalData(chunks, cache_dir=tmp_path) as data:
        out = BoostClassifier(**p).fit(data)
    assert len(calls) == 3      # scan, late features, binning
    assert_same_model(in_core, out)


def test_weighted_regression_and_threads_equal_in_core(tmp_path):
    X, _, signal = make_data(seed=1)
    rng = np.random.default_rng(2)
    y = signal + rng.normal(size=signal.shape[0])
    w = rng.uniform(0.0, 3.0, size=y.shape[0])
    w[::7] = 0.0
    p = dict(n_estimators=5, max_depth=4, max_bin=64, random_state=0)
    in_core = BoostRegressor(n_jobs=1, **p).fit(X, y, sample_weight=w)
    data = ExternalData(chunked(X, y, w, bounds=BOUNDS), cache_dir=tmp_path,
                        page_bytes=8192)
    out = BoostRegressor(n_jobs=2, **p).fit(data)
    assert_same_model(in_core, out)
    data.close()


def test_multiclass_and_class_weight_equal_in_core(tmp_path):
    X, _, signal = make_data(seed=4)
    y = np.digitize(signal, [-0.5, 0.5])
    p = dict(n_estimators=3, max_depth=4, max_bin=48, n_jobs=2,
             class_weight="balanced")
    in_core = BoostClassifier(**p).fit(X, y)
    with ExternalData(chunked(X, y, bounds=BOUNDS),
                      cache_dir=tmp_path) as data:
        out = BoostClassifier(**p).fit(data)   # re-sketched with weights
    assert_same_model(in_core, out)


@pytest.mark.parametrize("weighted", [False, True])
def test_approx_global_equals_in_core(tmp_path, weighted):
    """tree_method='approx' with global proposals and constant hessians:
    the cuts are proposed once on every column sorted whole (written
    column by column to the cache directory), the same cuts and model as
    in core, continuous features included."""
    X, _, signal = make_data(n=5000)
    rng = np.random.default_rng(3)
    y = signal + rng.normal(size=X.shape[0])
    weight = rng.random(X.shape[0]) * 2 if weighted else None
    params = dict(tree_method="approx", n_estimators=4, max_depth=4,
                  max_bin=64, n_jobs=2)
    expected = BoostRegressor(**params).fit(X, y, sample_weight=weight)
    with ExternalData(chunked(X, y, weight, bounds=BOUNDS),
                      cache_dir=tmp_path, page_bytes=4096) as data:
        model = BoostRegressor(**params).fit(data)
        left = sorted(os.listdir(tmp_path / os.listdir(tmp_path)[0]))
    assert_same_model(model, expected)
    assert not any(name.startswith("columns-") for name in left)


def test_approx_needing_proposals_per_tree_is_an_error(tmp_path):
    X, y, _ = make_data(n=2000)
    with ExternalData(chunked(X, y, bounds=[0, 2000]),
                      cache_dir=tmp_path) as data:
        for params in (dict(tree_method="approx"),   # logistic: hessians move
                       dict(tree_method="approx", subsample=0.5,
                            objective="reg:squarederror")):
            estimator = (BoostRegressor if "objective" in params
                         else BoostClassifier)(n_estimators=2, **params)
            with pytest.raises(ValueError, match="proposed again for every "
                               "tree"):
                estimator.fit(data)
        with pytest.raises(ValueError, match="approx_proposal='local'"):
            BoostClassifier(tree_method="approx",
                            approx_proposal="local").fit(data)


def test_pandas_and_sparse_chunks(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y, _ = make_data(missing=0.0)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    p = dict(n_estimators=4, max_depth=4, max_bin=40, n_jobs=2)
    in_core = BoostClassifier(**p).fit(frame, y)

    def frames():
        for a, b in zip(BOUNDS[:-1], BOUNDS[1:]):
            yield frame.iloc[a:b], y[a:b]

    with ExternalData(frames, cache_dir=tmp_path) as data:
        out = BoostClassifier(**p).fit(data)
    assert list(out.feature_names_in_) == list(frame.columns)
    assert_same_model(in_core, out)
    # CSR chunks: absent entries are missing values, as NaN in dense X
    X_sparse = X.copy()
    X_sparse[np.abs(X_sparse) < 0.5] = 0.0
    dense = np.where(X_sparse == 0.0, np.nan, X_sparse).astype(np.float32)
    csr = sp.csr_matrix(X_sparse)
    in_core = BoostClassifier(**p).fit(dense, y)
    with ExternalData(chunked(csr, y, bounds=BOUNDS),
                      cache_dir=tmp_path) as data:
        out = BoostClassifier(**p).fit(data)
    assert_same_model(in_core, out)


def test_ranker_with_qid_equals_in_core(tmp_path):
    rng = np.random.default_rng(5)
    X, _, signal = make_data(seed=5)
    y = np.clip(np.round(signal + rng.normal(size=signal.shape[0])), 0, 3)
    qid = np.repeat(np.arange(600), 10)
    p = dict(n_estimators=4, max_depth=4, max_bin=64, n_jobs=2)
    in_core = BoostRanker(**p).fit(X, y, qid=qid)
    with ExternalData(chunked(X, y, None, qid, bounds=[0, 1000, 3500, 6000]),
                      cache_dir=tmp_path) as data:
        out = BoostRanker(**p).fit(data)
    assert_same_model(in_core, out)
    shuffled = qid.copy()
    shuffled[:10] = 599
    with ExternalData(chunked(X, y, None, shuffled, bounds=BOUNDS),
                      cache_dir=tmp_path) as data:
        with pytest.raises(ValueError, match="qid must be sorted"):
            BoostRanker(**p).fit(data)


def test_npy_and_parquet_files(tmp_path):
    X, y, _ = make_data()
    p = dict(n_estimators=3, max_depth=4, max_bin=64, n_jobs=2)
    in_core = BoostClassifier(**p).fit(X, y)
    x_files, y_files = [], []
    for k, (a, b) in enumerate(zip(BOUNDS[:-1], BOUNDS[1:])):
        x_files.append(tmp_path / f"X{k}.npy")
        y_files.append(tmp_path / f"y{k}.npy")
        np.save(x_files[-1], X[a:b])
        np.save(y_files[-1], y[a:b])
    with ExternalData.from_npy(x_files, y_files, cache_dir=tmp_path) as data:
        assert_same_model(in_core, BoostClassifier(**p).fit(data))
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    names = [f"c{j}" for j in range(X.shape[1])]
    files = []
    for k, (a, b) in enumerate(zip(BOUNDS[:-1], BOUNDS[1:])):
        frame = pd.DataFrame(X[a:b], columns=names)
        frame["label"] = y[a:b]
        files.append(tmp_path / f"part{k}.parquet")
        frame.to_parquet(files[-1])
    in_core = BoostClassifier(**p).fit(pd.DataFrame(X, columns=names), y)
    with ExternalData.from_parquet(files, "label",
                                   cache_dir=tmp_path) as data:
        assert_same_model(in_core, BoostClassifier(**p).fit(data))


def test_cache_directory_is_removed(tmp_path):
    X, y, _ = make_data(n=2000)
    data = ExternalData(chunked(X, y, bounds=[0, 900, 2000]),
                        cache_dir=tmp_path)
    BoostClassifier(n_estimators=2, n_jobs=1).fit(data)
    made = [p for p in os.listdir(tmp_path)]
    assert len(made) == 1 and os.listdir(tmp_path / made[0])
    data.close()
    assert os.listdir(tmp_path) == []


# -- bad input -------------------------------------------------------------

def _fit_error(tmp_path, chunks, match, error=ValueError, **params):
    data = ExternalData(chunks, cache_dir=tmp_path)
    with pytest.raises(error, match=match):
        BoostClassifier(n_estimators=2, n_jobs=1, **params).fit(data)
    data.close()
    assert os.listdir(tmp_path) == []   # nothing left behind


def test_disagreeing_chunks(tmp_path):
    X, y, _ = make_data(n=3000)
    _fit_error(tmp_path, lambda: iter([(X[:1000], y[:1000]),
                                       (X[1000:, :5], y[1000:])]),
               "chunk 1: X has 5 features")
    _fit_error(tmp_path, lambda: iter([(X[:1000], y[:1000]),
                                       (X[1000:].astype(np.float64),
                                        y[1000:])]),
               "chunk 1 has dtypes")
    _fit_error(tmp_path, lambda: iter([(X[:1000], y[:1000], None),
                                       (X[1000:], y[1000:],
                                        np.ones(2000))]),
               "chunk 1 has sample_weight, unlike the first chunk")
    _fit_error(tmp_path, lambda: iter([(X[:1000], y[:999])]),
               "chunk 0: .*inconsistent numbers of samples")
    _fit_error(tmp_path, lambda: iter([X[:1000]]), "chunk 0: expected a "
               "tuple", error=TypeError)
    _fit_error(tmp_path, lambda: iter([]), "yielded no chunk")
    pd = pytest.importorskip("pandas")
    a = pd.DataFrame(X[:1000], columns=list("abcdef"))
    b = pd.DataFrame(X[1000:], columns=list("abcdeg"))
    _fit_error(tmp_path, lambda: iter([(a, y[:1000]), (b, y[1000:])]),
               "chunk 1: .*feature names")
    c = a.assign(a=pd.Categorical(np.where(X[:1000, 0] > 0, "x", "y")))
    _fit_error(tmp_path, lambda: iter([(c, y[:1000])]),
               "does not support categorical features")


def test_second_pass_that_differs(tmp_path):
    X, y, _ = make_data(n=3000)
    calls = []

    def changing():   # the second pass sees other values
        calls.append(1)
        Xc = X if len(calls) == 1 else X + np.float32(1e-3)
        return iter([(Xc[:1500], y[:1500]), (Xc[1500:], y[1500:])])

    _fit_error(tmp_path, changing, "chunk 0 differs on a second pass.*"
               "values")
    calls.clear()

    def shorter():
        calls.append(1)
        stop = 3000 if len(calls) == 1 else 2999
        return iter([(X[:1500], y[:1500]), (X[1500:stop], y[1500:stop])])

    _fit_error(tmp_path, shorter, "chunk 1 differs on a second pass.*rows")
    calls.clear()

    def fewer():
        calls.append(1)
        parts = [(X[:1500], y[:1500]), (X[1500:], y[1500:])]
        return iter(parts if len(calls) == 1 else parts[:1])

    _fit_error(tmp_path, fewer, "yielded 1 chunks on a second pass, 2")


def test_unusable_cache_dir(tmp_path):
    X, y, _ = make_data(n=2000)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    data = ExternalData(chunked(X, y, bounds=[0, 2000]),
                        cache_dir=not_a_dir / "sub")
    with pytest.raises(ValueError, match="cache_dir=.*cannot hold"):
        BoostClassifier(n_estimators=2).fit(data)


def test_full_cache_dir_cleans_up(tmp_path):
    """A file-size limit stands in for a full disk (ENOSPC and EFBIG both
    end the write): a clear OSError, and no partial page file left."""
    script = textwrap.dedent(f"""
        import os, resource, signal
        import numpy as np
        from skboost import BoostClassifier, ExternalData
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        X = np.random.default_rng(0).normal(size=(20000, 8)).astype(np.float32)
        y = (X[:, 0] > 0).astype(int)
        data = ExternalData(lambda: iter([(X, y)]), cache_dir={str(tmp_path)!r})
        resource.setrlimit(resource.RLIMIT_FSIZE, (50000, 50000))
        try:
            BoostClassifier(n_estimators=2).fit(data)
        except OSError as exc:
            print("OSError", exc)
        print("left", sum(len(f) for _, _, f in os.walk({str(tmp_path)!r})))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, env=dict(os.environ))
    assert "OSError" in out.stdout, out.stderr
    assert "cache_dir full or not writable" in out.stdout
    assert "left 0" in out.stdout


def test_unsupported_options(tmp_path):
    X, y, _ = make_data(n=2000)
    chunks = chunked(X, y, bounds=[0, 2000])
    with ExternalData(chunks, cache_dir=tmp_path) as data:
        with pytest.raises(ValueError, match="tree_method='hist' only"):
            BoostClassifier(tree_method="exact").fit(data)
        with pytest.raises(ValueError, match="needs an eval_set"):
            BoostClassifier(early_stopping_rounds=2).fit(data)
        with pytest.raises(ValueError, match="y comes from the chunks"):
            BoostClassifier().fit(data, y)
        with pytest.raises(ValueError, match="sample_weight comes from"):
            BoostClassifier().fit(data, sample_weight=np.ones(2000))
        with pytest.raises(ValueError, match="re-fits its leaves"):
            BoostRegressor(objective="reg:absoluteerror").fit(data)
        model = BoostClassifier(n_estimators=2).fit(X, y)
        with pytest.raises(TypeError, match="ExternalData is accepted"):
            model.apply(data)
    with pytest.raises(TypeError, match="chunks must be a callable"):
        ExternalData([(X, y)])


# -- memory -----------------------------------------------------------------

def documented_bound(n_rows, n_features, max_depth, page_bytes, label_bytes,
                     n_threads):
    """The bound of doc/user_guide/out_of_core.rst for one output, unit
    weights: per row the labels, float64 margins, float32 gradient pairs,
    the row's place in its page's partition and the positive-weight mask;
    the deepest level's histograms (int64 pairs, at most 257 bins a
    feature) and the threads' copies (a quarter of those, or 4 a thread);
    a page and its scratch (a uint16 a row) per thread."""
    per_row = label_bytes + 8 + 8 + 2 + 1
    histograms = (1.25 * 2 ** (max_depth - 1) + 4 * n_threads) * (
        n_features * 257 * 16)
    pages = n_threads * page_bytes * (1 + 2 / n_features)
    return n_rows * per_row + histograms + pages


@pytest.mark.parametrize("estimator, label_bytes", [
    (BoostClassifier, 1),     # class indices as uint8
    (BoostRegressor, 8)])
def test_memory_of_a_fit_follows_the_documented_bound(estimator,
                                                      label_bytes):
    """The peak of the arrays a fit allocates (tracemalloc, which sees
    numpy's buffers; not the wall clock or the resident size) stays within
    the documented bound, with 15% + 2 MB for small temporaries: an array
    of 8 bytes a row more (an array of unit weights, a second copy of the
    labels) would break it."""
    import tracemalloc

    n, d, depth, page_bytes = 1_000_000, 4, 4, 1 << 18
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    with ExternalData(chunked(X, y, bounds=[0, 250_000, 500_000, 750_000,
                                            n]),
                      page_bytes=page_bytes) as data:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            estimator(n_estimators=3, max_depth=depth, n_jobs=2).fit(data)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
    bound = documented_bound(n, d, depth, page_bytes, label_bytes, 2)
    assert peak <= 1.15 * bound + 2e6, (peak / n, bound / n)
    assert peak <= 2 * X.nbytes


# -- the page kernel against a naive version ---------------------------------

def naive_level(codes, position, active, arrays, bin_ptr, gpair, route,
                n_hist):
    """One level over every row, in row order: each row of a split node
    moved to its child, the active rows of each built node added to its
    histogram. Returns the new position, histograms and rows added."""
    feature, split_bin, default_left, left, right, build_row = arrays
    missing = np.diff(bin_ptr) - 1
    position = position.copy()
    hist = np.zeros((n_hist, bin_ptr[-1], 2), np.int64)
    rows = np.zeros(n_hist, np.int64)
    for r in range(codes.shape[0]):
        node = position[r]
        if route and feature[node] >= 0:
            f = feature[node]
            code = codes[r, f]
            go_left = (default_left[node] if code == missing[f]
                       else code <= split_bin[node])
            node = left[node] if go_left else right[node]
            position[r] = node
        if active[r] and build_row[node] >= 0:
            rows[build_row[node]] += 1
            for f in range(codes.shape[1]):
                if codes[r, f] <= missing[f]:   # else damaged: not added
                    hist[build_row[node], bin_ptr[f] + codes[r, f]] += (
                        gpair[r].astype(np.int64))
    return position, hist, rows


def random_levels(rng, n_features, widths, depth, n_hist):
    """A tree grown level by level at random: the root built, then each
    level splits most leaves (random feature, bin, missing side) and
    builds one child of each split (up to n_hist histograms)."""
    leaves, next_id, levels = [0], 1, []
    build_row = np.full(1, -1, np.int64)
    build_row[0] = 0
    levels.append((np.full(1, -1, np.int32), np.zeros(1, np.int32),
                   np.zeros(1, np.uint8), np.zeros(1, np.int32),
                   np.zeros(1, np.int32), build_row, False))
    for _ in range(depth):
        n_ids = next_id + 2 * len(leaves)
        feature = np.full(n_ids, -1, np.int32)
        split_bin = np.zeros(n_ids, np.int32)
        default_left = (rng.random(n_ids) < 0.5).astype(np.uint8)
        left, right = np.zeros(n_ids, np.int32), np.zeros(n_ids, np.int32)
        build_row = np.full(n_ids, -1, np.int64)
        new_leaves = []
        for node in leaves:
            if rng.random() < 0.15:
                new_leaves.append(node)    # not split at this level
                continue
            f = rng.integers(n_features)
            feature[node] = f
            split_bin[node] = rng.integers(0, widths[f])  # may be >= missing
            left[node], right[node] = next_id, next_id + 1
            built = next_id + rng.integers(2)
            slot = len(new_leaves) // 2
            if slot < n_hist:
                build_row[built] = slot
            new_leaves += [next_id, next_id + 1]
            next_id += 2
        levels.append((feature, split_bin, default_left, left, right,
                       build_row, True))
        leaves = new_leaves
    return levels


def page_data(rng, n_rows, widths, dtype=np.uint8):
    codes = np.column_stack([rng.integers(0, w, n_rows)
                             for w in widths]).astype(dtype)
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    return codes, bin_ptr, (widths - 1).astype(np.int32)


def check_levels(codes, bin_ptr, missing, page_rows, levels, active, gpair,
                 n_hist, n_threads, read=None):
    """Run ``levels`` through a PagePartition (``read``: a function
    passing every page from the page file) and the naive level, comparing
    every row's node, the histograms and the rows added after each."""
    n_rows = codes.shape[0]
    partition = PagePartition(n_rows, page_rows)
    position = np.zeros(n_rows, np.int32)
    for *arrays, route in levels:
        hist = np.zeros((n_hist, bin_ptr[-1], 2), np.int64)
        rows = np.zeros(n_hist, np.int64)
        partition.start_level(active, *arrays, missing, bin_ptr, gpair, None,
                              hist, rows,
                              context=SplitContext(n_threads=n_threads),
                              route=route, build=True)
        if read is None:
            for k in range(partition.n_pages):
                first = k * page_rows
                partition.add_page(k, codes[first:first + page_rows])
        else:
            read(partition)
        partition.finish_level()
        position, hist_ref, rows_ref = naive_level(
            codes, position, active, arrays, bin_ptr, gpair, route, n_hist)
        np.testing.assert_array_equal(partition.node_of_rows(), position)
        np.testing.assert_array_equal(rows, rows_ref)
        np.testing.assert_array_equal(hist, hist_ref)
        for k, (nodes, bounds) in enumerate(partition.segments):
            # one segment per node, none empty, the page's rows each once
            assert np.unique(nodes).size == nodes.size
            assert np.all(np.diff(bounds) > 0)
            page = partition.order[k * page_rows:k * page_rows + bounds[-1]]
            assert np.array_equal(np.sort(page), np.arange(bounds[-1]))
    return partition, position


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("sampled", [False, True])
def test_page_partition_matches_naive(n_threads, sampled):
    """Four levels over 5 pages (the last short), random splits including
    split bins at or beyond the missing code, some leaves not split,
    some rows not sampled, and codes beyond their feature's bins (a
    damaged page: sent right, never added)."""
    rng = np.random.default_rng(0)
    widths = np.array([3, 5, 2, 9])
    codes, bin_ptr, missing = page_data(rng, 4500, widths)
    damaged = rng.random(codes.shape) < 0.01
    codes[damaged] = rng.integers(9, 256, damaged.sum())
    active = (rng.random(4500) < (0.8 if sampled else 1.0)).astype(np.uint8)
    gpair = rng.integers(-9, 9, size=(4500, 2)).astype(np.float32)
    levels = random_levels(rng, 4, widths, depth=4, n_hist=6)
    check_levels(codes, bin_ptr, missing, 1000, levels, active, gpair, 6,
                 n_threads)


def test_page_partition_tasks_and_whole_histograms_per_thread():
    """Pages of 30,000 rows, uint16 codes: a split node's rows of a page
    are cut into several tasks, and 16 histograms of about equal rows go
    to the threads whole (``by_histogram``)."""
    rng = np.random.default_rng(1)
    widths = np.array([7, 300, 5, 9])
    codes, bin_ptr, missing = page_data(rng, 70000, widths, np.uint16)
    active = (rng.random(70000) < 0.9).astype(np.uint8)
    gpair = rng.integers(-9, 9, size=(70000, 2)).astype(np.float32)
    levels = random_levels(rng, 4, widths, depth=5, n_hist=16)
    check_levels(codes, bin_ptr, missing, 30000, levels, active, gpair, 16,
                 2)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_page_partition_add_values_matches_numpy(n_threads):
    rng = np.random.default_rng(2)
    widths = np.array([4, 6, 3])
    codes, bin_ptr, missing = page_data(rng, 3000, widths)
    active = np.ones(3000, np.uint8)
    gpair = rng.integers(-9, 9, size=(3000, 2)).astype(np.float32)
    levels = random_levels(rng, 3, widths, depth=3, n_hist=4)
    partition, position = check_levels(codes, bin_ptr, missing, 700,
                                       levels, active, gpair, 4, n_threads)
    value = rng.normal(size=position.max() + 1)
    raw = rng.normal(size=(3000, 3))
    expected = raw.copy()
    expected[:, 1] += value[position]
    partition.add_values(value, raw, 1, n_threads)
    np.testing.assert_array_equal(raw, expected)
    with pytest.raises(ValueError, match="one entry per node id"):
        partition.add_values(value[:position.max()], raw, 1, n_threads)


def test_page_partition_rejects_bad_input():
    with pytest.raises(ValueError, match="page_rows must be in"):
        PagePartition(10, 70000)
    partition = PagePartition(4, 4)
    bin_ptr = np.array([0, 3, 6], np.int64)
    z = np.zeros(2, np.int32)
    level = (np.ones(4, np.uint8), np.full(2, -1, np.int32), z,
             np.zeros(2, np.uint8), z, z, np.full(2, -1, np.int64),
             np.array([2, 2], np.int32), bin_ptr,
             np.zeros((4, 2), np.float32), None,
             np.zeros((1, 6, 2), np.int64), np.zeros(1, np.int64))
    options = dict(context=SplitContext(), route=True, build=True)
    with pytest.raises(ValueError, match="start_level first"):
        partition.add_page(0, np.zeros((4, 2), np.uint8))
    with pytest.raises(ValueError, match="start_level first"):
        partition.read_pages(0, 1)
    partition.start_level(*level, **options)
    with pytest.raises(ValueError, match="not page k's rows"):
        partition.add_page(0, np.zeros((3, 2), np.uint8))
    with pytest.raises(ValueError, match="page outside the data"):
        partition.add_page(1, np.zeros((4, 2), np.uint8))
    with pytest.raises(ValueError, match="describe the page's features"):
        partition.add_page(0, np.zeros((4, 3), np.uint8))
    # node arrays too short for the nodes the rows are at
    feature = np.array([0, -1, -1], np.int32)
    z3 = np.zeros(3, np.int32)
    partition.start_level(np.ones(4, np.uint8), feature, z3,
                          np.zeros(3, np.uint8), np.array([1, 0, 0], np.int32),
                          np.array([2, 0, 0], np.int32),
                          np.full(3, -1, np.int64), *level[7:], **options)
    partition.add_page(0, np.array([[0, 0], [1, 0], [2, 0], [0, 1]],
                                   np.uint8))
    partition.finish_level()
    with pytest.raises(ValueError, match="node id is outside"):
        partition.start_level(*level, **options)
    with pytest.raises(ValueError, match="child node id outside"):
        partition.start_level(np.ones(4, np.uint8), feature, z3,
                              np.zeros(3, np.uint8),
                              np.array([1, 0, 0], np.int32),
                              np.array([7, 0, 0], np.int32),
                              np.full(3, -1, np.int64), *level[7:],
                              **options)


def test_read_exactly_fills_the_array_or_names_the_short_file(tmp_path):
    # the page and column files are read with preadv, which may return
    # fewer bytes than asked: the reader loops, and a file that ends
    # early is an OSError naming it (not a partly filled page)
    from skboost.tree.pages import read_exactly

    data = np.arange(1000, dtype=np.int32)
    path = tmp_path / "pages.bin"
    path.write_bytes(data.tobytes())
    out = np.empty(200, dtype=np.int32)
    with open(path, "rb") as file:
        read_exactly(file.fileno(), out, 4 * 700, what="the test file")
        np.testing.assert_array_equal(out, data[700:900])
        with pytest.raises(OSError, match="the test file ended early"):
            read_exactly(file.fileno(), out, 4 * 900, what="the test file")


@pytest.mark.parametrize("n_threads, page_rows, n_hist, depth", [
    (1, 16000, 4, 3), (2, 16000, 4, 3), (2, 2000, 4, 3), (2, 700, 4, 3),
    (2, 700, 32, 5)])
def test_read_pages_reads_the_file_and_matches_naive(tmp_path, n_threads,
                                                     page_rows, n_hist,
                                                     depth):
    """PagePartition.read_pages: the pass's threads read the pages from
    the page file themselves, then partition and add as the naive level
    does: with 3 pages, the threads share each page (reading it in
    blocks of 4096 rows, the last short); with 20 or 58 pages, they take
    whole pages and add to private copies of a few histograms (summed at
    the end) or, with 8 or more built (32 histograms in the pool), to the
    pool's under locks."""
    rng = np.random.default_rng(3)
    widths = np.array([3, 5, 2, 9, 4])
    codes, bin_ptr, missing = page_data(rng, 40000, widths)
    path = tmp_path / "pages.bin"
    path.write_bytes(codes.tobytes())
    active = (rng.random(40000) < 0.8).astype(np.uint8)
    gpair = rng.integers(-9, 9, size=(40000, 2)).astype(np.float32)
    levels = random_levels(rng, 5, widths, depth=depth, n_hist=n_hist)
    page_threads = 2 if n_threads == 2 and page_rows < 16000 else 1
    locked = []

    def read(partition):
        assert partition.page_threads == page_threads
        locked.append(partition.use_locks)
        partition.read_pages(fd, 1)

    fd = os.open(path, os.O_RDONLY)
    try:
        check_levels(codes, bin_ptr, missing, page_rows, levels, active,
                     gpair, n_hist, n_threads, read=read)
    finally:
        os.close(fd)
    # locks for the levels building 8 or more histograms (a quarter of
    # the 32 histograms' pool), private copies for the others
    built = [int(np.sum(level[5] >= 0)) for level in levels]
    expected = [page_threads == 2 and b >= 8 and 8 * b > n_hist
                for b in built]
    assert locked == expected
    assert any(locked) == (n_hist == 32)


def test_read_page_of_a_short_file_is_an_oserror(tmp_path):
    path = tmp_path / "pages.bin"
    path.write_bytes(np.zeros((5000, 2), np.uint8).tobytes())
    bin_ptr = np.array([0, 3, 6], np.int64)
    z = np.zeros(2, np.int32)
    partition = PagePartition(6000, 3000)
    partition.start_level(np.ones(6000, np.uint8), np.full(2, -1, np.int32),
                          z, np.zeros(2, np.uint8), z, z,
                          np.zeros(2, np.int64), np.array([2, 2], np.int32),
                          bin_ptr, np.zeros((6000, 2), np.float32), None,
                          np.zeros((1, 6, 2), np.int64),
                          np.zeros(1, np.int64),
                          context=SplitContext(n_threads=2), route=False,
                          build=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError, match="ended early"):
            partition.read_pages(fd, 1)
        with pytest.raises(ValueError, match="code_bytes 1 or 2"):
            partition.read_pages(fd, 4)
    finally:
        os.close(fd)


def naive_checksum(data, seed=0):
    """_paged.checksum in Python integers: four lanes of 8-byte words,
    a += word, b += a modulo 2**64, the tail zero-padded into lane 1."""
    raw = np.ascontiguousarray(data).tobytes()
    mask = (1 << 64) - 1
    a = [(seed + lane) & mask for lane in range(4)]
    b = [seed ^ len(raw)] * 4
    n_words = len(raw) // 8
    words = [int.from_bytes(raw[8 * i:8 * i + 8], "little")
             for i in range(n_words)]
    lanes = (n_words // 4) * 4
    for i, word in enumerate(words):
        lane = i % 4 if i < lanes else 0
        a[lane] = (a[lane] + word) & mask
        b[lane] = (b[lane] + a[lane]) & mask
    if len(raw) % 8:
        a[1] = (a[1] + int.from_bytes(raw[8 * n_words:], "little")) & mask
        b[1] = (b[1] + a[1]) & mask
    total = 0
    for lane in range(4):
        total = (total * 0x9E3779B97F4A7C15 + a[lane]) & mask
        total = (total * 0xC2B2AE3D27D4EB4F + b[lane]) & mask
    return total


@pytest.mark.parametrize("n_bytes", [0, 5, 8, 37, 64, 1001])
def test_checksum_matches_naive_and_sees_changes(n_bytes):
    rng = np.random.default_rng(n_bytes)
    data = rng.integers(0, 256, n_bytes).astype(np.uint8)
    assert checksum(data) == naive_checksum(data)
    assert checksum(data, 12345) == naive_checksum(data, 12345)
    if n_bytes >= 16:
        changed = data.copy()
        changed[n_bytes // 2] ^= 1
        assert checksum(changed) != checksum(data)
        swapped = data.copy()
        swapped[:8], swapped[8:16] = data[8:16], data[:8]
        if not np.array_equal(data[:8], data[8:16]):
            assert checksum(swapped) != checksum(data)
