"""Conformal prediction on fitted skboost models, also at the end of a
scikit-learn :class:`~sklearn.pipeline.Pipeline`.

The estimators have the methods themselves
(:meth:`BoostRegressor.conformalize <skboost.BoostRegressor.conformalize>`,
``predict_interval``; :meth:`BoostClassifier.conformalize
<skboost.BoostClassifier.conformalize>`, ``predict_set``); a pipeline
does not pass such methods on, so these functions take either a fitted
estimator or a fitted pipeline whose last step is one, and run the rows
through the pipeline's other steps first. See
:doc:`/user_guide/uncertainty` for what each method guarantees.
"""

from sklearn.pipeline import Pipeline

__all__ = ["conformalize", "predict_interval", "predict_set"]


def _last_step(model, X):
    """The conformal estimator of ``model`` and ``X`` as it sees it."""
    if isinstance(model, Pipeline):
        if len(model.steps) > 1:
            X = model[:-1].transform(X)
        model = model.steps[-1][1]
    if not hasattr(model, "conformalize"):
        raise TypeError(f"{type(model).__name__} has no conformalize: give a "
                        "BoostRegressor or BoostClassifier (or a Pipeline "
                        "ending in one)")
    return model, X


def conformalize(model, X_cal, y_cal, **kwargs):
    """Calibrate a fitted estimator or pipeline (``conformalize`` of its
    last step on the transformed rows).

    Parameters
    ----------
    model : BoostRegressor, BoostClassifier or Pipeline
        Fitted; a pipeline's last step is one of the two.
    X_cal, y_cal : array-like
        Calibration rows and targets, as the pipeline takes them.
    **kwargs
        ``method`` (and ``cv``) of the estimator's ``conformalize``. With
        ``method="cv+"`` the folds refit the last step only, on rows the
        earlier steps (fitted on all of them) transformed.

    Returns
    -------
    model : the model given, calibrated
    """
    estimator, X = _last_step(model, X_cal)
    estimator.conformalize(X, y_cal, **kwargs)
    return model


def predict_interval(model, X, alpha=0.1):
    """``(lower, upper)`` of a conformalized regressor or pipeline.

    Parameters
    ----------
    model : BoostRegressor or Pipeline
    X : array-like
    alpha : float in (0, 1), default=0.1

    Returns
    -------
    lower, upper : ndarray of shape (n_samples,)
    """
    estimator, X = _last_step(model, X)
    return estimator.predict_interval(X, alpha)


def predict_set(model, X, alpha=0.1):
    """Prediction sets (n_samples, n_classes) of booleans of a
    conformalized classifier or pipeline.

    Parameters
    ----------
    model : BoostClassifier or Pipeline
    X : array-like
    alpha : float in (0, 1), default=0.1

    Returns
    -------
    sets : ndarray of bool
    """
    estimator, X = _last_step(model, X)
    return estimator.predict_set(X, alpha)
