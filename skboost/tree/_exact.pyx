"""Sparsity-aware exact greedy split finder (paper Algorithms 1 and 3).

The training matrix is presorted once per fit (see ``_presort.py``): for each
feature a block of (value, row) pairs holding the non-missing entries only,
sorted by value. One level of the tree is grown at a time.

Each block is kept regrouped by the open nodes of the level (``NodeBlocks``):
the entries of one node form one contiguous group, still in value order::

    block of feature j:  [ node 2: v0 <= v3 <= ... ][ node 0: v1 <= v2 ... ]

so a node's candidates for a feature come from one walk of its group, with
its sums in registers. After a level, each group is split in place into its
node's children's groups (one stable pass; rows of finished leaves drop
out), like the attribute lists of SPRINT (Shafer, Agrawal and Mehta, 1996).
The cost of a level is linear in the present entries of the open nodes.

A candidate threshold sits between two consecutive distinct values of a node
(their midpoint). The forward walk puts missing values on the right; for the
nodes where feature j has missing values a backward walk puts them on the
left, so each split learns the direction of missing values. The group's
gradients are gathered once into a scratch buffer that both walks read.

Most candidates cannot beat their node's best so far; each is first tested
without the two divisions of its gain (see ``consider``).

Threads split the features. Each thread keeps its own best candidates;
bests are merged with a total order (gain, feature, threshold), so the
result does not depend on the number of threads.
"""

import numpy as np

cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.string cimport memcpy

from ._common cimport (NO_FEATURE, NO_SLOT, PREFETCH_ROWS, SplitCandidate,
                       int32_t, int64_t, prefetch, uint8_t, is_better,
                       reset_candidate)
from ._gain cimport (RegParams, children_score_floor, is_l2_only,
                     leaf_score, make_reg_params, may_reach,
                     split_loss_reduction, split_loss_reduction_l2)


cdef class SortedColumns:
    """Presorted blocks of the present entries of each feature (CSC-like).

    Feature j owns ``values[col_ptr[j]:col_ptr[j+1]]`` (sorted, no NaN) and
    the matching ``rows``. Validated once here: the scan kernels rely on it
    and never re-check it.

    With ``missing_ptr`` (sparse input whose absent entries are 0.0), the
    blocks hold the stored values, feature j's stored *missing* entries are
    the rows ``missing_rows[missing_ptr[j]:missing_ptr[j+1]]``, and every
    other row has the value 0.0 (the implicit zero block, whose statistics
    the kernels recover from the node totals).

    Parameters
    ----------
    col_ptr : array-like of shape (n_features + 1,), int64
    values : array-like of shape (n_entries,), float32
    rows : array-like of shape (n_entries,), int32
    n_rows : int
        Number of rows of the matrix the entries come from.
    missing_ptr : array-like of shape (n_features + 1,), int64, optional
    missing_rows : array-like of shape (n_missing,), int32, optional
    """

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, col_ptr, values, rows, Py_ssize_t n_rows,
                 missing_ptr=None, missing_rows=None):
        col_ptr = np.ascontiguousarray(col_ptr, dtype=np.int64)
        values = np.ascontiguousarray(values, dtype=np.float32)
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        if col_ptr.ndim != 1 or col_ptr.shape[0] < 1 or col_ptr[0] != 0:
            raise ValueError("col_ptr must be 1-d, start at 0")
        if np.any(np.diff(col_ptr) < 0):
            raise ValueError("col_ptr must be non-decreasing")
        if values.ndim != 1 or rows.ndim != 1 or not (
                col_ptr[-1] == values.shape[0] == rows.shape[0]):
            raise ValueError("col_ptr does not match the sorted blocks")
        if n_rows < 0 or (rows.size and (rows.min() < 0
                                         or rows.max() >= n_rows)):
            raise ValueError("rows must be indices in [0, n_rows)")
        if np.isnan(values).any():
            raise ValueError("the sorted blocks hold present values only")
        self.col_ptr = col_ptr
        self.values = values
        self.rows = rows
        self.n_rows = n_rows
        self.n_features = col_ptr.shape[0] - 1
        self.zero_absent = missing_ptr is not None
        if not self.zero_absent:
            missing_ptr = np.zeros(col_ptr.shape[0], dtype=np.int64)
            missing_rows = np.empty(0, dtype=np.int32)
        missing_ptr = np.ascontiguousarray(missing_ptr, dtype=np.int64)
        missing_rows = np.ascontiguousarray(missing_rows, dtype=np.int32)
        if missing_ptr.shape != col_ptr.shape or missing_ptr[0] != 0 or (
                missing_ptr[-1] != missing_rows.shape[0]) or np.any(
                    np.diff(missing_ptr) < 0):
            raise ValueError("missing_ptr does not match missing_rows")
        if missing_rows.size and (missing_rows.min() < 0
                                  or missing_rows.max() >= n_rows):
            raise ValueError("missing_rows must be indices in [0, n_rows)")
        self.missing_ptr = missing_ptr
        self.missing_rows = missing_rows


# --------------------------------------------------------------------------
# The blocks regrouped by node
# --------------------------------------------------------------------------

cdef class NodeBlocks:
    """The presorted blocks regrouped by the open nodes of one level.

    Feature j's groups are ``group_slot[i]``, ``group_end[i]`` for i in
    ``group_ptr[j] : group_ptr[j] + group_count[j]``: group i holds the
    entries ``values[start:group_end[i]]`` and ``rows[...]`` of the node in
    slot ``group_slot[i]``, where ``start`` is the previous group's end
    (``col_ptr[j]`` for the first). Within a group, entries keep the block's
    order (value, then row). Rows whose slot is NO_SLOT are in no group.

    ``start`` groups the blocks for a level's ``row_slot``; ``split``
    plans the move of every group into its node's children's groups after
    the level's splits (cheaper: one stable pass, in place, over the
    entries still open). ``find_best_splits`` carries a planned split out
    feature by feature as it scans; ``flush`` (called by ``groups``,
    ``route_rows`` and ``split``) carries it out at once. The grouping
    always matches the ``row_slot`` it was made for; the finder relies on
    it.

    Parameters
    ----------
    columns : SortedColumns
    """

    cdef readonly SortedColumns columns
    cdef readonly Py_ssize_t longest     # entries of the longest block
    cdef readonly Py_ssize_t n_slots
    cdef readonly object values          # the originals or the working copy
    cdef readonly object rows
    cdef readonly object group_ptr
    cdef readonly object group_count
    cdef readonly object group_slot
    cdef readonly object group_end
    cdef object _work_values
    cdef object _work_rows
    cdef object _pending         # the arrays of a planned split, or None
    cdef object _spare_values    # per-thread buffers of a split under way
    cdef object _spare_rows

    def __init__(self, SortedColumns columns not None):
        self.columns = columns
        lengths = np.diff(columns.col_ptr)
        self.longest = int(lengths.max()) if lengths.size else 0
        self._work_values = None
        self._work_rows = None
        self.values = columns.values
        self.rows = columns.rows
        self.n_slots = 0
        self.group_ptr = np.zeros(columns.n_features + 1, dtype=np.int64)
        self.group_count = np.zeros(columns.n_features, dtype=np.int64)
        self.group_slot = np.empty(0, dtype=np.int32)
        self.group_end = np.empty(0, dtype=np.int64)
        self._pending = None

    def _work(self):
        """The working copy the groups are written to (made once)."""
        if self._work_values is None:
            n = self.columns.values.shape[0]
            self._work_values = np.empty(n, dtype=np.float32)
            self._work_rows = np.empty(n, dtype=np.int32)
        return self._work_values, self._work_rows

    def start(self, row_slot, Py_ssize_t n_slots, int n_threads):
        """Group the presorted blocks by ``row_slot`` (n_rows,) int32, whose
        values are slots in [0, n_slots) or NO_SLOT."""
        columns = self.columns
        row_slot = _checked_row_slot(row_slot, columns.n_rows, n_slots)
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self._pending = None
        if n_slots == 1 and not np.any(row_slot):
            self._one_group_per_feature()
            return
        work_values, work_rows = self._work()
        lengths = np.diff(columns.col_ptr)
        group_ptr = np.zeros(columns.n_features + 1, dtype=np.int64)
        np.cumsum(np.minimum(lengths, n_slots), out=group_ptr[1:])
        group_slot = np.empty(group_ptr[-1], dtype=np.int32)
        group_end = np.empty(group_ptr[-1], dtype=np.int64)
        group_count = np.zeros(columns.n_features, dtype=np.int64)
        position = np.empty((n_threads, max(n_slots, 1)), dtype=np.int64)
        cdef Py_ssize_t position_stride = max(n_slots, 1)
        cdef BlockData src = _block_data(columns.col_ptr, columns.values,
                                         columns.rows)
        cdef BlockData dst = _block_data(columns.col_ptr, work_values,
                                         work_rows)
        cdef GroupData out = _group_data(group_ptr, group_count, group_slot,
                                         group_end)
        cdef const int32_t[::1] slots = row_slot
        cdef int64_t[:, ::1] pos = position
        cdef int64_t* pos_base = &pos[0, 0]
        cdef const int32_t* slots_base = &slots[0]
        cdef Py_ssize_t f, n_features = columns.n_features
        for f in prange(n_features, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            regroup_feature(<int32_t> f, &src, &dst, &out, slots_base,
                            n_slots, pos_base + threadid() * position_stride)
        self._set_groups(work_values, work_rows, group_ptr, group_count,
                         group_slot, group_end, n_slots)

    def _one_group_per_feature(self):
        """Every row in slot 0: each nonempty block is one group, read in
        place."""
        col_ptr = self.columns.col_ptr
        nonempty = np.diff(col_ptr) > 0
        group_count = nonempty.astype(np.int64)
        group_ptr = np.zeros(col_ptr.shape[0], dtype=np.int64)
        np.cumsum(group_count, out=group_ptr[1:])
        self._set_groups(self.columns.values, self.columns.rows, group_ptr,
                         group_count,
                         np.zeros(group_ptr[-1], dtype=np.int32),
                         col_ptr[1:][nonempty].copy(), 1)

    def _set_groups(self, values, rows, group_ptr, group_count, group_slot,
                    group_end, n_slots):
        self.values = values
        self.rows = rows
        self.group_ptr = group_ptr
        self.group_count = group_count
        self.group_slot = group_slot
        self.group_end = group_end
        self.n_slots = n_slots

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def split(self, row_slot, left_slot, Py_ssize_t n_next, int n_threads):
        """Move each group into the groups of its node's children, after a
        level's rows moved to their children's slots. Planned here; the
        entries move when the next level is scanned (``find_best_splits``
        moves a feature's entries just before it scans them, while they
        are in cache) or at ``flush``.

        ``row_slot`` (n_rows,) holds the rows' slots at the next level (in
        [0, n_next) or NO_SLOT); ``left_slot`` (n_slots,) the left child's
        slot of each current slot, NO_SLOT for a node that became a leaf
        (the right child is ``left_slot + 1``). An entry whose row is in
        neither child leaves the groups.
        """
        columns = self.columns
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.flush(n_threads)
        row_slot = _checked_row_slot(row_slot, columns.n_rows, n_next)
        left_slot = np.ascontiguousarray(left_slot, dtype=np.int32)
        if left_slot.shape != (self.n_slots,) or (left_slot.size and (
                left_slot.min() < NO_SLOT
                or left_slot.max() + 1 >= max(n_next, 1))):
            raise ValueError("left_slot must hold, per slot, NO_SLOT or a "
                             "slot whose right neighbour is below n_next")
        col_ptr = columns.col_ptr
        group_count = self.group_count
        # entries now held by each feature's groups, an upper bound on the
        # groups of the next level with 2 per group and n_next
        held = np.zeros(columns.n_features, dtype=np.int64)
        has_groups = group_count > 0
        last = self.group_ptr[:-1][has_groups] + group_count[has_groups] - 1
        held[has_groups] = self.group_end[last] - col_ptr[:-1][has_groups]
        next_ptr = np.zeros(columns.n_features + 1, dtype=np.int64)
        np.cumsum(np.minimum(np.minimum(held, n_next), 2 * group_count),
                  out=next_ptr[1:])
        self._pending = dict(
            row_slot=row_slot.copy(), left_slot=left_slot, ptr=next_ptr,
            balanced=_balanced_children(row_slot, left_slot, n_next),
            count=np.zeros(columns.n_features, dtype=np.int64),
            slot=np.empty(next_ptr[-1], dtype=np.int32),
            end=np.empty(next_ptr[-1], dtype=np.int64))
        self.n_slots = n_next

    @property
    def split_pending(self):
        """Whether a split is planned but its entries not moved yet."""
        return self._pending is not None

    def flush(self, int n_threads=1):
        """Move the entries of a pending split now, for every feature (the
        finder does it feature by feature, just before it scans one)."""
        if self._pending is None:
            return
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        cdef SplitStep step = self._split_step(n_threads)
        cdef Py_ssize_t f, n_features = self.columns.n_features
        for f in prange(n_features, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            split_step_feature(&step, <int32_t> f, threadid())
        self._commit()

    cdef SplitStep _split_step(self, int n_threads) except *:
        """Pointers of the pending split, with spare buffers for
        ``n_threads`` (kept alive here until the commit)."""
        pending = self._pending
        work_values, work_rows = self._work()
        col_ptr = self.columns.col_ptr
        self._spare_values = np.empty((n_threads, max(self.longest, 1)),
                                      dtype=np.float32)
        self._spare_rows = np.empty((n_threads, max(self.longest, 1)),
                                    dtype=np.int32)
        cdef float[:, ::1] spare_values = self._spare_values
        cdef int32_t[:, ::1] spare_rows = self._spare_rows
        cdef const int32_t[::1] slots = pending["row_slot"]
        cdef const int32_t[::1] left = pending["left_slot"]
        cdef const uint8_t[::1] balanced = pending["balanced"]
        cdef SplitStep step
        step.src = _block_data(col_ptr, self.values, self.rows)
        step.dst = _block_data(col_ptr, work_values, work_rows)
        step.now = _group_data(self.group_ptr, self.group_count,
                               self.group_slot, self.group_end)
        step.out = _group_data(pending["ptr"], pending["count"],
                               pending["slot"], pending["end"])
        step.row_slot = &slots[0]
        step.left_slot = &left[0] if left.shape[0] else NULL
        step.balanced = &balanced[0]
        step.spare_values = &spare_values[0, 0]
        step.spare_rows = &spare_rows[0, 0]
        step.spare_stride = spare_values.shape[1]
        return step

    def _commit(self):
        """The pending split's groups become the current ones."""
        pending = self._pending
        work_values, work_rows = self._work()
        self._pending = None
        self._spare_values = None
        self._spare_rows = None
        self._set_groups(work_values, work_rows, pending["ptr"],
                         pending["count"], pending["slot"], pending["end"],
                         self.n_slots)

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def route_rows(self, int32_t[::1] row_slot not None, split_feature,
                   threshold, default_left, left_slot, Py_ssize_t n_next,
                   int n_threads, slot_node=None, row_leaf=None):
        """Move each row of a split node to its child's slot (in place), as
        ``_partition.apply_level_splits`` does, from the groups: a row goes
        where its node sends missing values, unless the split feature's
        group of its node holds its value (then ``value < threshold`` goes
        left). Rows of nodes that became leaves get NO_SLOT. Numeric splits
        only, and not with absent entries read as 0.0 (whose rows have no
        entry yet a value). Returns the number of rows in each new slot.

        ``split_feature`` (n_slots,) holds NO_FEATURE for a node that
        became a leaf; ``left_slot`` as in ``split``. With ``slot_node``
        (n_slots,) int32, the node of each slot, the rows of the nodes that
        became leaves get that node in ``row_leaf`` (n_rows,) int32.
        """
        columns = self.columns
        cdef Py_ssize_t n_slots = self.n_slots
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.flush(n_threads)
        if columns.zero_absent:
            raise ValueError("route_rows cannot place the rows of an "
                             "implicit zero block")
        split_feature = np.ascontiguousarray(split_feature, dtype=np.int32)
        threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        default_left = np.ascontiguousarray(default_left, dtype=np.uint8)
        left_slot = np.ascontiguousarray(left_slot, dtype=np.int32)
        if not (split_feature.shape == threshold.shape == default_left.shape
                == left_slot.shape == (n_slots,)):
            raise ValueError("one split_feature, threshold, default_left "
                             "and left_slot per slot")
        split = split_feature != NO_FEATURE
        if split.any() and (split_feature.min() < NO_FEATURE
                            or split_feature.max() >= columns.n_features
                            or left_slot[split].min() < 0
                            or left_slot[split].max() + 1 >= n_next):
            raise ValueError("a split's feature or children are out of range")
        _checked_row_slot(row_slot, columns.n_rows, n_slots)
        if n_slots == 0 or row_slot.shape[0] == 0:
            return np.zeros(n_next, dtype=np.int64)  # no row to move
        # every row of a split node to its node's default child
        default_child = np.full(max(n_slots, 1), NO_SLOT, dtype=np.int32)
        default_child[:n_slots][split] = (
            left_slot + 1 - (default_left != 0))[split]
        cdef bint track = slot_node is not None
        if track:
            slot_node = np.ascontiguousarray(slot_node, dtype=np.int32)
            if slot_node.shape != (n_slots,) or not isinstance(
                    row_leaf, np.ndarray) or row_leaf.dtype != np.int32 or (
                        row_leaf.shape != (columns.n_rows,)):
                raise ValueError("slot_node (n_slots,) and row_leaf "
                                 "(n_rows,) int32 go together")
        cdef const int32_t[::1] node_of = (slot_node if track
                                           else default_child)
        cdef int32_t[::1] leaf_view = (row_leaf if track
                                       else np.empty(1, dtype=np.int32))
        cdef const int32_t[::1] child = default_child
        cdef int32_t* slots = &row_slot[0] if row_slot.shape[0] else NULL
        cdef Py_ssize_t n_rows = row_slot.shape[0]
        cdef BlockData data = _block_data(columns.col_ptr, self.values,
                                          self.rows)
        cdef GroupData groups = _group_data(self.group_ptr, self.group_count,
                                            self.group_slot, self.group_end)
        cdef const int32_t[::1] feature = split_feature
        cdef const double[::1] cut = threshold
        cdef const int32_t[::1] left = left_slot
        # (the loops live in nogil functions: checked indexing here would
        # make every thread take the GIL at the start of a parallel loop)
        with nogil:
            to_default_children(slots, n_rows, &child[0], &node_of[0],
                                &leaf_view[0] if track else NULL, n_threads)
            route_split_nodes(&data, &groups, n_slots, &feature[0],
                              &cut[0], &left[0], slots, n_threads)
        return _slot_counts(slots, n_rows, n_next, n_threads)

    def groups(self, Py_ssize_t feature):
        """Feature ``feature``'s groups as {slot: rows in group order}."""
        if not 0 <= feature < self.columns.n_features:
            raise ValueError("feature out of range")
        self.flush()
        out = {}
        start = self.columns.col_ptr[feature]
        first = self.group_ptr[feature]
        for i in range(first, first + self.group_count[feature]):
            end = self.group_end[i]
            out[int(self.group_slot[i])] = np.asarray(self.rows[start:end])
            start = end
        return out


def _balanced_children(row_slot, left_slot, Py_ssize_t n_next):
    """Per slot (uint8, at least one entry): whether its children hold
    comparable numbers of rows (the smaller one at least a tenth)."""
    rows = np.bincount(row_slot[row_slot >= 0], minlength=max(n_next, 2))
    split = left_slot >= 0
    left_rows = np.where(split, rows[np.maximum(left_slot, 0)], 0)
    right_rows = np.where(split, rows[np.maximum(left_slot, 0) + 1], 0)
    balanced = 10 * np.minimum(left_rows, right_rows) >= (
        left_rows + right_rows)
    out = np.zeros(max(left_slot.shape[0], 1), dtype=np.uint8)
    out[:left_slot.shape[0]] = split & balanced
    return out


@cython.boundscheck(True)
@cython.wraparound(True)
def _checked_row_slot(row_slot, Py_ssize_t n_rows, Py_ssize_t n_slots):
    row_slot = np.ascontiguousarray(row_slot, dtype=np.int32)
    if row_slot.shape != (n_rows,):
        raise ValueError("row_slot must have one entry per row")
    if row_slot.size and (row_slot.min() < NO_SLOT
                          or row_slot.max() >= n_slots):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
    if n_rows == 0:
        return np.zeros(1, dtype=np.int32)  # a pointer to take; never read
    return row_slot


ctypedef struct BlockData:
    # presorted entries (the originals or the working copy)
    const int64_t* col_ptr
    float* values
    int32_t* rows


ctypedef struct GroupData:
    const int64_t* ptr      # (n_features + 1,) room of each feature's groups
    int64_t* count          # (n_features,)
    int32_t* slot
    int64_t* end


ctypedef struct SplitStep:
    # a planned split of the groups (see NodeBlocks.split)
    BlockData src
    BlockData dst
    GroupData now
    GroupData out
    const int32_t* row_slot
    const int32_t* left_slot
    # per current slot: its children hold comparable numbers of rows
    const uint8_t* balanced
    float* spare_values    # one buffer per thread, spare_stride apart
    int32_t* spare_rows
    Py_ssize_t spare_stride


cdef inline void split_step_feature(const SplitStep* step, int32_t f,
                                    int tid) noexcept nogil:
    split_feature_groups(f, &step.src, &step.dst, &step.now, &step.out,
                         step.row_slot, step.left_slot,
                         step.spare_values + tid * step.spare_stride,
                         step.spare_rows + tid * step.spare_stride)


cdef BlockData _block_data(col_ptr, values, rows):
    """Pointers to validated arrays. The originals are only read; the
    pointers drop const so one kernel serves both (never written through
    unless they are the working copy)."""
    cdef const int64_t[::1] ptr = col_ptr
    cdef const float[::1] v = values
    cdef const int32_t[::1] r = rows
    cdef BlockData out
    out.col_ptr = &ptr[0]
    out.values = <float*> &v[0] if v.shape[0] else NULL
    out.rows = <int32_t*> &r[0] if r.shape[0] else NULL
    return out


cdef GroupData _group_data(ptr, count, slot, end):
    cdef const int64_t[::1] p = ptr
    cdef int64_t[::1] c = count
    cdef int32_t[::1] s = slot
    cdef int64_t[::1] e = end
    cdef GroupData out
    out.ptr = &p[0]
    out.count = &c[0] if c.shape[0] else NULL
    out.slot = &s[0] if s.shape[0] else NULL
    out.end = &e[0] if e.shape[0] else NULL
    return out


cdef void regroup_feature(int32_t f, const BlockData* src,
                          const BlockData* dst, const GroupData* out,
                          const int32_t* row_slot, Py_ssize_t n_slots,
                          int64_t* position) noexcept nogil:
    """Feature f's block (the originals) into groups in slot order: a
    stable counting sort by slot."""
    cdef int64_t k, begin = src.col_ptr[f], end = src.col_ptr[f + 1]
    cdef int64_t next_start = begin, n_groups = 0
    cdef int64_t first = out.ptr[f]
    cdef Py_ssize_t s
    cdef int32_t slot
    for s in range(n_slots):
        position[s] = 0
    for k in range(begin, end):
        slot = row_slot[src.rows[k]]
        if slot != NO_SLOT:
            position[slot] += 1
    for s in range(n_slots):
        if position[s] == 0:
            continue
        out.slot[first + n_groups] = <int32_t> s
        next_start += position[s]
        out.end[first + n_groups] = next_start
        position[s] = next_start - position[s]
        n_groups += 1
    out.count[f] = n_groups
    for k in range(begin, end):
        slot = row_slot[src.rows[k]]
        if slot != NO_SLOT:
            dst.values[position[slot]] = src.values[k]
            dst.rows[position[slot]] = src.rows[k]
            position[slot] += 1


cdef void split_feature_groups(int32_t f, const BlockData* src,
                               const BlockData* dst, const GroupData* now,
                               const GroupData* out, const int32_t* row_slot,
                               const int32_t* left_slot, float* spare_values,
                               int32_t* spare_rows) noexcept nogil:
    """Each group of feature f into its left child's entries then its
    right child's, both in the group's order. Written from the start of the
    block: the writes never pass the reads, so the working copy can be read
    and written at once (the right child's entries wait in the spare
    buffers)."""
    cdef int64_t i, k, begin = src.col_ptr[f], n_right, left_start
    cdef int64_t written = begin, group_begin = begin, n_groups = 0
    cdef int64_t first_out = out.ptr[f]
    cdef int32_t slot, left, row
    cdef float value
    for i in range(now.ptr[f], now.ptr[f] + now.count[f]):
        left = left_slot[now.slot[i]]
        if left == NO_SLOT:
            group_begin = now.end[i]
            continue
        n_right = 0
        left_start = written
        for k in range(group_begin, now.end[i]):
            if k + PREFETCH_ROWS < now.end[i]:
                prefetch(&row_slot[src.rows[k + PREFETCH_ROWS]])
            # branch-free: the entry is written to both places, and the
            # cursor of the one it belongs to moves on
            row = src.rows[k]
            value = src.values[k]
            slot = row_slot[row]
            dst.values[written] = value
            dst.rows[written] = row
            written += slot == left
            spare_values[n_right] = value
            spare_rows[n_right] = row
            n_right += slot == left + 1
        n_groups = close_child_groups(dst, out, first_out + n_groups, left,
                                      written - left_start, &written,
                                      spare_values, spare_rows,
                                      n_right) - first_out
        group_begin = now.end[i]
    out.count[f] = n_groups


cdef inline int64_t close_child_groups(const BlockData* dst,
                                       const GroupData* out, int64_t next,
                                       int32_t left, int64_t n_left,
                                       int64_t* written,
                                       const float* spare_values,
                                       const int32_t* spare_rows,
                                       int64_t n_right) noexcept nogil:
    """After a group's entries were routed: record the left child's group
    (its n_left entries end at ``written``) and the right child's, whose
    n_right entries are copied from the spare buffers after it. ``next``
    is the index of the next group of ``out``; returns the one after."""
    if n_left:
        out.slot[next] = left
        out.end[next] = written[0]
        next += 1
    if n_right:
        memcpy(&dst.values[written[0]], spare_values,
               n_right * sizeof(float))
        memcpy(&dst.rows[written[0]], spare_rows, n_right * sizeof(int32_t))
        written[0] += n_right
        out.slot[next] = left + 1
        out.end[next] = written[0]
        next += 1
    return next


cdef void to_default_children(int32_t* row_slot, Py_ssize_t n_rows,
                              const int32_t* child, const int32_t* node_of,
                              int32_t* row_leaf, int n_threads) noexcept nogil:
    """Every row to its node's ``child``; with ``row_leaf`` (else NULL),
    the rows of nodes without children get their node's id there."""
    cdef Py_ssize_t r
    cdef int32_t slot
    for r in prange(n_rows, schedule="static", num_threads=n_threads):
        slot = row_slot[r]
        if slot != NO_SLOT:
            if row_leaf != NULL and child[slot] == NO_SLOT:
                row_leaf[r] = node_of[slot]
            row_slot[r] = child[slot]


cdef void route_split_nodes(const BlockData* data, const GroupData* groups,
                            Py_ssize_t n_slots, const int32_t* feature,
                            const double* threshold, const int32_t* left,
                            int32_t* row_slot, int n_threads) noexcept nogil:
    """The rows present in each split node's feature to their children."""
    cdef Py_ssize_t s
    for s in prange(n_slots, schedule="dynamic", num_threads=n_threads):
        if feature[s] != NO_FEATURE:
            route_present_rows(data, groups, <int32_t> s, feature[s],
                               threshold[s], left[s], row_slot)


cdef void route_present_rows(const BlockData* data, const GroupData* groups,
                             int32_t slot, int32_t f, double threshold,
                             int32_t left, int32_t* row_slot) noexcept nogil:
    """The rows of node ``slot`` present in feature f's group, to the
    child their value selects."""
    cdef int64_t i, k, begin = data.col_ptr[f]
    for i in range(groups.ptr[f], groups.ptr[f] + groups.count[f]):
        if groups.slot[i] == slot:
            for k in range(begin, groups.end[i]):
                row_slot[data.rows[k]] = (
                    left if data.values[k] < threshold else left + 1)
            return
        begin = groups.end[i]


def root_sums(const float[:, ::1] gpair not None,
              const uint8_t[::1] active not None, weight=None):
    """(G, H): the sums of the (weighted) gradient pairs of the active
    rows, in float64, in row order."""
    cdef Py_ssize_t r, n_rows = gpair.shape[0]
    if gpair.shape[1] != 2 or active.shape[0] != n_rows:
        raise ValueError("gpair must be (n_rows, 2), active (n_rows,)")
    cdef bint weighted = weight is not None
    cdef const double[::1] w = _check_weight(weight, n_rows)
    cdef double G = 0.0, H = 0.0
    with nogil:
        for r in range(n_rows):
            if active[r]:
                if weighted:
                    G += <double> gpair[r, 0] * w[r]
                    H += <double> gpair[r, 1] * w[r]
                else:
                    G += gpair[r, 0]
                    H += gpair[r, 1]
    return G, H


cdef object _slot_counts(const int32_t* row_slot, Py_ssize_t n_rows,
                         Py_ssize_t n_slots, int n_threads):
    """The number of rows in each slot (int64), counted per thread."""
    # each thread's counts on their own cache lines
    counts = np.zeros((n_threads, padded_count(n_slots, sizeof(int64_t))),
                      dtype=np.int64)
    cdef int64_t[:, ::1] per_thread = counts
    cdef int64_t* base = &per_thread[0, 0]
    cdef Py_ssize_t stride = per_thread.shape[1], r
    for r in prange(n_rows, nogil=True, schedule="static",
                    num_threads=n_threads):
        if row_slot[r] != NO_SLOT:
            base[threadid() * stride + row_slot[r]] += 1
    return counts.sum(axis=0)[:n_slots]


# --------------------------------------------------------------------------
# The finder
# --------------------------------------------------------------------------

ctypedef struct NodeContext:
    # one node's constants while its group of one feature is walked
    int32_t feature
    double G               # the node's totals
    double H
    int64_t count          # its active rows
    double parent_score
    const RegParams* p
    bint l2_only
    SplitCandidate* best   # the node's best so far (this thread's)


ctypedef struct NodeWalk:
    # the running state of one walk over a group
    double G               # sums of the entries met so far
    double H
    int64_t count          # number of rows met so far
    float last_value       # value of the previous entry
    # the summed children scores a candidate must reach to possibly beat
    # the node's best (see `consider`); -inf: no cheap test
    double need


ctypedef struct ZeroBlock:
    # a node's implicit zero block (absent entries read as 0.0): its totals
    # minus its stored entries of the feature being scanned
    double G
    double H
    int64_t count
    bint touched           # set up for this feature
    bint has_group         # the node has present entries of this feature


cdef inline bint offer(SplitCandidate* best, double gain, int32_t feature,
                       double threshold, double G_left, double H_left,
                       bint default_left) noexcept nogil:
    if is_better(gain, feature, threshold, best):
        best.gain = gain
        best.feature = feature
        best.threshold = threshold
        best.G_left = G_left
        best.H_left = H_left
        best.default_left = default_left
        return True
    return False


cdef inline double reduction(double G_left, double H_left, double G_right,
                             double H_right,
                             const NodeContext* c) noexcept nogil:
    if c.l2_only:
        return split_loss_reduction_l2(G_left, H_left, G_right, H_right,
                                       c.parent_score, c.p.reg_lambda)
    return split_loss_reduction(G_left, H_left, G_right, H_right,
                                c.parent_score, c.p)


cdef inline double children_score_needed(const NodeContext* c) noexcept nogil:
    """The children_score_floor of the node's best (see ``_gain.pxd``);
    -inf when the cheap test does not apply (L1 term or clipping, or no
    best)."""
    if not c.l2_only or c.best.feature == NO_FEATURE:
        return -INFINITY
    return children_score_floor(c.best.gain, c.parent_score)


cdef inline void consider(NodeWalk* a, const NodeContext* c, double G_left,
                          double H_left, double G_right, double H_right,
                          double threshold, bint default_left) noexcept nogil:
    """Offer a candidate split whose children both satisfy
    min_child_weight.

    Most candidates cannot beat the node's best, and the gain costs two
    divisions: only the candidates passing the division-free ``may_reach``
    test against the node's floor get their gain computed and offered (the
    same gains and choices as without the test)."""
    # one branch, rarely taken (several would each be mispredicted often)
    cdef bint may_win = (
        (H_left >= c.p.min_child_weight) & (H_right >= c.p.min_child_weight)
        & ((a.need == -INFINITY)
           | may_reach(a.need, G_left, H_left, G_right, H_right,
                       c.p.reg_lambda)))
    if not may_win:
        return
    if offer(c.best, reduction(G_left, H_left, G_right, H_right, c),
             c.feature, threshold, G_left, H_left, default_left):
        a.need = children_score_needed(c)


cdef inline double midpoint(float below, float above) noexcept nogil:
    return 0.5 * (<double> below + <double> above)


cdef inline void restart(NodeWalk* a) noexcept nogil:
    a.G = 0.0
    a.H = 0.0
    a.count = 0
    a.last_value = 0.0


cdef inline void forward_step(NodeWalk* a, const NodeContext* c, float v,
                              double g, double h, int64_t n) noexcept nogil:
    """Entries of value v (n rows, sums g, h) arrive in ascending order: the
    boundary below them is a candidate (left = what came before, missing
    right), then they join the left side."""
    if a.count > 0 and v != a.last_value:
        consider(a, c, a.G, a.H, c.G - a.G, c.H - a.H,
                 midpoint(a.last_value, v), False)
    a.G += g
    a.H += h
    a.count += n
    a.last_value = v


cdef inline void backward_step(NodeWalk* a, const NodeContext* c, float v,
                               double g, double h, int64_t n) noexcept nogil:
    """The mirror image: descending order, right = what came before,
    missing left."""
    if a.count > 0 and v != a.last_value:
        consider(a, c, c.G - a.G, c.H - a.H, a.G, a.H,
                 midpoint(v, a.last_value), True)
    a.G += g
    a.H += h
    a.count += n
    a.last_value = v


ctypedef struct GroupBuffers:
    # one thread's per-entry buffers (``longest`` doubles each) for the
    # group being scanned: its gradient pairs and the walks' running sums
    double* g
    double* h
    double* below_G        # sums of entries [0, k): the forward walk's
    double* below_H
    double* above_G        # sums of entries [k, n): the backward walk's
    double* above_H


cdef inline void gather_gradients(const int32_t* rows, Py_ssize_t n,
                                  const float[:, ::1] gpair,
                                  const double[::1] weight, bint weighted,
                                  double* g, double* h) noexcept nogil:
    """The weighted gradient pairs of a group's rows into g, h."""
    cdef Py_ssize_t k
    cdef int32_t row
    for k in range(n):
        # the rows of a group are in value order, i.e. scattered: fetch the
        # gradients of an entry ahead (paper section 4.2)
        if k + PREFETCH_ROWS < n:
            prefetch(&gpair[rows[k + PREFETCH_ROWS], 0])
        row = rows[k]
        g[k] = gpair[row, 0]
        h[k] = gpair[row, 1]
        if weighted:
            g[k] *= weight[row]
            h[k] *= weight[row]


cdef inline void running_sums(const double* g, const double* h,
                              Py_ssize_t n, const GroupBuffers* b,
                              bint with_above, double* G,
                              double* H) noexcept nogil:
    """The sums of entries [0, k) into ``b.below_G[k]``, ``b.below_H[k]``
    (the forward walk's order: ascending), the sums of all n into G, H,
    and if ``with_above``, the sums of entries [k, n) into ``b.above_G[k]``,
    ``b.above_H[k]`` (the backward walk's order: descending). The two are
    run in one loop: four independent chains of additions instead of two
    loops each waiting on the latency of its own."""
    cdef Py_ssize_t k, j
    cdef double G_below = 0.0, H_below = 0.0, G_above = 0.0, H_above = 0.0
    if with_above:
        for k in range(n):
            b.below_G[k] = G_below
            b.below_H[k] = H_below
            G_below += g[k]
            H_below += h[k]
            j = n - 1 - k
            G_above += g[j]
            H_above += h[j]
            b.above_G[j] = G_above
            b.above_H[j] = H_above
    else:
        for k in range(n):
            b.below_G[k] = G_below
            b.below_H[k] = H_below
            G_below += g[k]
            H_below += h[k]
    G[0] = G_below
    H[0] = H_below


cdef void walk_group(const NodeContext* c, const float* values,
                     const double* g, const double* h, Py_ssize_t n,
                     const ZeroBlock* zero) noexcept nogil:
    """Every candidate of one node for one feature: the forward walk
    (missing right), all present entries against the missing ones, and,
    when the node has missing values, the backward walk (missing left).
    ``zero`` (NULL if none) is the node's zero block, walked at value 0."""
    cdef NodeWalk a
    cdef Py_ssize_t k
    cdef bint zero_pending = zero != NULL and zero.count > 0
    a.need = children_score_needed(c)
    restart(&a)
    for k in range(n):
        if zero_pending and values[k] > 0:
            forward_step(&a, c, 0.0, zero.G, zero.H, zero.count)
            zero_pending = False
        forward_step(&a, c, values[k], g[k], h[k], 1)
    if zero_pending:
        forward_step(&a, c, 0.0, zero.G, zero.H, zero.count)
    if a.count == 0:
        return
    if a.count == c.count:
        # no missing value: both directions gave the same candidates; the
        # split sends missing values left
        if c.best.feature == c.feature:
            c.best.default_left = True
        return
    # threshold +inf: every present value, seen or unseen, goes left
    consider(&a, c, a.G, a.H, c.G - a.G, c.H - a.H, INFINITY, False)
    restart(&a)
    zero_pending = zero != NULL and zero.count > 0
    for k in range(n - 1, -1, -1):
        if zero_pending and values[k] < 0:
            backward_step(&a, c, 0.0, zero.G, zero.H, zero.count)
            zero_pending = False
        backward_step(&a, c, values[k], g[k], h[k], 1)
    if zero_pending:
        backward_step(&a, c, 0.0, zero.G, zero.H, zero.count)


cdef extern from *:
    """
    /* The pre-test (_gain.pxd: may_reach, symmetric in the two children)
       of every position k in [1, n) of a group, boundary or not (see
       any_passes): side_G[k], side_H[k] are the sums of one child, the
       other's are the node's totals minus them. Built once per vector unit
       where the compiler dispatches at load time (GCC or Clang on x86-64
       glibc: AVX-512, AVX2 or baseline SSE2 clones), a plain loop
       elsewhere. The clones give the same bits (no contraction into fused
       multiply-adds: -ffp-contract=off). */
    #if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
    #if __has_attribute(target_clones)
    #define SKB_VECTOR_CLONES \\
        __attribute__((target_clones("avx512f", "avx2", "default")))
    #endif
    #endif
    #ifndef SKB_VECTOR_CLONES
    #define SKB_VECTOR_CLONES
    #endif
    SKB_VECTOR_CLONES
    static int skb_any_position_passes(
            const double* side_G, const double* side_H, Py_ssize_t n,
            double G, double H, double lam, double mcw, double need) {
        int passes = 0;
        Py_ssize_t k;
        for (k = 1; k < n; k++) {
            double G_one = side_G[k], H_one = side_H[k];
            double G_other = G - G_one, H_other = H - H_one;
            double a_one = H_one + lam, a_other = H_other + lam;
            passes |= (H_one >= mcw) & (H_other >= mcw)
                & (G_one * G_one * a_other + G_other * G_other * a_one
                   >= need * (a_one * a_other));
        }
        return passes;
    }
    """
    bint any_position_passes "skb_any_position_passes"(
        const double* side_G, const double* side_H, Py_ssize_t n, double G,
        double H, double lam, double mcw, double need) noexcept nogil


cdef inline bint any_passes(const float* values, const double* side_G,
                            const double* side_H, Py_ssize_t n, double G,
                            double H, double lam, double mcw,
                            double need) noexcept nogil:
    """Whether a candidate k in [1, n) (a boundary between distinct
    values) passes the pre-test, one child's sums being ``side_G[k]``,
    ``side_H[k]`` (the test is symmetric: either child will do).

    First every position, boundary or not, in the widest vectors (no
    float/double mix); only if one passes, the boundaries alone."""
    if not any_position_passes(side_G, side_H, n, G, H, lam, mcw, need):
        return False
    cdef Py_ssize_t k
    cdef int passes = 0
    for k in range(1, n):
        passes |= ((values[k] != values[k - 1])
                   & may_reach(need, side_G[k], side_H[k], G - side_G[k],
                               H - side_H[k], lam)
                   & (side_H[k] >= mcw) & (H - side_H[k] >= mcw))
    return passes


cdef bint any_may_win(const NodeContext* c, const float* values,
                      const GroupBuffers* b, Py_ssize_t n,
                      double need) noexcept nogil:
    """Whether any candidate of the group (either direction) passes the
    node's pre-test at floor ``need``; False lets the walks be skipped, as
    none of their candidates could then beat the node's best.

    The running sums (``running_sums``) are the walks' own, in the same
    order (``below`` ascending, ``above`` descending), so
    the tests are the walks' tests, bit for bit; the floor only rises
    during the walks. Kept apart from them, in arrays of their own, the
    tests have no loop-carried dependency and are vectorised.
    """
    cdef double lam = c.p.reg_lambda, mcw = c.p.min_child_weight
    # forward (missing right): left = entries below k
    if any_passes(values, b.below_G, b.below_H, n, c.G, c.H, lam, mcw,
                  need):
        return True
    if n == c.count:
        return False  # no missing value: no backward walk
    # backward (missing left): right = entries from k up
    return any_passes(values, b.above_G, b.above_H, n, c.G, c.H, lam,
                      mcw, need)


cdef void scan_group(const NodeContext* c, const float* values,
                     const double* g, const double* h,
                     const GroupBuffers* b, Py_ssize_t n,
                     const ZeroBlock* zero) noexcept nogil:
    """``walk_group``, skipped when ``any_may_win`` shows that no
    candidate of the walks can win: then only the split on missingness
    itself is offered. ``b.below_*`` hold the group's running sums."""
    cdef NodeWalk a
    cdef double need
    if zero == NULL and n > 1 and c.l2_only and (
            c.best.feature != NO_FEATURE):
        need = children_score_needed(c)
        if not any_may_win(c, values, b, n, need):
            if n < c.count:
                a.need = need
                # the sums of all n entries, in the walks' order
                a.G = b.below_G[n - 1] + g[n - 1]
                a.H = b.below_H[n - 1] + h[n - 1]
                consider(&a, c, a.G, a.H, c.G - a.G, c.H - a.H, INFINITY,
                         False)
            return
    walk_group(c, values, g, h, n, zero)


ctypedef struct LevelScan:
    # what every group's scan of a level reads
    const float* values
    const int32_t* rows
    const int64_t* col_ptr
    const int64_t* group_ptr
    const int64_t* group_count
    const int32_t* group_slot
    const int64_t* group_end
    const double* node_G
    const double* node_H
    const int64_t* node_count
    const double* parent_score
    const RegParams* p
    bint l2_only
    bint zero_absent
    const int64_t* missing_ptr
    const int32_t* missing_rows
    const int32_t* row_slot


cdef inline void node_context(NodeContext* c, const LevelScan* L,
                              int32_t feature, int32_t slot,
                              SplitCandidate* best) noexcept nogil:
    c.feature = feature
    c.G = L.node_G[slot]
    c.H = L.node_H[slot]
    c.count = L.node_count[slot]
    c.parent_score = L.parent_score[slot]
    c.p = L.p
    c.l2_only = L.l2_only
    c.best = &best[slot]


cdef inline ZeroBlock* zero_block(ZeroBlock* zero, int32_t slot,
                                  int32_t* touched, Py_ssize_t* n_touched,
                                  const LevelScan* L) noexcept nogil:
    """Node ``slot``'s zero block, set to its totals when first met."""
    cdef ZeroBlock* z = &zero[slot]
    if not z.touched:
        z.touched = True
        z.has_group = False
        z.G = L.node_G[slot]
        z.H = L.node_H[slot]
        z.count = L.node_count[slot]
        touched[n_touched[0]] = slot
        n_touched[0] += 1
    return z


ctypedef struct FeatureScratch:
    # one thread's buffers while it scans a feature
    GroupBuffers group
    ZeroBlock* zero        # one per slot
    int32_t* touched       # one per slot: the zero blocks in use
    Py_ssize_t n_touched
    SplitCandidate* best   # one per slot: this thread's bests


cdef void scan_node_group(const LevelScan* L, int32_t f, int32_t slot,
                          const float* values, Py_ssize_t n,
                          const double* g, const double* h,
                          FeatureScratch* w,
                          const uint8_t[:, ::1] feature_allowed) noexcept nogil:
    """Node ``slot``'s group of feature f (n entries, their gradient pairs
    in g, h): its running sums, then its candidates."""
    cdef double G, H
    cdef NodeContext c
    cdef ZeroBlock* z = NULL
    if n == 0 or not feature_allowed[slot, f]:
        return
    # the backward walk's sums too, when the node has missing values (the
    # zero block, if any, is not in them: such groups are walked)
    running_sums(g, h, n, &w.group, n < L.node_count[slot], &G, &H)
    if L.zero_absent:
        # the present entries leave the node's zero block
        z = zero_block(w.zero, slot, w.touched, &w.n_touched, L)
        z.has_group = True
        z.G -= G
        z.H -= H
        z.count -= n
    node_context(&c, L, f, slot, w.best)
    scan_group(&c, values, g, h, &w.group, n, z)


cdef void missing_entries_out_of_zero_blocks(
        const LevelScan* L, int32_t f, const float[:, ::1] gpair,
        const double[::1] weight, bint weighted,
        const uint8_t[:, ::1] feature_allowed,
        FeatureScratch* w) noexcept nogil:
    """Absent entries read as 0.0: feature f's stored missing entries leave
    their nodes' zero blocks."""
    cdef int64_t k
    cdef int32_t row, slot
    cdef ZeroBlock* z
    for k in range(L.missing_ptr[f], L.missing_ptr[f + 1]):
        row = L.missing_rows[k]
        slot = L.row_slot[row]
        if slot == NO_SLOT or not feature_allowed[slot, f]:
            continue
        z = zero_block(w.zero, slot, w.touched, &w.n_touched, L)
        z.G -= gpair[row, 0] * (weight[row] if weighted else 1.0)
        z.H -= gpair[row, 1] * (weight[row] if weighted else 1.0)
        z.count -= 1


cdef void scan_zero_only_nodes(const LevelScan* L, int32_t f,
                               FeatureScratch* w) noexcept nogil:
    """The nodes with stored missing entries of feature f but no present
    one: their zero block against their missing entries. Resets the zero
    blocks for the next feature."""
    cdef Py_ssize_t t
    cdef int32_t slot
    cdef ZeroBlock* z
    cdef NodeContext c
    for t in range(w.n_touched):
        slot = w.touched[t]
        z = &w.zero[slot]
        if not z.has_group:
            node_context(&c, L, f, slot, w.best)
            walk_group(&c, NULL, NULL, NULL, 0, z)
        z.touched = False
    w.n_touched = 0


cdef void scan_feature(const LevelScan* L, int32_t f,
                       const float[:, ::1] gpair, const double[::1] weight,
                       bint weighted, const uint8_t[:, ::1] feature_allowed,
                       FeatureScratch* w) noexcept nogil:
    """Every open node's candidates on feature f: one walk per group."""
    cdef int64_t i, begin = L.col_ptr[f]
    cdef int32_t slot
    if L.zero_absent:
        missing_entries_out_of_zero_blocks(L, f, gpair, weight, weighted,
                                           feature_allowed, w)
    for i in range(L.group_ptr[f], L.group_ptr[f] + L.group_count[f]):
        slot = L.group_slot[i]
        if feature_allowed[slot, f]:
            gather_gradients(&L.rows[begin], L.group_end[i] - begin, gpair,
                             weight, weighted, w.group.g, w.group.h)
            scan_node_group(L, f, slot, &L.values[begin],
                            L.group_end[i] - begin, w.group.g, w.group.h, w,
                            feature_allowed)
        begin = L.group_end[i]
    if L.zero_absent:
        scan_zero_only_nodes(L, f, w)


cdef void split_and_scan_feature(const LevelScan* L, const SplitStep* step,
                                 int32_t f, int tid,
                                 const float[:, ::1] gpair,
                                 const double[::1] weight, bint weighted,
                                 const uint8_t[:, ::1] feature_allowed,
                                 FeatureScratch* w) noexcept nogil:
    """``split_feature_groups`` and ``scan_feature`` in one pass: each
    entry's row is looked up once, for its child and its gradient pair,
    and each child's group is scanned while in cache. The left child's
    pairs fill the buffers from the front, the right child's from the
    back."""
    cdef const BlockData* src = &step.src
    cdef const BlockData* dst = &step.dst
    cdef const GroupData* now = &step.now
    cdef const GroupData* out = &step.out
    cdef float* spare_values = step.spare_values + tid * step.spare_stride
    cdef int32_t* spare_rows = step.spare_rows + tid * step.spare_stride
    cdef int64_t i, k, n, n_left, n_right, left_start, end
    cdef int64_t written = src.col_ptr[f], group_begin = src.col_ptr[f]
    cdef int64_t n_groups = 0, first_out = out.ptr[f]
    cdef int32_t left
    cdef const float* gpair_base = &gpair[0, 0]
    cdef const double* weight_base = &weight[0] if weighted else NULL
    cdef double* g = w.group.g
    cdef double* h = w.group.h
    if L.zero_absent:
        missing_entries_out_of_zero_blocks(L, f, gpair, weight, weighted,
                                           feature_allowed, w)
    for i in range(now.ptr[f], now.ptr[f] + now.count[f]):
        left = step.left_slot[now.slot[i]]
        end = now.end[i]
        if left == NO_SLOT:
            group_begin = end
            continue
        n = end - group_begin
        left_start = written
        if step.balanced[now.slot[i]]:
            route_group_branch_free(src, dst, group_begin, end,
                                    step.row_slot, left, gpair_base,
                                    weight_base, &written, spare_values,
                                    spare_rows, g, h, &n_left, &n_right)
        else:
            route_group(src, dst, group_begin, end, step.row_slot, left,
                        gpair_base, weight_base, &written, spare_values,
                        spare_rows, g, h, &n_left, &n_right)
        n_groups = close_child_groups(dst, out, first_out + n_groups, left,
                                      n_left, &written, spare_values,
                                      spare_rows, n_right) - first_out
        if n_right:
            reverse(&g[n - n_right], n_right)
            reverse(&h[n - n_right], n_right)
        scan_node_group(L, f, left, &dst.values[left_start], n_left, g, h,
                        w, feature_allowed)
        scan_node_group(L, f, left + 1, &dst.values[left_start + n_left],
                        n_right, &g[n - n_right], &h[n - n_right], w,
                        feature_allowed)
        group_begin = end
    out.count[f] = n_groups
    if L.zero_absent:
        scan_zero_only_nodes(L, f, w)


cdef inline int32_t read_entry(const BlockData* src, int64_t k,
                               int64_t last, const int32_t* row_slot,
                               const float* gpair, const double* weight,
                               int32_t* row, double* g_row,
                               double* h_row) noexcept nogil:
    """Entry k's row, its (weighted) gradient pair and, returned, its slot.
    The rows of a group are in value order, i.e. scattered: the slot and
    gradients of the entry PREFETCH_ROWS ahead (at most ``last``) are
    fetched now (paper section 4.2)."""
    cdef int32_t ahead = src.rows[k + PREFETCH_ROWS
                                  if k + PREFETCH_ROWS < last else last]
    prefetch(&row_slot[ahead])
    prefetch(&gpair[2 * ahead])
    row[0] = src.rows[k]
    g_row[0] = gpair[2 * row[0]]
    h_row[0] = gpair[2 * row[0] + 1]
    if weight != NULL:
        g_row[0] = g_row[0] * weight[row[0]]
        h_row[0] = h_row[0] * weight[row[0]]
    return row_slot[row[0]]


cdef void route_group(const BlockData* src, const BlockData* dst,
                      int64_t begin, int64_t end, const int32_t* row_slot,
                      int32_t left, const float* gpair, const double* weight,
                      int64_t* written, float* spare_values,
                      int32_t* spare_rows, double* g, double* h,
                      int64_t* n_left, int64_t* n_right) noexcept nogil:
    """The entries [begin, end) of a group to its node's children: the
    left child's written from ``written`` on, the right child's to the
    spare buffers; their gradient pairs (times ``weight``, unless NULL) to
    g, h (n = end - begin entries), the left child's from the front, the
    right child's from the back. For a node whose children are of very
    different sizes, where the branch on the side is well predicted."""
    cdef int64_t k, n = end - begin, last = end - 1
    cdef int64_t to = written[0], lefts = 0, rights = 0
    cdef int32_t row, slot
    cdef double g_row, h_row
    for k in range(begin, end):
        slot = read_entry(src, k, last, row_slot, gpair, weight, &row,
                          &g_row, &h_row)
        if slot == left:
            dst.values[to] = src.values[k]
            dst.rows[to] = row
            to += 1
            g[lefts] = g_row
            h[lefts] = h_row
            lefts += 1
        elif slot == left + 1:
            spare_values[rights] = src.values[k]
            spare_rows[rights] = row
            rights += 1
            g[n - rights] = g_row
            h[n - rights] = h_row
    written[0] = to
    n_left[0] = lefts
    n_right[0] = rights


cdef void route_group_branch_free(
        const BlockData* src, const BlockData* dst, int64_t begin,
        int64_t end, const int32_t* row_slot, int32_t left,
        const float* gpair, const double* weight, int64_t* written,
        float* spare_values, int32_t* spare_rows, double* g, double* h,
        int64_t* n_left, int64_t* n_right) noexcept nogil:
    """``route_group`` for a node whose children are of comparable sizes,
    where the side of an entry is a coin toss: the entry is written to
    both sides, and the side it belongs to moves on. The write to the other
    side lands on a free position, or on the one both sides would take
    next, then with the same pair."""
    cdef int64_t k, n = end - begin, last = end - 1
    cdef int64_t to = written[0], lefts = 0, rights = 0
    cdef int64_t is_left, is_right
    cdef int32_t row, slot
    cdef double g_row, h_row
    cdef float value
    for k in range(begin, end):
        slot = read_entry(src, k, last, row_slot, gpair, weight, &row,
                          &g_row, &h_row)
        is_left = slot == left
        is_right = slot == left + 1
        value = src.values[k]
        dst.values[to] = value
        dst.rows[to] = row
        spare_values[rights] = value
        spare_rows[rights] = row
        g[lefts] = g_row
        h[lefts] = h_row
        g[n - 1 - rights] = g_row
        h[n - 1 - rights] = h_row
        to += is_left
        lefts += is_left
        rights += is_right
    written[0] = to
    n_left[0] = lefts
    n_right[0] = rights


cdef inline void reverse(double* x, Py_ssize_t n) noexcept nogil:
    """Reverse x[0:n] in place."""
    cdef Py_ssize_t a = 0, b = n - 1
    cdef double t
    while a < b:
        t = x[a]
        x[a] = x[b]
        x[b] = t
        a += 1
        b -= 1


def find_best_splits(
        blocks,                                # IN SortedColumns or NodeBlocks
        const float[:, ::1] gpair not None,    # IN (n_rows, 2)
        const int32_t[::1] row_slot not None,  # IN (n_rows,)
        const double[::1] node_G not None,     # IN (n_slots,)
        const double[::1] node_H not None,     # IN (n_slots,)
        const int64_t[::1] node_count not None,  # IN (n_slots,) active rows
        const uint8_t[:, ::1] feature_allowed not None,  # (n_slots, n_features)
        double reg_lambda, double reg_alpha, double max_delta_step,
        double min_child_weight, int n_threads, weight=None):
    """Best split of every open node of a level, over all allowed features.

    ``blocks`` is the presorted ``SortedColumns`` (grouped here by
    ``row_slot``) or a ``NodeBlocks`` already grouped for ``row_slot`` (the
    grower keeps one across levels).

    ``gpair`` holds unweighted per-row gradients; ``weight`` (float64, one per
    row, None for unit weights) multiplies them inside the float64 sums. A
    weight w then adds exactly what w copies of the row add, so fitting with
    integer weights gives the same sums, hence the same tie-breaks, as
    fitting on repeated rows.

    Returns
    -------
    splits : dict of ndarray, each of shape (n_slots,)
        ``gain`` (loss reduction before gamma), ``feature`` (-1 where no
        split satisfies min_child_weight), ``threshold``, ``default_left``,
        ``G_left`` and ``H_left`` (statistics of the left child).
    """
    cdef Py_ssize_t n_slots = node_G.shape[0]
    cdef SortedColumns columns = _columns_of(blocks)
    _check_inputs(columns, gpair, row_slot, node_G, node_H, node_count,
                  feature_allowed, n_threads)
    cdef NodeBlocks grouped = _grouped_blocks(blocks, row_slot, n_slots,
                                              n_threads)
    cdef Py_ssize_t n_features = columns.n_features
    cdef Py_ssize_t n_rows = gpair.shape[0]
    cdef bint weighted = weight is not None
    cdef const double[::1] weight_view = _check_weight(weight, n_rows)
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    cdef double[::1] parent_score = np.empty(max(n_slots, 1))
    cdef Py_ssize_t s, t, f
    cdef int tid
    for s in range(n_slots):
        parent_score[s] = leaf_score(node_G[s], node_H[s], &p)
    # a split of the groups planned at the previous level is carried out
    # feature by feature, each just before its scan
    cdef bint splitting = grouped._pending is not None
    cdef SplitStep step
    cdef BlockData data
    cdef GroupData groups
    if splitting:
        step = grouped._split_step(n_threads)
        data = step.dst
        groups = step.out
    else:
        data = _block_data(columns.col_ptr, grouped.values, grouped.rows)
        groups = _group_data(grouped.group_ptr, grouped.group_count,
                             grouped.group_slot, grouped.group_end)
    cdef LevelScan L
    _level_scan(&L, &data, &groups, columns, row_slot, node_G, node_H,
                node_count, parent_score, &p)

    # Each thread's scratch starts on its own cache lines: a line shared by
    # two threads would bounce between their cores (false sharing).
    cdef Py_ssize_t best_stride = padded_count(n_slots, sizeof(SplitCandidate))
    cdef Py_ssize_t zero_stride = padded_count(n_slots, sizeof(ZeroBlock))
    # per entry: its gradient pair, then the walks' running sums
    cdef Py_ssize_t longest = grouped.longest
    cdef Py_ssize_t buffer_stride = padded_count(longest, sizeof(double))
    cdef Py_ssize_t gh_stride = 6 * buffer_stride
    best_buffer = np.empty(n_threads * best_stride * sizeof(SplitCandidate)
                           + CACHE_LINE, dtype=np.uint8)
    zero_buffer = np.zeros(n_threads * zero_stride * sizeof(ZeroBlock)
                           + CACHE_LINE, dtype=np.uint8)
    gh_buffer = np.empty(n_threads * gh_stride * sizeof(double) + CACHE_LINE,
                         dtype=np.uint8)
    touched_buffer = np.empty((n_threads, max(n_slots, 1)), dtype=np.int32)
    cdef SplitCandidate* best = <SplitCandidate*> aligned(best_buffer)
    cdef ZeroBlock* zero = <ZeroBlock*> aligned(zero_buffer)
    cdef double* gh = <double*> aligned(gh_buffer)
    cdef int32_t[:, ::1] touched = touched_buffer
    cdef Py_ssize_t scratch_stride = padded_count(1, sizeof(FeatureScratch))
    scratch_buffer = np.empty(n_threads * scratch_stride
                              * sizeof(FeatureScratch) + CACHE_LINE,
                              dtype=np.uint8)
    cdef FeatureScratch* scratch_base = <FeatureScratch*> aligned(
        scratch_buffer)
    cdef FeatureScratch* scratch
    for t in range(n_threads):
        scratch = &scratch_base[t * scratch_stride]
        for s in range(n_slots):
            reset_candidate(&best[t * best_stride + s])
        scratch.group.g = &gh[t * gh_stride]
        scratch.group.h = &gh[t * gh_stride + buffer_stride]
        scratch.group.below_G = &gh[t * gh_stride + 2 * buffer_stride]
        scratch.group.below_H = &gh[t * gh_stride + 3 * buffer_stride]
        scratch.group.above_G = &gh[t * gh_stride + 4 * buffer_stride]
        scratch.group.above_H = &gh[t * gh_stride + 5 * buffer_stride]
        scratch.zero = &zero[t * zero_stride]
        scratch.touched = &touched[t, 0]
        scratch.n_touched = 0
        scratch.best = &best[t * best_stride]
    # the features no open node may split on are only moved, not scanned
    used_buffer = np.asarray(feature_allowed).any(axis=0).astype(np.uint8)
    cdef const uint8_t[::1] used = used_buffer
    for f in prange(n_features, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        if splitting and used[f]:
            split_and_scan_feature(&L, &step, <int32_t> f, tid, gpair,
                                   weight_view, weighted, feature_allowed,
                                   &scratch_base[tid * scratch_stride])
        elif splitting:
            split_step_feature(&step, <int32_t> f, tid)
        elif used[f]:
            scan_feature(&L, <int32_t> f, gpair, weight_view, weighted,
                         feature_allowed, &scratch_base[tid * scratch_stride])
    # Merge the threads' bests into thread 0's under the total order.
    cdef SplitCandidate* c
    for t in range(1, n_threads):
        for s in range(n_slots):
            c = &best[t * best_stride + s]
            if c.feature >= 0 and is_better(c.gain, c.feature,
                                            c.threshold, &best[s]):
                best[s] = c[0]
    if splitting:
        grouped._commit()
    return _candidates_to_arrays(best, n_slots)


def _columns_of(blocks):
    if isinstance(blocks, NodeBlocks):
        return blocks.columns
    if isinstance(blocks, SortedColumns):
        return blocks
    raise TypeError("blocks must be SortedColumns or NodeBlocks, got "
                    f"{type(blocks).__name__}")


def _grouped_blocks(blocks, row_slot, Py_ssize_t n_slots, int n_threads):
    """``blocks`` grouped for ``row_slot``."""
    if isinstance(blocks, SortedColumns):
        grouped = NodeBlocks(blocks)
        grouped.start(row_slot, n_slots, n_threads)
        return grouped
    if blocks.n_slots != n_slots:
        raise ValueError(f"the blocks are grouped for {blocks.n_slots} "
                         f"slots, not {n_slots}")
    return blocks


cdef void _level_scan(LevelScan* L, const BlockData* data,
                      const GroupData* groups,
                      SortedColumns columns, const int32_t[::1] row_slot,
                      const double[::1] node_G, const double[::1] node_H,
                      const int64_t[::1] node_count,
                      const double[::1] parent_score, const RegParams* p):
    """Pointers into validated arrays (kept alive by the caller)."""
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    cdef const int32_t[::1] missing_rows = columns.missing_rows
    L.values = data.values
    L.rows = data.rows
    L.col_ptr = data.col_ptr
    L.group_ptr = groups.ptr
    L.group_count = groups.count
    L.group_slot = groups.slot
    L.group_end = groups.end
    L.node_G = &node_G[0] if node_G.shape[0] else NULL
    L.node_H = &node_H[0] if node_H.shape[0] else NULL
    L.node_count = &node_count[0] if node_count.shape[0] else NULL
    L.parent_score = &parent_score[0]
    L.p = p
    L.l2_only = is_l2_only(p)
    L.zero_absent = columns.zero_absent
    L.missing_ptr = &missing_ptr[0]
    L.missing_rows = &missing_rows[0] if missing_rows.shape[0] else NULL
    L.row_slot = &row_slot[0] if row_slot.shape[0] else NULL


cdef enum:
    CACHE_LINE = 64


cdef Py_ssize_t padded_count(Py_ssize_t n, size_t item_size):
    """n items rounded up to whole cache lines (in items); at least 1."""
    cdef Py_ssize_t per_line = max(<Py_ssize_t> (CACHE_LINE // item_size), 1)
    return max(((n + per_line - 1) // per_line) * per_line, 1)


cdef char* aligned(object buffer):
    """First cache-line boundary inside a uint8 buffer (which has
    CACHE_LINE spare bytes for it)."""
    cdef unsigned char[::1] view = buffer
    cdef size_t address = <size_t> &view[0]
    return <char*> &view[0] + (-address) % CACHE_LINE


cdef dict _candidates_to_arrays(const SplitCandidate* best, Py_ssize_t n):
    out = {
        "gain": np.empty(n, dtype=np.float64),
        "feature": np.empty(n, dtype=np.int32),
        "threshold": np.empty(n, dtype=np.float64),
        "default_left": np.empty(n, dtype=np.uint8),
        "G_left": np.empty(n, dtype=np.float64),
        "H_left": np.empty(n, dtype=np.float64),
    }
    cdef double[::1] gain = out["gain"], threshold = out["threshold"]
    cdef double[::1] G_left = out["G_left"], H_left = out["H_left"]
    cdef int32_t[::1] feature = out["feature"]
    cdef uint8_t[::1] default_left = out["default_left"]
    cdef Py_ssize_t s
    for s in range(n):
        gain[s] = best[s].gain
        feature[s] = best[s].feature
        threshold[s] = best[s].threshold
        default_left[s] = best[s].default_left
        G_left[s] = best[s].G_left
        H_left[s] = best[s].H_left
    return out


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_weight(weight, n_rows):
    if weight is None:
        return np.ones(1, dtype=np.float64)  # never read
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    if weight.shape != (n_rows,):
        raise ValueError("weight must have one entry per row")
    return weight


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_inputs(columns, gpair, row_slot, node_G, node_H, node_count,
                  feature_allowed, n_threads):
    """Shapes that the nogil scan relies on (the blocks themselves were
    validated by SortedColumns)."""
    n_slots = node_G.shape[0]
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if gpair.shape[1] != 2 or gpair.shape[0] != columns.n_rows or (
            row_slot.shape[0] != columns.n_rows):
        raise ValueError("gpair must be (n_rows, 2) and row_slot (n_rows,)")
    if not (node_H.shape[0] == node_count.shape[0] == n_slots):
        raise ValueError("node statistics must all have n_slots entries")
    if (feature_allowed.shape[0] != n_slots
            or feature_allowed.shape[1] != columns.n_features):
        raise ValueError("feature_allowed must be (n_slots, n_features)")
    slots = np.asarray(row_slot)
    if slots.size and (slots.max() >= n_slots or slots.min() < -1):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
