"""Parameters users carry over from XGBoost and LightGBM.

skboost's parameter names are XGBoost's scikit-learn names. Code written for
XGBoost's native names (``eta``, ``nthread``, ``seed``) or for LightGBM
(``num_leaves``, ``min_child_samples``, ...) fails with a TypeError that
names the skboost parameter to use, or says why there is none, instead of
Python's bare "unexpected keyword argument". ``device`` and ``verbosity``
are real parameters (XGBoost's), checked here at fit.
"""

from numbers import Integral

# other libraries' keyword -> (library, what to do in skboost)
_USE = "use {}"
FOREIGN_PARAMS = {
    # XGBoost's native (learning API) names
    "eta": ("XGBoost", _USE.format("learning_rate")),
    "nthread": ("XGBoost", _USE.format("n_jobs")),
    "seed": ("XGBoost/LightGBM", _USE.format("random_state")),
    "min_split_loss": ("XGBoost", _USE.format(
        "gamma (skboost's gamma is on the scale of the paper's loss "
        "reduction: XGBoost's gamma=g is close to gamma=g/2)")),
    "lambda": ("XGBoost", _USE.format("reg_lambda")),
    "alpha": ("XGBoost", _USE.format("reg_alpha")),
    "num_boost_round": ("XGBoost/LightGBM", _USE.format("n_estimators")),
    "silent": ("XGBoost/LightGBM", _USE.format(
        "verbosity (progress lines: fit(..., verbose=...))")),
    "gpu_id": ("XGBoost", "not supported: skboost runs on the CPU only "
               "(device='cpu')"),
    "booster": ("XGBoost", "not a parameter of the random forests (one "
                "round: nothing for DART to drop); BoostClassifier, "
                "BoostRegressor and BoostRanker take 'gbtree' or 'dart'"),
    "num_class": ("XGBoost", "not needed: BoostClassifier reads the classes "
                  "from y"),
    "enable_categorical": ("XGBoost", "not needed: pandas category, polars "
                           "Categorical/Enum and arrow dictionary columns are "
                           "always categorical; name others with "
                           "categorical_features"),
    "feature_types": ("XGBoost", _USE.format("categorical_features")),
    "use_label_encoder": ("XGBoost", "not needed: labels of any type are "
                          "encoded"),
    "sampling_method": ("XGBoost", "not supported: rows are sampled "
                        "uniformly (subsample)"),
    "validate_parameters": ("XGBoost", "not needed: parameters are always "
                            "validated at fit"),
    "predictor": ("XGBoost", "not needed: skboost has one CPU predictor"),
    "disable_default_eval_metric": ("XGBoost", "not supported: without "
                                    "eval_set no metric is computed"),
    "updater": ("XGBoost", "not supported: choose the split finder with "
                "tree_method"),
    "process_type": ("XGBoost", "not supported"),
    "refresh_leaf": ("XGBoost", "not supported"),
    # LightGBM's names
    "num_leaves": ("LightGBM", _USE.format(
        "max_leaves (with grow_policy='lossguide' for LightGBM's leaf-wise "
        "growth, and max_depth=0 for no depth limit)")),
    "min_child_samples": ("LightGBM", "not supported: skboost has no "
                          "minimum row count per leaf; min_child_weight "
                          "(the hessian sum, LightGBM's min_sum_hessian) is "
                          "the closest"),
    "min_data_in_leaf": ("LightGBM", "not supported: the closest is "
                         "min_child_weight (a hessian sum)"),
    "min_sum_hessian_in_leaf": ("LightGBM", _USE.format("min_child_weight")),
    "min_split_gain": ("LightGBM", _USE.format("gamma")),
    "num_iterations": ("LightGBM", _USE.format("n_estimators")),
    "n_iter": ("LightGBM", _USE.format("n_estimators")),
    "boosting_type": ("LightGBM", "not supported: skboost does gradient "
                      "boosting ('gbdt'); for 'rf' use BoostRFClassifier / "
                      "BoostRFRegressor (or num_parallel_tree)"),
    "boosting": ("LightGBM", "not supported: skboost does gradient "
                 "boosting ('gbdt'); for 'rf' use BoostRFClassifier / "
                 "BoostRFRegressor (or num_parallel_tree)"),
    "subsample_freq": ("LightGBM", "not supported: subsample draws rows "
                       "anew for every tree (LightGBM's subsample_freq=1)"),
    "bagging_freq": ("LightGBM", "not supported: subsample draws rows anew "
                     "for every tree"),
    "bagging_fraction": ("LightGBM", _USE.format("subsample")),
    "feature_fraction": ("LightGBM", _USE.format("colsample_bytree")),
    "feature_fraction_bynode": ("LightGBM", _USE.format("colsample_bynode")),
    "lambda_l1": ("LightGBM", _USE.format("reg_alpha")),
    "lambda_l2": ("LightGBM", _USE.format("reg_lambda")),
    "num_threads": ("LightGBM", _USE.format("n_jobs")),
    "subsample_for_bin": ("LightGBM", "not supported: the quantile sketch "
                          "reads every row"),
    "categorical_feature": ("LightGBM", _USE.format("categorical_features")),
    "is_unbalance": ("LightGBM", _USE.format(
        "class_weight='balanced' (BoostClassifier) or scale_pos_weight")),
    "verbose": ("LightGBM", _USE.format(
        "verbosity; progress lines are fit(..., verbose=...)")),
    "device_type": ("LightGBM", _USE.format("device (only 'cpu')")),
    "extra_trees": ("LightGBM", "not supported"),
    "linear_tree": ("LightGBM", "not supported"),
    "path_smooth": ("LightGBM", "not supported"),
    "cat_smooth": ("LightGBM", "not supported"),
    "cat_l2": ("LightGBM", "not supported"),
    "min_data_per_group": ("LightGBM", "not supported"),
    "monotone_constraints_method": ("LightGBM", "not supported: monotone "
                                    "constraints use XGBoost's method"),
}

# parameters of one estimator only: where they belong
_ONLY_ON = {
    "class_weight": "BoostClassifier",
    "scale_pos_weight": "BoostClassifier",
    "huber_slope": "BoostRegressor",
    "quantile_alpha": "BoostRegressor",
    "tweedie_variance_power": "BoostRegressor",
    "aft_loss_distribution": "BoostRegressor",
    "aft_loss_distribution_scale": "BoostRegressor",
    "lambdarank_pair_method": "BoostRanker",
    "lambdarank_num_pair_per_sample": "BoostRanker",
    "ndcg_exp_gain": "BoostRanker",
    "lambdarank_unbiased": "BoostRanker",
    "lambdarank_bias_norm": "BoostRanker",
    "lambdarank_normalization": "BoostRanker",
    "lambdarank_score_normalization": "BoostRanker",
}


def reject_unknown_keywords(estimator_class, kwargs):
    """Raise a TypeError naming each unknown keyword's skboost counterpart
    (``kwargs``: the keywords the constructor's signature lacks)."""
    if not kwargs:
        return
    raise TypeError(f"{estimator_class.__name__}.__init__() got unexpected "
                    f"keyword argument{'s' if len(kwargs) > 1 else ''}: "
                    + unknown_keyword_advice(estimator_class, kwargs))


def unknown_keyword_advice(estimator_class, keywords):
    """One sentence per unknown keyword: the skboost parameter to use."""
    name = estimator_class.__name__
    return "; ".join(_advice(name, keyword) for keyword in keywords)


def _advice(estimator_name, keyword):
    if keyword in FOREIGN_PARAMS:
        library, advice = FOREIGN_PARAMS[keyword]
        return f"{keyword!r} ({library}'s name): {advice}"
    if keyword in _ONLY_ON:
        return (f"{keyword!r} is a parameter of {_ONLY_ON[keyword]}, not of "
                f"{estimator_name}")
    return (f"{keyword!r} is not a parameter of {estimator_name} (see "
            f"{estimator_name}().get_params() for the parameters)")


def check_device_and_verbosity(estimator):
    """At fit: ``device`` must be the CPU; ``verbosity`` 0 to 3 or None."""
    device = getattr(estimator, "device", "cpu")
    if device is not None and str(device).lower() != "cpu":
        raise ValueError(
            f"device={device!r} is not available: skboost runs on the CPU "
            "only (device='cpu'); use n_jobs for more threads")
    verbosity = getattr(estimator, "verbosity", None)
    if verbosity is not None and (
            not isinstance(verbosity, Integral) or isinstance(verbosity, bool)
            or not 0 <= verbosity <= 3):
        raise ValueError(f"verbosity must be None or an integer 0 (silent) "
                         f"to 3 (debug), got {verbosity!r}")
