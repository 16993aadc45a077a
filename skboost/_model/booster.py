"""The trained ensemble: base margin plus trees, and plain prediction.

``Booster`` is a leaf of the package's layers: it knows no estimator and no
file format. The layer that trained it may *bind* it (``bind_input``) with an
object that converts ``X`` as the estimator does (DataFrames by column name,
categories re-coded) and describes the estimator for model files; the model
files register their reader and writer here (``register_model_files``), so
that ``save_model`` / ``load_model`` work without this module importing them.
The boosting loop that builds a booster is in ``train.py``.
"""

import numpy as np
import scipy.sparse as sp

from sklearn.utils.validation import check_array

from .._input.sparse import canonical_csr, check_sparse_structure, sparse_rows
from .._threads import effective_n_threads
from ..objectives import get_objective
from ..tree._predictor import PackedForest
from ..tree._sparse import SparseRows
from ..tree.packing import PREDICT_FIELDS, pack_trees
from .margins import check_base_margin

# The model-file layer's reader and writer (skboost/_io/booster_files.py
# registers them when skboost is imported): an object with
# ``save(booster, fname)`` and ``load(booster, fname)``.
_MODEL_FILES = []


def register_model_files(codec):
    """Let ``Booster.save_model`` / ``load_model`` use ``codec``."""
    _MODEL_FILES[:] = [codec]


def _model_files():
    if not _MODEL_FILES:
        raise RuntimeError("no model-file reader is registered: import "
                           "skboost (whose import registers it)")
    return _MODEL_FILES[0]


class Booster:
    """A trained ensemble: base margin plus trees, one per output per round.

    The everyday methods of XGBoost's ``Booster`` are here: ``predict``,
    ``inplace_predict`` (the serving call), ``save_model`` / ``load_model`` (``.json`` or ``.ubj``),
    ``num_boosted_rounds``, ``get_score`` / ``get_fscore``, ``get_dump``,
    ``trees_to_dataframe`` and ``feature_names``. ``Booster()`` followed by
    ``load_model(path)``, or ``Booster(model_file=path)``, reads a saved
    model, as in XGBoost.

    Parameters
    ----------
    objective : str, default="reg:squarederror"
        Name of the training objective (defines the link of predictions).
    base_margin : ndarray of shape (n_outputs,), default=(0.0,)
        Margin every prediction starts from.
    n_features : int, default=0
        Number of input features.
    model_file : str or path-like, default=None
        Load this model file (``.json`` or ``.ubj``) instead.

    Examples
    --------
    >>> import numpy as np
    >>> from skboost import Booster, BoostRegressor
    >>> X = np.arange(40, dtype=float).reshape(20, 2)
    >>> y = X[:, 0] * 2.0
    >>> booster = BoostRegressor(n_estimators=5).fit(X, y).get_booster()
    >>> booster.num_boosted_rounds()
    5
    >>> booster.predict(X[:2]).shape
    (2,)
    """

    # Every field of a booster is declared here, and only the boosting loop
    # (train.py), the model-file reader and the callbacks' results set
    # them. Immutable defaults are class attributes, so that boosters
    # pickled before a field existed read its default.
    #
    # Trees per output and round (``num_parallel_tree``).
    num_parallel_tree = 1
    # Number of targets of a multi-output model (columns of y; each is an
    # output), 1 otherwise.
    n_targets = 1
    # "multi_output_tree": one vector-leaf tree per round (and parallel
    # tree) holds every output's values; else one tree per output.
    multi_strategy = "one_output_per_tree"
    # What an absent entry of sparse X means: NaN (missing) or 0.0.
    absent_value = np.nan
    # The categorical features and their training categories
    # (``_input.categorical.CategoryMap``), None without any.
    category_map = None
    # Training column names, when known.
    feature_names = None
    # DART (``booster="dart"``): the weight of each tree, by which its
    # values count in every prediction; None: every tree counts once.
    tree_weights = None
    # Position debiasing of a ranker (lambdarank_unbiased): the (t_plus,
    # t_minus) estimates after the last round; None otherwise. Not saved.
    position_bias = None
    # Set by early stopping (rounds counted from 0) and its score.
    best_iteration = None
    best_score = None
    # What ``get_booster`` binds (``bind_input``); never pickled.
    input_binding = None
    # Training parameters changed by callbacks for the rounds to come
    # (``set_param``), taken by the boosting loop before the next round;
    # never saved.
    pending_params = None

    def __init__(self, objective="reg:squarederror", base_margin=(0.0,),
                 n_features=0, *, model_file=None):
        self.objective = objective
        self.base_margin = np.asarray(base_margin, dtype=np.float64)
        self.n_features = int(n_features)
        self.trees = []
        self.tree_group = []  # output column of each tree
        self._forest = None  # concatenated node arrays, built on demand
        self.objective_params = {}  # parameters of the objective
        self.evals_result = {}  # {eval set: {metric: [value per round]}}
        self.metric_maximize = {}  # {metric: whether higher is better}
        if model_file is not None:
            self.load_model(model_file)

    @property
    def n_outputs(self):
        return self.base_margin.shape[0]

    @property
    def vector_leaf(self):
        """Whether every tree holds a value per output (vector leaves)."""
        return self.multi_strategy == "multi_output_tree"

    @property
    def trees_per_round(self):
        """Trees added by one boosting round: ``num_parallel_tree`` per
        output (tree ``i`` of a round belongs to output
        ``i // num_parallel_tree``), or ``num_parallel_tree`` vector-leaf
        trees."""
        if self.vector_leaf:
            return self.num_parallel_tree
        return self.n_outputs * self.num_parallel_tree

    def scalar_trees(self):
        """The trees as single-output trees and the output of each: the
        trees themselves, or each vector-leaf tree as one view per output
        (its structure, that output's values), in tree order; a DART
        tree of weight other than 1 with its values scaled by it. The
        predictor, TreeSHAP and the exporters read these."""
        if self.tree_weights is not None:
            return ([tree if w == 1.0 else tree.scaled(w) for tree, w in
                     zip(self.trees, self.tree_weights)], self.tree_group)
        if not self.vector_leaf:
            return self.trees, self.tree_group
        outputs = range(self.n_outputs)
        return ([tree.output_view(k) for tree in self.trees for k in outputs],
                [k for _ in self.trees for k in outputs])

    def scalar_slice(self, first, last):
        """Trees [first, last) as the range of ``scalar_trees``."""
        step = self.n_outputs if self.vector_leaf else 1
        return first * step, last * step

    @property
    def n_rounds(self):
        return len(self.trees) // self.trees_per_round

    def add_tree(self, tree, group):
        self.trees.append(tree)
        self.tree_group.append(group)
        if self.tree_weights is not None:
            self.tree_weights.append(1.0)
        self._forest = None

    def reweigh_trees(self, dropped, factor, n_new, new_weight):
        """DART's step after a round: the ``dropped`` trees' weights times
        ``factor``, the round's ``n_new`` last trees at ``new_weight``."""
        if self.tree_weights is None:
            self.tree_weights = [1.0] * len(self.trees)
        for index in dropped:
            self.tree_weights[index] *= factor
        for index in range(len(self.trees) - n_new, len(self.trees)):
            self.tree_weights[index] = new_weight
        self._forest = None

    def keep_first_trees(self, n_trees):
        """Drop every tree after the first ``n_trees`` (the trees of a round
        an interrupt cut short)."""
        del self.trees[n_trees:]
        del self.tree_group[n_trees:]
        if self.tree_weights is not None:   # DART: a weight per tree kept
            del self.tree_weights[n_trees:]
        self._forest = None

    def _tree_slice(self, iteration_range):
        """Indices of the trees of rounds [start, end); None or (0, 0) = all."""
        if iteration_range is None:
            return 0, len(self.trees)
        try:
            start, end = (int(i) for i in iteration_range)
        except (TypeError, ValueError):
            raise ValueError(
                "iteration_range must be a pair (start, end) of integers, got "
                f"{iteration_range!r}") from None
        if (start, end) == (0, 0):
            return 0, len(self.trees)
        if not 0 <= start < end <= self.n_rounds:
            raise ValueError(
                f"iteration_range={iteration_range!r} is outside the "
                f"{self.n_rounds} boosting rounds of this model: expected "
                "0 <= start < end <= n_rounds")
        return start * self.trees_per_round, end * self.trees_per_round

    def _packed_forest(self):
        """All trees packed for prediction (built once, validated once)."""
        if self._forest is None:
            trees, groups = self.scalar_trees()
            self._forest = pack_trees(PackedForest, trees, groups,
                                      n_features=self.n_features,
                                      n_outputs=self.n_outputs,
                                      fields=PREDICT_FIELDS)
        return self._forest

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_forest"] = None  # C memory: rebuilt on first use
        state.pop("input_binding", None)  # bound again by get_booster
        state.pop("pending_params", None)  # of a fit in progress only
        state.pop("_input_estimator", None)  # (its name before issue 34)
        return state

    def __getitem__(self, rounds):
        """The boosting rounds ``rounds`` as a new Booster (XGBoost's model
        slicing: ``booster[a:b]``, ``booster[a:b:step]``, ``booster[i]``).

        Parameters
        ----------
        rounds : int or slice
            Rounds counted from 0; negative indices count from the end, as
            in Python. A step must be at least 1; an empty selection, or a
            start or stop past the last round, is an error (XGBoost's
            rules).

        Returns
        -------
        booster : Booster
            The same base margin, objective, features and categories, with
            the trees of those rounds (shared with this booster: trees are
            never changed once grown). Early stopping's ``best_iteration``
            and the evaluation history are not carried over: they describe
            this booster's rounds.
        """
        selected = _selected_rounds(rounds, self.n_rounds)
        sliced = Booster(self.objective, self.base_margin.copy(),
                         self.n_features)
        for name in ("num_parallel_tree", "n_targets", "multi_strategy",
                     "absent_value", "category_map", "feature_names",
                     "input_binding"):
            if name in self.__dict__:
                setattr(sliced, name, self.__dict__[name])
        sliced.objective_params = dict(self.objective_params)
        per_round = self.trees_per_round
        kept = [k for r in selected
                for k in range(r * per_round, (r + 1) * per_round)]
        for k in kept:
            sliced.add_tree(self.trees[k], self.tree_group[k])
        if self.tree_weights is not None:   # DART: the trees' weights too
            sliced.tree_weights = [self.tree_weights[k] for k in kept]
        return sliced

    def set_param(self, params, value=None):
        """Change a training parameter for the rounds still to come
        (XGBoost's ``Booster.set_param``, as callbacks such as
        :class:`~skboost.callback.LearningRateScheduler` use it).

        Parameters
        ----------
        params : str, dict or list of (str, value) pairs
            A name (with ``value``), or several names and values. Only the
            learning rate (``"learning_rate"`` or its alias ``"eta"``) can
            change between rounds; any other name is a ValueError.
        value : float, default=None
            The value of ``params`` when it is a name.
        """
        if isinstance(params, str):
            params = [(params, value)]
        elif isinstance(params, dict):
            params = list(params.items())
        pending = {}
        for name, new in params:
            if name not in ("learning_rate", "eta"):
                raise ValueError(
                    f"set_param: {name!r} cannot change between rounds; "
                    "only 'learning_rate' (alias 'eta') can")
            pending["learning_rate"] = _checked_learning_rate(new)
        if self.pending_params is None:
            self.pending_params = {}
        self.pending_params.update(pending)

    def take_pending_params(self):
        """The parameters ``set_param`` changed since the last call (the
        boosting loop applies them before the next round), cleared."""
        pending, self.pending_params = self.pending_params or {}, None
        return pending

    def _sparse_rows(self, X):
        """Sparse X as the kernels read it (absent entries: NaN or 0.0)."""
        if isinstance(X, SparseRows):
            return X
        return sparse_rows(X, getattr(self, "absent_value", np.nan))

    def predict_raw(self, X, iteration_range=None, n_threads=1,
                    base_margin=None, *, scalar_range=False):
        """Raw margins of shape (n_rows, n_outputs) for float32 C-ordered X,
        starting from ``base_margin`` (n_rows, n_outputs) when given, else
        from the fitted base margin. With ``scalar_range``,
        ``iteration_range`` is the (first, last) range of ``scalar_trees``
        already."""
        if scalar_range:
            first, last = iteration_range
        else:
            first, last = self.scalar_slice(
                *self._tree_slice(iteration_range))
        if base_margin is None:
            out = np.tile(self.base_margin, (X.shape[0], 1))
        else:
            out = check_base_margin(base_margin, X.shape[0], self.n_outputs)
            out = out.copy()
        if last > first and is_sparse(X):
            self._packed_forest().predict_raw_sparse(self._sparse_rows(X), out,
                                                     first, last, n_threads)
        elif last > first:
            self._packed_forest().predict_raw(X, out, first, last, n_threads)
        return out

    def serving_margins(self, rows, iteration_range=None, n_jobs=None):
        """Raw margins (n_rows, n_outputs) of a float32 or float64
        C-contiguous ndarray with ``n_features`` columns and NaN for missing
        (checked by the caller: ``serving_rows``), read in place; None when
        a value is infinite (as float32), which the caller's full check
        refuses.

        A few rows (too little work for a second thread) walk in the
        calling thread with no allocation but the output; more rows go to
        the parallel walk, float64 converted to float32 first. The sums are
        those of ``predict_raw``, bit for bit.
        """
        first, last = self.scalar_slice(*self._tree_slice(iteration_range))
        forest = self._packed_forest()
        if forest.serial_work(rows.shape[0], first, last):
            return forest.predict_raw_small(rows, self.base_margin, first,
                                            last)
        with np.errstate(over="ignore"):   # beyond float32: inf, refused
            rows = np.ascontiguousarray(rows, dtype=np.float32)
        out = np.tile(self.base_margin, (rows.shape[0], 1))
        # infinity found as the walk reads the rows (no pass of its own)
        if not forest.predict_raw(rows, out, first, last,
                                  effective_n_threads(n_jobs),
                                  refuse_infinity=True):
            return None
        return out

    def predict_leaves(self, X, iteration_range=None, n_threads=1):
        """Leaf index of every row in every tree, shape (n_rows, n_trees)."""
        first, last = self.scalar_slice(*self._tree_slice(iteration_range))
        if is_sparse(X):
            leaves = self._packed_forest().predict_leaves_sparse(
                self._sparse_rows(X), first, last, n_threads)
        else:
            leaves = self._packed_forest().predict_leaves(X, first, last,
                                                          n_threads)
        # a vector-leaf tree's output views share its leaves
        return leaves[:, ::self.n_outputs] if self.vector_leaf else leaves

    def predict(self, X, output_margin=False, pred_leaf=False,
                pred_contribs=False, approx_contribs=False,
                pred_interactions=False, iteration_range=None, n_jobs=None):
        """Predictions, leaf indices, or feature contributions (XGBoost's
        ``Booster.predict``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Samples, as for the estimator's ``predict`` (numpy, pandas by
            column name with categories re-coded, scipy.sparse) when this
            booster comes from ``get_booster()``. A booster on its own (for
            example unpickled without its estimator) takes float arrays and
            sparse matrices, NaN for missing, categorical features as codes.
        output_margin : bool, default=False
            Raw margins instead of transformed predictions.
        pred_leaf : bool, default=False
            Leaf index of each sample in each tree, (n_samples, n_trees).
        pred_contribs : bool, default=False
            SHAP feature contributions (path-dependent TreeSHAP, node covers
            being hessian sums), in margin space: (n_samples,
            n_features + 1) for one output, (n_samples, n_outputs,
            n_features + 1) for several (classes), the expected value in
            the last column; each row sums to the margin.
        approx_contribs : bool, default=False
            With ``pred_contribs``: Saabas contributions (along the path,
            each split's feature gets the change of the subtree's
            cover-weighted mean). With ``pred_interactions``: the diagonal
            matrix of those, as in XGBoost.
        pred_interactions : bool, default=False
            SHAP interaction values: (n_samples, [n_outputs,] n_features + 1,
            n_features + 1), symmetric, rows summing to the contributions,
            the expected value at ``[-1, -1]``.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; ``(0, 0)``
            uses all; None uses all, or those up to ``best_iteration``
            after early stopping (as the estimators do).
        n_jobs : int, default=None
            Threads; None: the estimator's ``n_jobs`` (all cores on its
            own). Results do not depend on it.

        Returns
        -------
        predictions : ndarray
            (n_samples,) for one output, else (n_samples, n_outputs); the
            shapes above for leaves, contributions and interactions.
        """
        if not (pred_leaf or pred_contribs or pred_interactions):
            raw = self._serving_predict(X, iteration_range, n_jobs)
            if raw is not None:
                return self._outputs(raw, output_margin)
        return self.predict_checked(
            self._check_input(X), output_margin=output_margin,
            pred_leaf=pred_leaf, pred_contribs=pred_contribs,
            approx_contribs=approx_contribs,
            pred_interactions=pred_interactions,
            iteration_range=iteration_range, n_jobs=n_jobs)

    def predict_checked(self, X, *, output_margin=False, pred_leaf=False,
                        pred_contribs=False, approx_contribs=False,
                        pred_interactions=False, iteration_range=None,
                        n_jobs=None):
        """:meth:`predict` of X already as the kernels read it (float32
        C-ordered with NaN for missing, or CSR): the estimators' path."""
        chosen = [name for name, flag in (
            ("pred_leaf", pred_leaf), ("pred_contribs", pred_contribs),
            ("pred_interactions", pred_interactions)) if flag]
        if len(chosen) > 1:
            raise ValueError(f"choose one of {', '.join(chosen)}: they are "
                             "different outputs")
        if n_jobs is None and self.input_binding is not None:
            n_jobs = self.input_binding.n_jobs
        n_threads = effective_n_threads(n_jobs)
        if iteration_range is None and self.best_iteration is not None:
            iteration_range = (0, self.best_iteration + 1)
        if pred_interactions or pred_contribs:
            from .explain import contributions   # loads the SHAP kernels

            return contributions(
                self, X, pred_contribs=pred_contribs,
                approx_contribs=approx_contribs,
                pred_interactions=pred_interactions,
                iteration_range=iteration_range, n_threads=n_threads)
        if pred_leaf:
            return self.predict_leaves(X, iteration_range, n_threads)
        raw = self.predict_raw(X, iteration_range, n_threads)
        return self._outputs(raw, output_margin)

    def _outputs(self, raw, output_margin, strict_shape=False):
        """Margins (n_rows, n_outputs) as ``predict`` returns them."""
        if not output_margin:
            raw = get_objective(self.objective,
                                self.objective_params).transform(raw)
        return raw[:, 0] if raw.shape[1] == 1 and not strict_shape else raw

    def _serving_predict(self, X, iteration_range, n_jobs):
        """Margins of the serving fast path (``serving_margins``) when X is
        one of its inputs, else None (then the full checks run)."""
        rows = self._serving_rows(X)
        if rows is None:
            return None
        if n_jobs is None and self.input_binding is not None:
            n_jobs = self.input_binding.n_jobs
        if iteration_range is None and self.best_iteration is not None:
            iteration_range = (0, self.best_iteration + 1)
        return self.serving_margins(rows, iteration_range, n_jobs)

    def _serving_rows(self, X):
        """X read in place by the serving fast path, or None: through the
        binding when bound, else a C-contiguous 2-D float32/float64 ndarray
        with the booster's number of features."""
        binding = self.input_binding
        if binding is not None:
            serving = getattr(binding, "serving_rows", None)
            return serving(X) if serving is not None else None
        if (type(X) is np.ndarray and X.ndim == 2 and X.shape[0] > 0
                and X.shape[1] == self.n_features
                and X.dtype in _FLOAT_DTYPES and X.flags.c_contiguous):
            return X
        return None

    def inplace_predict(self, data, iteration_range=(0, 0),
                        predict_type="value", missing=np.nan,
                        validate_features=True, base_margin=None,
                        strict_shape=False):
        """Predict without building a data matrix (XGBoost's
        ``Booster.inplace_predict``): the call to use when serving.

        A C-contiguous float32 or float64 ndarray (and, for a booster from
        ``get_booster()``, a DataFrame of the training float columns) is
        read in place, its few rows walked in the calling thread; other
        input goes through the checks of :meth:`predict`.

        Parameters
        ----------
        data : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            Samples, as for :meth:`predict`.
        iteration_range : tuple of (int, int), default=(0, 0)
            Use the trees of boosting rounds ``[start, end)``; ``(0, 0)``
            uses all of them (also after early stopping, as XGBoost's).
        predict_type : {"value", "margin"}, default="value"
            Transformed predictions, or raw margins.
        missing : float, default=np.nan
            Value marking a missing entry, in addition to NaN.
        validate_features : bool, default=True
            Check a DataFrame's column names against the training names.
            False takes its columns by position.
        base_margin : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Margins the rows start from instead of the fitted base margin.
        strict_shape : bool, default=False
            Always return (n_samples, n_outputs), also for one output.

        Returns
        -------
        predictions : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        if predict_type not in ("value", "margin"):
            raise ValueError("predict_type must be 'value' or 'margin', got "
                             f"{predict_type!r}")
        if not validate_features and hasattr(data, "columns"):
            names = self.feature_names
            if names is not None and len(names) == data.shape[1]:
                data = data.set_axis(list(names), axis=1)
        raw = None
        if base_margin is None and _is_nan(missing):
            raw = self._serving_predict(data, iteration_range, None)
        if raw is None:
            X = _mark_missing(self._check_input(data), missing)
            first, last = self.scalar_slice(*self._tree_slice(iteration_range))
            n_jobs = (None if self.input_binding is None
                      else self.input_binding.n_jobs)
            raw = self.predict_raw(X, (first, last),
                                   effective_n_threads(n_jobs),
                                   base_margin=base_margin,
                                   scalar_range=True)
        return self._outputs(raw, predict_type == "margin", strict_shape)

    def bind_input(self, binding):
        """Bind this booster to the layer that trained it.

        Parameters
        ----------
        binding : object or None
            Has ``check_input(X)`` (X as the kernels read it: the
            estimator's conversion of DataFrames, categories, sparse
            matrices), ``n_jobs`` (the default threads of ``predict``) and
            ``model_section()`` (what a model file records of the
            estimator). None unbinds. Not pickled.
        """
        self.input_binding = binding

    def _check_input(self, X):
        """X as the kernels read it: through the binding when bound
        (``get_booster``), else float32 C-ordered or CSR."""
        if self.input_binding is not None:
            return self.input_binding.check_input(X)
        return self._plain_input(X)

    def _plain_input(self, X):
        """X for a booster without its estimator: float32 C-ordered (NaN
        for missing) or CSR, with the booster's number of features."""
        if hasattr(X, "iloc"):
            raise TypeError(
                "this Booster is not bound to its estimator, which converts "
                "DataFrames: call estimator.get_booster() (or pass a numpy "
                "array or sparse matrix)")
        check_sparse_structure(X)
        X = check_array(X, dtype=np.float32, order="C", accept_sparse="csr",
                        ensure_all_finite="allow-nan")
        if sp.issparse(X):   # sorted unique indices, as the kernels read them
            absent = "zero" if self.absent_value == 0.0 else "missing"
            X = canonical_csr(X, np.nan, absent)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the booster "
                             f"expects {self.n_features}")
        return X

    def get_score(self, importance_type="weight"):
        """Importance of each feature used in at least one split.

        Parameters
        ----------
        importance_type : {"weight", "gain", "cover", "total_gain", \
"total_cover"}, default="weight"
            XGBoost's definitions: number of splits on the feature, average
            or total loss reduction of those splits, average or total cover
            (hessian sum) of the split nodes. skboost's gain is the loss
            reduction of the paper's equation 7 (with its factor 1/2), half
            of the value XGBoost reports.

        Returns
        -------
        scores : dict
            ``{feature name: importance}``; names are the training column
            names, else ``"f0"``, ``"f1"``, ...
        """
        from .importance import get_score

        return get_score(self, importance_type)

    def get_fscore(self, fmap=""):
        """Number of splits on each feature used (``get_score`` with
        ``importance_type="weight"``, XGBoost's method).

        Parameters
        ----------
        fmap : str, default=""
            XGBoost's feature map file: not supported (names come from the
            training columns); only "" is accepted.

        Returns
        -------
        scores : dict
            ``{feature name: number of splits}``.
        """
        if fmap:
            raise ValueError("fmap (a feature map file) is not supported: "
                             "feature names are the training column names")
        return self.get_score(importance_type="weight")

    def num_boosted_rounds(self):
        """Number of boosting rounds in the model (XGBoost's method).

        Returns
        -------
        n_rounds : int
        """
        return self.n_rounds

    def num_features(self):
        """Number of input features (XGBoost's method).

        Returns
        -------
        n_features : int
        """
        return self.n_features

    def save_model(self, fname, format="skboost"):
        """Save the model to a file: JSON for a ``.json`` name, Universal
        Binary JSON (XGBoost's binary format, the same content) for
        ``.ubj``; another suffix is a ValueError.

        The file is the estimator's model file (the estimator that
        ``get_booster()`` came from, else the one ``fit`` would have made
        for this booster), so that ``load_model`` and the estimators'
        ``load`` read it.

        Parameters
        ----------
        fname : str or path-like
            Path of the file to write (replaced atomically if it exists).
        format : {"skboost", "xgboost"}, default="skboost"
            ``"xgboost"`` writes XGBoost's ``save_model`` schema instead,
            which ``xgboost.Booster(model_file=...)`` loads (see the
            estimators' ``save_model``).
        """
        _model_files().save(self, fname, format)

    def load_model(self, fname):
        """Replace this booster by the model saved in ``fname``.

        Parameters
        ----------
        fname : str or path-like
            A ``.json`` or ``.ubj`` file written by ``save_model`` (of a
            booster or an estimator).

        Returns
        -------
        self : Booster
            Bound to the estimator the file describes (its ``predict``
            reads DataFrames as the estimator's does).
        """
        return _model_files().load(self, fname)

    def get_dump(self, with_stats=False, dump_format="text"):
        """A readable dump of every tree.

        Parameters
        ----------
        with_stats : bool, default=False
            Add each split's gain and each node's cover.
        dump_format : {"text", "json"}, default="text"
            XGBoost's text format (``0:[f1<0.5] yes=1,no=2,missing=1``, one
            line per node, depth-first, indented by depth) or nested JSON.

        Returns
        -------
        dump : list of str
            One string per tree, in boosting order.
        """
        from .importance import get_dump

        return get_dump(self, with_stats, dump_format)

    def trees_to_dataframe(self):
        """The nodes of all trees as a pandas DataFrame.

        Returns
        -------
        nodes : pandas.DataFrame
            One row per node, columns ``Tree``, ``Node``, ``ID`` (``"t-n"``),
            ``Feature`` (``"Leaf"`` on leaves), ``Split`` (threshold: go to
            ``Yes`` when value < ``Split``), ``Yes``, ``No``, ``Missing``
            (IDs of the children), ``Gain`` (a split's loss reduction; on
            leaves the leaf value, as in XGBoost), ``Cover`` and ``Value``
            (the node's output, learning rate included).
        """
        from .importance import trees_to_dataframe

        return trees_to_dataframe(self)


def _selected_rounds(rounds, n_rounds):
    """The round indices ``rounds`` (an int or a slice) selects from
    ``n_rounds``, under XGBoost's rules for model slicing."""
    if rounds is Ellipsis:
        rounds = slice(None)
    if isinstance(rounds, tuple):
        raise ValueError("a Booster is sliced along one dimension (rounds) "
                         f"only, got {rounds!r}")
    if isinstance(rounds, (int, np.integer)) and not isinstance(rounds, bool):
        index = int(rounds) + (n_rounds if rounds < 0 else 0)
        if not 0 <= index < n_rounds:
            raise IndexError(f"round {int(rounds)} is out of range: the "
                             f"model has {n_rounds} rounds")
        return [index]
    if not isinstance(rounds, slice):
        raise TypeError("a Booster is indexed by an int or a slice of "
                        f"rounds, got {type(rounds).__name__}")
    # XGBoost's slices take ``...`` for an open start or stop
    # (``booster[3:...]``, ``booster[...:7]``)
    rounds = slice(*(None if bound is Ellipsis else bound
                     for bound in (rounds.start, rounds.stop, rounds.step)))
    step = 1 if rounds.step is None else int(rounds.step)
    if step < 1:
        raise ValueError(f"the step of a Booster slice must be >= 1, got "
                         f"{step}")
    for bound in (rounds.start, rounds.stop):
        if bound is not None and abs(int(bound)) > n_rounds:
            raise IndexError(f"slice {rounds!r} is out of range: the model "
                             f"has {n_rounds} rounds")
    selected = list(range(n_rounds))[rounds.start:rounds.stop:step]
    if not selected:
        raise ValueError(_empty_slice_message(rounds, n_rounds))
    return selected


def _empty_slice_message(rounds, n_rounds):
    """Why a slice selects no round, in the words of XGBoost's errors
    ("Empty slice" when start equals stop, "Invalid" when start is past
    stop)."""
    start, stop, _ = rounds.indices(n_rounds)
    kind = "Empty slice" if start == stop else "Invalid slice"
    return (f"{kind} {rounds!r}: it selects no round of the {n_rounds} "
            "rounds (start and stop, >= 0 once negative ones count from "
            "the end, need start < stop)")


def _checked_learning_rate(value):
    """``value`` as a learning rate: finite and >= 0 (XGBoost's range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float,
                                                         np.number)):
        raise TypeError(f"learning_rate must be a number, got "
                        f"{type(value).__name__} {value!r:.40}")
    value = float(value)
    if not 0.0 <= value < np.inf:
        raise ValueError(f"learning_rate must be finite and >= 0, got "
                         f"{value}")
    return value


# The dtypes the serving fast path reads in place (native byte order).
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _is_nan(value):
    return isinstance(value, float) and value != value


def _mark_missing(X, missing):
    """Checked X (float32 dense or CSR) with ``missing`` as NaN (a copy)."""
    try:
        marker = float(missing)
    except (TypeError, ValueError):
        raise TypeError(f"missing must be a float, got {missing!r}") from None
    if np.isnan(marker):
        return X
    if is_sparse(X):
        X = X.copy()
        X.data[X.data == np.float32(marker)] = np.nan
        return X
    return np.where(X == np.float32(marker), np.float32(np.nan), X)


def is_sparse(X):
    """Whether X is a sparse matrix (or the kernels' SparseRows)."""
    return sp.issparse(X) or isinstance(X, SparseRows)
