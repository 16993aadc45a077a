"""Per-query weights of the ranker (``BoostRanker.fit(query_weight=...)``).

XGBoost's ranker takes one weight per query group (its ``sample_weight``
for ranking); skboost's ``sample_weight`` is per row, as scikit-learn
requires. ``query_weight`` gives XGBoost's per-query weights: the weight of
the k-th query is the weight of every row of that query, in the order of
the queries as the ranker groups them: increasing ``qid`` (the order of
``np.unique(qid)``), which is the order of the queries' first appearance
when the rows come sorted by ``qid`` (as XGBoost requires), or the order of
``group``. As XGBoost does, the weights are normalised to a mean of 1 over
the queries (only their ratios matter: with ``min_child_weight`` and
``reg_lambda`` the model is then XGBoost's for any scale). Given with
``sample_weight``, a row's weight is the product of its query's
normalised weight and its ``sample_weight``.
"""

import numpy as np

from .._model.limits import check_weight_limits


def check_query_weight(query_weight, n_queries, name="query_weight"):
    """``query_weight`` as a float64 array of one finite, non-negative
    weight per query with a positive sum, else a ValueError naming it."""
    try:
        weight = np.asarray(query_weight, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must hold numbers (one weight per query): "
                         f"{error}") from None
    if weight.ndim == 0:
        raise ValueError(f"{name} must be an array-like of one weight per "
                         f"query ({n_queries} queries), got {query_weight!r}")
    if weight.ndim != 1 or weight.shape[0] != n_queries:
        raise ValueError(
            f"{name} must be 1-D with one weight per query ({n_queries} "
            f"queries, in increasing qid order or the order of group), got "
            f"shape {weight.shape}")
    if not np.all(np.isfinite(weight)):
        raise ValueError(f"{name} contains NaN or infinity")
    if np.any(weight < 0):
        raise ValueError(f"{name} contains negative weights")
    if n_queries and weight.sum() <= 0:
        raise ValueError(f"{name} must have a positive sum")
    check_weight_limits(weight, name)
    return weight


def per_row_weight(query_weight, query_ptr, sample_weight, name="query_weight"):
    """The weight of every row (rows grouped by query, as ``query_ptr``
    says): its query's weight normalised to a mean of 1 over the queries
    (XGBoost's normalisation), times its ``sample_weight`` if given (already
    in the same row order). None when neither is given."""
    if query_weight is None:
        return sample_weight
    n_queries = query_ptr.shape[0] - 1
    weight = check_query_weight(query_weight, n_queries, name)
    if n_queries:
        # as users would write it: the per-row weights of the same bits
        # give the same row keys (ties), hence the same model
        weight = weight / weight.mean()
    weight = np.repeat(weight, np.diff(query_ptr))
    return weight if sample_weight is None else weight * sample_weight


def check_per_query_sample_weight(sample_weight, n_rows, query_ptr,
                                  name="sample_weight",
                                  hint="query_weight"):
    """A ValueError pointing to ``query_weight`` when ``sample_weight`` has
    one entry per query instead of one per row (XGBoost's convention for
    its ranker)."""
    if sample_weight is None:
        return
    n_queries = query_ptr.shape[0] - 1
    shape = np.asarray(sample_weight).shape
    if n_queries != n_rows and shape == (n_queries,):
        raise ValueError(
            f"{name} has {n_queries} entries, one per query, but "
            f"BoostRanker's {name} holds one weight per row ({n_rows} "
            f"rows). For one weight per query (XGBoost's ranking "
            f"sample_weight), pass {hint}= instead")
