"""The presorted blocks regrouped by the open nodes of a level.

The exact finder (``_exact_scan``) keeps each presorted block
(``_presorted.SortedColumns``) regrouped by the open nodes of the level
being grown: the entries of one node form one contiguous group, still in
value order::

    block of feature j:  [ node 2: v0 <= v3 <= ... ][ node 0: v1 <= v2 ... ]

so a node's candidates for a feature come from one walk of its group, with
its sums in registers. After a level, each group is split in place into its
node's children's groups (one stable pass; rows of finished leaves drop
out), like the attribute lists of SPRINT (Shafer, Agrawal and Mehta, 1996).
The cost of a level is linear in the present entries of the open nodes.

The same groups move the rows to their children (``NodeBlocks.route_rows``):
a split node's rows present in its split feature's group are the only ones
whose value must be read.
"""

import numpy as np

cimport cython
from cython.parallel cimport prange, threadid

from .._parallel cimport capped
from ._common cimport (NO_FEATURE, NO_SLOT, PREFETCH_ROWS, int32_t, int64_t,
                       padded_count, prefetch, uint8_t)
from ._presorted cimport SortedColumns


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
    entries still open). ``_exact_scan.find_best_splits`` carries a
    planned split out feature by feature as it scans; ``flush`` (called by
    ``groups``, ``route_rows`` and ``split``) carries it out at once. The
    grouping always matches the ``row_slot`` it was made for; the finder
    relies on it.

    Parameters
    ----------
    columns : SortedColumns
    """

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
        n_threads = capped(n_threads)
        self._pending = None
        # the root: every row in slot 0, so the presorted blocks already are
        # the groups and nothing is copied
        if n_slots == 1 and not np.any(row_slot):
            self._one_group_per_feature()
            return
        work_values, work_rows = self._work()
        # room for each feature's groups: at most one per slot, and never
        # more than the block's entries
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
        # one feature per task: a feature's block, groups and output range
        # belong to it alone, so threads never share a write; the counting
        # sort's counters are the thread's own row of `position`. Dynamic:
        # blocks of sparse features differ widely in length
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
        n_threads = capped(n_threads)
        self.flush(n_threads)
        row_slot = _checked_row_slot(row_slot, columns.n_rows, n_next)
        left_slot = np.ascontiguousarray(left_slot, dtype=np.int32)
        if left_slot.shape != (self.n_slots,) or (left_slot.size and (
                left_slot.min() < NO_SLOT
                or left_slot.max() + 1 >= max(n_next, 1))):
            raise ValueError("left_slot must hold, per slot, NO_SLOT or a "
                             "slot whose right neighbour is below n_next")
        # only planned here (sizes and arrays): the entries move when the next
        # level is scanned, one feature at a time, while they are in cache
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
        n_threads = capped(n_threads)
        cdef SplitStep step = self._split_step(n_threads)
        cdef Py_ssize_t f, n_features = self.columns.n_features
        # features are independent (own block, own groups); each thread
        # uses its own spare buffers, chosen by its thread id
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
        # a group's right child waits in a spare buffer: no longer than the
        # longest block, one per thread
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
                   threshold, default_left, left_slot, *, Py_ssize_t n_next,
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
        n_threads = capped(n_threads)
        self.flush(n_threads)
        if columns.zero_absent:
            raise ValueError("route_rows cannot place the rows of an "
                             "implicit zero block")
        split_feature, threshold, left_slot, default_child = _route_arrays(
            split_feature, threshold, default_left, left_slot, n_slots,
            n_next, columns.n_features)
        _checked_row_slot(row_slot, columns.n_rows, n_slots)
        if n_slots == 0 or row_slot.shape[0] == 0:
            return np.zeros(n_next, dtype=np.int64)  # no row to move
        cdef bint track = slot_node is not None
        if track:
            slot_node = _checked_tracking(slot_node, row_leaf, n_slots,
                                          columns.n_rows)
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
        # Two passes: every row of a split node to its default child, then
        # the rows present in the split feature's group again, by value
        # (only stored entries are read). nogil functions: checked indexing
        # here would make each thread take the GIL at a parallel loop start
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


@cython.boundscheck(True)
@cython.wraparound(True)
def _route_arrays(split_feature, threshold, default_left, left_slot,
                  Py_ssize_t n_slots, Py_ssize_t n_next,
                  Py_ssize_t n_features):
    """``route_rows``' per-slot arrays, checked and converted, and each
    slot's default child (where its missing values go; NO_SLOT for a
    leaf): (split_feature, threshold, left_slot, default_child)."""
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
                        or split_feature.max() >= n_features
                        or left_slot[split].min() < 0
                        or left_slot[split].max() + 1 >= n_next):
        raise ValueError("a split's feature or children are out of range")
    # the right child is left_slot + 1: default_left picks one of the two
    default_child = np.full(max(n_slots, 1), NO_SLOT, dtype=np.int32)
    default_child[:n_slots][split] = (
        left_slot + 1 - (default_left != 0))[split]
    return split_feature, threshold, left_slot, default_child


def _checked_tracking(slot_node, row_leaf, Py_ssize_t n_slots,
                      Py_ssize_t n_rows):
    """``route_rows``' slot_node as int32, checked with row_leaf (which the
    kernel writes through a pointer: its type and shape must be exact)."""
    slot_node = np.ascontiguousarray(slot_node, dtype=np.int32)
    if slot_node.shape != (n_slots,) or not isinstance(
            row_leaf, np.ndarray) or row_leaf.dtype != np.int32 or (
                row_leaf.shape != (n_rows,)):
        raise ValueError("slot_node (n_slots,) and row_leaf "
                         "(n_rows,) int32 go together")
    return slot_node


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
    # A counting sort in three passes over the block:
    #
    #     block (value order):  a0 b1 a2 c3 b4 a5       (letter = slot)
    #     1. count per slot:    a:3 b:2 c:1
    #     2. group starts:      a at 0, b at 3, c at 5  (prefix sums)
    #     3. scatter:           [a0 a2 a5][b1 b4][c3]
    #
    # Pass 3 reads the block in order and appends to each group, so every
    # group keeps the value order (stable): no sort per node is needed.
    # Slots without entries get no group; rows without a slot drop out.
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
    # One stable pass per group, in place:
    #
    #     before:  [ group of node s: L R L L R ][ next group ... ]
    #     during:  [ L L L ...... ]  spare: [ R R ]
    #     after:   [ L L L | R R ][ next group's children ... ]
    #
    # Left entries are written at `written`, which never passes the read
    # position k (entries only drop out or move back), so src and dst may
    # be the same working copy; right entries wait in the thread's spare
    # buffer and are appended after the left ones (close_child_groups).
    # Groups of nodes that became leaves are skipped: their entries leave.
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


cdef void to_default_children(int32_t* row_slot, Py_ssize_t n_rows,
                              const int32_t* child, const int32_t* node_of,
                              int32_t* row_leaf, int n_threads) noexcept nogil:
    """Every row to its node's ``child``; with ``row_leaf`` (else NULL),
    the rows of nodes without children get their node's id there."""
    cdef Py_ssize_t r
    cdef int32_t slot
    # one read and one write per row, rows independent: a static schedule
    # over contiguous row ranges streams through row_slot
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
    # one node per task: a row belongs to one node, so the tasks write
    # disjoint entries of row_slot
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
    # find the node's group among the feature's groups (a group starts
    # where the previous one ended), then route its rows by value
    for i in range(groups.ptr[f], groups.ptr[f] + groups.count[f]):
        if groups.slot[i] == slot:
            for k in range(begin, groups.end[i]):
                row_slot[data.rows[k]] = (
                    left if data.values[k] < threshold else left + 1)
            return
        begin = groups.end[i]


cdef object _slot_counts(const int32_t* row_slot, Py_ssize_t n_rows,
                         Py_ssize_t n_slots, int n_threads):
    """The number of rows in each slot (int64), counted per thread."""
    # each thread's counts on their own cache lines
    counts = np.zeros((n_threads, padded_count(n_slots, sizeof(int64_t))),
                      dtype=np.int64)
    cdef int64_t[:, ::1] per_thread = counts
    cdef int64_t* base = &per_thread[0, 0]
    cdef Py_ssize_t stride = per_thread.shape[1], r
    # integer counts: summing the threads' rows afterwards gives the same
    # counts for any thread count
    for r in prange(n_rows, nogil=True, schedule="static",
                    num_threads=n_threads):
        if row_slot[r] != NO_SLOT:
            base[threadid() * stride + row_slot[r]] += 1
    return counts.sum(axis=0)[:n_slots]

