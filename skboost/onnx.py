"""ONNX export of skboost models, alone or inside scikit-learn pipelines.

:func:`to_onnx` converts a fitted :class:`~skboost.BoostRegressor`,
:class:`~skboost.BoostClassifier` or :class:`~skboost.BoostRanker` into an
ONNX ``ModelProto`` that onnxruntime (or any ONNX runtime with the
``ai.onnx.ml`` tree operators) runs without skboost. Importing this module
also registers the three estimators with ``skl2onnx``, so that
``skl2onnx.to_onnx(pipeline, X)`` converts a ``Pipeline`` or
``ColumnTransformer`` that holds one.

The graph is the model's own arithmetic in standard operators:

- the trees' margins, ``base_margin + sum of the trees``, from one tree
  ensemble operator: ``TreeEnsemble`` (``ai.onnx.ml`` opset 5 and later),
  else ``TreeEnsembleRegressor``, one target per output (class, quantile);
- the link of the objective after it: ``Exp`` (``count:poisson``,
  ``reg:gamma``, ``reg:tweedie``), ``Sigmoid`` (logistic objectives),
  ``Softmax`` (multiclass), a step at 0 (``binary:hinge``);
- for a classifier, the probabilities of every class and the label
  ``classes_[argmax]`` (``ArgMax``, ``Gather``), in skl2onnx's conventions
  for scikit-learn classifiers: outputs ``label`` (int64, or string for
  string classes) and ``probabilities``, turned into a list of
  ``{class: probability}`` maps by ``ZipMap`` unless the option
  ``zipmap=False`` is given;
- for a multi-label classifier (fitted on a 2-D y), each label's
  probability through the link of its own margin and the 0/1 indicator of
  the labels whose margin is positive, both of shape (N, n_labels), as
  ``predict_proba`` and ``predict`` give them (and as skl2onnx writes
  scikit-learn's multi-label ``MLPClassifier``: no ``ZipMap``).

Splits map exactly: skboost's ``x < t`` is ``BRANCH_LT`` with the smallest
float32 at or above ``t`` (the same float32 comparison skboost's predictor
makes), a missing value follows the split's learned default direction
(``nodes_missing_value_tracks_true``). A categorical split reads the raw
category value: it becomes a set-membership test (``BRANCH_MEMBER``) on the
categories of the side opposite to the default, so that unseen and
missing values take the default side as in skboost; before ``ai.onnx.ml``
opset 5 only a split with one category on that side (``BRANCH_EQ``) can be
written, and another raises a ValueError naming the feature.
"""

import dataclasses
from abc import ABC, abstractmethod

import numpy as np

from ._estimators.export import category_test, exported_model, float32_threshold

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from skl2onnx import update_registered_converter
    from skl2onnx._parse import _apply_zipmap, _get_sklearn_operator_name
    from skl2onnx.common._topology import get_default_opset_for_domain
    from skl2onnx.common.data_types import (FloatTensorType,
                                            Int64TensorType,
                                            StringTensorType)
except ImportError as error:  # pragma: no cover - exercised without onnx
    raise ImportError(
        "skboost.onnx needs onnx and skl2onnx (and onnxruntime to run the "
        "models): pip install skboost[onnx]") from error

from ._estimators import BoostClassifier, BoostRanker, BoostRegressor

__all__ = ["to_onnx", "register_converters"]

# ai.onnx.ml opset that introduced the TreeEnsemble operator (with
# BRANCH_MEMBER set-membership splits)
TREE_ENSEMBLE_OPSET = 5
_ML = "ai.onnx.ml"
# TreeEnsemble's nodes_modes codes
_BRANCH_LT, _BRANCH_MEMBER = 1, 6

_ALIASES = {BoostRegressor: "SkboostBoostRegressor",
            BoostClassifier: "SkboostBoostClassifier",
            BoostRanker: "SkboostBoostRanker"}


def to_onnx(estimator, X_sample, *, target_opset=None, options=None):
    """Convert a fitted skboost estimator into an ONNX model.

    Parameters
    ----------
    estimator : BoostRegressor, BoostClassifier or BoostRanker
        A fitted estimator. The trees ``predict`` uses are exported (those
        up to ``best_iteration`` after early stopping).
    X_sample : array-like of shape (n_samples, n_features)
        A few rows of the input: only their number of columns is used. The
        ONNX model takes one float32 tensor ``X`` of shape
        ``(N, n_features)``, NaN for missing values (and the estimator's
        ``missing`` marker, when it has one); a categorical feature takes
        its raw category values (numbers: a pandas ``category`` column with
        string categories can not be fed as a float and raises).
    target_opset : int or dict, default=None
        The main ONNX opset (int), or ``{"": main, "ai.onnx.ml": ml}``.
        From ``ai.onnx.ml`` opset 5 the trees are one ``TreeEnsemble``
        operator, with set-membership categorical splits; below, one
        ``TreeEnsembleRegressor`` (categorical splits then limited to one
        category against the rest). An int takes the ``ai.onnx.ml`` opset
        released with it. None: main opset 21 with ``ai.onnx.ml`` 3, the
        operators most runtimes have, or 5 when a categorical split needs
        it.
    options : dict, default=None
        ``{"zipmap": False}`` keeps a classifier's probabilities a float
        tensor of shape (N, n_classes) (outputs ``label`` and
        ``probabilities``); by default they pass through ``ZipMap``, as
        skl2onnx does for scikit-learn classifiers (outputs
        ``output_label`` and ``output_probability``, a list of
        ``{class: probability}`` maps).

    Returns
    -------
    onnx.ModelProto
        Input ``X``. Outputs: ``variable`` (float32, shape (N, n_outputs):
        the regressor's predictions, one column per quantile, or the
        ranker's scores); for a classifier its labels (int64, or string for
        string classes) and probabilities (see ``options``); for a
        multi-label classifier ``label`` (int64, shape (N, n_labels), the
        0/1 indicator ``predict`` gives) and ``probabilities`` (float32,
        shape (N, n_labels)), whatever ``zipmap`` says.

    Raises
    ------
    ValueError
        For a model trained with a callable objective, a categorical split
        the opset can not express, categorical features with non-numeric
        categories, or ``X_sample`` without the model's features.
    """
    model = exported_model(estimator)
    zipmap = _check_conversion_inputs(model, X_sample, options)
    main, ml = _standalone_opsets(target_opset, needs_member_splits(model))
    graph = _ProtoGraph(ml)
    outputs = _proto_outputs(graph, model, zipmap)
    predict_graph(graph, model, "X", outputs)
    if model.kind == "classifier" and zipmap and not model.multilabel:
        _add_zipmap(graph, model.classes)
    return graph.model(model.n_features, main)


def _proto_outputs(graph, model, zipmap):
    """The graph's outputs: a classifier's labels and probabilities, else
    one float tensor ``variable`` of shape (N, n_outputs)."""
    if model.kind == "classifier":
        return _proto_classifier_outputs(graph, model,
                                         zipmap and not model.multilabel)
    graph.outputs.append(helper.make_tensor_value_info(
        "variable", TensorProto.FLOAT, [None, model.n_outputs]))
    return ["variable"]


def _check_conversion_inputs(model, X_sample, options):
    """``X_sample`` has the model's features and ``options`` is understood;
    the ``zipmap`` option."""
    n_columns = np.shape(X_sample)[1] if np.ndim(X_sample) == 2 else None
    if n_columns != model.n_features:
        raise ValueError(
            f"X_sample must be 2-D with the model's {model.n_features} "
            f"features, got shape {np.shape(X_sample)}")
    zipmap = (options or {}).get("zipmap", True)
    if set(options or {}) - {"zipmap"} or zipmap not in (True, False):
        raise ValueError("options must be None or {'zipmap': True/False}, "
                         f"got {options!r}")
    return zipmap


def _add_zipmap(graph, classes):
    """skl2onnx's ZipMap after the classifier's outputs."""
    labels = _label_values(classes)
    key = ({"classlabels_int64s": [int(c) for c in labels]}
           if labels.dtype != object
           else {"classlabels_strings": [str(c) for c in labels]})
    graph.node("Identity", ["label"], "output_label")
    graph.node("ZipMap", ["probabilities"], "output_probability", domain=_ML,
               **key)


def _standalone_opsets(target_opset, needs_member):
    """(main opset, ai.onnx.ml opset) of :func:`to_onnx`."""
    if target_opset is None:
        return 21, TREE_ENSEMBLE_OPSET if needs_member else 3
    if isinstance(target_opset, dict):
        main = int(target_opset.get("", 21))
        ml = target_opset.get(_ML)
    else:
        main, ml = int(target_opset), None
    if ml is None:   # the ai.onnx.ml opset released with the main one
        ml = max(row[3] for row in helper.VERSION_TABLE if row[2] <= main)
    return main, int(ml)


def _proto_classifier_outputs(graph, model, zipmap):
    """Declare the classifier's outputs; returns the names the prediction
    graph writes (label, probabilities)."""
    label_type = (TensorProto.INT64
                  if _label_type(model.classes) is Int64TensorType
                  else TensorProto.STRING)
    n_classes = len(model.classes)
    label_shape = [None, n_classes] if model.multilabel else [None]
    if not zipmap:
        graph.outputs += [
            helper.make_tensor_value_info("label", label_type, label_shape),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                          [None, n_classes])]
        return ["label", "probabilities"]
    graph.outputs += [
        helper.make_tensor_value_info("output_label", label_type, [None]),
        helper.make_value_info("output_probability",
                               helper.make_sequence_type_proto(
                                   helper.make_map_type_proto(
                                       label_type,
                                       helper.make_tensor_type_proto(
                                           TensorProto.FLOAT, []))))]
    return ["label", "probabilities"]


def register_converters():
    """Register the skboost estimators with skl2onnx (done on import).

    ``skl2onnx.to_onnx`` then converts any pipeline holding a
    :class:`~skboost.BoostRegressor`, :class:`~skboost.BoostClassifier` or
    :class:`~skboost.BoostRanker`. Calling it again is harmless.
    """
    for cls, alias in _ALIASES.items():
        classifier = cls is BoostClassifier
        update_registered_converter(
            cls, alias,
            _classifier_shapes if classifier else _regressor_shapes,
            convert_skboost,
            parser=_classifier_parser if classifier else None,
            options=(_CLASSIFIER_OPTIONS if classifier else None))


# the options skl2onnx's classifier path reads (its ZipMap asks for "nocl",
# whether the labels are the class indices): without them registered,
# skl2onnx.to_onnx(pipeline) with its defaults fails with a NameError
_CLASSIFIER_OPTIONS = {"zipmap": [True, False, "columns"],
                       "nocl": [False, True]}


def _label_classes(scope, model):
    """The labels the graph gives: ``classes_``, or the class indices
    0 .. n_classes-1 with skl2onnx's option ``nocl=True``."""
    classes = np.asarray(model.classes_)
    options = scope.get_options(model, dict(nocl=False))
    return np.arange(len(classes)) if options["nocl"] else classes


# ------------------------------------------------------ skl2onnx protocol


def _label_type(classes):
    """ONNX type of the labels: int64 for integer (or integral float, or
    bool) classes, string for strings, as skl2onnx's classifiers."""
    if classes.dtype.kind in "iub":
        return Int64TensorType
    if classes.dtype.kind == "f":
        if not np.all(classes == np.round(classes)):
            raise ValueError(
                "class labels that are non-integer floats can not be ONNX "
                "labels (int64 or string, as in skl2onnx): encode them as "
                "integers or strings")
        return Int64TensorType
    return StringTensorType


def _classifier_parser(scope, model, inputs, custom_parsers=None):
    """The classifier's two outputs, ``label`` and ``probabilities``, with
    skl2onnx's ZipMap after them unless ``zipmap=False`` or the model is
    multi-label."""
    options = scope.get_options(model, dict(zipmap=True))
    operator = scope.declare_local_operator(
        _get_sklearn_operator_name(type(model)), model)
    operator.inputs = inputs
    label_type = _label_type(_label_classes(scope, model))
    operator.outputs.append(scope.declare_local_variable("label",
                                                         label_type()))
    operator.outputs.append(scope.declare_local_variable(
        "probabilities", FloatTensorType()))
    if ((isinstance(options["zipmap"], bool) and not options["zipmap"])
            or _is_multilabel(model)):
        return operator.outputs
    return _apply_zipmap(options["zipmap"], scope, model, inputs[0].type,
                         operator.outputs)


def _check_input(operator):
    if len(operator.inputs) != 1:
        raise ValueError("a skboost estimator takes one input matrix, got "
                         f"{len(operator.inputs)} inputs")
    n_features = operator.raw_operator.n_features_in_
    shape = operator.inputs[0].type.shape
    if len(shape) != 2 or shape[1] not in (None, n_features):
        raise ValueError(
            f"the input of {type(operator.raw_operator).__name__} must have "
            f"shape (N, {n_features}), got {shape} from the steps before it")


def _regressor_shapes(operator):
    _check_input(operator)
    n_outputs = operator.raw_operator.booster_.n_outputs
    n_rows = operator.inputs[0].type.shape[0]
    operator.outputs[0].type = FloatTensorType([n_rows, n_outputs])


def _classifier_shapes(operator):
    _check_input(operator)
    model = operator.raw_operator
    n_rows = operator.inputs[0].type.shape[0]
    # the label type the parser declared (int64 indices with nocl=True)
    label_shape = ([n_rows, len(model.classes_)] if _is_multilabel(model)
                   else [n_rows])
    operator.outputs[0].type = type(operator.outputs[0].type)(label_shape)
    operator.outputs[1].type = FloatTensorType([n_rows, len(model.classes_)])


def _is_multilabel(estimator):
    """A classifier fitted on a 2-D y: one binary output per label."""
    return estimator.booster_.n_targets > 1


def convert_skboost(scope, operator, container):
    """skl2onnx converter of the three estimators (see the module doc)."""
    model = exported_model(operator.raw_operator)
    if model.kind == "classifier":
        model = dataclasses.replace(model, classes=_label_classes(
            scope, operator.raw_operator))
    graph = _ContainerGraph(scope, container)
    X = graph.float_input(operator.inputs[0])
    predict_graph(graph, model, X, [v.full_name for v in operator.outputs])


def predict_graph(graph, model, X, outputs):
    """Add the nodes from float32 ``X`` to ``outputs``: [predictions] of a
    regressor or ranker, [label, probabilities] of a classifier (one column
    of each per label for a multi-label one)."""
    X = _apply_missing_marker(graph, X, model)
    columns = category_columns(model)
    X = _append_category_codes(graph, X, model, columns)
    margins = graph.tree_margins(X, model, columns)
    if model.kind != "classifier":
        _link(graph, margins, model.link, outputs[0])
        return
    label, proba = outputs
    if model.multilabel:
        _multilabel_outputs(graph, margins, model.link, label, proba)
        return
    if model.link == "softmax":
        _link(graph, margins, "softmax", proba)
    else:   # one margin: the positive class's probability p, then [1-p, p]
        positive = _link(graph, margins, model.link)
        negative = graph.node("Sub", [graph.constant(
            np.array([1.0], dtype=np.float32)), positive])
        graph.node("Concat", [negative, positive], proba, axis=1)
    # ties go to the first class, as numpy's argmax in predict
    best = graph.node("ArgMax", [proba], axis=1, keepdims=0)
    graph.node("Gather", [graph.constant(_label_values(model.classes)), best],
               label, axis=0)


def _multilabel_outputs(graph, margins, link, label, proba):
    """Each label's probability and the 0/1 indicator of the labels whose
    margin is positive (``predict``'s rule: probability above 1/2)."""
    _link(graph, margins, link, proba)
    positive = graph.node("Greater", [margins, graph.constant(
        np.array([0.0], dtype=np.float32))])
    graph.node("Cast", [positive], label, to=TensorProto.INT64)


def _label_values(classes):
    if _label_type(classes) is Int64TensorType:
        return classes.astype(np.int64)
    return np.array([str(c) for c in classes], dtype=object)


def _apply_missing_marker(graph, X, model):
    """X with the ``missing`` marker replaced by NaN (only when the
    estimator has a non-NaN marker)."""
    if np.isnan(model.missing):
        return X
    is_marker = graph.node("Equal", [X, graph.constant(
        np.array([model.missing], dtype=np.float32))])
    if not model.marker_features.all():
        is_marker = graph.node("And", [is_marker, graph.constant(
            model.marker_features)])
    return graph.node("Where", [is_marker, graph.constant(
        np.array([np.nan], dtype=np.float32)), X])


def category_columns(model):
    """``{categorical feature split on: column of its category codes}``;
    the code columns follow the ``n_features`` input columns."""
    used = sorted({int(tree.feature[node]) for tree in model.trees
                   for node in tree.cat_node})
    return {feature: model.n_features + i for i, feature in enumerate(used)}


def _append_category_codes(graph, X, model, columns):
    """X with the category code of each categorical feature appended (NaN
    for a missing or unseen value), as skboost re-codes by value."""
    if not columns:
        return X
    if graph.ml_opset < 2:
        raise ValueError("categorical features need ai.onnx.ml opset 2 or "
                         "later (LabelEncoder of float values)")
    codes = []
    for feature in columns:
        values = _category_float32(model, feature)
        column = graph.node("Gather", [X, graph.constant(
            np.array([feature], dtype=np.int64))], axis=1)
        codes.append(graph.node(
            "LabelEncoder", [column], domain=_ML, op_version=2,
            keys_floats=[float(v) for v in values],
            values_floats=[float(c) for c in range(values.shape[0])],
            default_float=float("nan")))
    return graph.node("Concat", [X, *codes], axis=1)


def _category_float32(model, feature):
    """The training categories of ``feature`` as float32 (the ONNX input's
    type); raises when one is not a float32 number."""
    label = model.feature_labels[feature]
    values = model.category_values.get(feature)
    if values is None:
        raise ValueError(
            f"feature {label!r} is categorical with non-numeric categories: "
            "an exported model reads numbers, so encode the column as "
            "numbers first (for example an OrdinalEncoder in the pipeline, "
            "with the estimator's categorical_features naming the column)")
    values32 = values.astype(np.float32)
    if not np.array_equal(values32.astype(np.float64), values):
        raise ValueError(f"the categories of feature {label!r} are not all "
                         "float32 numbers, so a float32 input can not hold "
                         "them")
    return values32


def _link(graph, margins, link, output=None):
    """Margins to predictions / probabilities."""
    if link == "identity":
        return graph.node("Identity", [margins], output)
    if link == "sigmoid":
        return graph.node("Sigmoid", [margins], output)
    if link == "exp":
        return graph.node("Exp", [margins], output)
    if link == "softmax":
        return graph.node("Softmax", [margins], output, axis=1)
    if link == "hinge":   # 1 where the margin is > 0, else 0
        positive = graph.node("Greater", [margins, graph.constant(
            np.array([0.0], dtype=np.float32))])
        return graph.node("Cast", [positive], output, to=TensorProto.FLOAT)
    raise AssertionError(link)


# ------------------------------------------------------------- the graph


class _Graph(ABC):
    """Nodes and constants with unique names; ``ml_opset`` decides the tree
    operator."""

    ml_opset = 3

    @abstractmethod
    def name(self, hint):
        """A name not used yet in the graph, built on ``hint``."""

    @abstractmethod
    def add(self, op_type, inputs, output, domain, op_version, attributes):
        """Add one node with these fields."""

    @abstractmethod
    def add_constant(self, name, tensor):
        """Add a constant (an initializer) under ``name``."""

    def node(self, op_type, inputs, output=None, *, domain="",
             op_version=None, **attributes):
        """Add one node; returns its output's name."""
        output = output or self.name(op_type.lower())
        self.add(op_type, inputs, output, domain, op_version, attributes)
        return output

    def constant(self, value):
        array = np.asarray(value)
        name = self.name("const")
        if array.dtype == object:
            tensor = helper.make_tensor(
                name, TensorProto.STRING, list(array.shape),
                [s.encode("utf-8") for s in array.ravel()])
        else:
            tensor = numpy_helper.from_array(array, name)
        self.add_constant(name, tensor)
        return name

    def tree_margins(self, X, model, columns):
        """The margins, shape (N, n_outputs), from one tree operator
        (``columns``: where the category codes are, see
        :func:`category_columns`)."""
        if self.ml_opset >= TREE_ENSEMBLE_OPSET:
            sums = self.node("TreeEnsemble", [X], domain=_ML,
                             op_version=TREE_ENSEMBLE_OPSET,
                             **tree_ensemble_attributes(model, columns))
            base = self.constant(model.base_margin.astype(np.float32)[None])
            return self.node("Add", [sums, base])
        return self.node("TreeEnsembleRegressor", [X], domain=_ML,
                         op_version=min(self.ml_opset, 3),
                         **tree_ensemble_regressor_attributes(model,
                                                              columns))


class _ContainerGraph(_Graph):
    """Writes into skl2onnx's container (conversion of a pipeline)."""

    def __init__(self, scope, container):
        self.scope = scope
        self.container = container
        # the highest ai.onnx.ml opset both the target and skl2onnx allow
        self.ml_opset = min(container.target_opset_any_domain(_ML),
                            get_default_opset_for_domain(_ML))

    def name(self, hint):
        return self.scope.get_unique_variable_name(hint)

    def add(self, op_type, inputs, output, domain, op_version, attributes):
        self.container.add_node(
            op_type, inputs, [output],
            name=self.scope.get_unique_operator_name(op_type),
            op_domain=domain, op_version=op_version, **attributes)

    def add_constant(self, name, tensor):
        if tensor.data_type == TensorProto.STRING:  # skl2onnx copies raw data
            self.container.add_initializer(name, TensorProto.STRING,
                                           list(tensor.dims),
                                           list(tensor.string_data))
        else:
            self.container.add_initializer(name, None, None, tensor)

    def float_input(self, variable):
        """The input as float32 (skboost reads float32 whatever it gets)."""
        if isinstance(variable.type, FloatTensorType):
            return variable.full_name
        if isinstance(variable.type, StringTensorType):
            raise ValueError("a skboost estimator reads numbers, its input "
                             "is a string tensor")
        return self.node("Cast", [variable.full_name], to=TensorProto.FLOAT)


class _ProtoGraph(_Graph):
    """Collects a standalone ONNX graph (:func:`to_onnx`)."""

    def __init__(self, ml_opset):
        self.ml_opset = ml_opset
        self.nodes, self.initializers, self.outputs = [], [], []
        self._count = 0

    def name(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def add(self, op_type, inputs, output, domain, op_version, attributes):
        self.nodes.append(helper.make_node(
            op_type, inputs, [output], name=self.name(op_type),
            domain=domain or None, **attributes))

    def add_constant(self, name, tensor):
        self.initializers.append(tensor)

    def model(self, n_features, main_opset):
        X = helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                          [None, n_features])
        graph = helper.make_graph(self.nodes, "skboost", [X], self.outputs,
                                  initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", main_opset),
            helper.make_opsetid(_ML, self.ml_opset)],
            producer_name="skboost")
        model.ir_version = min(model.ir_version, _ir_version(main_opset))
        onnx.checker.check_model(model)
        return model


def _ir_version(main_opset):
    """The IR version released with the main opset (older runtimes refuse
    a newer IR)."""
    return max(row[1] for row in helper.VERSION_TABLE if row[2] <= main_opset)


def needs_member_splits(model):
    """Whether a categorical split of ``model`` tests more than one
    category (set membership: ``ai.onnx.ml`` opset 5)."""
    return any(category_test(model, tree, node).codes.shape[0] > 1
               for tree in model.trees for node in tree.cat_node)


# ---------------------------------------------------------- tree encoding


def tree_ensemble_regressor_attributes(model, columns):
    """Attributes of ``TreeEnsembleRegressor`` (``ai.onnx.ml`` opsets 1-4)
    for the trees of ``model`` (an ``ExportedModel``): node ids are
    skboost's tree-local ones, leaves are nodes of mode ``LEAF``."""
    node_keys = ("nodes_treeids", "nodes_nodeids", "nodes_featureids",
                 "nodes_modes", "nodes_values", "nodes_truenodeids",
                 "nodes_falsenodeids", "nodes_missing_value_tracks_true")
    columns_out = {key: [] for key in node_keys + (
        "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    for t, (tree, group) in enumerate(zip(model.trees, model.groups)):
        for node in range(tree.n_nodes):
            feature, mode, value, true, false, missing_true = _legacy_split(
                model, tree, node, columns)
            for key, entry in zip(node_keys, (t, node, feature, mode, value,
                                              true, false, missing_true)):
                columns_out[key].append(entry)
            if mode == "LEAF":
                columns_out["target_treeids"].append(t)
                columns_out["target_nodeids"].append(node)
                columns_out["target_ids"].append(int(group))
                columns_out["target_weights"].append(float(tree.value[node]))
    return dict(columns_out, n_targets=model.n_outputs,
                aggregate_function="SUM", post_transform="NONE",
                base_values=[float(b) for b in model.base_margin])


def _legacy_split(model, tree, node, columns):
    """(feature column, mode, threshold, true child, false child, missing
    goes true) of one node for ``TreeEnsembleRegressor``."""
    left, right = int(tree.left_child[node]), int(tree.right_child[node])
    feature = int(tree.feature[node])
    if left < 0:
        return 0, "LEAF", 0.0, 0, 0, 0
    if tree.left_categories(node) is None:
        return (feature, "BRANCH_LT",
                float(float32_threshold(tree.threshold[node])), left, right,
                int(tree.default_left[node]))
    test = category_test(model, tree, node)
    members, others = (left, right) if test.members_left else (right, left)
    if test.codes.shape[0] == 0:    # every category on the default side
        return columns[feature], "BRANCH_LT", float("-inf"), members, others, 0
    if test.codes.shape[0] == 1:
        return (columns[feature], "BRANCH_EQ", float(test.codes[0]), members,
                others, 0)
    raise ValueError(
        f"a split on the categorical feature {model.feature_labels[feature]!r}"
        f" sends {test.codes.shape[0]} categories away from its default "
        "side: that needs the set-membership splits (BRANCH_MEMBER) of "
        f"ai.onnx.ml opset {TREE_ENSEMBLE_OPSET}; ai.onnx.ml opset "
        f"{TREE_ENSEMBLE_OPSET - 1} and earlier (and skl2onnx, which writes "
        "at most opset 3) test one category against the rest (train with "
        "max_cat_to_onehot at least the number of categories, or export "
        "the estimator alone with skboost.onnx.to_onnx and "
        f"target_opset={{'': 21, 'ai.onnx.ml': {TREE_ENSEMBLE_OPSET}}})")


def tree_ensemble_attributes(model, columns):
    """Attributes of ``TreeEnsemble`` (``ai.onnx.ml`` opset 5) for the trees
    of ``model``: split nodes of all trees in one list, leaves in another;
    a tree that is one leaf is one node whose both branches reach it."""
    nodes = _TreeEnsembleNodes(model, columns)
    for tree, group in zip(model.trees, model.groups):
        nodes.add_tree(tree, int(group))
    return nodes.attributes(model.n_outputs)


class _TreeEnsembleNodes:
    """Collects the node and leaf arrays of ``TreeEnsemble``."""

    def __init__(self, model, columns):
        self.model, self.columns = model, columns
        self.split = {key: [] for key in (
            "modes", "featureids", "splits", "truenodeids", "trueleafs",
            "falsenodeids", "falseleafs", "missing_value_tracks_true")}
        self.roots, self.members = [], []
        self.leaf_targets, self.leaf_weights = [], []

    def add_tree(self, tree, group):
        is_leaf = tree.left_child < 0
        # position of each skboost node: split nodes in the split list,
        # leaves in the leaf list
        split_pos = np.cumsum(~is_leaf) - 1 + len(self.split["modes"])
        leaf_pos = np.cumsum(is_leaf) - 1 + len(self.leaf_weights)
        position = np.where(is_leaf, leaf_pos, split_pos)
        for node in np.flatnonzero(is_leaf):
            self.leaf_targets.append(group)
            self.leaf_weights.append(tree.value[node])
        if is_leaf[0]:     # a single leaf: one always-false split to it
            self.roots.append(len(self.split["modes"]))
            self._add_split(_BRANCH_LT, 0, 0.0, 0, (position[0], True),
                            (position[0], True))
            return
        self.roots.append(int(split_pos[0]))
        for node in np.flatnonzero(~is_leaf):
            left, right = tree.left_child[node], tree.right_child[node]
            children = {side: (int(position[child]), bool(is_leaf[child]))
                        for side, child in (("left", left), ("right", right))}
            self._add_node(tree, node, children)

    def _add_node(self, tree, node, children):
        feature = int(tree.feature[node])
        if tree.left_categories(node) is None:
            self._add_split(_BRANCH_LT, feature,
                            float32_threshold(tree.threshold[node]),
                            int(tree.default_left[node]), children["left"],
                            children["right"])
            return
        test = category_test(self.model, tree, node)
        feature = self.columns[feature]    # its category codes
        members, others = ((children["left"], children["right"])
                           if test.members_left
                           else (children["right"], children["left"]))
        if test.codes.shape[0] == 0:   # every category on the default side
            self._add_split(_BRANCH_LT, feature, -np.inf, 0, members, others)
            return
        self.members.extend(test.codes.astype(np.float32))
        self.members.append(np.nan)     # ends the node's set
        self._add_split(_BRANCH_MEMBER, feature, np.nan, 0, members, others)

    def _add_split(self, mode, feature, threshold, missing_true, true,
                   false):
        for key, value in (("modes", mode), ("featureids", feature),
                           ("splits", threshold),
                           ("truenodeids", true[0]), ("trueleafs", true[1]),
                           ("falsenodeids", false[0]),
                           ("falseleafs", false[1]),
                           ("missing_value_tracks_true", missing_true)):
            self.split[key].append(value)

    def attributes(self, n_targets):
        def tensor(values, dtype):
            return numpy_helper.from_array(np.asarray(values, dtype=dtype))

        out = {f"nodes_{key}": [int(v) for v in values]
               for key, values in self.split.items()
               if key not in ("modes", "splits")}
        out.update(
            nodes_modes=tensor(self.split["modes"], np.uint8),
            nodes_splits=tensor(self.split["splits"], np.float32),
            tree_roots=self.roots, leaf_targetids=self.leaf_targets,
            leaf_weights=tensor(self.leaf_weights, np.float32),
            n_targets=n_targets, aggregate_function=1, post_transform=0)
        if self.members:
            out["membership_values"] = tensor(self.members, np.float32)
        return out


register_converters()
