"""A Dask fit that loses a worker resumes on the workers left and gives
the uninterrupted model (``skboost/_model/recovery.py``,
``skboost/dask``), with real faults: worker processes of a LocalCluster
killed with SIGKILL at a chosen round, signalled by a training callback
on the client (or by the recovery's own log record), never by a sleep.

Oracles: the same fit on the same cluster without the kill (bit for bit,
every tree array), and the single-node estimator on the concatenated data
where the cut points cannot depend on the partitioning (discrete
features, ``subsample=1``); the partitions and the cluster's workers
themselves (a scattered partition cannot be recomputed: its loss is an
error); the fit's outcome joined with a timeout (a hang fails).
"""

import logging
import os
import signal
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import skboost.dask as skdask  # noqa: E402
from skboost import BoostRegressor  # noqa: E402
from skboost.callback import TrainingCallback  # noqa: E402
from skboost.dask import DaskBoostRanker, DaskBoostRegressor  # noqa: E402

ROUNDS, KILLED_AT = 30, 10
PARAMS = dict(n_estimators=ROUNDS, max_depth=4, learning_rate=0.3,
              random_state=7, n_jobs=1, colsample_bynode=0.7)
# the cases beyond the Done-when ones: fewer rounds (CI time)
SHORT = dict(PARAMS, n_estimators=12)


# A LocalCluster closes the nanny of a worker that the scheduler lost when,
# ``distributed.deploy.lost-worker-timeout`` (15 s, meant for a lost batch
# job) after the loss, no worker of the same name is there
# (SpecCluster._update_worker_status): a restart slower than that on a
# loaded machine, or a worker killed again within 15 s of an earlier loss
# (the earlier loss's timer fires while the second restart is under way),
# closed the nanny with its restart, and the cluster stayed at one worker
# (the 180 s waits that skipped). Here killed workers are the test's own
# doing and their nannies restart them: the timeout outlasts the module.
RESTART_SECONDS = 90


class _Clusters:
    """The module's LocalCluster of two workers. A killed worker's nanny
    starts another; should the cluster not be back to two answering
    workers within ``patience`` seconds, a new cluster replaces it, so
    that no test depends on the one before."""

    def __init__(self, patience=30.0):
        self.patience = patience
        self.cluster = None

    def healthy(self):
        if self.cluster is not None:
            with distributed.Client(self.cluster) as client:
                if _two_answer(client, self.patience):
                    return self.cluster
            self.cluster.close()
        self.cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            dashboard_address=None)
        return self.cluster

    def close(self):
        if self.cluster is not None:
            self.cluster.close()


@pytest.fixture(scope="module")
def clusters():
    import dask

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "1h"}):
        holder = _Clusters()
        yield holder
        holder.close()


@pytest.fixture
def cluster(clusters):
    return clusters.healthy()


@pytest.fixture
def client(cluster):
    """A client of two answering workers."""
    with distributed.Client(cluster) as c:
        assert _two_answer(c, 60), "a new cluster did not start"
        yield c


def _two_answer(client, timeout):
    """Whether two workers (and no more) answer within ``timeout`` s (a
    killed one may still be listed for a moment, or its replacement not
    yet be up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answers = client.run(os.getpid, on_error="ignore")
        if len(answers) == 2 and len(_workers(client)) == 2:
            return True
        time.sleep(0.1)
    return False


def _workers(client):
    # asked of the scheduler (the client's cached info may list none)
    return sorted(client.nthreads())


def _victim(client, index):
    """The worker to kill: the ``index``-th of two answering workers (a
    reference fit may run while a worker killed by an earlier test is
    still being replaced by its nanny: wait for both, as the fixture does;
    while a killed worker is still listed, each client.run may wait out
    its 30 s connect timeout)."""
    assert _two_answer(client, RESTART_SECONDS), (
        f"the LocalCluster did not bring back two answering workers within "
        f"{RESTART_SECONDS} s: {_cluster_state(client)}")
    return _workers(client)[index]


def _cluster_state(client):
    """What the scheduler lists, which workers answer, and each nanny's
    state (for the report of a restart that did not happen)."""
    answering = sorted(client.run(os.getpid, on_error="ignore"))
    nannies = {name: (str(nanny.status), nanny.worker_address)
               for name, nanny in client.cluster.workers.items()}
    return (f"the scheduler lists {_workers(client)}, answering "
            f"{answering}; the cluster's nannies {nannies}")


def _kill(client, address):
    """SIGKILL the process of the worker at ``address``."""
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)


class _KillAt(TrainingCallback):
    """After round ``at`` (counted from 1) completes, kill the processes
    of ``victims`` (worker addresses)."""

    def __init__(self, client, victims, at=KILLED_AT, action=None):
        self.client, self.victims, self.at = client, victims, at
        self.action = action

    def after_iteration(self, booster, iteration, evals_log):
        if iteration + 1 == self.at:
            if self.action is not None:
                self.action()
            for address in self.victims:
                _kill(self.client, address)
        return False


class _Quiet(TrainingCallback):
    """A callback that does nothing: the reference fit grows one round per
    call, as the killed one does (the model does not depend on it)."""

    def after_iteration(self, booster, iteration, evals_log):
        return False


def _discrete(n=1200, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 40, size=(n, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nansum(X[:, :3] * [1.0, -0.5, 0.25], axis=1) + rng.normal(size=n)
    return X, y


def _assert_same_trees(a, b):
    assert a.base_margin.tobytes() == b.base_margin.tobytes()
    assert len(a.trees) == len(b.trees)
    for ta, tb in zip(a.trees, b.trees):
        for name in ("feature", "threshold", "left_child", "right_child",
                     "default_left", "value", "gain", "cover"):
            assert np.array_equal(getattr(ta, name), getattr(tb, name),
                                  equal_nan=True), name


def _fit_with_timeout(fit, timeout=120):
    """``fit()`` on a daemon thread: its result or exception; a fit that
    does not end within ``timeout`` seconds fails the test (a hang)."""
    outcome = {}

    def run():
        try:
            outcome["result"] = fit()
        except BaseException as error:   # noqa: BLE001 - the test reads it
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert outcome, f"the fit did not end within {timeout} s (a hang)"
    return outcome


def _one_recovery(model, victim):
    (record,) = model._dask_recoveries
    assert record.resumed_at == KILLED_AT
    assert victim in record.cause
    return record


# -- the Done-when cases: one of two workers killed at round 10 of 30 ------

@pytest.mark.parametrize("tree_method", ["hist", "approx"])
def test_killed_worker_resumes_to_the_same_model(client, tree_method,
                                                  caplog):
    X, y = _discrete(seed=1)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)
    params = dict(PARAMS, tree_method=tree_method)
    victim = _victim(client, 1)
    model = DaskBoostRegressor(**params, callbacks=[_KillAt(client, [victim])])
    with caplog.at_level(logging.WARNING, logger="skboost"):
        model.fit(dX, dy)
    _one_recovery(model, victim)
    # the uninterrupted fit's model: single-node training on the rows in
    # order gives it (the cuts cannot depend on the partitioning;
    # tests/test_dask.py shows the Dask fit equal to it)
    _assert_same_trees(model.booster_,
                       BoostRegressor(**params).fit(X, y).booster_)
    logged = [r.getMessage() for r in caplog.records if r.name == "skboost"]
    assert any(victim in m and "recovering from round 10" in m
               for m in logged), logged
    assert any("recovered; resuming at round 10" in m for m in logged)


def test_killed_worker_resumes_the_ranker_with_row_sampling(client):
    """LambdaMART with row and column sampling (the counter-based row
    draws and the sampler's state carried over)."""
    rng = np.random.default_rng(21)
    X, _ = _discrete(n=1200, seed=21)
    relevance = np.clip(np.nan_to_num(X[:, 0]) // 10
                        + rng.integers(0, 2, 1200), 0, 4)
    qid = np.repeat(np.arange(60), 20)
    params = dict(PARAMS, objective="rank:ndcg", subsample=0.8)
    dX = da.from_array(X, chunks=(300, 5))
    dy, dq = da.from_array(relevance, 300), da.from_array(qid, 300)
    reference = DaskBoostRanker(**params, callbacks=[_Quiet()]).fit(
        dX, dy, qid=dq)
    victim = _victim(client, 0)
    model = DaskBoostRanker(**params, callbacks=[_KillAt(client, [victim])])
    model.fit(dX, dy, qid=dq)
    _one_recovery(model, victim)
    _assert_same_trees(model.booster_, reference.booster_)


def test_eval_set_metrics_and_early_stopping_survive(client):
    """The eval sets' margins are recomputed from the trees on the new
    shards: evals_result_ and best_iteration as uninterrupted."""
    X, y = _discrete(seed=3)
    X_val, y_val = _discrete(n=400, seed=4)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)
    eval_set = [(da.from_array(X_val, chunks=(200, 5)),
                 da.from_array(y_val, 200))]
    params = dict(PARAMS, n_estimators=16, early_stopping_rounds=3,
                  subsample=0.7)
    reference = DaskBoostRegressor(**params).fit(dX, dy, eval_set=eval_set)
    victim = _victim(client, 1)
    model = DaskBoostRegressor(**params, callbacks=[
        _KillAt(client, [victim], at=5)]).fit(dX, dy, eval_set=eval_set)
    (record,) = model._dask_recoveries
    assert record.resumed_at == 5
    assert model.evals_result_ == reference.evals_result_
    assert model.best_iteration == reference.best_iteration
    _assert_same_trees(model.booster_, reference.booster_)


# -- losses the recovery meets ------------------------------------------------

class _KillOnRecovery(logging.Handler):
    """Kills ``victim`` when the recovery announces itself (its first log
    record): a worker lost while the shards are being re-formed."""

    def __init__(self, client, victim):
        super().__init__(logging.WARNING)
        self.client, self.victim, self.done = client, victim, False

    def emit(self, record):
        if not self.done and "recovering from round" in record.getMessage():
            self.done = True
            _kill(self.client, self.victim)


def test_worker_killed_during_the_recovery(client):
    """Both original workers lost, the second as the recovery starts (the
    set-up then waits for Dask to recompute every partition on the
    workers the nannies start again, or meets the loss and recovers once
    more): the uninterrupted model, no hang."""
    X, y = _discrete(seed=5)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)
    first, second = _workers(client)
    handler = _KillOnRecovery(client, first)
    logger = logging.getLogger("skboost")
    logger.addHandler(handler)
    try:
        model = DaskBoostRegressor(**SHORT, callbacks=[
            _KillAt(client, [second], at=4)])
        outcome = _fit_with_timeout(lambda: model.fit(dX, dy))
    finally:
        logger.removeHandler(handler)
    assert handler.done
    assert "result" in outcome, outcome
    assert 1 <= len(model._dask_recoveries) <= 2
    _assert_same_trees(model.booster_,
                       BoostRegressor(**SHORT).fit(X, y).booster_)


def test_losses_beyond_max_recoveries_are_a_clear_error(client):
    """max_recoveries=1: the loss at round 4 is recovered, the one at
    round 8 ends the fit with an error naming the bound and the worker;
    the estimator is left unfitted."""
    X, y = _discrete(seed=11)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)
    first, second = _workers(client)
    model = DaskBoostRegressor(**SHORT, max_recoveries=1, callbacks=[
        _KillAt(client, [second], at=4), _KillAt(client, [first], at=8)])
    outcome = _fit_with_timeout(lambda: model.fit(dX, dy))
    error = outcome.get("error")
    assert isinstance(error, RuntimeError), outcome
    assert "recoveries: 1 of max_recoveries=1" in str(error)
    assert first in str(error)
    with pytest.raises(Exception, match="not fitted"):
        model.predict(dX)


def test_scattered_partition_cannot_be_recomputed(client):
    """Data scattered to the victim has no graph to recompute it from: a
    clear error naming the partition, at once."""
    X, y = _discrete(n=600, seed=6)
    victim = _victim(client, 1)
    futures = client.scatter([X[:300], X[300:]], workers=[victim])
    dX = da.concatenate([da.from_delayed(f, shape=(300, 5), dtype=X.dtype)
                         for f in futures])
    dy = da.from_array(y, 300)
    model = DaskBoostRegressor(**PARAMS, callbacks=[_KillAt(client,
                                                            [victim])])
    outcome = _fit_with_timeout(lambda: model.fit(dX, dy), timeout=60)
    error = outcome.get("error")
    assert isinstance(error, RuntimeError), outcome
    assert "cannot be recomputed" in str(error)
    assert "partition 0 of the training data" in str(error)


def test_worker_added_mid_fit_is_ignored(cluster, client):
    """A worker that joins during the fit gets no shard (the shards stay
    where the partitions were placed): the fit goes on and gives the same
    model."""
    X, y = _discrete(seed=8)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)

    def add_worker():
        cluster.scale(3)
        client.wait_for_workers(3, timeout=60)

    model = DaskBoostRegressor(**SHORT, callbacks=[
        _KillAt(client, [], at=4, action=add_worker)]).fit(dX, dy)
    assert len(_workers(client)) == 3
    assert model._dask_recoveries == []
    assert len(model._dask_stats) == 2   # still two shards
    _assert_same_trees(model.booster_,
                       BoostRegressor(**SHORT).fit(X, y).booster_)
    cluster.scale(2)


class _InterruptAt(TrainingCallback):
    """Raises KeyboardInterrupt after round ``KILLED_AT`` (picklable: the
    fitted estimator, callbacks included, travels to predict)."""

    def after_iteration(self, booster, iteration, evals_log):
        if iteration + 1 == KILLED_AT:
            raise KeyboardInterrupt
        return False


def test_interrupted_dask_fit_keeps_whole_rounds(client):
    """A KeyboardInterrupt on the client after round 10: the estimator
    holds those rounds, the first 10 of the uninterrupted model."""
    X, y = _discrete(seed=9)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)

    model = DaskBoostRegressor(**PARAMS, callbacks=[_InterruptAt()])
    with pytest.raises(KeyboardInterrupt):
        model.fit(dX, dy)
    assert model.booster_.n_rounds == KILLED_AT
    whole = BoostRegressor(**PARAMS).fit(X, y)
    np.testing.assert_array_equal(
        model.predict(dX).compute(),
        whole.predict(X, iteration_range=(0, KILLED_AT)))


def test_every_worker_killed_is_a_clear_error(monkeypatch):
    """Both workers killed and none started again (their nannies told to
    let them go): a clear error once the cluster has stayed empty for
    ``NO_WORKER_SECONDS``, never a hang."""
    monkeypatch.setattr(skdask, "NO_WORKER_SECONDS", 2.0)
    X, y = _discrete(n=600, seed=10)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=True,
                                       dashboard_address=None)
    try:
        with distributed.Client(cluster) as client:
            dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)

            def no_restarts():
                for nanny in cluster.workers.values():
                    nanny.close_gracefully()

            model = DaskBoostRegressor(**SHORT, callbacks=[_KillAt(
                client, _workers(client), at=4, action=no_restarts)])
            outcome = _fit_with_timeout(lambda: model.fit(dX, dy),
                                        timeout=60)
    finally:
        cluster.close()
    error = outcome.get("error")
    assert isinstance(error, RuntimeError), outcome
    assert "every worker of the cluster is gone" in str(error)


# -- the objectives with state across rounds ---------------------------------

def test_killed_worker_resumes_xendcg_distributions_and_cox(client):
    """Objectives whose rounds read every row (XE-NDCG's gammas drawn for
    all rows, the distributions' exact Fisher sums, Cox's risk sets over
    all margins), resumed on the shards formed again: the uninterrupted
    model, bit for bit."""
    from skboost.dask import DaskBoostDistributionRegressor

    X, y = _discrete(seed=31)
    rng = np.random.default_rng(31)
    dX, dy = da.from_array(X, chunks=(300, 5)), da.from_array(y, 300)
    qid = np.repeat(np.arange(60), 20)
    relevance = np.clip(np.nan_to_num(X[:, 0]) // 10
                        + rng.integers(0, 2, 1200), 0, 4)
    signed = np.where(rng.random(1200) < 0.7, 1.0, -1.0) * np.exp(y / 20.0)
    fits = [
        (DaskBoostRanker, dict(objective="rank:xendcg"),
         lambda m: m.fit(dX, da.from_array(relevance, 300),
                         qid=da.from_array(qid, 300), client=client)),
        (DaskBoostDistributionRegressor, {},
         lambda m: m.fit(dX, dy, client=client)),
        (DaskBoostRegressor, dict(objective="survival:cox"),
         lambda m: m.fit(dX, da.from_array(signed, 300), client=client))]
    for k, (estimator, extra, fit) in enumerate(fits):
        params = dict(SHORT, **extra)
        reference = fit(estimator(**params, callbacks=[_Quiet()]))
        victim = _victim(client, k % 2)
        model = fit(estimator(**params,
                              callbacks=[_KillAt(client, [victim])]))
        _one_recovery(model, victim)
        _assert_same_trees(model.booster_, reference.booster_)


@pytest.mark.parametrize("case", ["dart", "unbiased"])
def test_killed_worker_ends_dart_and_unbiased_fits_clearly(client, case):
    """A DART fit (rescaled margins) and a debiased ranker (its bias
    estimates) cannot resume: the loss is a clear error, no hang."""
    X, y = _discrete(seed=33)
    dX = da.from_array(X, chunks=(300, 5))
    victim = _victim(client, 1)
    kill = [_KillAt(client, [victim], at=4)]
    if case == "dart":
        model = DaskBoostRegressor(**SHORT, booster="dart", rate_drop=0.2,
                                   callbacks=kill)
        outcome = _fit_with_timeout(
            lambda: model.fit(dX, da.from_array(y, 300)))
    else:
        relevance = np.clip(np.nan_to_num(X[:, 0]) // 10, 0, 4)
        model = DaskBoostRanker(**SHORT, lambdarank_unbiased=True,
                                callbacks=kill)
        outcome = _fit_with_timeout(lambda: model.fit(
            dX, da.from_array(relevance, 300),
            qid=da.from_array(np.repeat(np.arange(60), 20), 300)))
    error = outcome.get("error")
    assert isinstance(error, RuntimeError), outcome
    assert "does not resume on the workers left" in str(error)
    with pytest.raises(Exception, match="not fitted"):
        model.predict(dX)
