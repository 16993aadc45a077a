"""From ``tree_method`` to a grower: the method choice as one table.

``make_grower`` prepares the data each finder reads (presorted columns,
bin codes, cut points) and returns the ``GrowthDriver`` that grows every
tree of a fit. The boosting loop (``_model/train.py``) knows no finder.

=========  ====================  ======================================
input      method                finder
=========  ====================  ======================================
dense      exact                 ``ExactFinder`` (presorted blocks)
dense      hist                  ``HistFinder`` (binned once)
dense      approx, global        ``GlobalApproxFinder`` (re-binned per
                                 tree; ``HistFinder`` on cuts proposed
                                 once when the hessians never change)
dense      approx, local         ``LocalApproxFinder``
sparse     exact                 ``ExactFinder`` (stored entries)
sparse     hist                  ``ColumnScanFinder`` (fitted cuts)
sparse     approx, global        ``ColumnScanFinder`` (cuts per tree)
sparse     approx, local         ``LocalApproxFinder``
dense      hist, vector leaves   ``VectorHistFinder`` (one tree for all
                                 outputs, ``multi_output_tree``)
paged      hist                  ``PagedHistFinder`` (binned pages on
                                 disk, ``skboost.ExternalData``)
paged      approx, global        ``PagedHistFinder`` on cuts proposed
                                 once (hessians that never change)
=========  ====================  ======================================
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._approx import propose_cuts
from ._column_sampler import ColumnSampler
from ._presorted import SortedColumns
from ._presort import presort_dense, presort_sparse
from ._sparse import SparseRows
from .binning import BinMapper, value_bin_caps
from .driver import GrowthDriver
from .memory import check_training_memory
from .finders.hist import GlobalApproxFinder, HistFinder

# The finders of the other methods are imported by their builders below:
# a fit with the default method (hist, dense) never loads them.


def make_grower(X, params, n_threads, rng, *, weight=None,
                fixed_hessians=False, n_categories=None, vector_outputs=0):
    """The grower of every tree of a fit on X.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, NaN = missing; or
        SparseRows
    params : TreeParams
        ``tree_method``, ``approx_proposal`` and ``max_bin`` choose the
        finder (the module docstring's table).
    n_threads : int
    rng : numpy.random.Generator
        Source of the column samples.
    weight : ndarray of shape (n_rows,), float64, default=None
        Sample weights, applied inside the finders' sums; None for unit
        weights.
    fixed_hessians : bool, default=False
        Whether the weighted hessians are the same in every round
        (constant-hessian objective, no row sampling): global approx then
        proposes its cuts once.
    n_categories : ndarray of shape (n_features,), default=None
        Number of categories of each categorical feature (values are codes
        0 .. n-1), 0 for the numeric ones; None: every feature is numeric.

    vector_outputs : int, default=0
        Grow vector-leaf trees of this many outputs (``VectorHistFinder``:
        dense numeric X, ``tree_method="hist"``); 0: single-output trees.

    Returns
    -------
    GrowthDriver
        ``grow(gpair, active)`` returns a tree and where its rows ended.
    """
    if n_categories is not None and not np.any(n_categories > 0):
        n_categories = None
    if _is_paged(X) or hasattr(X, "paged_matrix"):
        _check_paged(params, n_categories, vector_outputs, fixed_hessians)
        return _paged_grower(X, params, n_threads, rng, weight)
    kind = "sparse" if isinstance(X, SparseRows) else "dense"
    if vector_outputs:
        finder = _vector_hist(X, kind, params, n_threads, weight,
                              n_categories, vector_outputs)
        return GrowthDriver(finder, params, _column_sampler(X, params, rng))
    method = params.tree_method
    if method == "approx":
        method = f"approx-{params.approx_proposal}"
    check_training_memory(X, params, present_entries=(
        X.indices.shape[0] if kind == "sparse" else None))
    finder = _FINDERS[kind, method](
        X, params, n_threads, weight=weight, n_categories=n_categories,
        fixed_hessians=fixed_hessians)
    return GrowthDriver(finder, params, _column_sampler(X, params, rng))


def _column_sampler(X, params, rng):
    return ColumnSampler(X.shape[1], params.colsample_bytree,
                         params.colsample_bylevel, params.colsample_bynode,
                         rng, feature_weights=params.feature_weights)


def _vector_hist(X, kind, params, n_threads, weight, n_categories,
                 n_outputs):
    """The finder of vector-leaf trees: the hist method on dense numeric
    data (as XGBoost's); anything else is a clear error."""
    unsupported = [what for what, present in (
        (f"tree_method={params.tree_method!r} (use 'hist')",
         params.tree_method != "hist"),
        ("sparse X (pass a dense array)", kind == "sparse"),
        ("categorical features", n_categories is not None),
        ("monotone_constraints", params.monotone is not None)) if present]
    if unsupported:
        raise ValueError("multi_strategy='multi_output_tree' does not "
                         "support " + ", ".join(unsupported))
    mapper = BinMapper(params.max_bin).fit(X, weight, n_threads)
    binned = mapper.binned(X, n_threads)
    from .finders.vector_hist import VectorHistFinder
    return VectorHistFinder(binned, mapper.split_thresholds_, params,
                            n_outputs, n_threads, weight=weight)


def _paged_grower(X, params, n_threads, rng, weight):
    """The grower of out-of-core training (``PagedHistFinder``); the
    module is imported here, so that in-core fits never load it."""
    from .finders.paged import PagedHistFinder
    if not _is_paged(X):   # ExternalData: bin now
        X = X.paged_matrix(params.max_bin, weight, n_threads,
                           approx=params.tree_method == "approx")
    finder = PagedHistFinder(X, params, n_threads, weight=weight)
    return GrowthDriver(finder, params, _column_sampler(X, params, rng))


def _is_paged(X):
    """Whether X is a ``pages.PagedMatrix`` (its module is loaded once
    there is one: out-of-core training imports it)."""
    pages = sys.modules.get(f"{__package__}.pages")
    return pages is not None and isinstance(X, pages.PagedMatrix)


def _check_paged(params, n_categories, vector_outputs, fixed_hessians):
    """What the finder of binned pages on disk grows: the hist method,
    depth-wise or lossguide, numeric features, one output per tree; and
    the approx method where it is hist on cuts proposed once (global
    proposals, hessians that never change: ``_dense_global_approx``).
    Proposing per tree would re-bin every row per tree, a pass over the
    chunks each."""
    approx = params.tree_method == "approx"
    unsupported = [what for what, present in (
        (f"tree_method={params.tree_method!r} (use 'hist')",
         params.tree_method not in ("hist", "approx")),
        ("approx_proposal='local' (use 'global')",
         approx and params.approx_proposal != "global"),
        ("tree_method='approx' with hessians that change between rounds "
         "or row subsampling (its cuts are proposed again for every tree, "
         "a pass over the chunks each; use 'hist', or an objective of "
         "constant hessians such as 'reg:squarederror' without subsample)",
         approx and params.approx_proposal == "global"
         and not fixed_hessians),
        ("categorical features", n_categories is not None),
        ("multi_strategy='multi_output_tree'", bool(vector_outputs)))
        if present]
    if unsupported:
        raise ValueError("out-of-core training (ExternalData) does not "
                         "support " + ", ".join(unsupported))


# Each builder takes (X, params, n_threads) and the keywords weight,
# n_categories and fixed_hessians (see make_grower).

def _dense_exact(X, params, n_threads, *, weight, n_categories, **_):
    from .finders.exact import ExactFinder
    return ExactFinder(X, presort_dense(X, n_threads), params, n_threads,
                       weight=weight, n_categories=n_categories)


def _dense_hist(X, params, n_threads, *, weight, n_categories, **_):
    mapper = BinMapper(params.max_bin).fit(X, weight, n_threads,
                                           n_categories=n_categories)
    return _binned_hist(X, mapper, params, n_threads, weight, n_categories)


def _binned_hist(X, mapper, params, n_threads, weight, n_categories):
    binned = mapper.binned(X, n_threads)
    # the last level's rows go straight to their leaves' margins
    # (SplitLeafRows): no partition of the last level
    return HistFinder(binned, mapper.split_thresholds_, params, n_threads,
                      weight=weight, categorical=None if n_categories is None
                      else n_categories > 0, defer_last_partition=True)


def _dense_global_approx(X, params, n_threads, *, weight, n_categories,
                         fixed_hessians):
    if fixed_hessians and n_categories is None:
        # every tree would propose the same cuts: propose them once, a
        # column at a time, and grow on them like hist (the same trees as
        # GlobalApproxFinder, without holding every presorted column)
        mapper = approx_cuts_once(X, weight, params.max_bin, n_threads)
        return _binned_hist(X, mapper, params, n_threads, weight, None)
    return GlobalApproxFinder(presort_dense(X, n_threads), params,
                              params.max_bin, n_threads, weight=weight,
                              n_categories=n_categories)


def _dense_local_approx(X, params, n_threads, *, weight, n_categories, **_):
    from .finders.local import LocalApproxFinder
    return LocalApproxFinder(X, presort_dense(X, n_threads), params,
                             params.max_bin, n_threads, weight=weight,
                             n_categories=n_categories)


def _sparse_exact(X, params, n_threads, *, weight, n_categories, **_):
    from .finders.exact import ExactFinder
    return ExactFinder(X, presort_sparse(X), params, n_threads,
                       weight=weight, n_categories=n_categories)


def _sparse_hist(X, params, n_threads, *, weight, n_categories, **_):
    from .finders.local import ColumnScanFinder
    columns = presort_sparse(X)
    mapper = BinMapper(params.max_bin).fit_columns(columns, weight, n_threads)
    return ColumnScanFinder(X, columns, params, n_threads, weight=weight,
                            mapper=mapper, max_bin=params.max_bin,
                            n_categories=n_categories)


def _sparse_global_approx(X, params, n_threads, *, weight, n_categories,
                          **_):
    from .finders.local import ColumnScanFinder
    return ColumnScanFinder(X, presort_sparse(X), params, n_threads,
                            weight=weight, max_bin=params.max_bin,
                            n_categories=n_categories)


def _sparse_local_approx(X, params, n_threads, *, weight, n_categories, **_):
    from .finders.local import LocalApproxFinder
    columns = presort_sparse(X)
    if columns.zero_absent:
        raise ValueError(
            "approx_proposal='local' does not support sparse_absent="
            "'zero' yet: use approx_proposal='global', or another "
            "tree_method")
    return LocalApproxFinder(X, columns, params, params.max_bin, n_threads,
                             weight=weight, n_categories=n_categories)


_FINDERS = {
    ("dense", "exact"): _dense_exact,
    ("dense", "hist"): _dense_hist,
    ("dense", "approx-global"): _dense_global_approx,
    ("dense", "approx-local"): _dense_local_approx,
    ("sparse", "exact"): _sparse_exact,
    ("sparse", "hist"): _sparse_hist,
    ("sparse", "approx-global"): _sparse_global_approx,
    ("sparse", "approx-local"): _sparse_local_approx,
}


def approx_cuts_once(X, weight, max_bin, n_threads):
    """A BinMapper holding the approximate method's cuts for hessians that
    never change: each column is presorted and proposed on (hessians =
    weights), one column at a time in ``n_threads`` threads."""
    return approx_cuts_of_columns(lambda j: X[:, j], X.shape[0], X.shape[1],
                                  weight, max_bin, n_threads)


def approx_cuts_of_columns(column, n_rows, n_features, weight, max_bin,
                           n_threads):
    """``approx_cuts_once`` on columns given one at a time: ``column(j)``
    returns feature j's values (float32, NaN = missing), from X in core or
    from the cache directory out of core (``skboost.external``)."""
    def sorted_column(j):
        if weight is not None:
            values = np.ascontiguousarray(column(j), dtype=np.float32)
            return presort_dense(values.reshape(-1, 1), 1)
        # unit hessians: which row holds a value does not matter, so a plain
        # float sort (several times faster than the (value, row) key sort),
        # every entry on one row of hessian 1 (no array of ones)
        values = column(j)
        values = values[~np.isnan(values)]    # a copy: changed in place
        values += np.float32(0.0)             # -0.0 as 0.0
        values.sort()
        return SortedColumns(np.array([0, values.shape[0]]), values,
                             np.zeros(values.shape[0], dtype=np.int32), 1)

    hess = np.ones(1) if weight is None else weight

    def propose(j):
        column = sorted_column(j)
        has_missing = np.array([column.col_ptr[1] < n_rows])
        cuts = propose_cuts(column, hess, value_bin_caps(max_bin, has_missing),
                            1)[0]
        return bool(has_missing[0]), np.asarray(cuts, dtype=np.float64)

    if n_threads <= 1:    # in the calling thread (and its allocator arena)
        proposals = [propose(j) for j in range(n_features)]
    else:
        with ThreadPoolExecutor(max_workers=n_threads) as pool:
            proposals = list(pool.map(propose, range(n_features)))
    mapper = BinMapper(max_bin)
    mapper.has_missing_ = np.array([m for m, _ in proposals], dtype=bool)
    mapper._set_cuts([c for _, c in proposals])
    return mapper
