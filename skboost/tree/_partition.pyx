"""Row partitioner for level-wise growth: moves each active row to the slot of
the child its value selects, after the splits of a level are decided."""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython

from cython.parallel cimport prange
from libc.math cimport isnan

from libc.stdint cimport uint16_t

from ._binning cimport BinnedData
from ._sparse cimport BinnedRows, CSRView, SparseRows, csr_view, row_value
from ._common cimport (NO_FEATURE, NO_SLOT, PREFETCH_ROWS, int32_t, int64_t,
                       prefetch, uint8_t)
from .._parallel cimport threads_for_work
from ._checks cimport all_in_range, valid_slices


# Two partitioners live here:
#
# - apply_level_splits (the exact finder's growth): rows keep their place
#   and each row's slot number is rewritten, one independent write per row,
#   so a static schedule over rows needs no synchronisation at all;
# - RowPartition (the histogram finders): the row indices themselves are
#   regrouped so that each node's rows form one contiguous slice, which the
#   histogram builders then read sequentially.


cdef inline bint _goes_left(float x, int32_t slot, double threshold,
                            bint missing_left, const int64_t* cat_ptr,
                            const uint8_t* cat_left,
                            bint any_categorical) noexcept nogil:
    """Whether value ``x`` follows slot ``slot``'s split left: missing
    (NaN) values and codes outside a categorical split's set follow
    ``missing_left``; a categorical split reads its left set; a numeric
    split compares with the threshold."""
    cdef int64_t n_categories
    if isnan(x):
        return missing_left
    if any_categorical and cat_ptr[slot + 1] > cat_ptr[slot]:
        n_categories = cat_ptr[slot + 1] - cat_ptr[slot]
        # a category code is a whole number in [0, n_categories): anything
        # else (unseen categories) takes the missing direction, as in the
        # predictor
        if x >= 0 and x < n_categories and x == <int64_t> x:
            return cat_left[cat_ptr[slot] + <int64_t> x]
        return missing_left
    return x < threshold


cdef inline float _feature_value(bint sparse, const float[:, ::1] dense,
                                 const CSRView* csr, Py_ssize_t r,
                                 int32_t feature) noexcept nogil:
    """Row r's value of ``feature``: read from the dense matrix, or found
    by binary search among the row's stored entries."""
    if sparse:
        return row_value(csr.indptr, csr.indices, csr.data, r, feature,
                         csr.absent)
    return dense[r, feature]


def apply_level_splits(
        X,                                              # IN dense or SparseRows
        int32_t[::1] row_slot not None,                 # IN/OUT (n_rows,)
        const int32_t[::1] split_feature not None,      # IN (n_slots,) -1: now a leaf
        const double[::1] split_threshold not None,     # IN (n_slots,)
        const uint8_t[::1] default_left not None,       # IN (n_slots,)
        const int32_t[::1] left_slot not None,          # IN (n_slots,) slot at next level
        const int32_t[::1] right_slot not None,         # IN (n_slots,)
        *, int n_next_slots, int n_threads, left_sets=None):
    """Send every row of a split node to its child's slot; rows of nodes that
    became leaves get NO_SLOT. Returns the number of rows in each new slot
    (``n_next_slots`` of them). After the arrays, keyword-only.

    X is a float32 C-ordered (n_rows, n_features) array or ``SparseRows``,
    whose row values are found by binary search in the stored entries.

    ``left_sets`` (None, or one entry per slot) makes slot k's split
    categorical when ``left_sets[k]`` is not None: a bool array over the
    categories of its feature (whose values are category codes), True for
    those going left. A value that is not one of its category codes
    (unseen, or NaN) follows ``default_left``, as in the predictor.
    """
    n_threads = check_n_threads(n_threads)
    cdef bint sparse = isinstance(X, SparseRows)
    cdef const float[:, ::1] dense = (np.zeros((1, 1), np.float32) if sparse
                                      else X)
    _check_inputs(X, row_slot, split_feature, split_threshold, default_left,
                  left_slot, right_slot, n_next_slots)
    ptr_arr, left_arr = _slot_left_sets(left_sets, split_feature.shape[0])
    cdef const int64_t[::1] cat_ptr = ptr_arr
    cdef const uint8_t[::1] cat_left = left_arr
    cdef bint any_categorical = ptr_arr[len(ptr_arr) - 1] > 0
    cdef CSRView csr
    if sparse:
        csr = csr_view(X)
    cdef Py_ssize_t n_rows = row_slot.shape[0], r
    cdef int32_t slot, feature
    cdef float x
    # rows stay in place, each row's slot rewritten by one thread: any split
    # of the rows among threads gives the same slots (~4 work units a row)
    for r in prange(n_rows, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads, 4 * n_rows)):
        slot = row_slot[r]
        if slot == NO_SLOT:
            continue
        feature = split_feature[slot]
        # the slot's node became a leaf: its rows leave the tree's growth
        if feature == NO_FEATURE:
            row_slot[r] = NO_SLOT
            continue
        x = _feature_value(sparse, dense, &csr, r, feature)
        row_slot[r] = left_slot[slot] if _goes_left(
            x, slot, split_threshold[slot], default_left[slot], &cat_ptr[0],
            &cat_left[0], any_categorical) else right_slot[slot]
    return _slot_counts(row_slot, n_next_slots)


def _slot_counts(row_slot, n_next_slots):
    """The new slots' row counts (int64), which the next level's scan
    needs; rows without a slot are not counted."""
    slots = np.asarray(row_slot)
    return np.bincount(slots[slots >= 0], minlength=n_next_slots).astype(
        np.int64)


def _slot_left_sets(left_sets, n_slots):
    """Flat form of the slots' categorical left sets: slot k's is
    ``cat_left[cat_ptr[k]:cat_ptr[k+1]]`` (empty: a numeric split)."""
    return _flat_left_sets(left_sets, n_slots, "slot")


@cython.boundscheck(True)
@cython.wraparound(True)
def _flat_left_sets(left_sets, Py_ssize_t n, what, widths=None):
    """``left_sets`` (one per slot or node, None for a numeric split) as
    (cat_ptr, cat_left); each set has ``widths[k]`` entries if given (one
    per value bin of its feature), at least one otherwise."""
    cat_ptr = np.zeros(n + 1, dtype=np.int64)
    if left_sets is None:
        return cat_ptr, np.zeros(1, dtype=np.uint8)
    if len(left_sets) != n:
        raise ValueError(f"left_sets must have one entry per {what}")
    # CSR-like layout: the sets back to back in one uint8 array, cat_ptr
    # their offsets, so a nogil kernel reads slot k's set without Python
    sets = [None] * n
    for k, left in enumerate(left_sets):
        if left is None:
            continue
        left = np.asarray(left).reshape(-1)
        if widths is not None and left.shape[0] != widths[k]:
            raise ValueError("a left set must have one entry per value bin "
                             "of its feature")
        if left.shape[0] < 1:
            raise ValueError("a left set needs at least one category")
        sets[k] = left
        cat_ptr[k + 1] = left.shape[0]
    np.cumsum(cat_ptr, out=cat_ptr)
    # each set written once into its place (a high-cardinality feature's
    # sets are tens of thousands of entries: one pass each, not a cast, a
    # copy and a concatenation)
    # every byte is one set's (they tile cat_left): no zeroing pass, but
    # for the single byte of a batch without a set and the LEFT_SET_PAD
    # bytes after the last set (the vector steps' 4-byte reads)
    if not cat_ptr[n]:
        return cat_ptr, np.zeros(1, dtype=np.uint8)
    cat_left = np.empty(int(cat_ptr[n]) + LEFT_SET_PAD, dtype=np.uint8)
    cat_left[int(cat_ptr[n]):] = 0
    flags = cat_left.view(bool)
    for k, left in enumerate(sets):
        if left is not None:
            # a bool set copies as it is (np.not_equal's pass costs ten
            # times a copy's)
            flags[cat_ptr[k]:cat_ptr[k + 1]] = (
                left if left.dtype == np.bool_ else left != 0)
    return cat_ptr, cat_left


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_inputs(X, row_slot, split_feature, split_threshold, default_left,
                  left_slot, right_slot, n_next_slots):
    n_slots = split_feature.shape[0]
    if row_slot.shape[0] != X.shape[0]:
        raise ValueError("row_slot must have one entry per row of X")
    if not (split_threshold.shape[0] == default_left.shape[0]
            == left_slot.shape[0] == right_slot.shape[0] == n_slots):
        raise ValueError("split arrays must all have n_slots entries")
    features = np.asarray(split_feature)
    if n_slots and (features.max() >= X.shape[1] or features.min() < -1):
        raise ValueError("split_feature outside [-1, n_features)")
    slots = np.asarray(row_slot)
    if slots.size and (slots.max() >= n_slots or slots.min() < -1):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
    split = features >= 0
    for child in (np.asarray(left_slot)[split], np.asarray(right_slot)[split]):
        if child.size and (child.min() < 0 or child.max() >= n_next_slots):
            raise ValueError("child slot outside [0, n_next_slots)")


ctypedef fused code_t:
    uint8_t
    uint16_t

# Rows per parallel task when partitioning one node's slice: a node's
# slice is cut into tasks of this size, so a single large node (the root)
# still spreads over every thread, while each task is long enough (~16k
# rows, tens of microseconds) to pay for its scheduling.
ROWS_PER_TASK = 16384

# How many rows ahead the partition prefetches a row's code: its loop
# does little else than wait for that code (a byte of a line of its own
# on a deep node's scattered rows), so it looks further ahead than the
# histogram's PREFETCH_ROWS.
cdef enum:
    PARTITION_PREFETCH = 64


cdef extern from *:
    """
    /* The first pass of a split's task (_sort_task), 16 rows a step in
       AVX-512 registers, where the CPU has them: the 16 rows' codes
       gathered at once (a 4-byte read at the code's address, its low byte
       or low half kept: width 1 or 2 bytes a code), each row's side found
       (a numeric split: code <= split_bin; a categorical one: its code's
       flag in left_set, gathered as a 4-byte read at the flag, its low
       byte kept), the left and right rows compressed out of the 16 and
       written with masked stores, the left rows forward at l, the right
       rows reversed and backward from r. The same rows in the same places
       as the scalar loop, which goes on from where this stops: the rows
       of the last 15 or fewer, and any step holding a row whose 4-byte
       read would pass the end of the codes (safe_row: the largest row
       whose read stays inside). A categorical set's flags are read only
       for codes below the missing code (every value code: BinnedData
       checks the codes), up to 3 bytes past the set's last flag: the flat
       sets end in LEFT_SET_PAD bytes of padding (_flat_left_sets).
       Returns the next row to sort, l and r updated. (Taken where
       skb_partition_simd_init finds AVX-512.) */
    #include <stdint.h>
    #if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
        && (__GNUC__ >= 8)
    #include <immintrin.h>
    /* Which of 16 rows go left: a missing code to the node's missing
       side, a value code by its flag in left_set (a categorical split:
       the flag gathered as a 4-byte read, its low byte kept; lanes of a
       value code only, a masked-off lane reads nothing) or by
       code <= split_bin (a numeric split, left_set NULL). */
    __attribute__((target("avx512f")))
    static inline __mmask16 skb_left_lanes(
            __m512i codes, __m512i missing_code, __mmask16 missing_side,
            __m512i bin, const uint8_t* left_set) {
        __mmask16 miss = _mm512_cmpeq_epi32_mask(codes, missing_code);
        __mmask16 in_left;
        if (left_set != NULL) {
            __mmask16 valued = _mm512_cmplt_epu32_mask(codes, missing_code);
            __m512i flags = _mm512_mask_i32gather_epi32(
                _mm512_setzero_si512(), valued, codes,
                (const void*) left_set, 1);
            in_left = _mm512_test_epi32_mask(flags,
                                             _mm512_set1_epi32(0xFF));
        } else {
            in_left = _mm512_cmple_epi32_mask(codes, bin);
        }
        return (__mmask16) ((miss & missing_side) | (~miss & in_left));
    }
    __attribute__((target("avx512f")))
    static int64_t skb_sort_rows_avx512(
            const void* column, int code_width, int64_t safe_row,
            const int32_t* row_index, int32_t* scratch, int64_t i,
            int64_t end, int32_t missing, int missing_left,
            int32_t split_bin, const uint8_t* left_set, int64_t* l_io,
            int64_t* r_io) {
        int64_t l = *l_io, r = *r_io;
        const __m512i code_mask = _mm512_set1_epi32(
            code_width == 1 ? 0xFF : 0xFFFF);
        const __m512i bin = _mm512_set1_epi32(split_bin);
        const __m512i missing_code = _mm512_set1_epi32(missing);
        const __m512i limit = _mm512_set1_epi32(
            (int32_t) (safe_row > INT32_MAX ? INT32_MAX
                       : safe_row < -1 ? -1 : safe_row));
        const __m512i reverse = _mm512_set_epi32(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __mmask16 missing_side = missing_left ? 0xFFFF : 0;
        for (; i + 16 <= end; i += 16) {
            __m512i rows = _mm512_loadu_si512((const void*) (row_index + i));
            if (_mm512_cmpgt_epi32_mask(rows, limit))
                break;
            __m512i codes = code_width == 1
                ? _mm512_i32gather_epi32(rows, column, 1)
                : _mm512_i32gather_epi32(rows, column, 2);
            codes = _mm512_and_si512(codes, code_mask);
            __mmask16 left = skb_left_lanes(codes, missing_code,
                                            missing_side, bin, left_set);
            int n_left = __builtin_popcount((unsigned) left);
            int n_right = 16 - n_left;
            _mm512_mask_storeu_epi32(
                (void*) (scratch + l), (__mmask16) ((1u << n_left) - 1),
                _mm512_maskz_compress_epi32(left, rows));
            /* the right rows reversed into the top lanes: lane 15 (the
               first right row) lands at r, as the scalar loop puts it */
            _mm512_mask_storeu_epi32(
                (void*) (scratch + (r - 15)),
                (__mmask16) (0xFFFFu << (16 - n_right)),
                _mm512_permutexvar_epi32(
                    reverse, _mm512_maskz_compress_epi32(
                        (__mmask16) ~left, rows)));
            l += n_left;
            r -= n_right;
        }
        *l_io = l;
        *r_io = r;
        return i;
    }
    static int skb_partition_simd_init(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
    }
    #else
    static int64_t skb_sort_rows_avx512(
            const void* column, int code_width, int64_t safe_row,
            const int32_t* row_index, int32_t* scratch, int64_t i,
            int64_t end, int32_t missing, int missing_left,
            int32_t split_bin, const uint8_t* left_set, int64_t* l_io,
            int64_t* r_io) {
        return i;
    }
    static int skb_partition_simd_init(void) { return 0; }
    #endif
    """
    int64_t sort_rows_avx512 "skb_sort_rows_avx512"(
        const void* column, int code_width, int64_t safe_row,
        const int32_t* row_index, int32_t* scratch, int64_t i, int64_t end,
        int32_t missing, int missing_left, int32_t split_bin,
        const uint8_t* left_set, int64_t* l_io, int64_t* r_io) noexcept nogil
    int partition_simd_init "skb_partition_simd_init"() noexcept nogil


# Bytes of padding after the flat left sets (_flat_left_sets): the vector
# steps read a categorical flag as 4 bytes (sort_rows_avx512).
LEFT_SET_PAD = 3


# Whether _sort_task takes the AVX-512 steps (sort_rows_avx512): the CPU
# has them (set_vector_partition turns them off, for tests of the scalar
# loop).
cdef bint _vector_partition = partition_simd_init()


def set_vector_partition(bint enabled):
    """Use the AVX-512 steps of the partition where the CPU has them
    (True, the default), or the scalar loop only; returns the previous
    setting. The rows go to the same places either way."""
    global _vector_partition
    previous = _vector_partition
    _vector_partition = enabled and partition_simd_init()
    return previous


cdef class RowPartition:
    """Rows grouped by node: each node's rows are a contiguous slice of
    ``row_index``, in increasing row order (partitioning is stable).

    Parameters
    ----------
    rows : array-like of int
        The rows taking part in the tree (in increasing order).
    n_rows : int
        Number of rows of the data the indices refer to.
    """

    def __init__(self, rows, Py_ssize_t n_rows):
        self.n_rows = n_rows
        self.row_index = None
        self.reset(rows)

    def reset_to_active(self, active, int n_threads=1):
        """Start again (a new tree) from the rows where ``active`` (one
        entry per row of the data) is true, without an index temporary
        (all rows active: filled on up to ``n_threads`` threads).
        (The rows buffer has exactly as many entries as ``active`` has
        true values, so the fill stays inside it.)"""
        cdef const uint8_t[::1] mask = np.ascontiguousarray(active).view(
            np.uint8)
        if mask.shape[0] != self.n_rows:
            raise ValueError("active must have one entry per row")
        cdef Py_ssize_t n_active = np.count_nonzero(mask), i, k = 0
        # a sequential compaction: the rows come out in increasing order,
        # which the stable partition keeps in every node
        self._reserve(n_active)
        cdef int32_t[::1] rows = self.row_index
        if n_active == self.n_rows:
            # every row active (no subsampling): the identity, written in
            # parallel with no test per row
            for i in prange(n_active, nogil=True, schedule="static",
                            num_threads=threads_for_work(n_threads,
                                                         n_active)):
                rows[i] = <int32_t> i
            return
        with nogil:
            for i in range(self.n_rows):
                if mask[i]:
                    rows[k] = <int32_t> i
                    k += 1

    def _reserve(self, Py_ssize_t n_active):
        """Buffers for n_active rows, reused when the size is unchanged."""
        if self.row_index is None or self.row_index.shape[0] != n_active:
            self.row_index = np.empty(n_active, dtype=np.int32)
            # buffers for every split of this partition, allocated once
            self._scratch = np.empty_like(self.row_index)

    def reset(self, rows):
        """Start again from ``rows`` (a new tree), all in one node. The
        buffers are reused when the number of rows is unchanged, so a fit
        holds one partition's memory, not one per tree."""
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and (rows.min() < 0
                                             or rows.max() >= self.n_rows)):
            raise ValueError("rows must be indices in [0, n_rows)")
        if np.any(np.diff(rows) <= 0):
            raise ValueError("rows must be increasing (each row once)")
        self._reserve(rows.shape[0])
        self.row_index[:] = rows

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def split_nodes(self, BinnedData data, begin, end, feature, split_bin,
                    default_left, *, int n_threads, left_sets=None):
        """Stable partition of each node's slice ``[begin[k], end[k])``: rows
        whose code is ``<= split_bin[k]`` (or missing with ``default_left``)
        first. Returns the number of rows going left in each node.

        ``left_sets`` (None, or one entry per node) makes node k's split
        categorical when ``left_sets[k]`` is not None: a bool array with one
        entry per value bin of its feature, True for the codes going left.
        """
        n_threads = check_n_threads(n_threads)
        if data.n_rows != self.n_rows:
            raise ValueError("data and partition have different row counts")
        (tasks, begin, end, feature, split_bin, default_left, cat_ptr,
         cat_left) = _checked_splits(
            self.row_index.shape[0], data.n_features, data.missing_code,
            begin, end, feature, split_bin, default_left, left_sets)
        n_threads = _split_threads(tasks, begin, end, n_threads)
        # uint8 codes for up to 256 bins a feature, uint16 beyond: one
        # specialisation each, so the inner loop reads its codes directly
        if data.codes.dtype == np.uint8:
            return _split_nodes[uint8_t](data.codes_by_feature, self.row_index,
                                         data.missing_code, tasks, begin, end,
                                         feature, split_bin, default_left,
                                         cat_ptr, cat_left,
                                         self._scratch, n_threads)
        return _split_nodes[uint16_t](data.codes_by_feature, self.row_index,
                                      data.missing_code, tasks, begin, end,
                                      feature, split_bin, default_left,
                                      cat_ptr, cat_left,
                                      self._scratch, n_threads)


    @cython.boundscheck(True)
    @cython.wraparound(True)
    def split_nodes_sparse(self, BinnedRows data, begin, end, feature,
                           split_bin, default_left, *, int n_threads,
                           left_sets=None):
        """``split_nodes`` on sparse rows (``_sparse.BinnedRows``): a row's
        code of the split feature is its stored entry's, found by binary
        search among the row's entries, or the feature's absent code."""
        n_threads = check_n_threads(n_threads)
        if data.n_rows != self.n_rows:
            raise ValueError("data and partition have different row counts")
        (tasks, begin, end, feature, split_bin, default_left, cat_ptr,
         cat_left) = _checked_splits(
            self.row_index.shape[0], data.n_features, data.missing_code,
            begin, end, feature, split_bin, default_left, left_sets)
        n_threads = _split_threads(tasks, begin, end, n_threads)
        split = SplitArrays(tasks, begin, end, feature, split_bin,
                            default_left, cat_ptr, cat_left)
        if data.codes.dtype == np.uint8:
            return _split_sparse_nodes[uint8_t](data.codes, data,
                                                self.row_index, split,
                                                self._scratch, n_threads)
        return _split_sparse_nodes[uint16_t](data.codes, data,
                                             self.row_index, split,
                                             self._scratch, n_threads)

# the flat left sets of a batch without categorical splits
_NO_SETS = np.zeros(1, dtype=np.uint8)


def _split_threads(tasks, begin, end, int n_threads):
    """Threads for a batch of splits: by its tasks and its rows' work (3
    units a row: see _split_nodes; set for its earlier three passes, kept
    so the thread counts of small nodes stay as tuned)."""
    return min(threads_for_tasks(tasks[0].shape[0], n_threads),
               threads_for_work(n_threads, 3 * int((end - begin).sum())))


def _checked_splits(Py_ssize_t n_positions, Py_ssize_t n_features,
                    missing_code, begin, end, feature, split_bin,
                    default_left, left_sets):
    """A batch of splits checked and laid out for the partition kernels
    (``split_nodes``, ``split_nodes_sparse``): the nodes' slices within
    the partition's ``n_positions`` and not overlapping, one feature, bin
    and default direction per node, the features in range. Returns the
    tasks (the slices cut into tasks of at most ROWS_PER_TASK rows), the
    arrays as the kernels type them, and the flat categorical left sets
    (``cat_ptr``, ``cat_left``)."""
    begin = np.ascontiguousarray(begin, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    feature = np.ascontiguousarray(feature, dtype=np.int32)
    split_bin = np.ascontiguousarray(split_bin, dtype=np.int32)
    default_left = np.ascontiguousarray(default_left, dtype=np.uint8)
    n_nodes = begin.shape[0]
    if not (end.shape[0] == feature.shape[0] == split_bin.shape[0]
            == default_left.shape[0] == n_nodes):
        raise ValueError("one begin, end, feature, bin, default per node")
    if not valid_slices(begin, end, n_positions):
        raise ValueError("node slices outside the partition")
    if not all_in_range[int32_t](feature, 0, n_features):
        raise ValueError("split feature outside [0, n_features)")
    if not disjoint_slices(begin, end, _begin_order(begin)):
        raise ValueError("node slices must not overlap")
    if left_sets is None:   # every split numeric (no per-node sets)
        cat_ptr, cat_left = np.zeros(n_nodes + 1, np.int64), _NO_SETS
    else:
        cat_ptr, cat_left = _left_set_arrays(left_sets, feature,
                                             missing_code)
    return (_make_tasks(begin, end), begin, end, feature, split_bin,
            default_left, cat_ptr, cat_left)


def _begin_order(begin):
    """The order that sorts the slices by begin: the identity when they are
    sorted already (the driver's batches usually are), without a sort."""
    cdef const int64_t[::1] b = begin
    cdef Py_ssize_t k
    for k in range(b.shape[0] - 1):
        if b[k + 1] < b[k]:
            return np.argsort(begin, kind="stable")
    return np.arange(b.shape[0], dtype=np.int64)


cdef bint disjoint_slices(const int64_t[::1] begin, const int64_t[::1] end,
                          const int64_t[::1] order) noexcept:
    """No two slices overlap (``order`` sorts them by begin)."""
    cdef Py_ssize_t i
    for i in range(order.shape[0] - 1):
        if end[order[i]] > begin[order[i + 1]]:
            return False
    return True


def _left_set_arrays(left_sets, feature, missing_code):
    """Flat form of the categorical splits' left sets: node k's codes are
    ``cat_left[cat_ptr[k]:cat_ptr[k+1]]`` (empty for a numeric split),
    one per value bin of its feature (checked: every value code indexes
    inside)."""
    feature = np.asarray(feature)
    widths = np.asarray(missing_code)[feature]  # features checked above
    return _flat_left_sets(left_sets, feature.shape[0], "node", widths)


def threads_for_tasks(Py_ssize_t n_tasks, int n_threads):
    """No more threads than tasks: a parallel region costs a barrier, which
    is expensive for small work (and very expensive on a busy machine)."""
    return max(1, min(n_threads, n_tasks))


def _make_tasks(begin, end):
    """(node, task begin, task end) of slices of at most ROWS_PER_TASK rows
    (an empty slice is one empty task), as three int64 arrays."""
    cdef const int64_t[::1] b = np.ascontiguousarray(begin, dtype=np.int64)
    cdef const int64_t[::1] e = np.ascontiguousarray(end, dtype=np.int64)
    cdef int64_t step = ROWS_PER_TASK, start
    cdef Py_ssize_t k, t = 0, n_tasks = 0
    # first count the tasks (ceil of each slice / step, one for an empty
    # slice), then fill them: a node's tasks are consecutive and in row
    # order, which _task_destinations relies on for stability
    for k in range(b.shape[0]):
        n_tasks += max(1, (e[k] - b[k] + step - 1) // step)
    node_arr = np.empty(n_tasks, dtype=np.int64)
    begin_arr = np.empty(n_tasks, dtype=np.int64)
    end_arr = np.empty(n_tasks, dtype=np.int64)
    cdef int64_t[::1] node = node_arr, task_begin = begin_arr
    cdef int64_t[::1] task_end = end_arr
    for k in range(b.shape[0]):
        start = b[k]
        while True:
            node[t], task_begin[t] = k, start
            task_end[t] = min(start + step, e[k])
            t += 1
            start += step
            if start >= e[k]:
                break
    return node_arr, begin_arr, end_arr


cdef void _task_destinations(const int64_t[::1] task_node,
                             const int64_t[::1] task_begin,
                             const int64_t[::1] task_end,
                             const int64_t[::1] task_left,   # rows going left
                             const int64_t[::1] begin,       # node slices
                             int64_t[::1] n_left,            # OUT, zeroed
                             int64_t[::1] left_dest,         # OUT per task
                             int64_t[::1] right_dest,        # OUT per task
                             ) noexcept nogil:
    """Where each task's left and right rows start: a node's left rows
    first, in task order, then its right rows in task order, so the
    partition is stable (a node's tasks are consecutive, in row order:
    _make_tasks); and each node's count of left rows. A C loop: on small
    nodes the numpy calls it replaced cost more than the partition itself."""
    cdef Py_ssize_t t, n_tasks = task_node.shape[0]
    cdef int64_t node, next_left = 0, next_right = 0
    # An exclusive prefix sum per node, over its tasks in row order:
    #
    #     node slice:  [ task 0 | task 1 | task 2 ]
    #     after:       [ L0 L1 L2 | R0 R1 R2 ]   (Lt, Rt: task t's rows)
    #
    # so each task knows where its left and right rows start, and the
    # placing pass can run the tasks in parallel without any atomic.
    for t in range(n_tasks):
        n_left[task_node[t]] += task_left[t]
    for t in range(n_tasks):
        node = task_node[t]
        if t == 0 or task_node[t - 1] != node:   # the node's first task
            next_left = begin[node]
            next_right = begin[node] + n_left[node]
        left_dest[t] = next_left
        right_dest[t] = next_right
        next_left += task_left[t]
        next_right += (task_end[t] - task_begin[t]) - task_left[t]


cdef inline int64_t _sort_task(const code_t[:, ::1] codes_by_feature,
                               const int32_t[::1] row_index,
                               int32_t[::1] scratch,
                               int64_t begin, int64_t end, int32_t f,
                               int32_t missing, bint missing_left,
                               int32_t split_bin,
                               const uint8_t* left_set,
                               int64_t safe_row) noexcept nogil:
    """One task's rows ``row_index[begin:end]`` into the same range of
    ``scratch``: its left rows forward from ``begin``, its right rows
    backward from ``end - 1`` (so in reverse order). Returns the number
    of left rows. (``left_set``: NULL for a numeric split; ``safe_row``:
    the largest row whose code of ``f`` the vector steps may read as 4
    bytes, ``_safe_rows``.)

    Every row is written to both ends, the row's own end then advancing
    (a mask, not a branch: rows go left or right at random, and a
    mispredicted branch per row cost more than the rest of the pass). The
    other write lands in a position no row has claimed yet, which a later
    row (or this one) overwrites: ``l <= r`` until the last row."""
    cdef int64_t i, first = begin, l = begin, r = end - 1
    cdef int32_t row, code, g
    # the rows 16 at a time first (sort_rows_avx512), this loop then
    # sorting the rest
    if _vector_partition and end - begin >= 16:
        first = sort_rows_avx512(&codes_by_feature[f, 0], sizeof(code_t),
                                 safe_row, &row_index[0], &scratch[0], begin,
                                 end, missing, missing_left, split_bin,
                                 left_set, &l, &r)
    # The task's range of scratch fills from both ends:
    #
    #     row_index[begin:end]:  r0 r1 r2 r3 r4 r5   (r1, r3, r4 go left)
    #     scratch[begin:end]:    r1 r3 r4 | r5 r2 r0
    #                            l -->      <-- r
    #
    # (the right rows come out reversed; _place_task reverses them back).
    # The codes are read in the feature-major layout (codes_by_feature[f]:
    # one feature's codes contiguous), and prefetched PREFETCH_ROWS rows
    # ahead, as the rows of a node are scattered over the data.
    for i in range(first, end):
        if i + PARTITION_PREFETCH < end:
            prefetch(&codes_by_feature[f, row_index[i + PARTITION_PREFETCH]])
        row = row_index[i]
        code = codes_by_feature[f, row]
        if code == missing:
            g = missing_left
        elif left_set != NULL:
            g = left_set[code]
        else:
            g = code <= split_bin
        scratch[l] = row
        scratch[r] = row
        l = l + g
        r = r - 1 + g
    return l - begin


cdef inline void _place_task(const int32_t[::1] scratch,
                             int32_t[::1] row_index,
                             int64_t begin, int64_t end, int64_t n_left,
                             int64_t left_dest,
                             int64_t right_dest) noexcept nogil:
    """A task's sorted rows (``_sort_task``) from ``scratch`` to their
    node's slice of ``row_index``: the left rows as they are, the right
    rows reversed back into row order (the partition stays stable)."""
    cdef int64_t k, n_right = end - begin - n_left
    # two sequential copies; tasks write disjoint ranges of row_index
    # (_task_destinations), so the tasks run in parallel without locks
    for k in range(n_left):
        row_index[left_dest + k] = scratch[begin + k]
    for k in range(n_right):
        row_index[right_dest + k] = scratch[end - 1 - k]


cdef object _safe_rows(const code_t[:, ::1] codes_by_feature):
    """Per feature f, the largest row r whose 4 bytes from
    ``&codes_by_feature[f, r]`` lie inside the codes (the vector steps'
    gather reads 4 bytes a code): every row but the last three for the
    last feature, every row for the others."""
    cdef Py_ssize_t n_features = codes_by_feature.shape[0]
    cdef Py_ssize_t n_rows = codes_by_feature.shape[1], f
    safe = np.full(n_features, -1, dtype=np.int64)
    if n_rows == 0:
        return safe
    # the last code of the buffer, in either order of the features
    cdef const char* last = <const char*> &codes_by_feature[
        n_features - 1 if codes_by_feature.strides[0] >= 0 else 0,
        n_rows - 1] + sizeof(code_t) - 1
    for f in range(n_features):
        safe[f] = (last - <const char*> &codes_by_feature[f, 0]
                   - 3) // <Py_ssize_t> sizeof(code_t)
    return np.minimum(safe, n_rows - 1)


cdef object _split_nodes(const code_t[:, ::1] codes_by_feature,
                         int32_t[::1] row_index,            # IN/OUT
                         const int32_t[::1] missing_code,
                         tuple tasks,
                         const int64_t[::1] begin,
                         const int64_t[::1] end,
                         const int32_t[::1] feature,
                         const int32_t[::1] split_bin,
                         const uint8_t[::1] default_left,
                         const int64_t[::1] cat_ptr,        # (n_nodes + 1,)
                         const uint8_t[::1] cat_left,       # flat left sets
                         int32_t[::1] scratch,              # work buffer
                         int n_threads):
    """Two passes over the rows: each task sorts its rows into its own
    range of ``scratch`` (``_sort_task``), then, once every task's count
    of left rows gives where its rows go, puts them in place."""
    cdef const int64_t[::1] task_node = tasks[0]
    cdef const int64_t[::1] task_begin = tasks[1]
    cdef const int64_t[::1] task_end = tasks[2]
    cdef Py_ssize_t n_tasks = task_node.shape[0], t
    cdef int64_t[::1] task_left = np.zeros(n_tasks, dtype=np.int64)
    cdef int64_t node
    cdef int32_t f
    cdef const uint8_t* left_set
    cdef const int64_t[::1] safe_row = _safe_rows(codes_by_feature)
    # pass 1, in parallel over tasks: each task sorts its rows into its own
    # range of scratch (disjoint ranges: no two threads share a write).
    # Tasks are handed out as threads come free (dynamic): a thread that
    # wakes late, or a node whose rows cost more (scattered codes, a
    # categorical set), then leaves the others no idle wait at the end
    for t in prange(n_tasks, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        node = task_node[t]
        f = feature[node]
        # categorical: a value code goes left when the node's set says so
        # (the test is the same for the whole task: a predictable branch)
        left_set = (&cat_left[cat_ptr[node]]
                    if cat_ptr[node + 1] > cat_ptr[node] else NULL)
        task_left[t] = _sort_task(codes_by_feature, row_index, scratch,
                                  task_begin[t], task_end[t], f,
                                  missing_code[f], default_left[node],
                                  split_bin[node], left_set, safe_row[f])
    cdef int64_t[::1] n_left = np.zeros(begin.shape[0], dtype=np.int64)
    cdef int64_t[::1] left_dest = np.empty(n_tasks, dtype=np.int64)
    cdef int64_t[::1] right_dest = np.empty(n_tasks, dtype=np.int64)
    # between the passes, sequentially: where each task's rows go (a prefix
    # sum over a few tasks)
    _task_destinations(task_node, task_begin, task_end, task_left, begin,
                       n_left, left_dest, right_dest)
    # pass 2, in parallel over tasks: the rows back into row_index at their
    # destinations. The result is the stable partition whatever the thread
    # count and whichever thread takes a task: every position is decided by
    # the counts alone
    for t in prange(n_tasks, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        _place_task(scratch, row_index, task_begin[t], task_end[t],
                    task_left[t], left_dest[t], right_dest[t])
    return np.asarray(n_left)


def add_leaf_values(RowPartition partition not None,
                    const int64_t[::1] begin not None,   # IN (n_leaves,)
                    const int64_t[::1] end not None,     # IN (n_leaves,)
                    const double[::1] value not None,    # IN (n_leaves,)
                    double[:, ::1] raw not None,         # IN/OUT (n_rows, K)
                    *, Py_ssize_t column, int n_threads):
    """``raw[row, column] += value[k]`` for every row of leaf k's slice of
    the partition: the training margins move by the new tree without walking
    it. Slices must not overlap (each row gets its leaf's value once)."""
    n_threads = check_n_threads(n_threads)
    _check_leaf_slices(partition, begin, end, value, raw, column)
    cdef Py_ssize_t n_leaves = begin.shape[0]
    cdef const int32_t[::1] rows = partition.row_index
    cdef Py_ssize_t k
    cdef int64_t i
    cdef int64_t n_updates = 0
    for k in range(n_leaves):
        n_updates += end[k] - begin[k]
    cdef Py_ssize_t n_columns = raw.shape[1]
    cdef double* margins = &raw[0, 0] if raw.shape[0] else NULL
    # one leaf per task: leaves own disjoint rows (checked), so no two
    # threads add to the same margin; dynamic, as leaf sizes vary widely.
    # A leaf's rows are scattered over the margins: each row's margin is
    # prefetched PREFETCH_ROWS rows ahead (a wait on memory per row was
    # most of the pass)
    for k in prange(n_leaves, nogil=True, schedule="dynamic",
                    num_threads=threads_for_work(n_threads, 2 * n_updates)):
        for i in range(begin[k], end[k]):
            if i + PREFETCH_ROWS < end[k]:
                prefetch(&margins[<Py_ssize_t> rows[i + PREFETCH_ROWS] * n_columns
                                  + column])
            margins[<Py_ssize_t> rows[i] * n_columns + column] += value[k]


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_leaf_slices(partition, begin, end, value, raw, column):
    n_leaves = begin.shape[0]
    if end.shape[0] != n_leaves or value.shape[0] != n_leaves:
        raise ValueError("one begin, end and value per leaf")
    if raw.shape[0] != partition.n_rows or not 0 <= column < raw.shape[1]:
        raise ValueError("raw must be (n_rows, n_columns) and column inside")
    b, e = np.asarray(begin), np.asarray(end)
    if n_leaves and (b.min() < 0 or e.max() > partition.row_index.shape[0]
                     or np.any(e < b)):
        raise ValueError("leaf slices outside the partition or overlapping")
    # an empty slice adds nothing wherever it sits (a leaf without rows may
    # abut or sit inside another's slice): only rows must not be shared
    rows = e > b
    b, e = b[rows], e[rows]
    order = np.argsort(b, kind="stable")
    if np.any(e[order][:-1] > b[order][1:]):
        raise ValueError("leaf slices outside the partition or overlapping")


class SplitArrays:
    """A batch of splits as the partition kernels read them (validated
    by the caller): the tasks (``_make_tasks``), each node's slice, split
    feature, bin, default direction and categorical left set."""

    def __init__(self, tasks, begin, end, feature, split_bin, default_left,
                 cat_ptr, cat_left):
        self.tasks = tasks
        self.begin, self.end = begin, end
        self.feature, self.split_bin = feature, split_bin
        self.default_left = default_left
        self.cat_ptr, self.cat_left = cat_ptr, cat_left


cdef inline int64_t _sort_sparse_task(const code_t* codes,
                                      const int64_t* indptr,
                                      const int32_t* indices,
                                      const int32_t[::1] row_index,
                                      int32_t[::1] scratch,
                                      int64_t begin, int64_t end, int32_t f,
                                      int32_t absent, int32_t missing,
                                      bint missing_left, int32_t split_bin,
                                      const uint8_t* left_set) noexcept nogil:
    """``_sort_task`` on sparse rows: each row's code of feature f is its
    stored entry's (a binary search in the row's sorted columns) or
    ``absent``."""
    cdef int64_t i, l = begin, r = end - 1, lo, hi, mid
    cdef int32_t row, code, g
    for i in range(begin, end):
        row = row_index[i]
        lo = indptr[row]
        hi = indptr[row + 1]
        while lo < hi:
            mid = (lo + hi) >> 1
            if indices[mid] < f:
                lo = mid + 1
            else:
                hi = mid
        if lo < indptr[row + 1] and indices[lo] == f:
            code = codes[lo]
        else:
            code = absent
        if code == missing:
            g = missing_left
        elif left_set != NULL:
            g = left_set[code]
        else:
            g = code <= split_bin
        scratch[l] = row
        scratch[r] = row
        l = l + g
        r = r - 1 + g
    return l - begin


cdef object _split_sparse_nodes(const code_t[::1] codes, BinnedRows data,
                                int32_t[::1] row_index,      # IN/OUT
                                split, int32_t[::1] scratch, int n_threads):
    """``_split_nodes`` on sparse rows: the same two passes."""
    cdef const int64_t[::1] task_node = split.tasks[0]
    cdef const int64_t[::1] task_begin = split.tasks[1]
    cdef const int64_t[::1] task_end = split.tasks[2]
    cdef const int64_t[::1] begin = split.begin
    cdef const int32_t[::1] feature = split.feature
    cdef const int32_t[::1] split_bin = split.split_bin
    cdef const uint8_t[::1] default_left = split.default_left
    cdef const int64_t[::1] cat_ptr = split.cat_ptr
    cdef const uint8_t[::1] cat_left = split.cat_left
    cdef const int64_t[::1] indptr = data.rows.indptr
    cdef const int32_t[::1] indices = data.rows.indices
    cdef const int32_t[::1] absent_code = data.absent_code
    cdef const int32_t[::1] missing_code = data.missing_code
    cdef const code_t* code_pointer = &codes[0] if codes.shape[0] else NULL
    cdef const int32_t* index_pointer = (&indices[0] if indices.shape[0]
                                         else NULL)
    cdef Py_ssize_t n_tasks = task_node.shape[0], t
    cdef int64_t[::1] task_left = np.zeros(n_tasks, dtype=np.int64)
    cdef int64_t node
    cdef int32_t f
    cdef const uint8_t* left_set
    for t in prange(n_tasks, nogil=True, schedule="static",
                    num_threads=n_threads):
        node = task_node[t]
        f = feature[node]
        left_set = (&cat_left[cat_ptr[node]]
                    if cat_ptr[node + 1] > cat_ptr[node] else NULL)
        task_left[t] = _sort_sparse_task(
            code_pointer, &indptr[0], index_pointer, row_index, scratch,
            task_begin[t], task_end[t], f, absent_code[f], missing_code[f],
            default_left[node], split_bin[node], left_set)
    cdef int64_t[::1] n_left = np.zeros(begin.shape[0], dtype=np.int64)
    cdef int64_t[::1] left_dest = np.empty(n_tasks, dtype=np.int64)
    cdef int64_t[::1] right_dest = np.empty(n_tasks, dtype=np.int64)
    _task_destinations(task_node, task_begin, task_end, task_left, begin,
                       n_left, left_dest, right_dest)
    for t in prange(n_tasks, nogil=True, schedule="static",
                    num_threads=n_threads):
        _place_task(scratch, row_index, task_begin[t], task_end[t],
                    task_left[t], left_dest[t], right_dest[t])
    return np.asarray(n_left)
