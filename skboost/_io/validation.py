"""Cross-checks of a model file's fields against each other.

A model file is untrusted input (see ``doc/user_guide/security.rst``):
``model_file.py`` parses it and checks each field's own form; the
functions here check what one field implies for another, before anything
sized by a field is allocated:

- the classes against the objective's outputs (trees per round);
- the number of features against the format's limit (feature indices are
  int32) -- nothing that loading or the model's views allocate is sized by
  it, only by what the trees use;
- the objective's parameters (types and ranges) against the estimator's
  parameters that produced them;
- the categorical bitsets against their feature's number of categories;
- the runtime parameters (``n_jobs``) through the same resolution as a
  fit's, so that no value in a file can ask for more threads than the
  machine runs.

Every function raises :class:`ModelFileError` (a ValueError) with a message
naming the field.
"""

from numbers import Integral, Real

import numpy as np

from ..distributions import FAMILIES

# feature indices are int32 in the tree format
MAX_FEATURES = np.iinfo(np.int32).max


class ModelFileError(ValueError):
    """A problem with a model file's content (the caller adds the file
    name)."""


def expect(condition, message):
    """Raise :class:`ModelFileError` with ``message`` unless ``condition``."""
    if not condition:
        raise ModelFileError(message)


def check_n_features(n_features):
    """A positive feature count within the format's int32 indices."""
    expect(isinstance(n_features, int) and not isinstance(n_features, bool)
           and 1 <= n_features <= MAX_FEATURES,
           f"'n_features_in' must be an integer in [1, {MAX_FEATURES}], got "
           f"{n_features!r}")


# objectives that train exactly two classes (one margin per row)
_BINARY = frozenset({"binary:logistic", "binary:logitraw", "binary:hinge"})
_MULTICLASS = frozenset({"multi:softprob", "multi:softmax"})


def check_classes_fit_objective(objective, objective_params, n_classes,
                                is_classifier):
    """The classes are those the objective trains: two for a ``binary:``
    objective or a custom objective's logistic link, three or more for a
    custom softmax link, any number (at least 2) for ``multi:``; none for
    regression and ranking objectives."""
    link = objective_params.get("link")
    if objective in _BINARY or link == "logistic":
        expect(n_classes == 2,
               f"the objective {objective!r} trains 2 classes, the file has "
               f"{n_classes}")
    elif link == "softmax":
        expect(n_classes is not None and n_classes > 2,
               f"a custom objective with a softmax link trains more than 2 "
               f"classes, the file has {n_classes}")
    elif objective in _MULTICLASS:
        expect(n_classes is not None and n_classes >= 2,
               f"the objective {objective!r} needs classes")
    if link is not None:   # a custom objective: the link fits the estimator
        expect(is_classifier == (link in ("logistic", "softmax")),
               f"a {'classifier' if is_classifier else 'regressor or ranker'}"
               f" does not predict with a custom objective's {link!r} link")


def _number(low=None, high=None, low_open=False, high_open=True):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, Real):
            return False
        value = float(value)
        if not np.isfinite(value):
            return False
        if low is not None and (value <= low if low_open else value < low):
            return False
        return high is None or (value < high if high_open else value <= high)
    return check


def _quantiles(value):
    values = value if isinstance(value, list) else [value]
    inside = _number(0.0, 1.0, low_open=True)
    return len(values) >= 1 and all(inside(v) for v in values)


def _pairs_per_sample(value):
    return value is None or (isinstance(value, Integral)
                             and not isinstance(value, bool) and value >= 1)


# what each objective parameter may hold in a file
_OBJECTIVE_PARAM_CHECKS = {
    "huber_slope": (_number(0.0, low_open=True), "a positive number"),
    "quantile_alpha": (_quantiles, "a number or a non-empty list of numbers "
                                   "in (0, 1)"),
    "tweedie_variance_power": (_number(1.0, 2.0), "a number in [1, 2)"),
    "scale_pos_weight": (_number(0.0, low_open=True), "a positive number"),
    "poisson_max_delta_step": (_number(0.0), "a finite number >= 0"),
    "lambdarank_pair_method": (lambda v: v in ("topk", "mean"),
                               "'topk' or 'mean'"),
    "lambdarank_num_pair_per_sample": (_pairs_per_sample,
                                       "null or an integer >= 1"),
    "ndcg_exp_gain": (lambda v: isinstance(v, bool), "a boolean"),
    "lambdarank_unbiased": (lambda v: isinstance(v, bool), "a boolean"),
    "lambdarank_bias_norm": (_number(0.0), "a finite number >= 0"),
    "lambdarank_normalization": (lambda v: isinstance(v, bool), "a boolean"),
    "lambdarank_score_normalization": (lambda v: isinstance(v, bool),
                                       "a boolean"),
    "aft_loss_distribution": (lambda v: v in ("normal", "logistic",
                                               "extreme"),
                              "'normal', 'logistic' or 'extreme'"),
    "aft_loss_distribution_scale": (_number(0.0, low_open=True),
                                    "a positive number"),
    "link": (lambda v: v in ("identity", "logistic", "softmax"),
             "'identity', 'logistic' or 'softmax'"),
    "distribution": (lambda v: v in FAMILIES, f"one of {sorted(FAMILIES)}"),
    "natural_gradient": (lambda v: isinstance(v, bool), "a boolean"),
    "student_df": (_number(0.0, low_open=True), "a positive number"),
}


def check_objective_param_values(params):
    """Each objective parameter of the file has its type and range."""
    for name, value in params.items():
        check, what = _OBJECTIVE_PARAM_CHECKS[name]
        expect(check(value),
               f"objective parameter {name!r} must be {what}, got {value!r}")


def check_objective_params_match(estimator_params, booster_params):
    """The objective parameters the booster was trained with are those the
    estimator's parameters give (``_objective_params`` of the loaded
    estimator)."""
    for name, value in estimator_params.items():
        if name not in booster_params:
            continue
        saved = booster_params[name]
        same = (saved == value if not isinstance(saved, (list, Real))
                or isinstance(saved, bool)
                else _same_numbers(saved, value))
        expect(same, f"the booster's objective parameter {name}={saved!r} "
                     f"does not match the estimator's {value!r}")


def _same_numbers(a, b):
    try:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.all(a == b))


def check_category_bits(size, ptr, bits):
    """No split's bitset names a category beyond its feature's last one
    (``size[i]`` categories: codes ``0 .. size[i]-1``)."""
    for i in range(size.shape[0]):
        words = bits[ptr[i]:ptr[i + 1]]
        first_unused = int(size[i])
        if first_unused >= 32 * words.shape[0]:
            continue
        word, bit = divmod(first_unused, 32)
        beyond = (int(words[word]) >> bit) != 0 or bool(
            np.any(words[word + 1:]))
        expect(not beyond,
               f"categorical split {i}'s bitset names categories beyond its "
               f"feature's {first_unused}")


def categories_of_features(category_map, features):
    """Number of categories of each of ``features`` (0: numeric), looked up
    without an array of all ``n_features`` entries."""
    out = np.zeros(features.shape[0], dtype=np.int64)
    if category_map is None or not features.shape[0]:
        return out
    known = category_map.features
    position = np.searchsorted(known, features)
    inside = position < known.shape[0]
    hit = np.zeros(features.shape[0], dtype=bool)
    hit[inside] = known[position[inside]] == features[inside]
    counts = np.array([len(c) for c in category_map.categories],
                      dtype=np.int64)
    out[hit] = counts[position[hit]]
    return out


def check_runtime_params(params):
    """Runtime parameters of the file resolve as a fit's would: ``n_jobs``
    goes through ``effective_n_threads`` (any integer but 0 is capped at the
    CPUs this process may use, so no file can make a predict start more
    threads than the machine runs)."""
    from .._threads import effective_n_threads

    if "n_jobs" not in params:
        return
    try:
        effective_n_threads(params["n_jobs"])
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"invalid saved parameter n_jobs: {exc}") from None


def check_finite_sums(booster):
    """Sums the model computes from its values stay finite: a row's margin
    (the base margin plus one leaf of each tree of its output, bounded by
    the sum of the largest leaves), and the importances (sums of gains and
    covers over all splits)."""
    bound = np.abs(booster.base_margin).astype(np.float64)
    gains = covers = 0.0
    with np.errstate(over="ignore"):
        for tree, group in zip(booster.trees, booster.tree_group):
            leaves = tree.left_child == -1
            bound[group] += float(np.max(np.abs(tree.value[leaves])))
            gains += float(np.sum(np.abs(tree.gain)))
            covers += float(np.sum(np.abs(tree.cover)))
    expect(np.all(np.isfinite(bound)),
           "the leaf values are so large that a margin (base margin plus "
           "one leaf per tree) can overflow")
    expect(np.isfinite(gains) and np.isfinite(covers),
           "the gains or covers are so large that their sums overflow")


# relative rounding allowed between a node's cover and its children's sum
COVER_TOLERANCE = 1e-6


def check_cover_sums(left, right, cover):
    """A split's cover (hessian sum of its rows) is the sum of its
    children's, up to rounding: every row of a node goes to one child.
    TreeSHAP weighs paths by these fractions."""
    inner = np.flatnonzero(left != -1)
    if not inner.shape[0]:
        return
    parent = cover[inner]
    children = cover[left[inner]] + cover[right[inner]]
    bad = np.abs(children - parent) > COVER_TOLERANCE * np.maximum(parent,
                                                                   children)
    expect(not bad.any(),
           f"node {int(inner[np.argmax(bad)])}'s cover is not the sum of its "
           "children's covers")
