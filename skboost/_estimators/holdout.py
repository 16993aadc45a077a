"""The internal hold-out set of early stopping without an ``eval_set``.

With ``early_stopping_rounds`` set and no ``eval_set``, ``fit`` holds out a
``validation_fraction`` of its own training rows and watches the metric on
them, so that a model inside a Pipeline or a cross-validation loop
early-stops on the training folds only. The split is:

- for the classifier, stratified by class (scikit-learn's
  ``train_test_split(stratify=y)``);
- for the ranker, by whole queries: a query's rows are all held out or all
  kept;
- otherwise a plain random split;

drawn from ``random_state`` (reproducible for an integer). Both parts keep
the rows in their original order.
"""

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state

from .._model.train import EvalSet

HOLDOUT_NAME = "validation"


def hold_out(X, y, weight, query_ptr, fraction, *, stratify, random_state):
    """Split the training data.

    Returns
    -------
    train_rows : ndarray
        Rows kept for training, in order.
    query_ptr : ndarray or None
        Query boundaries of the kept rows (ranking).
    holdout : EvalSet
        The held-out part, named ``"validation"``.
    """
    rng = check_random_state(random_state)
    if query_ptr is not None:
        train_rows, val_rows, train_ptr, val_ptr = _split_queries(
            query_ptr, fraction, rng)
    else:
        train_rows, val_rows = _split_rows(y, fraction, stratify, rng)
        train_ptr = val_ptr = None
    holdout = EvalSet(HOLDOUT_NAME, X[val_rows], y[val_rows], weight[val_rows],
                      val_ptr)
    return train_rows, train_ptr, holdout


def objective_for_rows(objective, rows):
    """The objective for the training rows ``rows`` (a callable ranking
    objective carries the query id of every row)."""
    if getattr(objective, "qid", None) is not None:
        objective.qid = objective.qid[rows]
    return objective


def _split_rows(y, fraction, stratify, rng):
    rows = np.arange(y.shape[0])
    try:
        train_rows, val_rows = train_test_split(
            rows, test_size=fraction, stratify=y if stratify else None,
            random_state=rng)
    except ValueError as exc:
        raise ValueError(
            f"early stopping could not hold out validation_fraction="
            f"{fraction} of the {y.shape[0]} training rows ({exc}); change "
            "validation_fraction or pass an eval_set") from None
    return np.sort(train_rows), np.sort(val_rows)


def _split_queries(query_ptr, fraction, rng):
    """Rows and query boundaries of the kept and the held-out queries."""
    sizes = np.diff(query_ptr)
    n_queries = sizes.shape[0]
    n_val = int(np.ceil(fraction * n_queries))
    if n_queries < 2 or n_val >= n_queries:
        raise ValueError(
            f"early stopping could not hold out validation_fraction="
            f"{fraction} of {n_queries} queries with at least one query "
            "left to train on; change validation_fraction or pass an "
            "eval_set")
    held = np.zeros(n_queries, dtype=bool)
    held[rng.permutation(n_queries)[:n_val]] = True
    query_of_row = np.repeat(np.arange(n_queries), sizes)
    rows = np.arange(query_ptr[-1])

    def part(mask):
        ptr = np.concatenate([[0], np.cumsum(sizes[mask])]).astype(query_ptr.dtype)
        return rows[mask[query_of_row]], ptr

    (train_rows, train_ptr), (val_rows, val_ptr) = part(~held), part(held)
    return train_rows, val_rows, train_ptr, val_ptr
