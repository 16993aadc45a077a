"""A distributed fit that survives a lost worker, and what an interrupted
fit leaves.

A distributed engine (Dask today; Spark when it lands) grows its rounds
through a round executor (``run_rounds``). When it loses a worker, the
worker's part of the data and its training state go with it. Because the
model does not depend on the number of workers or on where the rows are,
the fit can start the executor again on the workers that are left, from
the last completed round, and still give the model of the uninterrupted
fit: ``ResumingRounds`` wraps an engine's executor and does that,
engine-independently::

    run_rounds --grow(first, n)--> ResumingRounds --grow--> executor
                                        |   WorkerLost (cause)
                                        v
                          restart(next_round, state) -> a new executor,
                          set up on the workers left, its margins
                          recomputed from the booster's trees

What the engine must provide:

* its executor raises ``WorkerLost`` (never a hang) when a worker is lost,
  and adds a round's trees to the booster only when the round is complete
  (the booster then always holds whole rounds);
* ``executor.resume_state()``: whatever it needs besides the trees to go on
  after the last round it completed (the column sampler's generator state;
  row samples are drawn from counters, so nothing for them);
* ``restart(next_round, state)``: a new executor on the workers left,
  whose margins are the booster's predictions (trees so far) and whose
  sampler is at ``state``; it raises ``WorkerLost`` if a worker is lost
  during this set-up (counted as another recovery) and any other error
  when recovery is impossible (no worker left, a partition that cannot be
  recomputed).

Every recovery is logged (logger ``"skboost"``, WARNING) with its cause,
the round it resumes from and its cost; after ``max_recoveries`` of them,
the next loss ends the fit with the engine's error.
"""

from dataclasses import dataclass
import logging
import time

LOGGER = logging.getLogger("skboost")


class WorkerLost(RuntimeError):
    """A worker of a distributed fit was lost with its share of the data
    and training state (the message says which, and how)."""


class TrainingInterrupted(KeyboardInterrupt):
    """The boosting loop was interrupted (``KeyboardInterrupt``) after
    ``rounds_completed`` whole rounds; ``booster`` holds them (and the
    trees of a continued model), its ``evals_result`` their metrics.

    A ``KeyboardInterrupt``: code that catches that catches this."""

    def __init__(self, booster, rounds_completed):
        super().__init__(f"training interrupted after {rounds_completed} "
                         "completed round(s)")
        self.booster = booster
        self.rounds_completed = rounds_completed


def keep_whole_rounds(booster, first_round, completed):
    """Cut ``booster`` back to its rounds before ``first_round`` (a continued
    model's) and the ``completed`` rounds of this fit after them: the trees
    and metrics of a round under way when an interrupt came go."""
    booster.keep_first_trees((first_round + completed)
                             * booster.trees_per_round)
    for metrics in (booster.evals_result or {}).values():
        for values in metrics.values():
            del values[completed:]


@dataclass
class Recovery:
    """One recovery of a fit, as logged."""

    cause: str
    resumed_at: int        # the first round grown again
    lost_seconds: float    # from the last completed round to the loss
    setup_seconds: float   # re-forming the executor (data, margins, links)


class ResumingRounds:
    """A round executor that resumes another after a lost worker (see the
    module's docstring).

    Parameters
    ----------
    restart : callable
        ``restart(next_round, state) -> executor``: an executor on the
        workers left, at round ``next_round`` with the engine's ``state``
        (``executor.resume_state()`` of the last completed round).
    executor : round executor
        The first one (set up by the engine).
    max_recoveries : int
        Recoveries allowed in the fit; 0: the first loss ends it.
    engine : str
        Named in the log ("skboost.dask").
    """

    def __init__(self, restart, executor, max_recoveries, engine):
        self.restart = restart
        self.executor = executor
        self.max_recoveries = max_recoveries
        self.engine = engine
        self.recoveries = []
        self._state = executor.resume_state()

    # the learning rate a callback set (set_learning_rate), given again to
    # an executor made by a recovery; None: the fit's own
    learning_rate = None

    @property
    def max_batch(self):
        return self.executor.max_batch

    def set_learning_rate(self, learning_rate):
        self.learning_rate = learning_rate
        self.executor.set_learning_rate(learning_rate)

    def grow(self, first, n_rounds):
        next_round, last = first, first + n_rounds
        completed_at = time.perf_counter()
        while next_round < last:
            try:
                for grown in self.executor.grow(next_round,
                                                last - next_round):
                    self._state = self.executor.resume_state()
                    next_round = grown + 1
                    yield grown
                    completed_at = time.perf_counter()
            except WorkerLost as lost:
                self._recover(lost, next_round,
                              time.perf_counter() - completed_at)
                completed_at = time.perf_counter()

    def _recover(self, lost, next_round, lost_seconds):
        """A new executor from ``next_round`` on, or the loss re-raised
        once the bound is reached (a loss during the set-up counts too)."""
        cause = str(lost)
        while True:
            if len(self.recoveries) >= self.max_recoveries:
                raise WorkerLost(
                    f"{cause} (recoveries: {len(self.recoveries)} of "
                    f"max_recoveries={self.max_recoveries}: training "
                    "stopped)") from lost
            LOGGER.warning("%s; %s recovering from round %d (recovery %d "
                           "of at most %d)", cause, self.engine, next_round,
                           len(self.recoveries) + 1, self.max_recoveries)
            start = time.perf_counter()
            try:
                self.executor = self.restart(next_round, self._state)
            except WorkerLost as again:
                self.recoveries.append(Recovery(
                    cause, next_round, lost_seconds,
                    time.perf_counter() - start))
                cause = f"during the recovery, {again}"
                lost = again
                continue
            if self.learning_rate is not None:   # a schedule's, not the fit's
                self.executor.set_learning_rate(self.learning_rate)
            record = Recovery(cause, next_round, lost_seconds,
                              time.perf_counter() - start)
            self.recoveries.append(record)
            LOGGER.warning(
                "%s: recovered; resuming at round %d after %.2f s of set-up "
                "(%.2f s of work since the last completed round lost, to be "
                "grown again)", self.engine, next_round,
                record.setup_seconds, lost_seconds)
            return
