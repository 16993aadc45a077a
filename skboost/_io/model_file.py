"""Saved models: a versioned JSON format, written atomically, read with
validation.

The file name's suffix chooses the encoding, as in XGBoost: ``.json`` is
JSON text, ``.ubj`` Universal Binary JSON (``ubjson.py``) of exactly the
same document (same checksum); any other suffix is refused when saving.

A model file is one JSON object::

    {"format": "skboost-model", "version": 1,
     "checksum": "sha256:<hex>",          # optional, see below
     "model": {
        "estimator": "BoostClassifier",   # class to rebuild
        "skboost_version": "...",         # informative only
        "params": {...},                  # get_params(), JSON values only
        "unsaved_params": [...],          # params that are not JSON values
        "n_features_in": 4,
        "feature_names": ["a", ...] | null,
        "classes": {"dtype": "int64", "values": [...]} | null,
        "categories": null | {            # categorical features (see below)
            "features": [2, ...], "from_dtype": [true, ...],
            "kinds": ["str", ...], "values": [["a", "b"], ...]},
        "best_iteration": 12 | null,
        "best_score": 0.25 | null,
        "booster": {
           "objective": "binary:logistic",
           "objective_params": {...},     # e.g. tweedie_variance_power
           "n_features": 4,
           "base_margin": [...],          # one per output (class)
           "trees": [{"left_child": [...], "right_child": [...],
                      "feature": [...], "threshold": [...],
                      "default_left": [...], "value": [...],
                      "gain": [...], "cover": [...],
                      "cat_node": [...], "cat_size": [...],
                      "cat_ptr": [...], "cat_bits": [...]}, ...]}}}

``categories`` lists the categorical features, whether each was a pandas
``category`` column, and its training categories in code order (their JSON
kind: str, int, float or bool). A tree's categorical splits are
``cat_node`` / ``cat_size`` / ``cat_ptr`` / ``cat_bits`` (``tree/_tree.py``;
files without them have none); a categorical split must be on a
categorical feature, with its number of categories, and a split on a
categorical feature must be categorical.

Trees are stored round by round, the ``n_outputs`` trees of a round in
output order (tree ``i`` adds to output ``i % n_outputs``). Two optional
``booster`` entries (absent means 1) change that layout: ``"n_targets"``,
the number of targets of a multi-output model (a 2-D y: one output per
target, ``base_margin`` one entry per target), and ``"num_parallel_tree"``,
trees per output and round (random forests): a round is then
``n_outputs * num_parallel_tree`` trees, those of one output together
(tree ``i`` adds to output ``(i % per_round) // num_parallel_tree``).
A third, ``"multi_strategy": "multi_output_tree"``, marks a model of
vector-leaf trees: one tree per round (and parallel tree) for all outputs,
whose ``value`` is a list of rows, one value per output. A fourth,
``"tree_weights"`` (a DART model, ``booster="dart"``), holds the weight of
each tree, by which its values count in predictions. Floats are
written with Python's shortest round-trip representation, so a loaded model
predicts bit-identically. JSON has no infinities: ``"inf"``, ``"-inf"`` and
``"nan"`` stand for them (``+inf`` is a legal split threshold, meaning "every
present value goes left"; NaN is legal in no node array).

The checksum is the SHA-256 of the ``"model"`` object written canonically
(sorted keys, no spaces). It catches accidental corruption; a file edited by
hand must drop the ``"checksum"`` entry to load, and is then validated like
any other: loading never executes anything from the file, and every
structural property the predictor relies on (child indices inside the tree
and after their parent, each node reached exactly once, feature indices
below ``n_features``, leaves marked consistently, finite values) is checked
in Python before any kernel sees the arrays.
"""

import contextlib
import hashlib
import json
import math
import os
import tempfile
from numbers import Integral, Real

import numpy as np

from ..distributions import DISTRIBUTION_PARAMS, FAMILIES
from ..objectives import (AFT_PARAMS, CLASSIFICATION_OBJECTIVES,
                          DEFAULT_PARAMS, UNBIASED_PARAMS,
                          OBJECTIVES, RANKING_OBJECTIVES, CallableObjective)
from .._version import __version__
from . import ubjson as _ubjson
from .._input.categorical import CategoryMap
from .lightgbm_format import is_lightgbm_text, model_from_lightgbm
from .validation import ModelFileError as _Invalid
from .xgboost_format import (XGBOOST_UBJSON_ARRAYS, is_xgboost_document,
                             model_from_xgboost, xgboost_document)
from .validation import (categories_of_features, check_category_bits,
                         check_cover_sums, check_finite_sums, check_n_features,
                         check_objective_param_values)
from ..tree._tree import NO_CHILD, NODE_FIELDS, Tree

# a tree's categorical splits (tree/_tree.py): name -> dtype
_CAT_FIELDS = {"cat_node": np.int32, "cat_size": np.int32,
               "cat_ptr": np.int64, "cat_bits": np.uint32}

FORMAT_NAME = "skboost-model"
FORMAT_VERSION = 1
# dtype kinds of classes_ a file may hold: bool, signed, unsigned, float,
# unicode; "object" means an object array of str (labels from pandas)
_CLASS_DTYPES = {"b", "i", "u", "f", "U"}
_INT32 = np.iinfo(np.int32)
_INT_FIELDS = ("left_child", "right_child", "feature", "default_left")
_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
# the link of a model trained with a callable objective (its function is
# not saved: such a model predicts again, it can not train further)
_LINKS = {"identity", "logistic", "softmax"}
# optional booster entries (1 when absent): targets of a multi-output model
# (each an output) and trees per output and round (random forests)
_ROUND_LAYOUT = ("n_targets", "num_parallel_tree")
_MAX_LAYOUT = 1 << 20



# --------------------------------------------------------------- writing


def model_format(fname):
    """``"json"`` or ``"ubj"`` from the file name's suffix (XGBoost's
    rule); any other suffix is an error, never a JSON file under another
    name."""
    suffix = os.path.splitext(os.fspath(fname))[1].lower()
    if suffix not in (".json", ".ubj"):
        raise ValueError(
            f"{os.fspath(fname)!r}: the model file name must end in '.json' "
            "(JSON) or '.ubj' (Universal Binary JSON, the same content), "
            f"got the suffix {suffix!r}")
    return suffix[1:]


# what save_model(format=...) writes
FILE_FORMATS = ("skboost", "xgboost")


def write_model(fname, booster, section, file_format="skboost"):
    """Write ``booster`` and the estimator ``section`` (``dumps_model``) to
    ``fname`` atomically (a failure leaves any existing file untouched), as
    JSON or UBJSON by its suffix: skboost's model file, or XGBoost's
    (``file_format="xgboost"``, ``xgboost_format.xgboost_document``)."""
    fmt = model_format(fname)
    if file_format not in FILE_FORMATS:
        raise ValueError(f"format must be one of {FILE_FORMATS}, got "
                         f"{file_format!r}")
    if file_format == "xgboost":
        doc = xgboost_document(booster, section)
        payload = (_ubjson.dumps_typed(doc, XGBOOST_UBJSON_ARRAYS)
                   if fmt == "ubj" else json.dumps(
            doc, allow_nan=False, separators=(",", ":")).encode("utf-8"))
        _write_atomically(os.fspath(fname), payload)
        return
    text = dumps_model(booster, section)
    if fmt == "ubj":
        # the JSON document itself, so that both files hold the same values
        payload = _ubjson.dumps(json.loads(text))
    else:
        payload = text.encode("utf-8")
    _write_atomically(os.fspath(fname), payload)


def _write_atomically(fname, payload):
    directory = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(prefix=".skboost-", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private: give it the replaced file's mode,
        # else an ordinary file's
        mode = os.stat(fname).st_mode & 0o777 if os.path.exists(fname) else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def dumps_model(booster, section):
    """The model file's text: ``booster`` and the estimator ``section``
    (``estimator``, ``params``, ``unsaved_params``, ``n_features_in``,
    ``feature_names``, ``classes``, ``categories``, ``best_iteration``,
    ``best_score``; ``conformal`` when set, as JSON values: the estimator
    layer makes it)."""
    model = {"estimator": section["estimator"],
             "skboost_version": _version(),
             **{key: section[key] for key in _SECTION_KEYS
                if key != "estimator"},
             **{key: _optional_to_json(key, section[key])
                for key in _OPTIONAL_KEYS if section.get(key) is not None},
             "booster": _booster_to_dict(booster)}
    return json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION,
                       "checksum": _checksum(model), "model": model},
                      allow_nan=False, separators=(",", ":"))


def _checksum(model):
    canonical = json.dumps(model, sort_keys=True, separators=(",", ":"),
                           allow_nan=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def categories_to_json(category_map):
    return None if category_map is None else category_map.to_json()


def _version():
    return __version__


def _booster_to_dict(booster):
    params, unsaved = params_to_json(getattr(booster, "objective_params", {}))
    if unsaved:
        raise TypeError(f"objective parameters {unsaved} are not JSON values")
    return {
        "objective": booster.objective,
        "objective_params": params,
        "n_features": booster.n_features,
        "base_margin": [_float_to_json(v) for v in booster.base_margin],
        "trees": [_tree_to_dict(tree) for tree in booster.trees],
        # written only when not 1, so single-output files keep their form
        **{name: int(getattr(booster, name)) for name in _ROUND_LAYOUT
           if getattr(booster, name) != 1},
        **({"multi_strategy": booster.multi_strategy}
           if booster.vector_leaf else {}),
        # DART's tree weights (booster="dart"), absent for gbtree
        **({"tree_weights": [_float_to_json(w) for w in booster.tree_weights]}
           if booster.tree_weights is not None else {}),
    }


def _tree_to_dict(tree):
    out = {name: _array_to_json(getattr(tree, name), name)
           for name in NODE_FIELDS}
    for name in _CAT_FIELDS:
        out[name] = [int(v) for v in getattr(tree, name)]
    return out


def _array_to_json(array, name):
    if name in _INT_FIELDS:
        return [int(v) for v in array]
    if array.ndim == 2:   # the values of a vector-leaf tree, node by node
        return [[_float_to_json(v) for v in row] for row in array]
    return [_float_to_json(v) for v in array]


def _float_to_json(value):
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _json_value(value):
    """``value`` as a JSON value, or raise TypeError when it has none."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return [_json_value(v) for v in value.tolist()]
    if isinstance(value, (Integral, np.integer)):
        return int(value)
    if isinstance(value, (Real, np.floating)):
        return _float_to_json(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_value(v) for k, v in value.items()}
    raise TypeError(type(value).__name__)


def params_to_json(params):
    """(JSON-representable params, names of the others, saved as None)."""
    saved, unsaved = {}, []
    for name, value in sorted(params.items()):
        try:
            saved[name] = _json_value(value)
        except TypeError:
            saved[name] = None
            unsaved.append(name)
    return saved, unsaved


def classes_to_json(classes):
    if classes is None:
        return None
    classes = np.asarray(classes)
    if classes.dtype == object:
        if not all(isinstance(c, str) for c in classes):
            raise TypeError(
                "save_model can store class labels of a numeric, bool or str "
                f"type; classes_ holds {sorted({type(c).__name__ for c in classes})}")
        return {"dtype": "object", "values": [str(c) for c in classes]}
    if classes.dtype.kind not in _CLASS_DTYPES:
        raise TypeError(f"save_model can not store class labels of dtype "
                        f"{classes.dtype}")
    return {"dtype": classes.dtype.str,
            "values": [_json_value(c.item()) for c in classes]}


def optional_int(value):
    return None if value is None else int(value)


def optional_float(value):
    return None if value is None else _float_to_json(value)


# --------------------------------------------------------------- reading


def read_model_file(fname):
    """The bytes of a model file (a clear ValueError for a directory)."""
    try:
        with open(fname, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise ValueError(f"{fname!r} is a directory, not a model file") from None


def loads_model(data, source="the model", binary=False):
    """The booster and the estimator section of a model file's text or
    bytes ``data`` (UBJSON bytes when ``binary``), validated: every
    structural property the predictor relies on, the section's feature
    names, classes and categories parsed. The estimator layer checks the
    section against its estimator class (``params`` and ``unsaved_params``
    are left as saved). Any problem is a ValueError naming ``source``."""
    if not binary and is_lightgbm_text(data):
        with invalid_file(source, "LightGBM"):
            return _foreign(model_from_lightgbm(data), "LightGBM")
    with invalid_file(source):
        doc = _parse_ubj(data) if binary else _parse(data)
    if is_xgboost_document(doc):
        with invalid_file(source, "XGBoost"):
            return _foreign(model_from_xgboost(doc), "XGBoost")
    with invalid_file(source):
        return _model_from_dict(_check_document(doc))


def _foreign(model, library):
    """The booster and section of another library's model (its ``"model"``
    object made by its reader), validated as a skboost file's; the section
    names the library (``source_format``), so that the estimator classes
    of its objective's family may load it."""
    booster, section = _model_from_dict(model)
    section["source_format"] = library
    return booster, section


@contextlib.contextmanager
def invalid_file(source, kind="skboost"):
    """Report a problem found while reading ``source`` as the ValueError
    of an invalid model file (of skboost's format, or ``kind``'s)."""
    try:
        yield
    except _Invalid as exc:
        raise ValueError(f"{source} is not a valid {kind} model file: "
                         f"{exc}") from None
    except (KeyError, TypeError, IndexError, AttributeError, OverflowError,
            RecursionError, MemoryError) as exc:
        # defensive: every expected problem is reported as _Invalid above
        raise ValueError(f"{source} is not a valid {kind} model file "
                         f"({type(exc).__name__}: {exc})") from None


def _parse(data):
    """The parsed document of JSON text (or bytes)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Invalid(f"it is not UTF-8 text ({exc.reason})") from None
    try:
        doc = json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _Invalid(f"it is not complete JSON ({exc})") from None
    except RecursionError:
        raise _Invalid("it nests JSON too deeply") from None
    return doc


def _parse_ubj(data):
    """``_parse`` for a UBJSON file (the same document in binary)."""
    try:
        doc = _ubjson.loads(data)
    except ValueError as exc:
        raise _Invalid(f"it is not complete UBJSON ({exc})") from None
    _reject_non_finite(doc)
    return doc


def _reject_non_finite(value):
    """UBJSON can hold NaN and infinities as numbers; the format writes
    them as the strings "nan", "inf", "-inf" (as JSON must)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise _Invalid(f"it contains the non-JSON number {item}")
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def _check_document(doc):
    """The ``"model"`` object of a parsed file, checked."""
    _expect(isinstance(doc, dict), "the top level must be a JSON object")
    _expect(doc.get("format") == FORMAT_NAME,
            f"'format' must be {FORMAT_NAME!r}, got {doc.get('format')!r}")
    version = doc.get("version")
    _expect(_is_int(version), f"'version' must be an integer, got {version!r}")
    _expect(version == FORMAT_VERSION,
            f"it is format version {version}; this skboost reads version "
            f"{FORMAT_VERSION}")
    top_level = {"format", "version", "checksum", "model"}
    _expect(set(doc) <= top_level,
            f"unknown top-level entries {sorted(set(doc) - top_level)}")
    model = doc.get("model")
    _expect(isinstance(model, dict), "'model' must be a JSON object")
    if "checksum" in doc:
        _expect(doc["checksum"] == _checksum(model),
                "its checksum does not match its content (the file is "
                "corrupted, or was edited: a hand-edited file must drop its "
                "'checksum' entry)")
    return model


def _reject_constant(name):
    raise _Invalid(f"it contains the non-JSON constant {name}")


def _expect(condition, message):
    if not condition:
        raise _Invalid(message)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# what the estimator layer writes (its section) and the rest of "model"
_SECTION_KEYS = ("estimator", "params", "unsaved_params", "n_features_in",
                 "feature_names", "classes", "categories", "best_iteration",
                 "best_score")
_MODEL_KEYS = {*_SECTION_KEYS, "skboost_version", "booster"}
# entries a file has only when set (files without them stay as they were)
_OPTIONAL_KEYS = {"conformal"}
_CONFORMAL_METHODS = ("split", "cqr", "aps")


def _optional_to_json(key, value):
    """An optional entry as JSON values: a cv+ calibration's fold boosters
    as booster objects (the estimator layer hands them over as Boosters)."""
    if key != "conformal" or "folds" not in value:
        return value
    return {**value, "folds": [{**fold,
                                "booster": _booster_to_dict(fold["booster"])}
                               for fold in value["folds"]]}


def _model_from_dict(model):
    """The validated booster and estimator section of a ``"model"``."""
    missing = _MODEL_KEYS - set(model)
    extra = set(model) - _MODEL_KEYS - _OPTIONAL_KEYS
    _expect(not missing, f"'model' lacks {sorted(missing)}")
    _expect(not extra, f"'model' has unknown entries {sorted(extra)}")
    _expect(isinstance(model["estimator"], str),
            "'model' lacks its estimator name")
    n_features = model["n_features_in"]
    check_n_features(n_features)
    category_map = _categories_from_json(model["categories"], n_features)
    names = _feature_names_from_json(model["feature_names"], n_features)
    classes = _classes_from_json(model["classes"])
    n_classes = None if classes is None else classes.shape[0]
    # only a classifier has classes (the estimator layer checks which
    # estimator has them), and it has two at least
    _expect(classes is None or n_classes >= 2,
            "a classifier needs at least 2 classes")
    booster = _booster_from_dict(model["booster"], n_features, n_classes,
                                 category_map)
    check_finite_sums(booster)
    best_iteration = model["best_iteration"]
    _expect(best_iteration is None or (_is_int(best_iteration)
                                       and 0 <= best_iteration < booster.n_rounds),
            f"'best_iteration' must be null or in [0, {booster.n_rounds}), got "
            f"{best_iteration!r}")
    best_score = model["best_score"]
    if best_score is not None:
        best_score = _float_from_json(best_score, "best_score")
    booster.feature_names = None if names is None else list(names)
    section = dict(estimator=model["estimator"], params=model["params"],
                   unsaved_params=model["unsaved_params"],
                   n_features_in=n_features, feature_names=names,
                   classes=classes, categories=category_map,
                   best_iteration=best_iteration, best_score=best_score,
                   conformal=_conformal_from_json(model.get("conformal"),
                                                  n_features, n_classes))
    return booster, section


def _conformal_from_json(calibration, n_features, n_classes):
    """The scores of ``conformalize`` (sorted, finite, at least one); of
    ``"cv+"``, the residuals, the fold of each and the fold models."""
    if calibration is None:
        return None
    if isinstance(calibration, dict) and calibration.get("method") == "cv+":
        return _cv_plus_from_json(calibration, n_features, n_classes)
    _expect(isinstance(calibration, dict)
            and set(calibration) == {"method", "scores"},
            "'conformal' must be an object of 'method' and 'scores'")
    _expect(calibration["method"] in _CONFORMAL_METHODS,
            f"'conformal' method must be one of {_CONFORMAL_METHODS}")
    scores = calibration["scores"]
    _expect(isinstance(scores, list) and len(scores) >= 1
            and all(_is_number(s) for s in scores),
            "'conformal' scores must be a non-empty list of numbers")
    scores = np.asarray(scores, dtype=np.float64)
    _expect(bool(np.all(np.isfinite(scores)))
            and bool(np.all(np.diff(scores) >= 0)),
            "'conformal' scores must be finite and sorted")
    return {"method": calibration["method"], "scores": scores}


def _cv_plus_from_json(calibration, n_features, n_classes):
    """A cv+ calibration: non-negative finite residuals, one fold index in
    [0, K) per residual, and K fold boosters (validated as the model's
    own is, with their own categories and best round)."""
    _expect(set(calibration) == {"method", "scores", "fold_of_row",
                                 "folds"},
            "a 'cv+' calibration must be an object of 'method', 'scores', "
            "'fold_of_row' and 'folds'")
    scores, folds = calibration["scores"], calibration["folds"]
    fold_of_row = calibration["fold_of_row"]
    _expect(isinstance(scores, list) and len(scores) >= 1
            and all(_is_number(s) for s in scores),
            "'conformal' scores must be a non-empty list of numbers")
    scores = np.asarray(scores, dtype=np.float64)
    _expect(bool(np.all(np.isfinite(scores))) and bool(np.all(scores >= 0)),
            "'cv+' scores (absolute residuals) must be finite and >= 0")
    _expect(isinstance(folds, list) and len(folds) >= 1,
            "'cv+' folds must be a non-empty list")
    _expect(isinstance(fold_of_row, list) and len(fold_of_row) == len(scores)
            and all(_is_int(k) and 0 <= k < len(folds) for k in fold_of_row),
            f"'cv+' fold_of_row must hold one fold index in [0, "
            f"{len(folds)}) per score")
    return {"method": "cv+", "scores": scores,
            "fold_of_row": np.asarray(fold_of_row, dtype=np.intp),
            "folds": [_fold_from_json(fold, n_features, n_classes)
                      for fold in folds]}


def _fold_from_json(fold, n_features, n_classes):
    _expect(isinstance(fold, dict)
            and set(fold) == {"booster", "categories", "best_iteration"},
            "a 'cv+' fold must be an object of 'booster', 'categories' and "
            "'best_iteration'")
    category_map = _categories_from_json(fold["categories"], n_features)
    booster = _booster_from_dict(fold["booster"], n_features, n_classes,
                                 category_map)
    check_finite_sums(booster)
    best = fold["best_iteration"]
    _expect(best is None or (_is_int(best) and 0 <= best < booster.n_rounds),
            f"a 'cv+' fold's 'best_iteration' must be null or in [0, "
            f"{booster.n_rounds}), got {best!r}")
    return {"booster": booster, "categories": category_map,
            "best_iteration": best}


def _categories_from_json(value, n_features):
    if value is None:
        return None
    try:
        return CategoryMap.from_json(value, n_features)
    except ValueError as exc:
        raise _Invalid(str(exc)) from None


def decode_param(value):
    """Saved JSON parameter value -> Python value (special floats decoded;
    a parameter's float strings never collide with its string options, none
    of which is "inf", "-inf" or "nan")."""
    if isinstance(value, str) and value in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value]
    if isinstance(value, list):
        return [decode_param(v) for v in value]
    if isinstance(value, dict):
        return {k: decode_param(v) for k, v in value.items()}
    return value


def _feature_names_from_json(names, n_features):
    if names is None:
        return None
    _expect(isinstance(names, list) and all(isinstance(n, str) for n in names),
            "'feature_names' must be null or a list of strings")
    _expect(len(names) == n_features,
            f"{len(names)} feature names for {n_features} features")
    _expect(len(set(names)) == len(names), "feature names must be unique")
    return np.asarray(names, dtype=object)


def _classes_from_json(classes):
    if classes is None:
        return None
    _expect(isinstance(classes, dict) and set(classes) == {"dtype", "values"},
            "'classes' must be null or {'dtype': ..., 'values': [...]}")
    dtype, values = classes["dtype"], classes["values"]
    _expect(isinstance(values, list), "class values must be a list")
    if dtype == "object":
        _expect(all(isinstance(v, str) for v in values),
                "object class labels must be strings")
        array = np.empty(len(values), dtype=object)
        array[:] = values
    else:
        _expect(isinstance(dtype, str) and len(dtype) <= 8,
                f"unsupported class dtype {dtype!r}")
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            raise _Invalid(f"unsupported class dtype {dtype!r}") from None
        _expect(np_dtype.kind in _CLASS_DTYPES,
                f"unsupported class dtype {dtype!r}")
        _expect(all(_class_value_ok(v, np_dtype.kind) for v in values),
                f"class values do not fit dtype {dtype!r}")
        if np_dtype.kind == "f":
            values = [_float_from_json(v, "classes") for v in values]
        try:
            array = np.asarray(values, dtype=np_dtype)
        except (OverflowError, ValueError):
            raise _Invalid(f"class values do not fit dtype {dtype!r}") from None
        _expect(array.tolist() == values,
                f"class values do not fit dtype {dtype!r}")
    _expect(len(set(array.tolist())) == len(values), "classes must be unique")
    _expect(len(values) == 0 or bool(np.all(array[:-1] < array[1:])),
            "classes must be sorted (as LabelEncoder sorts them)")
    return array


def _class_value_ok(value, kind):
    if kind == "b":
        return isinstance(value, bool)
    if kind in "iu":
        return _is_int(value)
    if kind == "f":
        return _is_number(value) or value in _SPECIAL_FLOATS
    return isinstance(value, str)


def _float_from_json(value, what):
    if isinstance(value, str) and value in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value]
    _expect(_is_number(value), f"{what} must hold numbers, got {value!r}")
    return float(value)


def _round_layout(booster):
    """The ``"booster"`` object's entries checked; whether its trees are
    vector-leaf trees, and its round layout (``n_targets``,
    ``num_parallel_tree``: 1 when absent)."""
    keys = {"objective", "objective_params", "n_features", "base_margin",
            "trees"}
    optional = set(_ROUND_LAYOUT) | {"multi_strategy", "tree_weights"}
    _expect(isinstance(booster, dict) and keys <= set(booster)
            <= keys | optional,
            f"'booster' must be an object with the entries {sorted(keys)} "
            f"(and optionally {sorted(optional)})")
    _expect(booster.get("multi_strategy") in (None, "multi_output_tree"),
            "'multi_strategy' must be 'multi_output_tree' when present")
    layout = {name: booster.get(name, 1) for name in _ROUND_LAYOUT}
    for name, value in layout.items():
        _expect(_is_int(value) and 1 <= value <= _MAX_LAYOUT,
                f"'{name}' must be an integer in [1, {_MAX_LAYOUT}], got "
                f"{value!r}")
    return booster.get("multi_strategy") is not None, layout


def _booster_from_dict(booster, n_features, n_classes, category_map=None):
    from .._model.booster import Booster

    vector_leaf, layout = _round_layout(booster)
    objective = booster["objective"]
    _expect(isinstance(objective, str) and (objective in OBJECTIVES
                                            or objective == CallableObjective.name),
            f"unknown objective {objective!r}")
    objective_params = _objective_params_from_json(booster["objective_params"],
                                                   objective)
    _expect(booster["n_features"] == n_features and _is_int(booster["n_features"]),
            f"the booster has {booster['n_features']!r} features, the "
            f"estimator {n_features}")
    n_outputs = _n_outputs(objective, objective_params, n_classes,
                           layout["n_targets"])
    base_margin = _float_array(booster["base_margin"], "base_margin")
    _expect(base_margin.shape[0] == n_outputs,
            f"{objective} with {n_classes} classes has {n_outputs} outputs, "
            f"'base_margin' has {base_margin.shape[0]}")
    _expect(np.all(np.isfinite(base_margin)), "'base_margin' must be finite")
    trees = booster["trees"]
    _expect(not vector_leaf or n_outputs > 1,
            "vector-leaf trees need several outputs")
    per_round = (1 if vector_leaf else n_outputs) * layout["num_parallel_tree"]
    _expect(isinstance(trees, list), "'trees' must be a list")
    _expect(len(trees) % per_round == 0,
            f"{len(trees)} trees is not a whole number of rounds of "
            f"{per_round} trees")
    result = Booster(objective, base_margin, n_features)
    result.objective_params = objective_params
    result.category_map = category_map
    result.n_targets = layout["n_targets"]
    result.num_parallel_tree = layout["num_parallel_tree"]
    if vector_leaf:
        result.multi_strategy = "multi_output_tree"
    for index, tree in enumerate(trees):
        try:
            result.add_tree(
                _tree_from_dict(tree, n_features, category_map,
                                n_outputs if vector_leaf else 0),
                0 if vector_leaf else
                (index % per_round) // layout["num_parallel_tree"])
        except _Invalid as exc:
            raise _Invalid(f"tree {index}: {exc}") from None
    if "tree_weights" in booster:
        result.tree_weights = _tree_weights(booster["tree_weights"],
                                            len(trees))
    return result


def _tree_weights(weights, n_trees):
    """DART's tree weights: one finite number >= 0 per tree."""
    _expect(isinstance(weights, list) and len(weights) == n_trees,
            f"'tree_weights' must be a list of {n_trees} numbers (one per "
            "tree)")
    values = [_float_from_json(w, "'tree_weights'") for w in weights]
    _expect(all(np.isfinite(w) and w >= 0.0 for w in values),
            "'tree_weights' must be finite and >= 0")
    return values


def _objective_params_from_json(params, objective):
    _expect(isinstance(params, dict), "'objective_params' must be an object")
    known = (set(DEFAULT_PARAMS) | set(AFT_PARAMS) | set(UNBIASED_PARAMS)
             | set(DISTRIBUTION_PARAMS) | {"link"})
    _expect(set(params) <= known,
            f"unknown objective parameters {sorted(set(params) - known)}")
    _expect(all(v is None or isinstance(v, (bool, int, float, str))
                or (isinstance(v, list) and all(_is_number(x) for x in v))
                for v in params.values()),
            "objective parameters must be numbers, lists of numbers, "
            "strings, booleans or null")
    params = {name: decode_param(v) for name, v in params.items()}
    check_objective_param_values(params)
    if objective == CallableObjective.name:
        _expect(params.get("link", "identity") in _LINKS,
                f"the link of a custom objective must be one of {sorted(_LINKS)}")
    return params


def _n_outputs(objective, params, n_classes, n_targets=1):
    """Outputs (margin columns): what the objective trains for
    ``n_classes``, or one per target of a multi-output model."""
    if n_targets > 1:
        single = (objective == CallableObjective.name
                  and params.get("link") in ("identity", "logistic")) or (
            objective in OBJECTIVES and objective not in RANKING_OBJECTIVES
            and OBJECTIVES[objective](params).n_outputs(None) == 1)
        _expect(single, f"a model of {n_targets} targets can not have the "
                        f"objective {objective!r} (several outputs per "
                        "target)")
        return n_targets
    if objective == CallableObjective.name:
        softmax = params.get("link") == "softmax"
        _expect(not softmax or n_classes is not None,
                "a softmax link needs classes")
        return n_classes if softmax else 1
    # a classification objective is a classifier's: it has its classes
    _expect(objective not in CLASSIFICATION_OBJECTIVES or n_classes is not None,
            "a classifier needs at least 2 classes")
    return OBJECTIVES[objective](params).n_outputs(n_classes)


def _float_array(values, what):
    _expect(isinstance(values, list), f"'{what}' must be a list")
    return np.array([_float_from_json(v, what) for v in values],
                    dtype=np.float64)


def _float_matrix(values, what, n_columns):
    """A vector-leaf tree's values: a list of rows of ``n_columns``."""
    _expect(isinstance(values, list) and all(
        isinstance(row, list) and len(row) == n_columns for row in values),
        f"'{what}' of a vector-leaf tree must be a list of lists of "
        f"{n_columns} numbers")
    return np.array([[_float_from_json(v, what) for v in row]
                     for row in values], dtype=np.float64).reshape(-1, n_columns)


def _int_array(values, what, dtype):
    _expect(isinstance(values, list) and all(_is_int(v) for v in values),
            f"'{what}' must be a list of integers")
    _expect(all(_INT32.min <= v <= _INT32.max for v in values),
            f"'{what}' holds integers beyond 32 bits")
    return np.array(values, dtype=dtype)


def _tree_from_dict(tree, n_features, category_map=None, vector_outputs=0):
    keys = set(tree) if isinstance(tree, dict) else set()
    _expect(isinstance(tree, dict) and keys - set(_CAT_FIELDS) == set(NODE_FIELDS)
            and keys & set(_CAT_FIELDS) in (set(), set(_CAT_FIELDS)),
            f"a tree must be an object with exactly the entries "
            f"{list(NODE_FIELDS)}, and optionally {list(_CAT_FIELDS)}")
    arrays = {}
    for name, dtype in NODE_FIELDS.items():
        if name in _INT_FIELDS:
            arrays[name] = _int_array(tree[name], name, np.int64)
        elif name == "value" and vector_outputs:
            arrays[name] = _float_matrix(tree[name], name, vector_outputs)
        else:
            arrays[name] = _float_array(tree[name], name)
    n_nodes = arrays["left_child"].shape[0]
    _expect(not vector_outputs or not tree.get("cat_node"),
            "a vector-leaf tree has no categorical split")
    _expect(n_nodes >= 1, "a tree needs at least one node")
    _expect(all(a.shape[0] == n_nodes for a in arrays.values()),
            "the node arrays have different lengths")
    _check_structure(arrays, n_nodes, n_features)
    categorical = _categorical_splits(tree, arrays, category_map)
    return Tree(**{name: arrays[name].astype(dtype)
                   for name, dtype in NODE_FIELDS.items()}, **categorical)


def _categorical_splits(tree, arrays, category_map):
    """The tree's validated categorical split arrays (empty without)."""
    if "cat_node" not in tree:
        values = {name: [] if name != "cat_ptr" else [0]
                  for name in _CAT_FIELDS}
    else:
        values = {name: tree[name] for name in _CAT_FIELDS}
    for name, v in values.items():
        _expect(isinstance(v, list) and all(_is_int(x) for x in v),
                f"'{name}' must be a list of integers")
    node = np.array(values["cat_node"], dtype=np.int64)
    size = np.array(values["cat_size"], dtype=np.int64)
    ptr = np.array(values["cat_ptr"], dtype=np.int64)
    bits = values["cat_bits"]
    _expect(all(0 <= b < 2 ** 32 for b in bits),
            "'cat_bits' must hold 32-bit words")
    m = node.shape[0]
    _expect(size.shape[0] == m and ptr.shape[0] == m + 1,
            "'cat_size' needs one entry per categorical split, 'cat_ptr' one "
            "more")
    left, feature = arrays["left_child"], arrays["feature"]
    n_nodes = left.shape[0]
    _expect(not m or (node.min() >= 0 and node.max() < n_nodes
                      and np.all(np.diff(node) > 0)
                      and np.all(left[node] != NO_CHILD)),
            "'cat_node' must list inner nodes, increasing")
    _expect(ptr[0] == 0 and np.all(np.diff(ptr) >= 1)
            and np.all(np.diff(ptr) <= (size + 31) // 32)
            and ptr[-1] == len(bits),
            "'cat_ptr' must rise from 0 to len('cat_bits'), by 1 to "
            "ceil(cat_size / 32) words per split")
    # categories of each node's feature (0: numeric feature or leaf)
    node_categories = np.zeros(n_nodes, dtype=np.int64)
    inner = np.flatnonzero(left != NO_CHILD)
    node_categories[inner] = categories_of_features(category_map,
                                                    feature[inner])
    on_categorical = node_categories > 0
    is_cat_split = np.zeros(n_nodes, dtype=bool)
    is_cat_split[node] = True
    _expect(np.array_equal(is_cat_split, on_categorical),
            "the categorical splits must be exactly the splits on "
            "categorical features")
    _expect(not m or np.array_equal(size, node_categories[node]),
            "a categorical split's 'cat_size' must be its feature's number "
            "of categories")
    check_category_bits(size, ptr, np.asarray(bits, dtype=np.uint64))
    return {"cat_node": node.astype(np.int32),
            "cat_size": size.astype(np.int32), "cat_ptr": ptr,
            "cat_bits": np.array(bits, dtype=np.uint32)}


def _check_structure(a, n_nodes, n_features):
    """What the predictor relies on: see the module docstring."""
    left, right, feature = a["left_child"], a["right_child"], a["feature"]
    leaf = left == NO_CHILD
    inner = ~leaf
    nodes = np.arange(n_nodes)
    _expect(np.all(right[leaf] == NO_CHILD),
            "a node has a right child but no left child")
    _expect(np.all(feature[leaf] == NO_CHILD),
            "a leaf has a split feature (leaves have feature -1)")
    for child, side in ((left, "left"), (right, "right")):
        bad = inner & ((child <= nodes) | (child >= n_nodes))
        _expect(not bad.any(),
                f"node {int(np.argmax(bad))}'s {side} child "
                f"{int(child[np.argmax(bad)])} is outside the tree "
                f"[0, {n_nodes}) or not after its parent")
    parents = np.bincount(np.concatenate([left[inner], right[inner]]),
                          minlength=n_nodes)
    _expect(parents[0] == 0 and np.all(parents[1:] == 1),
            "every node but the root must be the child of exactly one node "
            "(the nodes must form one tree)")
    bad = inner & ((feature < 0) | (feature >= n_features))
    _expect(not bad.any(),
            f"node {int(np.argmax(bad))} splits on feature "
            f"{int(feature[np.argmax(bad)])}, outside [0, {n_features})")
    _expect(np.all(np.isin(a["default_left"], (0, 1))),
            "'default_left' must hold 0 or 1")
    threshold = a["threshold"]
    _expect(not np.any(np.isnan(threshold) | (threshold == -np.inf)),
            "thresholds must be finite or +inf")
    for name in ("value", "gain", "cover"):
        _expect(np.all(np.isfinite(a[name])), f"'{name}' must be finite")
    _expect(np.all(a["cover"] >= 0),
            "'cover' (hessian sums) must be non-negative")
    check_cover_sums(left, right, a["cover"])
