"""Treelite export of skboost models.

:func:`to_treelite` builds a ``treelite.Model`` with Treelite's model
builder: the trees ``predict`` uses, the base margin as Treelite's base
score, and the objective's link as its postprocessor. ``treelite.gtil``
predicts with it, and TL2cgen compiles it to C.

Splits map exactly: skboost's ``x < t`` is Treelite's ``<`` test against
the float64 threshold (Treelite's float64 model reads the input as
float64, so a float32 input compares as in skboost), with the split's
learned default direction for missing values (NaN). A categorical split
is a Treelite categorical test on the raw category values, listing the
categories of the side opposite to the default so that unseen values take
the default side as in skboost; Treelite reads a category as a
non-negative integer, so the categories of an exported categorical feature
must be non-negative integers (else a ValueError names the feature).
Treelite truncates a fractional value of a categorical feature to an
integer before testing it (2.5 reads as category 2), where skboost treats
it as an unseen category: feed categorical features integer values.
"""

import numpy as np

from ._estimators.export import category_test, exported_model

try:
    import treelite
    from treelite.model_builder import (Metadata, ModelBuilder,
                                        PostProcessorFunc, TreeAnnotation)
except ImportError as error:  # pragma: no cover - exercised without treelite
    raise ImportError("skboost.treelite needs treelite: "
                      "pip install skboost[treelite]") from error

__all__ = ["to_treelite"]

# Treelite's postprocessor of each link (skboost._estimators.export)
_POSTPROCESSORS = {"identity": "identity", "sigmoid": "sigmoid",
                   "exp": "exponential", "hinge": "hinge",
                   "softmax": "softmax"}
# Treelite compares categories as unsigned integers; float64 holds every
# integer up to 2**53, the input as float32 every integer up to 2**24
_MAX_CATEGORY = 2 ** 24


def to_treelite(estimator):
    """Convert a fitted skboost estimator into a Treelite model.

    Parameters
    ----------
    estimator : BoostRegressor, BoostClassifier or BoostRanker
        A fitted estimator. The trees ``predict`` uses are exported (those
        up to ``best_iteration`` after early stopping).

    Returns
    -------
    treelite.Model
        ``treelite.gtil.predict(model, X)`` (shape ``(n, n_targets,
        n_classes)``) gives the regressor's ``predict`` (one target per
        quantile), the ranker's scores, and the classifier's probability
        of ``classes_[1]`` (two classes) or ``predict_proba`` (more, and
        for a multi-label classifier: one target per label).
        X holds NaN for missing values and the raw category values of
        categorical features.

    Raises
    ------
    ValueError
        For a model trained with a callable objective, with a ``missing``
        marker other than NaN (Treelite knows NaN only), or with a
        categorical feature whose categories are not non-negative
        integers.
    """
    model = exported_model(estimator)
    if not np.isnan(model.missing):
        raise ValueError(
            f"this model treats the value {model.missing} as missing "
            "(missing parameter); Treelite knows only NaN as missing: "
            "replace the marker by NaN in the data and refit with "
            "missing=np.nan")
    builder = ModelBuilder(
        threshold_type="float64", leaf_output_type="float64",
        metadata=_metadata(model),
        tree_annotation=_annotation(model),
        postprocessor=PostProcessorFunc(name=_POSTPROCESSORS[model.link]),
        base_scores=[float(b) for b in model.base_margin])
    for tree in model.trees:
        builder.start_tree()
        for node in range(tree.n_nodes):
            builder.start_node(node)
            _add_node(builder, model, tree, node)
            builder.end_node()
        builder.end_tree()
    return builder.commit()


def _is_multiclass(model):
    return (model.kind == "classifier" and model.n_outputs > 1
            and not model.multilabel)


def _metadata(model):
    n_outputs = model.n_outputs
    if _is_multiclass(model):
        task, n_targets, n_classes = "kMultiClf", 1, [n_outputs]
    else:
        task = {"classifier": "kBinaryClf", "regressor": "kRegressor",
                "ranker": "kLearningToRank"}[model.kind]
        n_targets, n_classes = n_outputs, [1] * n_outputs
    return Metadata(num_feature=model.n_features, task_type=task,
                    average_tree_output=False, num_target=n_targets,
                    num_class=n_classes, leaf_vector_shape=(1, 1))


def _annotation(model):
    """Each tree adds to its output: a class of a multiclass model, else a
    target (one per quantile or label)."""
    groups = [int(g) for g in model.groups]
    zeros = [0] * len(groups)
    if _is_multiclass(model):
        return TreeAnnotation(num_tree=len(groups), target_id=zeros,
                              class_id=groups)
    return TreeAnnotation(num_tree=len(groups), target_id=groups,
                          class_id=zeros)


def _add_node(builder, model, tree, node):
    left, right = int(tree.left_child[node]), int(tree.right_child[node])
    if left < 0:
        builder.leaf(float(tree.value[node]))
        return
    feature = int(tree.feature[node])
    default_left = bool(tree.default_left[node])
    if tree.left_categories(node) is None:
        builder.numerical_test(feature, float(tree.threshold[node]),
                               default_left=default_left, opname="<",
                               left_child_key=left, right_child_key=right)
        return
    test = category_test(model, tree, node)
    builder.categorical_test(
        feature, default_left=default_left,
        category_list=_integer_categories(model, feature, test.values),
        category_list_right_child=not test.members_left,
        left_child_key=left, right_child_key=right)


def _integer_categories(model, feature, values):
    """The category values as Treelite's unsigned integers, or a
    ValueError naming the feature."""
    categories = model.category_values[feature]
    if not np.all((categories >= 0) & (categories < _MAX_CATEGORY)
                  & (categories == np.round(categories))):
        raise ValueError(
            f"the categories of feature {model.feature_labels[feature]!r} "
            "are not all non-negative integers below 2**24: Treelite reads "
            "a category as an unsigned integer (code the column as 0, 1, "
            "2, ... before fitting)")
    return [int(v) for v in values]
