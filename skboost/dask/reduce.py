"""The histogram reduction among the Dask workers (``skboost.dask``).

Every shard owns a contiguous range of the features (``feature_ranges``:
about ``n_bins / n_shards`` bins each). At every level each shard builds
the histograms of the level's designated children over its own rows, sends
every other shard that shard's feature range of them directly, worker to
worker (over direct links, ``links.SocketExchange``, or through
Dask's worker RPC, ``PeerExchange``), and sums what it receives for its
own range: a reduce-scatter. The shard then subtracts the other children's histograms
from their parents' (exact: int64 fixed point) and scans its range for the
best split of every (child, feature) pair (``SliceScanner``). Only these
per-feature bests travel to the client, which picks each node's best
among the features it allows (``merge_feature_bests``, under the scan's
total order: higher gain, then lower feature). The histograms themselves
never reach the client.

The speculative per-feature scan lets one client round trip per level
carry both the level's splits and the children's candidates, though the
driver draws the children's column samples after the split. Monotone
constraints give every node bounds that only the driver knows at scan
time: with them the client asks for the scan in a second call per level
(``Shard.scan``).
"""

import asyncio
import pickle
import struct
import threading
import time

import numpy as np

from ..tree._categorical_scan import categorical_left_set
from ..tree._hist_split import find_best_splits_hist
from ..tree._histogram import subtract_histograms
from ..tree.finders.base import NodeTable, SplitFinder
from ..tree.finders.hist import HistogramPool
from ..tree.splits import SPLIT_RECORD, SplitBatch, empty_records

_SLICE_NODE = {"hist_row": (np.int64, ()), "sums": (np.int64, (2,))}


def feature_ranges(bin_ptr, n_shards):
    """Per shard, the range ``(first, stop)`` of features it owns:
    contiguous, in shard order, of about equal numbers of bins (a shard
    may own none when there are more shards than features)."""
    bin_ptr = np.asarray(bin_ptr, dtype=np.int64)
    targets = bin_ptr[-1] * np.arange(n_shards + 1) / n_shards
    cuts = np.searchsorted(bin_ptr, targets, side="left")
    cuts[0], cuts[-1] = 0, bin_ptr.shape[0] - 1
    cuts = np.maximum.accumulate(np.minimum(cuts, bin_ptr.shape[0] - 1))
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def bin_range(bin_ptr, features):
    """The bins ``(first, stop)`` of a feature range."""
    return int(bin_ptr[features[0]]), int(bin_ptr[features[1]])


class SliceScanner:
    """The summed (global) histograms of one shard's features, per open
    node, and the scan of them.

    Parameters
    ----------
    bin_ptr : ndarray of shape (n_features + 1,)
        The bins of every feature (the global layout).
    thresholds : ndarray of shape (n_bins,)
        Tree threshold of each "split after bin".
    features : tuple of int
        The range ``(first, stop)`` of features this shard owns.
    capacity : int
        Histogram rows to start with (the pool grows when full).
    categorical : ndarray of shape (n_features,), bool, or None
    n_threads : int
    """

    def __init__(self, bin_ptr, thresholds, features, capacity,
                 categorical, n_threads):
        self.first, self.stop = features
        self.bins = bin_range(bin_ptr, features)
        self.bin_ptr = (np.asarray(bin_ptr[self.first:self.stop + 1])
                        - self.bins[0]).astype(np.int64)
        self.n_features = self.stop - self.first
        self.thresholds = np.ascontiguousarray(np.atleast_2d(
            np.asarray(thresholds, dtype=np.float64)[
                self.bins[0]:self.bins[1]]))
        self.categorical = (None if categorical is None
                            or not np.any(categorical[self.first:self.stop])
                            else np.asarray(categorical[self.first:self.stop],
                                            dtype=np.uint8))
        self.n_threads = n_threads
        self.pool = HistogramPool(self.bins[1] - self.bins[0], capacity)
        self.table = NodeTable(_SLICE_NODE)

    def start_tree(self, root):
        """Start a tree whose summed root histogram (this range) is
        ``root``; returns the root's exact sums (None for an empty range:
        every feature's bins sum to the node's totals)."""
        self.pool.clear()
        row = self.pool.take(1)
        self.pool.array[row[0]] = root
        t = self.table
        t["hist_row"][0] = row[0]
        if self.n_features == 0:
            return None
        t["sums"][0] = root[self.bin_ptr[0]:self.bin_ptr[1]].sum(axis=0)
        return t["sums"][0].copy()

    def take(self, n):
        """``n`` free rows of the pool, for the summed histograms of the
        next ``split``'s designated children (written there by the
        exchange)."""
        return self.pool.take(n)

    def rows_of(self, nodes):
        """The pool's rows of the summed histograms of ``nodes``."""
        return self.table["hist_row"][nodes]

    def split(self, op, designated=None, built_rows=None):
        """A level's splits (``op``: nodes, records, left, right): the
        children's sums, and with ``designated`` their histograms, the
        designated children's summed ones in the pool's ``built_rows``
        (``take``), the others' in their parents' rows, from which the
        exchange took the designated ones off (``reduce``'s
        ``subtract_from``); without (the children will be leaves) the
        parents' rows are given back."""
        nodes, records, left, right, _ = op
        t = self.table
        t.reserve(int(right.max()) + 1)
        parent_rows = t["hist_row"][nodes].copy()
        t["hist_row"][nodes] = -1
        left_sums = np.column_stack([records["Gq_left"], records["Hq_left"]])
        t["sums"][right] = t["sums"][nodes] - left_sums
        t["sums"][left] = left_sums
        if designated is None:
            self.pool.give_back(parent_rows)
            t["hist_row"][left] = t["hist_row"][right] = -1
            return
        other = np.where(designated == left, right, left)
        t["hist_row"][designated], t["hist_row"][other] = (built_rows,
                                                           parent_rows)

    def retire(self, nodes):
        self.pool.give_back(self.table["hist_row"][nodes])
        self.table["hist_row"][nodes] = -1

    def scan(self, nodes, context, bounds=None, monotone=None,
             per_feature=True):
        """The best split of every (node, feature) pair of this range:
        records of shape (n_nodes, n_features of the range), features
        numbered globally, and the categories each categorical one sends
        left (a dict keyed by (node, feature)). With ``per_feature``
        False, each node's best over the whole range instead (shape
        (n_nodes, 1), or (n_nodes, 0) for an empty range): enough when
        every node may split on every feature (no column sampling, no
        interaction constraints), and about 1.6x faster a scan."""
        n, m = nodes.shape[0], self.n_features
        if n == 0 or m == 0:
            return empty_records(n * m).reshape(n, m), {}
        rows = self.table["hist_row"][nodes]
        sums = self.table["sums"][nodes]
        if per_feature:
            # one pseudo-node per (node, feature), allowed that feature only
            rows, sums = np.repeat(rows, m), np.repeat(sums, m, axis=0)
            allowed = np.tile(np.eye(m, dtype=np.uint8), (n, 1))
        else:
            allowed = np.ones((n, m), dtype=np.uint8)
        width = m if per_feature else 1
        extra = {}
        if bounds is not None:
            extra = dict(bounds=np.repeat(np.asarray(bounds), width, axis=0),
                         monotone=np.asarray(monotone)[self.first:self.stop])
        records = find_best_splits_hist(
            self.pool.array, np.ascontiguousarray(sums), self.bin_ptr,
            self.thresholds, allowed, context=context, hist_rows=rows,
            categorical=self.categorical, **extra)
        left_sets = self._left_sets(np.repeat(nodes, width), records, rows,
                                    context)
        records["feature"][records["feature"] >= 0] += self.first
        return records.reshape(n, width), left_sets

    def _left_sets(self, record_nodes, records, rows, context):
        """As ``HistFinder._left_sets``, for every categorical best
        (``record_nodes``: the node of each record; local feature numbers
        in ``records``)."""
        out = {}
        for k in np.flatnonzero((records["feature"] >= 0)
                                & (records["cat_kind"] > 0)):
            f = int(records["feature"][k])
            first, stop = self.bin_ptr[f], self.bin_ptr[f + 1]
            hist = self.pool.array[rows[k]]
            left, rest_left = categorical_left_set(
                hist, first_bin=first, n_categories=stop - first - 1,
                cat_kind=int(records["cat_kind"][k]),
                split_bin=int(records["split_bin"][k]), context=context)
            if not hist[stop - 1].any():   # the missing bin is empty
                records["default_left"][k] = rest_left
            out[(int(record_nodes[k]), f + self.first)] = left
        return out


def merge_feature_bests(per_feature, allowed):
    """Each node's best split among the features it allows, from the
    best of every (node, feature) pair (``per_feature``, shape (n_nodes,
    n_features), features in increasing order): the candidate of highest
    gain, ties to the lower feature, as the scan's total order
    (``_common.is_better``) picks it over all the candidates at once."""
    n = per_feature.shape[0]
    valid = (per_feature["feature"] >= 0) & allowed.astype(bool)
    gain = np.where(valid, per_feature["gain"], -np.inf)
    best = np.argmax(gain, axis=1) if per_feature.shape[1] else np.zeros(
        n, dtype=np.int64)
    records = empty_records(n)
    found = (valid[np.arange(n), best] if per_feature.shape[1]
             else np.zeros(n, dtype=bool))
    records[found] = per_feature[np.flatnonzero(found), best[found]]
    return records


def _side_by_side(blocks):
    """The shards' per-feature bests (SPLIT_RECORD blocks of shape
    (n_nodes, width_k)) side by side in one array. Written in place:
    ``np.concatenate`` of a structured dtype promotes its fields in Python
    at every call, several times the copy's cost at a level's size."""
    widths = [block.shape[1] for block in blocks]
    out = np.empty((blocks[0].shape[0], sum(widths)), dtype=SPLIT_RECORD)
    at = 0
    for block, width in zip(blocks, widths):
        out[:, at:at + width] = block
        at += width
    return out


class PeerExchange:
    """A shard's reduce-scatter of histograms with the other shards,
    worker to worker (Dask's worker RPC to the peers' actors).

    ``receive`` runs on the worker's event loop (an async actor method),
    while the shard's level call waits for the pieces on the actor's
    thread; the wait polls for an ``abort`` from the client (a lost
    worker, a failed call elsewhere) and gives up after ``timeout``
    seconds, naming the shards whose pieces never came: never a hang.

    Parameters
    ----------
    index : int
        This shard's position among the shards.
    peers : list of (str, str)
        The (worker address, actor key) of every shard, in shard order.
    bin_ranges : list of (int, int)
        The bins each shard owns.
    timeout : float
    """

    poll_seconds = 0.5
    kind = "dask"

    def __init__(self, index, peers, bin_ranges, timeout=600.0):
        from distributed import get_worker

        self.worker = get_worker()
        self.index = index
        self.peers = peers
        self.bin_ranges = bin_ranges
        self.timeout = timeout
        self.seq = 0
        self.inbox = {}
        self.condition = threading.Condition()
        self.aborted = None
        self.sent_bytes = 0
        self.unconfirmed = []   # (peer, future) of sends not yet answered

    def deliver(self, seq, sender, piece):
        """A peer's piece arrived (called on the event loop)."""
        with self.condition:
            self.inbox[(seq, sender)] = piece
            self.condition.notify_all()

    def abort(self, reason):
        with self.condition:
            self.aborted = reason
            self.condition.notify_all()

    def reduce(self, hists, rows, out=None, out_rows=None,
               subtract_from=None):
        """The sum over every shard of ``hists[rows]`` (this shard's
        histograms, shape (n, n_bins, 2)) on this shard's bins (with
        ``out``: written into ``out[out_rows]``, and ``out`` returned;
        with ``subtract_from`` too, each sum is then taken off
        ``out[subtract_from[k]]``, as ``SocketExchange.reduce``)."""
        hists = hists[rows]
        self.seq += 1
        sends = []
        for j, (address, key) in enumerate(self.peers):
            first, stop = self.bin_ranges[j]
            if j == self.index or stop == first:
                continue
            piece = np.ascontiguousarray(hists[:, first:stop])
            self.sent_bytes += piece.nbytes
            sends.append((j, self._send(address, key, self.seq, piece)))
        self.unconfirmed.extend(sends)
        first, stop = self.bin_ranges[self.index]
        total = np.array(hists[:, first:stop])
        if stop > first:
            for piece in self._collect(self.seq):
                total += piece
        if out is None:
            return total
        out[out_rows] = total
        if subtract_from is not None:
            subtract_histograms(out, subtract_from, out_rows, 1)
        return out

    def allgather(self, obj):
        """``obj`` of every shard, in shard order (this shard's own
        included). It travels pickled, so every shard holds copies of its
        own, as between processes, whatever the comms (workers in one
        process would otherwise pass the very objects around)."""
        self.seq += 1
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        sends = [(j, self._send(address, key, self.seq, payload))
                 for j, (address, key) in enumerate(self.peers)
                 if j != self.index]
        self.unconfirmed.extend(sends)
        gathered = [pickle.loads(p) for p in self._collect(self.seq)]
        return gathered[:self.index] + [obj] + gathered[self.index:]

    def _send(self, address, key, seq, piece):
        from distributed.protocol import to_serialize

        worker = self.worker

        async def deliver():
            return await worker.rpc(address).actor_execute(
                actor=key, function="receive",
                args=[to_serialize(seq), to_serialize(self.index),
                      to_serialize(piece)], kwargs={})

        return asyncio.run_coroutine_threadsafe(deliver(),
                                                worker.loop.asyncio_loop)

    def _collect(self, seq):
        """The pieces of exchange ``seq`` from every other shard."""
        expected = {(seq, j) for j in range(len(self.peers))
                    if j != self.index}
        deadline = time.monotonic() + self.timeout
        with self.condition:
            while not expected <= self.inbox.keys():
                if self.aborted is not None:
                    raise RuntimeError(f"skboost.dask: training stopped "
                                       f"({self.aborted})")
                self._check_sends()
                if time.monotonic() > deadline:
                    missing = sorted(self.peers[j][0] for _, j in
                                     expected - self.inbox.keys())
                    raise RuntimeError(
                        "skboost.dask: no histograms from the worker(s) "
                        f"{', '.join(missing)} within {self.timeout:.0f} s")
                self.condition.wait(self.poll_seconds)
            return [self.inbox.pop(key) for key in sorted(expected)]

    def _check_sends(self):
        """Errors of the sends answered so far (a send is confirmed
        lazily, off the critical path: its peer's answer comes after the
        peer has its piece)."""
        for j, future in self.unconfirmed:
            if future.done():
                self._sent(j, future)
        self.unconfirmed = [(j, f) for j, f in self.unconfirmed
                            if not f.done()]

    def flush(self):
        """Wait for the answers of every send (end of a round)."""
        sends, self.unconfirmed = self.unconfirmed, []
        deadline = time.monotonic() + self.timeout
        for j, future in sends:
            while not future.done():
                if self.aborted is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "skboost.dask: could not send histograms to the "
                        f"worker {self.peers[j][0]}")
                try:
                    future.result(timeout=self.poll_seconds)
                except TimeoutError:
                    continue
                except Exception:   # noqa: BLE001 - read by _sent
                    break
            self._sent(j, future)

    def _sent(self, j, future):
        """A send's outcome: an error naming the peer if it failed."""
        try:
            answer = future.result()
        except Exception as error:   # noqa: BLE001 - lost connection etc.
            raise RuntimeError(
                f"skboost.dask: lost the worker {self.peers[j][0]} while "
                f"sending it histograms ({type(error).__name__}: {error}); "
                "training stopped") from error
        if answer.get("status") != "OK":
            raise RuntimeError(
                f"skboost.dask: the worker {self.peers[j][0]} failed to "
                f"take histograms: {answer.get('exception')!r}")


_GLOBAL_NODE = {"sums": (np.int64, (2,)), "count": (np.int64, ())}


class _OutboxPool(HistogramPool):
    """A ``HistogramPool`` over the exchange's outbox
    (``SocketExchange.outbox_histograms``): the local histograms built
    where the peers read them (no copy before a reduce). Should it fill
    up, it grows into memory of its own, and the reduces copy again."""

    def __init__(self, outbox):
        super().__init__(outbox.shape[1], outbox.shape[0], array=outbox)


# A level's all-gather (``ShardFinder._gather``) as raw bytes: a shard's
# int64 values (its root sums, or its row counts of the level's left
# children; or none) and its per-feature bests (SPLIT_RECORD, (n_nodes,
# width); or none), then the categorical left sets (pickled, only when
# there are any). Pickling the records, their dtype included, and
# unpickling them cost more than the rest of a step's own work (the
# shards know the dtypes: they run the same code).
_GATHER_HEAD = struct.Struct("<qqqq")   # values, nodes, width, set bytes


def pack_gathered(mine, bests):
    """``(mine, bests)`` of ``ShardFinder._gather`` as bytes
    (``unpack_gathered`` gives them back): ``mine`` None or int64 values,
    ``bests`` None or (records of SPLIT_RECORD, shape (n, width), their
    left sets: a dict)."""
    # "safe": integers only (a float would not come back as itself)
    values = (b"" if mine is None else np.asarray(mine).astype(
        np.int64, casting="safe").tobytes())
    n_values = -1 if mine is None else len(values) // 8
    if bests is None:
        return _GATHER_HEAD.pack(n_values, -1, 0, 0) + values
    records, sets = bests
    records = np.ascontiguousarray(records, dtype=SPLIT_RECORD)
    pickled = (pickle.dumps(sets, protocol=pickle.HIGHEST_PROTOCOL)
               if sets else b"")
    n, width = records.shape
    return (_GATHER_HEAD.pack(n_values, n, width, len(pickled)) + values
            + records.tobytes() + pickled)


def unpack_gathered(payload):
    """The ``(mine, bests)`` ``pack_gathered`` packed (the arrays are
    copies: writable, the payload not kept)."""
    n_values, n, width, n_pickled = _GATHER_HEAD.unpack_from(payload)
    offset = _GATHER_HEAD.size
    mine = None
    if n_values >= 0:
        mine = np.frombuffer(payload, dtype=np.int64, count=n_values,
                             offset=offset).copy()
        offset += 8 * n_values
    if n < 0:
        return mine, None
    records = np.frombuffer(payload, dtype=SPLIT_RECORD, count=n * width,
                            offset=offset).reshape(n, width).copy()
    offset += records.nbytes
    sets = (pickle.loads(payload[offset:offset + n_pickled]) if n_pickled
            else {})
    return mine, (records, sets)


class ShardFinder(SplitFinder):
    """The split finder every shard's copy of the growth driver calls: the
    hist method over the rows of every shard.

    This shard's rows live in ``local`` (a ``HistFinder``: row partition,
    its own histograms, the smaller child built and the larger
    subtracted). At the root and at every level the designated children's
    histograms are reduce-scattered among the shards (``PeerExchange``),
    each shard scans its features (``SliceScanner``), and the per-feature
    bests and row counts are all-gathered, so every shard holds the same
    candidates and makes the same choices (``merge_feature_bests``). The
    child built is designated by the global hessian sums (the smaller one,
    the other subtracted from the parent); the children are returned to
    the driver in the order of their global row counts, as single-node
    training orders them (the column sampler draws node masks in that
    order).

    Parameters
    ----------
    local : HistFinder
    scanner : SliceScanner
    exchange : PeerExchange
    speculate : bool
        Scan the children with the level's exchange (False with monotone
        constraints: their bounds come at ``find_splits``).
    per_feature : bool
        Keep the best split of every (node, feature) pair, for the driver
        to choose among the features each node allows (column sampling,
        interaction constraints); False when every node may split on
        every feature: each shard's best per node is then enough.
    stats : dict
        Seconds spent building, exchanging and scanning, added to.
    """

    def __init__(self, local, scanner, exchange, speculate, stats,
                 per_feature=True):
        self.local = local
        self.scanner = scanner
        self.exchange = exchange
        self.speculate = speculate
        self.per_feature = per_feature
        self.stats = stats
        self.table = NodeTable(_GLOBAL_NODE)
        self.bests = None
        self.n_active = 0
        self._own_pool = None   # the local finder's, while in the outbox

    def set_tree(self, scales, n_active):
        """The next tree's fixed-point scales and rows, over every shard."""
        self.local.fixed_scales = scales
        self.n_active = n_active

    # the round's gradient maxima go to the local finder's fixed-point
    # gradients: the scales are the shards' (``set_tree``), and with the
    # maxima given they make no pass over the rows for their own
    takes_gradient_maxima = True

    def start_tree(self, gpair, active, gradient_maxima=None):
        start = time.perf_counter()
        f = self.local
        self._place_local_pool()
        if gradient_maxima is not None and f.takes_gradient_maxima:
            f.start_tree(gpair, active, gradient_maxima=gradient_maxima)
        else:
            f.start_tree(gpair, active)
        self.scales = f.scales
        summed = self._reduce(f.pool.array, f.table["hist_row"][:1], start)
        f.retire(np.zeros(1, dtype=np.int64))   # the summed copy lives on
        sums = self.scanner.start_tree(summed[0])
        gathered = self._gather(sums, np.zeros(1, dtype=np.int64))
        t = self.table
        t["sums"][0] = next(s for s in gathered if s is not None)
        t["count"][0] = self.n_active
        G, H = t["sums"][0] / self.scales
        return G, H

    def _reduce(self, hists, rows, start, out=None, out_rows=None,
                subtract_from=None):
        """The histograms ``hists[rows]`` summed over the shards on this
        shard's features (into ``out[out_rows]`` when given, and taken
        off ``out[subtract_from]``)."""
        built = time.perf_counter()
        summed = self.exchange.reduce(hists, rows, out, out_rows,
                                      subtract_from=subtract_from)
        self.stats["build_seconds"] += built - start
        self.stats["exchange_seconds"] += time.perf_counter() - built
        return summed

    def _gather(self, mine, nodes, scan=False, bounds=None, monotone=None):
        """``mine`` of every shard with its per-feature bests of ``nodes``
        (when speculating, or ``scan``); keeps the bests, features side by
        side."""
        start = time.perf_counter()
        bests = None
        if self.speculate or scan:
            bests = self.scanner.scan(nodes, self.local.context, bounds,
                                      monotone, self.per_feature)
        scanned = time.perf_counter()
        gathered = [unpack_gathered(p) for p in self.exchange.allgather(
            pack_gathered(mine, bests))]
        self.stats["scan_seconds"] += scanned - start
        self.stats["exchange_seconds"] += time.perf_counter() - scanned
        self.bests = None
        if bests is not None:
            left_sets = {}
            for _, (_, sets) in gathered:
                left_sets.update(sets)
            self.bests = (nodes, _side_by_side(
                [records for _, (records, _) in gathered]), left_sets)
        return [m for m, _ in gathered]

    def find_splits(self, batch):
        nodes = batch.nodes
        if self.bests is None or not np.array_equal(
                np.sort(self.bests[0]), np.sort(nodes)):
            # monotone bounds, known now: scan with them
            self._gather(None, nodes, scan=True, bounds=batch.bounds,
                         monotone=batch.monotone)
        known, candidates, left_sets = self.bests
        position = np.empty(int(known.max()) + 1, dtype=np.int64)
        position[known] = np.arange(known.shape[0])
        candidates = candidates[position[nodes]]
        allowed = batch.allowed
        if not self.per_feature:   # a best per shard, every feature allowed
            if not np.all(allowed):
                raise RuntimeError("skboost.dask: a node may not split on "
                                   "every feature, but only the best split "
                                   "of each was kept (a bug: please report "
                                   "it)")
            allowed = np.ones(candidates.shape, dtype=np.uint8)
        records = merge_feature_bests(candidates, allowed)
        sets = None
        if left_sets:   # categorical splits were found: each node's set
            sets = [left_sets.get((int(node), int(feature)))
                    if feature >= 0 and kind > 0 else None
                    for node, feature, kind in zip(nodes, records["feature"],
                                                   records["cat_kind"])]
            if all(x is None for x in sets):
                sets = None
        G, H = (self.table["sums"][nodes] / self.scales).T
        return SplitBatch(records, G, H, sets)

    def apply_splits(self, nodes, splits, left, right, find_next):
        start = time.perf_counter()
        t = self.table
        t.reserve(int(right.max()) + 1)
        records = splits.records
        left_sums = np.column_stack([records["Gq_left"], records["Hq_left"]])
        right_sums = t["sums"][nodes] - left_sums
        t["sums"][left], t["sums"][right] = left_sums, right_sums
        op = (nodes, records, left, right, splits.left_sets)
        if not find_next:   # the children will be leaves
            self._split_last(nodes, splits, left, right)
            self.scanner.split(op)
            return np.concatenate([left, right])
        # the child of smaller hessian sum is built, the other subtracted
        designated = np.where(left_sums[:, 1] <= right_sums[:, 1], left,
                              right)
        self._split_local(nodes, splits, left, right, designated)
        lt = self.local.table
        summed_rows = self.scanner.take(nodes.shape[0])
        # the designated children's sums, taken off their parents' in
        # the same pass: the parents' rows then hold the other children's
        self._reduce(self.local.pool.array, lt["hist_row"][designated],
                     start, out=self.scanner.pool.array, out_rows=summed_rows,
                     subtract_from=self.scanner.rows_of(nodes))
        self.local.retire(designated)   # the summed copies live on
        self.scanner.split(op, designated, summed_rows)
        n_left = np.sum(self._gather(lt["end"][left] - lt["begin"][left],
                                     np.concatenate([left, right])), axis=0)
        n_right = t["count"][nodes] - n_left
        t["count"][left], t["count"][right] = n_left, n_right
        # by the global row counts, in the order the local finder's kind
        # gives them on one machine
        return self.local.children_order(left, right, n_left <= n_right)

    def _split_last(self, nodes, splits, left, right):
        """The last level's splits on this shard's rows: unpartitioned
        when the local finder defers them (its ``finish_tree`` gives
        ``SplitLeafRows``), else partitioned."""
        f = self.local
        if f._can_defer(splits):
            f.table.reserve(int(right.max()) + 1)
            f._defer_last_splits(nodes, splits, left, right)
        else:
            self._split_local(nodes, splits, left, right, None)

    def _split_local(self, nodes, splits, left, right, designated):
        """This shard's rows of ``nodes`` split, and the local histograms
        of the ``designated`` children built (None: the children will be
        leaves). Only those: the other children's come by subtraction
        from the summed histograms (``SliceScanner.split``), so the local
        ones of the parents are not kept either (``HistFinder``'s own
        ``apply_splits`` would build the smaller child by local rows and
        subtract the other)."""
        f = self.local
        t = f.table
        t.reserve(int(right.max()) + 1)
        begin, end = t["begin"][nodes], t["end"][nodes]
        mid = begin + f._split_rows(begin, end, splits)
        f.retire(nodes)
        t["begin"][left], t["end"][left] = begin, mid
        t["begin"][right], t["end"][right] = mid, end
        t["hist_row"][left] = t["hist_row"][right] = -1
        if designated is not None:
            self._place_local_pool()
            rows = f.pool.take(nodes.shape[0])
            t["hist_row"][designated] = rows
            is_left = designated == left
            f.build_histograms(np.where(is_left, begin, mid),
                               np.where(is_left, mid, end), rows)

    def _place_local_pool(self):
        """Before a build: the local finder's pool in the exchange's
        outbox when the peers are done reading it (the histograms built
        there go to the reduce without a copy), else in memory of its
        own. The local pool holds no histogram between builds (each is
        retired after its reduce), so it may change at every one."""
        f = self.local
        outbox = self._writable_outbox(f.binned.n_bins)
        if outbox is None:
            if isinstance(f.pool, _OutboxPool):
                f.pool = self._memory_pool(f.binned.n_bins,
                                           f.pool.array.shape[0])
            return
        if isinstance(f.pool, _OutboxPool) and f.pool.array is outbox:
            return   # already there
        if not isinstance(f.pool, _OutboxPool):
            self._own_pool = f.pool   # kept for when the outbox is busy
        f.pool = _OutboxPool(outbox)

    def _writable_outbox(self, n_bins):
        """The exchange's outbox as histograms of ``n_bins`` when the
        local ones may be built there now; None without an outbox (Dask's
        comms, shards on other hosts), when not one fits, or while the
        peers may still read it."""
        exchange = self.exchange
        if (getattr(exchange, "outbox_histograms", None) is None
                or not exchange.outbox_writable()):
            return None
        return exchange.outbox_histograms(n_bins)

    def _memory_pool(self, n_bins, capacity):
        """The local pool in memory of its own (all rows free): the one
        kept from before the outbox when its bins still fit."""
        own = self._own_pool
        pool = (own if own is not None and own.n_bins == n_bins
                else HistogramPool(n_bins, capacity))
        pool.clear()
        return pool

    def retire(self, nodes):
        self.local.retire(nodes)
        if len(nodes):
            self.scanner.retire(nodes)

    def finish_tree(self, tree):
        return self.local.finish_tree(tree)


def tree_digest(trees):
    """A digest of the trees' arrays (the client checks every shard grew
    the same trees)."""
    import hashlib

    digest = hashlib.sha1()
    for tree in trees:
        for name in ("feature", "threshold", "left_child", "right_child",
                     "value", "default_left", "cat_bits"):
            digest.update(np.ascontiguousarray(getattr(tree, name)).tobytes())
    return digest.hexdigest()
