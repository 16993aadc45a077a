"""Callbacks of the boosting loop: early stopping, progress, learning-rate
schedules and checkpoints.

The protocol is small. A callback is any object with some of these methods;
the loop calls those it finds:

``before_training(booster)``
    once, before the first round;
``before_iteration(booster, iteration, evals_log) -> bool``
    before every round; returning True stops training before the round
    grows; ``booster.set_param("learning_rate", value)`` here or in
    ``after_iteration`` changes the learning rate of the rounds to come;
``after_iteration(booster, iteration, evals_log) -> bool``
    after every round (``iteration`` counts from 0), once the round's trees
    are in ``booster`` and its metrics are in ``evals_log``; returning True
    stops training;
``after_training(booster)``
    once, after the last round; may return a replacement booster.

``evals_log`` is ``{eval set name: {metric name: [value per round]}}``, the
same dictionary that becomes ``evals_result_``. Pass callbacks to an
estimator through its ``callbacks`` parameter; ``early_stopping_rounds`` and
``verbose`` add the first two callbacks below; ``LearningRateScheduler``
and ``TrainingCheckPoint`` are XGBoost's, ``reset_parameter`` LightGBM's. Progress lines also go to the
``"skboost"`` logger (:mod:`logging`, level INFO).

A callback that raises ``KeyboardInterrupt`` (or a Ctrl-C during the
rounds) ends the fit with the rounds completed so far as the estimator's
model; any other exception it raises leaves the estimator as it was
before ``fit`` (see :doc:`/user_guide/sklearn_pandas`, "Interrupted
fits").
"""

import collections.abc
import logging
import os
import pickle
import sys
import tempfile
import time

import numpy as np

# progress lines of verbose fits (EvaluationMonitor), at INFO
LOGGER = logging.getLogger("skboost")


_METHODS = ("before_training", "before_iteration", "after_iteration",
            "after_training")


def check_callbacks(callbacks):
    """Raise a TypeError naming any entry of ``callbacks`` that has none of
    the protocol's methods (a function, a class instead of an instance,
    ...)."""
    for i, callback in enumerate(callbacks):
        if isinstance(callback, type) or not any(
                callable(getattr(callback, m, None)) for m in _METHODS):
            raise TypeError(
                f"callbacks[{i}] = {callback!r} is not a callback: a callback "
                f"is an object with some of the methods {list(_METHODS)} "
                "(see skboost.callback.TrainingCallback)")


def call_callback(callback, method, *args):
    """``callback.method(*args)`` if the callback has that method, its
    result checked: ``after_iteration`` returns a bool (or None: go on),
    ``before_training`` and ``after_training`` a Booster or None; anything
    else is a TypeError naming the callback."""
    function = getattr(callback, method, None)
    if function is None:
        return None
    result = function(*args)
    if method in ("before_iteration", "after_iteration"):
        ok = result is None or isinstance(result, (bool, np.bool_))
        expected = "a bool (True stops training)"
    else:
        from ._model.booster import Booster

        ok = result is None or isinstance(result, Booster)
        expected = "a Booster or None"
    if not ok:
        raise TypeError(
            f"callback {type(callback).__name__}.{method} returned "
            f"{type(result).__name__} {result!r:.60}; it must return "
            f"{expected}")
    return result


class TrainingCallback:
    """Base class of callbacks: every method does nothing."""

    def before_training(self, booster):
        """Called once before the first round.

        Parameters
        ----------
        booster : Booster
            The ensemble being trained (no trees yet).

        Returns
        -------
        booster : Booster
        """
        return booster

    def before_iteration(self, booster, iteration, evals_log):
        """Called before each round.

        Parameters
        ----------
        booster : Booster
            The ensemble, with the trees of the rounds before this one.
        iteration : int
            The round about to grow, from 0.
        evals_log : dict
            ``{eval set name: {metric name: [value per round]}}``.

        Returns
        -------
        stop : bool
            True stops training (the round does not grow).
        """
        return False

    def after_iteration(self, booster, iteration, evals_log):
        """Called after each round.

        Parameters
        ----------
        booster : Booster
            The ensemble, with the round's trees.
        iteration : int
            The round, from 0.
        evals_log : dict
            ``{eval set name: {metric name: [value per round]}}``.

        Returns
        -------
        stop : bool
            True stops training.
        """
        return False

    def after_training(self, booster):
        """Called once after the last round.

        Parameters
        ----------
        booster : Booster
            The trained ensemble.

        Returns
        -------
        booster : Booster
            The ensemble the estimator keeps.
        """
        return booster


class EarlyStopping(TrainingCallback):
    """Stop when the metric has not improved for ``rounds`` rounds.

    The metric watched is the last metric of the last evaluation set, as in
    XGBoost, unless ``data_name`` / ``metric_name`` say otherwise. The best
    round is recorded on the booster as ``best_iteration`` (from 0) and
    ``best_score``.

    Parameters
    ----------
    rounds : int
        Rounds without improvement before stopping.
    maximize : bool, default=None
        Direction of improvement; None takes the metric's own.
    data_name, metric_name : str, default=None
        Which evaluation set and metric to watch (default: the last ones).
    min_delta : float, default=0.0
        An improvement smaller than this does not count.
    """

    def __init__(self, rounds, maximize=None, data_name=None, metric_name=None,
                 min_delta=0.0):
        if rounds < 1:
            raise ValueError(f"early_stopping_rounds must be >= 1, got {rounds}")
        self.rounds = int(rounds)
        self.maximize = maximize
        self.data_name = data_name
        self.metric_name = metric_name
        self.min_delta = float(min_delta)

    def before_training(self, booster):
        self.best_score = None
        self.best_iteration = None
        return booster

    def _watched(self, booster, evals_log):
        if not evals_log:
            raise ValueError("early stopping needs at least one evaluation "
                             "set (eval_set)")
        data = self.data_name or list(evals_log)[-1]
        metrics = evals_log[data]
        name = self.metric_name or list(metrics)[-1]
        maximize = self.maximize
        if maximize is None:
            maximize = booster.metric_maximize.get(name, False)
        return metrics[name][-1], maximize

    def after_iteration(self, booster, iteration, evals_log):
        score, maximize = self._watched(booster, evals_log)
        if np.isnan(score):
            improved = self.best_score is None
        elif self.best_score is None or np.isnan(self.best_score):
            improved = True
        elif maximize:
            improved = score > self.best_score + self.min_delta
        else:
            improved = score < self.best_score - self.min_delta
        if improved:
            self.best_score = score
            self.best_iteration = iteration
        booster.best_iteration = self.best_iteration
        booster.best_score = self.best_score
        return iteration - self.best_iteration >= self.rounds


class EvaluationMonitor(TrainingCallback):
    """Report every metric of every evaluation set each ``period`` rounds.

    One line per reported round, XGBoost's format
    (``[3]\tvalidation_0-rmse:0.51234``), followed by the elapsed time
    (``elapsed:12.3s``) and, on long fits (once ``estimate_after``
    seconds have passed) when the number of rounds is known, an estimate
    of the time left at the current pace (``left:~1m05s``; early stopping
    may end the fit sooner).

    Each line goes through Python's :mod:`logging` (logger ``"skboost"``,
    level INFO), so that applications can route it, and is printed to
    ``stream`` as XGBoost prints it, unless the ``"skboost"`` logger has a
    handler of its own (then logging alone carries the lines).

    Parameters
    ----------
    period : int, default=1
        Report every ``period`` rounds (and the last one).
    stream : file-like, default=None
        Where to print; None is ``sys.stdout``.
    total_rounds : int, default=None
        The round number the fit ends before (rounds of a continued model
        included), for the estimate of the time left; the estimators pass
        it.
    estimate_after : float, default=5.0
        Seconds after which lines carry the estimate of the time left.
    clock : callable, default=time.perf_counter
        Source of the time in seconds.
    """

    def __init__(self, period=1, stream=None, total_rounds=None,
                 estimate_after=5.0, clock=time.perf_counter):
        self.period = max(int(period), 1)
        self.stream = stream
        self.total_rounds = total_rounds
        self.estimate_after = float(estimate_after)
        self.clock = clock

    def before_training(self, booster):
        self._start = self.clock()
        self._first_round = getattr(booster, "n_rounds", 0)
        self._last_printed = None
        self._last_log = None
        return booster

    def _line(self, iteration, evals_log, now):
        fields = [f"[{iteration}]"]
        for data, metrics in evals_log.items():
            for name, values in metrics.items():
                fields.append(f"{data}-{name}:{values[-1]:.5f}")
        elapsed = now - self._start
        fields.append(f"elapsed:{format_duration(elapsed)}")
        left = self._time_left(iteration, elapsed)
        if left is not None:
            fields.append(f"left:~{format_duration(left)}")
        return "\t".join(fields)

    def _time_left(self, iteration, elapsed):
        """Seconds left at the mean pace so far (None: unknown, short fit
        or last round)."""
        if self.total_rounds is None or elapsed < self.estimate_after:
            return None
        done = iteration + 1 - self._first_round
        remaining = self.total_rounds - iteration - 1
        if done <= 0 or remaining <= 0:
            return None
        return elapsed / done * remaining

    def _emit(self, line):
        LOGGER.info(line)
        if not LOGGER.handlers:
            print(line, file=self.stream or sys.stdout, flush=True)

    def after_iteration(self, booster, iteration, evals_log):
        if iteration % self.period == 0:
            self._emit(self._line(iteration, evals_log, self.clock()))
            self._last_printed = iteration
        self._last_log = (iteration, evals_log)
        return False

    def after_training(self, booster):
        last = getattr(self, "_last_log", None)
        if last is not None and last[0] != self._last_printed:
            self._emit(self._line(*last, self.clock()))
        return booster


def format_duration(seconds):
    """``12.3s``, ``4m05s`` or ``2h03m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class LearningRateScheduler(TrainingCallback):
    """Change the learning rate as training goes (XGBoost's callback).

    After round ``i`` (from 0) the learning rate becomes
    ``learning_rates(i)`` (or ``learning_rates[i]``) for the rounds that
    follow, exactly as in XGBoost: round 0 grows with the estimator's
    ``learning_rate``, round ``i + 1`` with the value given for ``i``. (For
    a schedule where round ``i`` uses the value given for ``i``, use
    :func:`reset_parameter`, LightGBM's convention.) Works in every
    engine (in process and on Dask) and tree method.

    Parameters
    ----------
    learning_rates : callable or sequence of float
        A function of the round, or one value per round (as in XGBoost, a
        value is asked for after every round, the last included).

    Examples
    --------
    >>> import numpy as np
    >>> from skboost import BoostRegressor
    >>> from skboost.callback import LearningRateScheduler
    >>> X = np.arange(40, dtype=float).reshape(20, 2); y = X[:, 0]
    >>> decay = LearningRateScheduler(lambda i: 0.3 * 0.9 ** i)
    >>> BoostRegressor(n_estimators=5, callbacks=[decay]).fit(X, y).n_estimators
    5
    """

    def __init__(self, learning_rates):
        if callable(learning_rates):
            self.learning_rates = learning_rates
        elif isinstance(learning_rates, collections.abc.Sequence) and not \
                isinstance(learning_rates, str):
            rates = list(learning_rates)
            self.learning_rates = lambda iteration: rates[iteration]
        else:
            raise TypeError(
                "learning_rates must be a function of the round or a "
                f"sequence of floats, got {type(learning_rates).__name__}")

    def after_iteration(self, booster, iteration, evals_log):
        try:
            rate = self.learning_rates(iteration)
        except IndexError:
            raise ValueError(
                f"LearningRateScheduler: no learning rate for round "
                f"{iteration}: give one per round") from None
        booster.set_param("learning_rate", rate)
        return False


def reset_parameter(**kwargs):
    """A callback setting parameters before each round (LightGBM's
    ``lightgbm.reset_parameter``).

    Parameters
    ----------
    **kwargs : callable or sequence
        ``learning_rate=`` (the one parameter that can change between
        rounds): a function of the round (from 0) or one value per round.
        Round ``i`` grows with the value given for ``i`` (LightGBM's
        convention; :class:`LearningRateScheduler` is XGBoost's, one round
        later).

    Returns
    -------
    callback : TrainingCallback
    """
    unknown = set(kwargs) - {"learning_rate", "eta"}
    if unknown:
        raise ValueError(f"reset_parameter: {sorted(unknown)} cannot change "
                         "between rounds; only learning_rate can")
    if not kwargs:
        raise TypeError("reset_parameter needs learning_rate=")
    return _ResetParameter(LearningRateScheduler(next(iter(
        kwargs.values()))).learning_rates)


class _ResetParameter(TrainingCallback):
    """``reset_parameter``'s callback: the rate of round ``i`` set just
    before it grows."""

    def __init__(self, learning_rates):
        self.learning_rates = learning_rates

    def before_iteration(self, booster, iteration, evals_log):
        try:
            rate = self.learning_rates(iteration)
        except IndexError:
            raise ValueError(f"reset_parameter: no learning rate for round "
                             f"{iteration}: give one per round") from None
        booster.set_param("learning_rate", rate)
        return False


class TrainingCheckPoint(TrainingCallback):
    """Save the model every ``interval`` rounds (XGBoost's callback).

    Files are named ``{name}_{round}.ubj`` (skboost's model file, UBJSON),
    or ``{name}_{round}.pkl`` (the pickled Booster) with ``as_pickle``,
    where ``round`` counts the booster's rounds from 0, those of a model
    the fit continues included: ``model_99.ubj`` holds rounds 0 to 99.
    As in XGBoost, the first file comes after ``interval + 1`` rounds and
    then every ``interval`` rounds. Each file is written under a temporary
    name and renamed into place, so that a reader (or a fit resumed after a
    crash) never sees a partly written file.

    A fit resumed from a checkpoint (``fit(X, y, xgb_model=path)`` with
    the remaining ``n_estimators``) gives the model of the uninterrupted
    fit bit for bit when training draws no random numbers (no row or
    column sampling); with sampling, the resumed rounds draw other samples
    (the random generator's state is not in the file), as in XGBoost.

    Parameters
    ----------
    directory : str or path-like
        Where the files go (created if missing).
    name : str, default="model"
        Prefix of the file names.
    as_pickle : bool, default=False
        Pickle the Booster instead of writing a model file.
    interval : int, default=100
        Rounds between checkpoints.
    """

    default_format = "ubj"

    def __init__(self, directory, name="model", as_pickle=False,
                 interval=100):
        if isinstance(interval, bool) or not isinstance(interval, int) or \
                interval < 1:
            raise ValueError(f"interval must be an int >= 1, got "
                             f"{interval!r}")
        self.directory = os.fspath(directory)
        self.name = name
        self.as_pickle = as_pickle
        self.interval = interval

    def before_training(self, booster):
        os.makedirs(self.directory, exist_ok=True)
        self._since = 0   # rounds since the last checkpoint (XGBoost's count)
        return booster

    def after_iteration(self, booster, iteration, evals_log):
        if self._since == self.interval:
            self._since = 0
            self.save(booster, iteration)
        self._since += 1
        return False

    def save(self, booster, iteration):
        """Write the checkpoint of round ``iteration`` (atomically; rounds
        count those of a model the fit continues, as every callback's
        ``iteration`` does)."""
        suffix = ".pkl" if self.as_pickle else f".{self.default_format}"
        path = os.path.join(self.directory,
                            f"{self.name}_{iteration}{suffix}")
        if not self.as_pickle:
            booster.save_model(path)   # atomic already
            return path
        handle, temporary = tempfile.mkstemp(dir=self.directory,
                                             prefix=".checkpoint-")
        try:
            with os.fdopen(handle, "wb") as file:
                pickle.dump(booster, file)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
        return path
