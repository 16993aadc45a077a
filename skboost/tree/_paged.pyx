"""One pass over the pages of binned rows per level: move the rows of the
level's split nodes to their children, and add the rows of the nodes being
built to their histograms (out-of-core training, ``finders/paged.py``).

In core, rows are kept sorted by node (``RowPartition``): a level moves
only the split nodes' rows and a node's histogram reads only its rows.
Out of core the same is done inside each page (``PagePartition``): a
page's rows are kept sorted by node, as a permutation of its row numbers
(uint16, 2 bytes a row) cut into one segment per node, and every page is
read once per level::

    start_level(node arrays, ...)     checked once per level
    for each page k (a thread each when there are enough pages):
      read the page's codes (pread)
      partition: each split node's segment into its children's
                 (tasks of at most 8192 rows, two passes as in core)
      build:     each built child's segment added to its histogram
                 (under its lock, or the thread's own copy of it)
    finish_level()                    copies summed, rows added counted

Sums are exact integers (fixed point), so nothing depends on the number
of threads or on which thread took which page.

A level's histograms are larger than the caches (up to 2**(depth-1) of
them, 114 KiB each at 28 features x 256 bins), and a page holds only a few
hundred rows of each: adding them straight would miss the cache at almost
every update. So before a histogram's (slice's) rows of the page are added,
the slice is read once, sequentially (the hardware prefetcher streams it),
and the scattered updates that follow hit the cache.
"""

import mmap
import os

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython
from cython.parallel cimport prange, threadid
from libc.stdint cimport uint16_t, uint64_t
from libc.string cimport memcpy, memset

from ._common cimport (CACHE_LINE, PREFETCH_ROWS, add_pair, fixed_point,
                      int32_t, int64_t, prefetch, uint8_t)
from ._context cimport SplitContext
from .._parallel cimport threads_for_work

ctypedef fused code_t:
    uint8_t
    uint16_t

cdef extern from *:
    """
    /* Read n int64 values one cache line apart, so that the lines are in
       cache for what follows; the empty asm keeps the loads. */
    static inline void skb_touch_lines(const int64_t* p, Py_ssize_t n) {
        int64_t s = 0;
        for (Py_ssize_t i = 0; i < n; i += 8) s += p[i];
    #if defined(__GNUC__) || defined(__clang__)
        __asm__ volatile("" : : "r"(s));
    #else
        static volatile int64_t sink; sink = s;
    #endif
    }
    """
    void touch_lines "skb_touch_lines"(const int64_t* p,
                                       Py_ssize_t n) noexcept nogil

cdef extern from *:
    """
    /* n bytes of file fd from offset into buf, however many reads it
       takes: n, fewer if the file ends first, or -errno. */
    #ifndef _WIN32
    #include <errno.h>
    #include <unistd.h>
    static Py_ssize_t skb_pread_all(int fd, char* buf, Py_ssize_t n,
                                    int64_t offset) {
        Py_ssize_t done = 0;
        while (done < n) {
            ssize_t got = pread(fd, buf + done, (size_t) (n - done),
                                (off_t) (offset + done));
            if (got < 0) {
                if (errno == EINTR) continue;
                return -(Py_ssize_t) errno;
            }
            if (got == 0) break;
            done += got;
        }
        return done;
    }
    #define SKB_HAVE_PREAD 1
    #else
    static Py_ssize_t skb_pread_all(int fd, char* buf, Py_ssize_t n,
                                    int64_t offset) { return -38; }
    #define SKB_HAVE_PREAD 0
    #endif
    """
    Py_ssize_t pread_all "skb_pread_all"(int fd, char* buf, Py_ssize_t n,
                                         int64_t offset) noexcept nogil
    bint HAVE_PREAD "SKB_HAVE_PREAD"

cdef extern from *:
    """
    /* A histogram's lock: taken without waiting (1 if taken), released
       with the histogram's updates made visible to the next taker. */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int skb_try_lock(int32_t* lock) {
        return _InterlockedCompareExchange((volatile long*) lock, 1, 0) == 0;
    }
    static inline void skb_unlock(int32_t* lock) {
        _InterlockedExchange((volatile long*) lock, 0);
    }
    #else
    static inline int skb_try_lock(int32_t* lock) {
        int32_t free_ = 0;
        return __atomic_compare_exchange_n(lock, &free_, 1, 0,
                                           __ATOMIC_ACQUIRE,
                                           __ATOMIC_RELAXED);
    }
    static inline void skb_unlock(int32_t* lock) {
        __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    }
    #endif
    """
    bint try_lock "skb_try_lock"(int32_t* lock) noexcept nogil
    void unlock "skb_unlock"(int32_t* lock) noexcept nogil

# Whether PagePartition.read_pages can read pages itself (POSIX pread).
CAN_READ_PAGES = bool(HAVE_PREAD)

# A page's rows are numbered inside the page by a uint16: pages hold at
# most MAX_PAGE_ROWS rows (``pages.rows_per_page``).
MAX_PAGE_ROWS = 65536
ctypedef uint16_t index_t

# Rows per parallel read of a page; entries per partition task (a split
# node's rows of a page are cut into tasks of at most this many: the tasks
# depend on the data only, never on the thread count).
cdef enum:
    READ_BLOCK_ROWS = 4096
    TASK_ROWS = 8192
    # columns of the task table
    T_START = 0
    T_END = 1
    T_LEFT = 2
    T_LEFT_TO = 3
    T_RIGHT_TO = 4
    T_COLUMNS = 5
    # columns of the table of histograms to add to (one per built segment)
    I_HIST = 0
    I_START = 1
    I_END = 2
    I_ROWS = 3
    I_COLUMNS = 4
    # distance (entries) of the code prefetched by the partition
    PARTITION_AHEAD = 16


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_level(n_rows, active, nodes, missing_code, bin_ptr, hist, gpair,
                 weight, rows):
    """Every per-level index the nogil loops follow, checked once a level
    (the node ids of the segments are checked by ``start_level``)."""
    n_features = missing_code.shape[0]
    if active.shape[0] != n_rows or gpair.shape[0] != n_rows or (
            weight is not None and weight.shape[0] != n_rows):
        raise ValueError("active, gpair and weight need one entry per row")
    if bin_ptr.shape[0] != n_features + 1:
        raise ValueError("missing_code and bin_ptr must describe the "
                         "page's features")
    if np.any(np.asarray(missing_code) != np.diff(np.asarray(bin_ptr)) - 1):
        raise ValueError("missing_code must be each feature's last bin")
    n_ids = nodes[0].shape[0]
    if any(a.shape[0] != n_ids for a in nodes):
        raise ValueError("the node arrays must have one entry per node id")
    if rows.shape[0] != hist.shape[0]:
        raise ValueError("rows must have one entry per histogram")
    feature, split_bin, default_left, left, right, build_row = nodes
    split = np.asarray(feature) >= 0
    if np.any(np.asarray(feature)[split] >= n_features):
        raise ValueError("split feature outside the page's features")
    for child in (np.asarray(left)[split], np.asarray(right)[split]):
        if child.size and (child.min() < 0 or child.max() >= n_ids):
            raise ValueError("child node id outside the node arrays")
    built = np.asarray(build_row)
    built = built[built >= 0]
    if built.size and built.max() >= hist.shape[0]:
        raise ValueError("build_row outside hist")
    if hist.shape[1] != bin_ptr[n_features] or hist.shape[2] != 2:
        raise ValueError("hist must be (n_hist, n_bins, 2)")


# How rows move inside one page (``order`` holds the page's row numbers,
# cut into one segment per node; node 3 below was split into 7 and 8):
#
#     order:  [ node 3: r0 r2 r5 r6 r9 ][ node 4: r1 r3 ... ]
#     tasks:  split_task over node 3's entries (at most TASK_ROWS each):
#     scratch [ r0 r5 r9 | r6 r2 ]   left rows forward, right rows backward
#     order:  [ node 7: r0 r5 r9 ][ node 8: r6 r2 ][ node 4: r1 r3 ... ]
#
# A segment's left rows keep their order; its right rows are reversed
# within each task (_place_task copies them as stored). Histogram sums are
# exact integers, so the order of a segment's rows changes no result. Then
# the rows of each built node's segment are added to its histogram: a
# histogram reads only its own rows, and reads them grouped.

# What one thread works with: its scratch and tables, and the histograms it
# adds to (the pool, or its private copies of the level's built ones).
ctypedef struct Work:
    index_t* scratch          # (page_rows,)
    int64_t* tasks            # (max tasks, T_COLUMNS)
    int64_t* items            # (cap, I_COLUMNS)
    int32_t* new_node         # (cap,)
    int32_t* new_bound        # (cap + 1,)
    int64_t* hist             # histograms added to
    const int64_t* slot       # pool row -> histogram of ``hist``; NULL: same
    int64_t* hist_rows        # (n_hist,) active rows added
    Py_ssize_t index          # the thread's number


cdef class PagePartition:
    """The rows of every page sorted by node: each page's rows are a
    permutation of its row numbers (``order``, uint16 page-local indices)
    cut into segments, one per node with rows in the page (``segments``).

    A level's pass over the pages does, page by page, what in-core
    training does over all rows (``RowPartition``): the rows of the
    level's split nodes are moved to their children (a two-pass partition
    of each split node's segment, as ``_partition``), then the rows of
    each built child's segment are added to its histogram. Only the split
    nodes' rows move and only the built children's rows are read, and a
    histogram's rows of a page come grouped already.

    Per level::

        start_level(node arrays, histograms, ...)   checked once a level
        read_pages(fd, row_bytes)                   (or add_page for each k)
        finish_level()

    ``read_pages`` gives whole pages to the threads: each reads a page
    (POSIX ``pread``), partitions it and adds its rows, with no barrier
    between pages. A level that builds many histograms adds to the pool's
    under a lock each (``use_locks``: an item whose histogram another
    thread holds is left for later); one that builds few has the threads
    after the first add to private copies, summed into the pool at the
    end of the level (copies of at most a quarter of the pool or 4
    histograms a thread: fewer threads take whole pages otherwise). With
    fewer pages than twice the threads, the threads share each page
    instead (parallel over a page's tasks and histograms). A row goes left when its code is ``<= split_bin``
    (missing code: ``default_left``), exactly as
    ``RowPartition.split_nodes`` sends it; a code beyond its feature's
    bins (a damaged page) goes right and is never added to a histogram or
    followed out of bounds. Sums are exact integers, so nothing depends on
    the number of threads or which thread took a page.

    Parameters
    ----------
    n_rows, page_rows : int
        Rows of the data and of a page (the last page may hold fewer);
        ``page_rows <= MAX_PAGE_ROWS``.
    """

    cdef readonly Py_ssize_t n_rows, page_rows, n_pages
    cdef readonly object order            # (n_rows,) uint16
    cdef index_t[::1] order_v
    cdef int32_t[:, ::1] seg_node         # (n_pages, cap) node of segment
    cdef int32_t[:, ::1] seg_bound        # (n_pages, cap + 1) starts, end
    cdef int64_t[::1] seg_count           # (n_pages,)
    cdef Py_ssize_t cap, n_work
    # per thread (n_work of them): Work structs and what they point into
    cdef object _work_bytes, _work_arrays
    cdef Work* work
    cdef uint8_t[:, ::1] buffers          # (n_work, page bytes)
    cdef int64_t[:, ::1] hist_rows        # (n_work, n_hist)
    cdef int64_t[:, :, :, ::1] private    # (copies, n_built, n_bins, 2)
    cdef object _private_store            # the memory of ``private``
    cdef int64_t[::1] slot                # (n_hist,) built pool row -> copy
    cdef int64_t[::1] built_rows          # (n_built,) pool rows built
    cdef int32_t[::1] locks               # (n_hist,) 1: a thread adds to it
    cdef readonly bint use_locks          # page threads share the pool
    # the level
    cdef object _refs
    cdef object rows_arr
    cdef const uint8_t* active            # NULL: every row active
    cdef const int32_t[::1] split_feature
    cdef const int32_t[::1] right_above   # (n_ids,) codes above go right
    cdef const uint8_t[::1] default_left
    cdef const int32_t[::1] left_child
    cdef const int32_t[::1] right_child
    cdef const int64_t[::1] build_row
    cdef const int32_t[::1] missing_code
    cdef const int64_t[::1] bin_ptr
    cdef const float[:, ::1] gpair
    cdef const double* weight
    cdef double scale_g, scale_h
    cdef int64_t[:, :, ::1] hist
    cdef int64_t[::1] read_status         # (n_work * 8) 0, -errno, 1: short
    cdef Py_ssize_t n_features
    # leading features whose every uint8 (uint16) code lands inside the
    # histogram: their codes need no check (``_add_rows``)
    cdef Py_ssize_t safe_features[2]
    cdef bint route, build, in_level
    cdef int n_threads
    cdef readonly int page_threads       # threads taking whole pages

    def __init__(self, Py_ssize_t n_rows, Py_ssize_t page_rows):
        if page_rows < 1 or page_rows > MAX_PAGE_ROWS:
            raise ValueError(f"page_rows must be in [1, {MAX_PAGE_ROWS}], "
                             f"got {page_rows}")
        if n_rows < 0:
            raise ValueError("n_rows must be >= 0")
        self.n_rows, self.page_rows = n_rows, page_rows
        self.n_pages = (n_rows + page_rows - 1) // page_rows
        self.order = np.empty(n_rows, dtype=np.uint16)
        self.order_v = self.order
        self.seg_count = np.zeros(self.n_pages, dtype=np.int64)
        self.seg_node = np.zeros((self.n_pages, 8), dtype=np.int32)
        self.seg_bound = np.zeros((self.n_pages, 9), dtype=np.int32)
        self.cap, self.n_work = 8, 0
        self.reset()

    def _grow(self, Py_ssize_t cap):
        """Room for ``cap`` segments a page (the segments kept)."""
        node = np.zeros((self.n_pages, cap), dtype=np.int32)
        bound = np.zeros((self.n_pages, cap + 1), dtype=np.int32)
        node[:, :self.cap] = self.seg_node
        bound[:, :self.cap + 1] = self.seg_bound
        self.seg_node, self.seg_bound = node, bound
        self.cap = cap
        self.n_work = 0     # the threads' tables: made again

    def _make_work(self, Py_ssize_t n_work, Py_ssize_t n_hist):
        """The threads' scratch and tables (kept while large enough)."""
        cdef Py_ssize_t t, n_tasks = self.page_rows // TASK_ROWS + 1 + self.cap
        cdef index_t[:, ::1] scratch
        cdef int64_t[:, :, ::1] tasks, items
        cdef int32_t[:, ::1] new_node, new_bound
        cdef uint8_t[::1] work_view
        if n_work > self.n_work or n_hist > self.hist_rows.shape[1]:
            scratch = np.empty((n_work, self.page_rows), dtype=np.uint16)
            tasks = np.empty((n_work, n_tasks, T_COLUMNS), dtype=np.int64)
            items = np.empty((n_work, self.cap, I_COLUMNS), dtype=np.int64)
            new_node = np.empty((n_work, self.cap), dtype=np.int32)
            new_bound = np.empty((n_work, self.cap + 1), dtype=np.int32)
            self.hist_rows = np.zeros((n_work, max(n_hist, 1)),
                                      dtype=np.int64)
            self._work_bytes = np.zeros(n_work * sizeof(Work), dtype=np.uint8)
            work_view = self._work_bytes
            self.work = <Work*> &work_view[0]
            self._work_arrays = (scratch, tasks, items, new_node, new_bound)
            for t in range(n_work):
                self.work[t].scratch = &scratch[t, 0]
                self.work[t].tasks = &tasks[t, 0, 0]
                self.work[t].items = &items[t, 0, 0]
                self.work[t].new_node = &new_node[t, 0]
                self.work[t].new_bound = &new_bound[t, 0]
                self.work[t].index = t
            self.n_work = n_work
        self.hist_rows[:, :] = 0

    def reset(self):
        """Every row at the root (node 0), each page's rows in order."""
        cdef Py_ssize_t k, j, first, n
        cdef index_t[::1] order = self.order_v
        # each page: the identity permutation, one segment (the root)
        for k in range(self.n_pages):
            first = k * self.page_rows
            n = min(self.page_rows, self.n_rows - first)
            with nogil:
                for j in range(n):
                    order[first + j] = <index_t> j
            self.seg_count[k] = 1
            self.seg_node[k, 0] = 0
            self.seg_bound[k, 0] = 0
            self.seg_bound[k, 1] = <int32_t> n

    @property
    def segments(self):
        """Per page, (node ids, bounds): segment s of page k holds the
        page's rows ``order[first + bounds[s]:first + bounds[s + 1]]``."""
        counts = np.asarray(self.seg_count)
        return [(np.asarray(self.seg_node[k, :counts[k]]).copy(),
                 np.asarray(self.seg_bound[k, :counts[k] + 1]).copy())
                for k in range(self.n_pages)]

    def node_of_rows(self):
        """Each row's node id (int32), from the segments."""
        out = np.empty(self.n_rows, dtype=np.int32)
        order = np.asarray(self.order, dtype=np.int64)
        for k, (nodes, bounds) in enumerate(self.segments):
            first = k * self.page_rows
            out[first + order[first + bounds[0]:first + bounds[-1]]] = (
                np.repeat(nodes, np.diff(bounds)))
        return out

    def _max_node(self):
        cdef Py_ssize_t k, s
        cdef int32_t top = -1
        for k in range(self.n_pages):
            for s in range(self.seg_count[k]):
                if self.seg_node[k, s] > top:
                    top = self.seg_node[k, s]
        return top

    def start_level(self, active, split_feature, split_bin, default_left,
                    left_child, right_child, build_row, missing_code,
                    bin_ptr, gpair, weight, hist, rows, *,
                    SplitContext context not None, bint route, bint build):
        """Check and keep the level's arrays (see the class docstring).

        After the arrays, keyword-only: ``context`` (the tree's fixed-point
        scales, ``scale_g`` and ``scale_h``, and the thread count the
        level's regions are sized from, ``n_threads``), and whether the
        pass moves the rows of split nodes (``route``) and adds rows to
        histograms (``build``)."""
        cdef const uint8_t[::1] active_v
        self.n_threads = check_n_threads(context.n_threads)
        nodes = (split_feature, split_bin, default_left, left_child,
                 right_child, build_row)
        _check_level(self.n_rows, active, nodes, missing_code, bin_ptr,
                     hist, gpair, weight, rows)
        # the segments' node ids index the node arrays in nogil loops
        if self._max_node() >= split_feature.shape[0]:
            raise ValueError("a row's node id is outside the node arrays")
        # splitting at most doubles the segments of a page
        needed = 2 * int(np.max(self.seg_count)) if self.n_pages else 1
        if needed > self.cap:
            self._grow(max(needed, 2 * self.cap))
        self.split_feature, self.default_left = split_feature, default_left
        self.left_child, self.right_child = left_child, right_child
        self.build_row, self.gpair = build_row, gpair
        # "goes right" as one comparison a row: a code above right_above
        # (split_bin, capped at the last value bin) goes right; the missing
        # code is above it too and is flipped by default_left in
        # _split_task; a damaged code beyond the missing code goes right
        feature = np.asarray(split_feature)
        last_value = np.asarray(missing_code)[np.maximum(feature, 0)] - 1
        self.right_above = np.minimum(split_bin, last_value).astype(np.int32)
        self.missing_code, self.bin_ptr = missing_code, bin_ptr
        active_v = active
        everyone = bool(np.all(np.asarray(active)))
        self.active = NULL if everyone or self.n_rows == 0 else &active_v[0]
        self._set_weight(weight)
        self._refs = (active, nodes, missing_code, bin_ptr, gpair, weight)
        self.scale_g, self.scale_h = context.scale_g, context.scale_h
        self.hist, self.rows_arr = hist, rows
        self.n_features = missing_code.shape[0]
        # safe_features[c - 1]: for codes of c bytes, how many leading
        # features cannot index past the histogram whatever their code
        # (bin_ptr[f] + the largest code < n_bins); _add_rows checks only
        # the codes of the features after them
        ptr = np.asarray(bin_ptr)
        for size, largest in ((1, 255), (2, 65535)):
            inside = ptr[:-1] + largest < ptr[-1]
            self.safe_features[size - 1] = (
                int(np.argmin(inside)) if not inside.all() else inside.size)
        self.route, self.build = route, build
        self._set_threads(np.asarray(build_row), hist)
        self.in_level = True

    def _set_threads(self, build_row, hist):
        """Threads that take whole pages (``page_threads``; 1: the threads
        share each page), their tables and private histograms."""
        built = (np.unique(build_row[build_row >= 0]) if self.build
                 else np.zeros(0, dtype=np.int64))
        n_built = len(built)
        # sized once for the level by its work (about 4 units a row: read,
        # route, add), then capped by the pages and the copies below
        threads = threads_for_work(self.n_threads, 4 * self.n_rows)
        # enough pages to balance
        self.page_threads = max(1, min(threads, self.n_pages // 2))
        # the pool's histograms under locks when there are many (the
        # threads seldom want the same one) and copies of them would
        # take more than an eighth of the pool; else private copies, of
        # at most a quarter of the pool or 4 histograms a thread (fewer
        # threads if need be)
        self.use_locks = (self.page_threads > 1
                          and n_built >= 4 * self.page_threads
                          and 8 * (self.page_threads - 1) * n_built
                          > hist.shape[0])
        if n_built and not self.use_locks:
            most = max(hist.shape[0] // 4, 4 * self.page_threads)
            self.page_threads = max(1, min(self.page_threads,
                                           1 + most // n_built))
        if self.use_locks:
            if self.locks is None or self.locks.shape[0] < hist.shape[0]:
                self.locks = np.zeros(hist.shape[0], dtype=np.int32)
            n_built = 0      # no copies
        self._make_work(max(threads, self.page_threads), hist.shape[0])
        self.read_status = np.zeros(self.n_work * 8, dtype=np.int64)
        built = built[:n_built]
        self.built_rows = np.asarray(built, dtype=np.int64)
        self.slot = np.full(hist.shape[0], -1, dtype=np.int64)
        if n_built:
            np.asarray(self.slot)[built] = np.arange(n_built)
        shape = (self.page_threads - 1, n_built) + tuple(hist.shape[1:])
        size = int(np.prod(shape))
        if self._private_store is None or self._private_store.size < size:
            # room for the most copies there are (a quarter of the pool) at
            # once: one allocation a fit, not one for each deeper level
            room = (max(hist.shape[0] // 4, 4 * self.page_threads)
                    * int(np.prod(shape[2:])))
            self._private_store = _mapped_empty(max(size, room, 1), np.int64)
        private = self._private_store[:size].reshape(shape)
        private[...] = 0
        self.private = private
        cdef int64_t[:, :, ::1] pool = hist
        cdef Py_ssize_t t
        # thread 0 (and every thread when there are no copies) adds to the
        # pool itself; threads 1.. add to their own copies, found through
        # `slot` (pool row -> copy row)
        for t in range(self.n_work):
            self.work[t].hist_rows = &self.hist_rows[t, 0]
            if t == 0 or t >= self.page_threads or n_built == 0:
                self.work[t].hist = &pool[0, 0, 0] if pool.shape[0] else NULL
                self.work[t].slot = NULL
            else:
                self.work[t].hist = &self.private[t - 1, 0, 0, 0]
                self.work[t].slot = &self.slot[0]

    def _set_weight(self, weight):
        cdef const double[::1] view
        self.weight = NULL
        if weight is not None:
            view = weight
            if view.shape[0]:
                self.weight = &view[0]

    def add_page(self, Py_ssize_t k, page):
        """Route and add the rows of page k (``page``: its (n, n_features)
        row-major uint8 or uint16 codes), the threads sharing the page."""
        if not self.in_level:
            raise ValueError("start_level first")
        if k < 0 or k >= self.n_pages:
            raise ValueError("page outside the data")
        if page.ndim != 2 or page.shape[1] != self.n_features:
            raise ValueError("missing_code and bin_ptr must describe the "
                             "page's features")
        if page.shape[0] != min(self.page_rows,
                                self.n_rows - k * self.page_rows):
            raise ValueError("the page's rows are not page k's rows")
        page = np.ascontiguousarray(page)
        if page.dtype == np.uint8:
            _shared_page[uint8_t](self, k, page)
        elif page.dtype == np.uint16:
            _shared_page[uint16_t](self, k, page)
        else:
            raise ValueError("page codes must be uint8 or uint16")

    def read_pages(self, int fd, Py_ssize_t code_bytes):
        """Read every page from the open page file ``fd`` (pages one after
        the other, row-major codes of ``code_bytes`` bytes each: 1 or 2)
        and pass each as :meth:`add_page` does, the threads taking whole
        pages when there are enough (see the class docstring). Raises
        OSError if the file ends early or a read fails."""
        if not HAVE_PREAD:
            raise OSError("reading pages in the kernel needs POSIX pread")
        if not self.in_level:
            raise ValueError("start_level first")
        if fd < 0 or code_bytes not in (1, 2):
            raise ValueError("fd must be open and code_bytes 1 or 2")
        # one status word per thread, 8 apart (a cache line each): a failed
        # read is recorded without the threads sharing a line
        self.read_status[:] = 0
        # a page for each thread that takes whole pages
        shape = (self.page_threads,
                 max(1, self.page_rows * self.n_features * code_bytes))
        if (self.buffers is None or self.buffers.shape[0] != shape[0]
                or self.buffers.shape[1] != shape[1]):
            self.buffers = _mapped_empty(shape, np.uint8)
        cdef uint8_t* buffers = &self.buffers[0, 0]
        if code_bytes == 1:
            _read_pages(self, fd, buffers)
        else:
            _read_pages(self, fd, <uint16_t*> buffers)
        if _read_failed(self):
            status = np.asarray(self.read_status)
            failed = status[status != 0]
            errno = int(-failed.min()) if failed.min() < 0 else 0
            raise OSError(errno, "reading the page file failed: "
                          + (os.strerror(errno) if errno
                             else "it ended early"))

    def finish_level(self):
        """Sum the private histograms into the pool; add the rows added
        to each histogram to ``rows``."""
        self.in_level = False
        if (self.page_threads > 1 and not self.use_locks
                and self.built_rows.shape[0]):
            _sum_private(self)
        n_hist = self.rows_arr.shape[0]
        self.rows_arr += np.asarray(self.hist_rows)[:, :n_hist].sum(axis=0)
        self._refs = None

    def add_values(self, value, raw, Py_ssize_t column, int n_threads):
        """``raw[row, column] += value[node of row]`` for every row."""
        value = np.ascontiguousarray(value, dtype=np.float64)
        if value.ndim != 1 or value.shape[0] <= self._max_node():
            raise ValueError("value needs one entry per node id")
        if raw.shape[0] != self.n_rows or not 0 <= column < raw.shape[1]:
            raise ValueError("raw must be (n_rows, n_columns)")
        _add_values(self, value, raw, column, check_n_threads(n_threads))


def _mapped_empty(shape, dtype):
    """An uninitialised array in its own anonymous memory map, not on the
    allocator's heap: the kernel's large buffers live for a fit, and on
    the heap they would keep the freed memory below them from being handed
    back to the system (glibc moves large blocks onto the heap once blocks
    of their size were freed)."""
    n_bytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    return np.frombuffer(mmap.mmap(-1, n_bytes), dtype=dtype,
                         count=int(np.prod(shape))).reshape(shape)


cdef void _add_values(PagePartition p, const double[::1] value,
                      double[:, :] raw, Py_ssize_t column,
                      int n_threads) noexcept:
    cdef Py_ssize_t k, s, j, first
    cdef double v
    cdef const index_t* order
    # pages own disjoint rows, so no two threads add to one margin; a
    # segment's value is read once for all its rows
    for k in prange(p.n_pages, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads, p.n_rows)):
        first = k * p.page_rows
        order = &p.order_v[first]
        for s in range(p.seg_count[k]):
            v = value[p.seg_node[k, s]]
            for j in range(p.seg_bound[k, s], p.seg_bound[k, s + 1]):
                raw[first + order[j], column] += v


cdef void _sum_private(PagePartition p) noexcept:
    """pool[h] += every private copy of h, for the level's built h."""
    cdef Py_ssize_t n_built = p.built_rows.shape[0]
    cdef Py_ssize_t n_values = p.hist.shape[1] * 2, b, c, j
    cdef int64_t* pool
    cdef const int64_t* copy
    # one histogram per task, its copies added in copy order: integer sums,
    # so the pool's histograms equal those of a single thread bit for bit
    for b in prange(n_built, nogil=True, schedule="static",
                    num_threads=threads_for_work(p.n_threads,
                                                 n_built * n_values)):
        pool = &p.hist[p.built_rows[b], 0, 0]
        for c in range(p.page_threads - 1):
            copy = &p.private[c, b, 0, 0]
            for j in range(n_values):
                pool[j] += copy[j]


cdef void _read_pages(PagePartition p, int fd, code_t* buffers) noexcept:
    """Each page read and worked on by one thread (``page_threads`` > 1,
    thread t in buffer t of ``buffers``), or read by blocks and shared by
    the threads."""
    cdef Py_ssize_t row_bytes = p.n_features * sizeof(code_t)
    cdef Py_ssize_t stride = p.buffers.shape[1] // sizeof(code_t)
    cdef Py_ssize_t k, n, got
    cdef int tid
    cdef int64_t* status = &p.read_status[0]
    cdef code_t* codes
    # Many pages: each thread reads a whole page into its own buffer and
    # works on it alone, no barrier between pages (dynamic: a page costs
    # what its split and built rows cost). A failed read leaves that page
    # out and is reported after the loop.
    if p.page_threads > 1:
        for k in prange(p.n_pages, nogil=True, schedule="dynamic",
                        num_threads=p.page_threads):
            tid = threadid()
            n = min(p.page_rows, p.n_rows - k * p.page_rows)
            codes = buffers + tid * stride
            got = pread_all(fd, <char*> codes, n * row_bytes,
                            k * p.page_rows * row_bytes)
            if got != n * row_bytes:
                status[tid * 8] = got if got < 0 else 1
                continue
            _work_on_page(p, k, codes, n, &p.work[tid], 1)
        return
    # Few pages: pages one after the other, each read in parallel blocks,
    # then shared by the threads (parallel over its tasks and histograms)
    cdef int threads = threads_for_work(p.n_threads, 4 * p.page_rows)
    codes = buffers
    for k in range(p.n_pages):
        n = min(p.page_rows, p.n_rows - k * p.page_rows)
        _read_blocks(codes, n * row_bytes, p, row_bytes, threads, fd,
                     k * p.page_rows * row_bytes)
        if _read_failed(p):
            return
        _work_on_page(p, k, codes, n, &p.work[0], threads)


cdef void _shared_page(PagePartition p, Py_ssize_t k,
                       const code_t[:, ::1] page) noexcept:
    cdef Py_ssize_t n = page.shape[0]
    _work_on_page(p, k, &page[0, 0], n, &p.work[0],
                  threads_for_work(p.n_threads, 4 * n))


cdef void _work_on_page(PagePartition p, Py_ssize_t k, const code_t* codes,
                        Py_ssize_t n, Work* w, int threads) noexcept nogil:
    # route before build: the level's histograms are those of the children
    # of the nodes just split, so their rows must be in their segments
    if p.route:
        _partition(p, k, codes, w, threads)
    if p.build:
        _build(p, k, codes, w, threads)


cdef void _read_blocks(void* buffer, Py_ssize_t n_bytes, PagePartition p,
                       Py_ssize_t row_bytes, int n_threads, int fd,
                       int64_t file_offset) noexcept:
    """The page's bytes, READ_BLOCK_ROWS rows per parallel read; a failed
    read recorded in ``read_status``."""
    cdef Py_ssize_t block = READ_BLOCK_ROWS * row_bytes
    cdef Py_ssize_t n_blocks = (n_bytes + block - 1) // block
    cdef Py_ssize_t b, size, got
    cdef int64_t* status = &p.read_status[0]
    for b in prange(n_blocks, nogil=True, schedule="static",
                    num_threads=n_threads):
        size = min(block, n_bytes - b * block)
        got = pread_all(fd, <char*> buffer + b * block, size,
                        file_offset + b * block)
        if got != size:
            status[threadid() * 8] = got if got < 0 else 1


cdef bint _read_failed(PagePartition p) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(p.read_status.shape[0]):
        if p.read_status[i] != 0:
            return True
    return False


cdef Py_ssize_t _split_task(const code_t* codes, Py_ssize_t n_features,
                            const index_t* order, index_t* scratch,
                            Py_ssize_t start, Py_ssize_t end, int32_t feat,
                            int32_t above, int32_t last,
                            int32_t missing_left) noexcept nogil:
    """Entries ``start .. end`` of a split node's segment into
    ``scratch[start:end]``: left rows forward from ``start``, right rows
    backward from ``end``. Each row is stored at both ends and only one
    end advances (no branch on the side: it is a coin flip); the other
    store lands where nothing is kept yet. Returns the left rows."""
    cdef Py_ssize_t j, left = start, right = end
    cdef int32_t code, goes_right
    cdef index_t i
    # codes are row-major in a page (a row's features adjacent), so one
    # feature's codes are n_features apart: each read is a cache miss,
    # hidden by the prefetch PARTITION_AHEAD entries ahead
    for j in range(start, end):
        if j + PARTITION_AHEAD < end:
            prefetch(codes + order[j + PARTITION_AHEAD] * n_features + feat)
        i = order[j]
        code = codes[i * n_features + feat]
        # above the split bin: right; the missing code (above too) goes
        # left instead when missing values go left
        goes_right = (code > above) ^ ((code == last) & missing_left)
        scratch[left] = i
        scratch[right - 1] = i
        left += 1 - goes_right
        right -= goes_right
    return left - start


cdef inline void _run_task(PagePartition p, const code_t* codes,
                           index_t* order, index_t* scratch,
                           int64_t* task) noexcept nogil:
    cdef int32_t node = <int32_t> task[T_LEFT]   # the node, until it runs
    cdef int32_t feat = p.split_feature[node]
    task[T_LEFT] = _split_task(codes, p.n_features, order, scratch,
                               task[T_START], task[T_END], feat,
                               p.right_above[node], p.missing_code[feat],
                               p.default_left[node])


cdef void _partition(PagePartition p, Py_ssize_t k, const code_t* codes,
                     Work* w, int n_threads) noexcept nogil:
    """The rows of the page's split segments to their children: tasks
    split into ``scratch``, their places from the counts, the rows copied
    back, the page's segments replaced (``n_threads`` > 1: the tasks in
    parallel)."""
    cdef index_t* order = &p.order_v[k * p.page_rows]
    cdef Py_ssize_t n_tasks = _make_tasks(p, k, w.tasks)
    cdef Py_ssize_t t
    # the same two passes as the in-core partition (_partition.pyx): tasks
    # sort their entries into disjoint scratch ranges, the counts give each
    # task's destinations (_place_segments, sequential), tasks copy back.
    # The tasks depend on the page only, so the result does not depend on
    # the thread count
    if n_tasks == 0:
        return
    if n_threads > 1 and n_tasks > 1:
        for t in prange(n_tasks, schedule="static",
                        num_threads=min(n_threads, n_tasks)):
            _run_task(p, codes, order, w.scratch, w.tasks + t * T_COLUMNS)
    else:
        for t in range(n_tasks):
            _run_task(p, codes, order, w.scratch, w.tasks + t * T_COLUMNS)
    _place_segments(p, k, w)
    if n_threads > 1 and n_tasks > 1:
        for t in prange(n_tasks, schedule="static",
                        num_threads=min(n_threads, n_tasks)):
            _place_task(order, w.scratch, w.tasks + t * T_COLUMNS)
    else:
        for t in range(n_tasks):
            _place_task(order, w.scratch, w.tasks + t * T_COLUMNS)


cdef Py_ssize_t _make_tasks(PagePartition p, Py_ssize_t k,
                            int64_t* tasks) noexcept nogil:
    """Tasks of at most TASK_ROWS entries over the page's split segments,
    in segment order (T_LEFT holds the node until the task runs)."""
    cdef Py_ssize_t s, a, b, n_tasks = 0
    cdef int32_t node
    cdef int64_t* task
    for s in range(p.seg_count[k]):
        node = p.seg_node[k, s]
        if p.split_feature[node] < 0:
            continue
        a = p.seg_bound[k, s]
        b = p.seg_bound[k, s + 1]
        while a < b:
            task = tasks + n_tasks * T_COLUMNS
            task[T_START] = a
            task[T_END] = min(a + TASK_ROWS, b)
            task[T_LEFT] = node
            n_tasks = n_tasks + 1
            a = task[T_END]
    tasks[n_tasks * T_COLUMNS + T_START] = -1    # the end of the table
    return n_tasks


cdef void _place_segments(PagePartition p, Py_ssize_t k,
                          Work* w) noexcept nogil:
    """Where each task's left and right rows go (the left rows of a split
    segment first, in task order, then its right rows), and the page's
    new segments: a split node's segment becomes its children's (empty
    ones dropped), the others stay."""
    cdef Py_ssize_t s, a, b, n_new = 0
    cdef int64_t left_rows, left_to, right_to
    cdef int32_t node
    cdef int64_t* task = w.tasks
    cdef int64_t* last
    for s in range(p.seg_count[k]):
        node = p.seg_node[k, s]
        a = p.seg_bound[k, s]
        b = p.seg_bound[k, s + 1]
        if p.split_feature[node] < 0:
            w.new_node[n_new] = node
            w.new_bound[n_new] = <int32_t> a
            n_new = n_new + 1
            continue
        # the segment's tasks are the next ones of the table (made in
        # segment order); the table ends with a start of -1
        left_rows = 0
        last = task
        while last[T_START] >= a and last[T_START] < b:
            left_rows = left_rows + last[T_LEFT]
            last = last + T_COLUMNS
        left_to, right_to = a, a + left_rows
        while task != last:
            task[T_LEFT_TO] = left_to
            task[T_RIGHT_TO] = right_to
            left_to = left_to + task[T_LEFT]
            right_to = right_to + (task[T_END] - task[T_START]
                                   - task[T_LEFT])
            task = task + T_COLUMNS
        if left_rows > 0:
            w.new_node[n_new] = p.left_child[node]
            w.new_bound[n_new] = <int32_t> a
            n_new = n_new + 1
        if left_rows < b - a:
            w.new_node[n_new] = p.right_child[node]
            w.new_bound[n_new] = <int32_t> (a + left_rows)
            n_new = n_new + 1
    w.new_bound[n_new] = p.seg_bound[k, p.seg_count[k]]
    for s in range(n_new):
        p.seg_node[k, s] = w.new_node[s]
        p.seg_bound[k, s] = w.new_bound[s]
    p.seg_bound[k, n_new] = w.new_bound[n_new]
    p.seg_count[k] = n_new


cdef inline void _place_task(index_t* order, const index_t* scratch,
                             const int64_t* task) noexcept nogil:
    cdef Py_ssize_t start = task[T_START], left = task[T_LEFT]
    # the task's left rows, then its right rows (stored backward from its
    # end: the copy keeps them as stored, so the right rows of a page come
    # out in reverse order within the task)
    memcpy(order + task[T_LEFT_TO], scratch + start,
           left * sizeof(index_t))
    memcpy(order + task[T_RIGHT_TO], scratch + start + left,
           (task[T_END] - start - left) * sizeof(index_t))


cdef void _build(PagePartition p, Py_ssize_t k, const code_t* codes,
                 Work* w, int n_threads) noexcept nogil:
    """The rows of the page's built segments added to their histograms
    (``w.hist``); ``w.hist_rows`` += the active rows added."""
    cdef Py_ssize_t s, i, n_items = 0, total = 0, largest = 0, rows
    cdef int64_t h
    cdef int64_t* item
    # one item per segment of a node whose histogram is built this level
    for s in range(p.seg_count[k]):
        h = p.build_row[p.seg_node[k, s]]
        if h < 0:
            continue
        item = w.items + n_items * I_COLUMNS
        item[I_HIST] = h
        item[I_START] = p.seg_bound[k, s]
        item[I_END] = p.seg_bound[k, s + 1]
        rows = item[I_END] - item[I_START]
        total = total + rows
        largest = max(largest, rows)
        n_items = n_items + 1
    if n_items == 0:
        return
    if n_threads > 1:
        n_threads = threads_for_work(n_threads, total * p.n_features)
    # whole histograms per thread when there are enough and none holds
    # more than a thread's share of the rows
    cdef bint by_histogram = (n_threads > 1 and n_items >= 4 * n_threads
                              and largest * n_threads <= total)
    _add_items(p, k, codes, w, n_items, n_threads, by_histogram)
    for i in range(n_items):
        item = w.items + i * I_COLUMNS
        w.hist_rows[item[I_HIST]] += item[I_ROWS]


cdef inline void _prefetch_row(const code_t* codes, Py_ssize_t n_features,
                               Py_ssize_t row, const float* gpair,
                               const double* weight, Py_ssize_t row_offset,
                               Py_ssize_t f0, Py_ssize_t f1) noexcept nogil:
    """Ask for a coming row's codes of features f0 .. f1 (which may
    straddle two cache lines, as in core), its pair and its weight."""
    prefetch(codes + row * n_features + f0)
    prefetch(codes + row * n_features + f1 - 1)
    prefetch(gpair + 2 * row)
    if weight != NULL:
        prefetch(weight + row_offset + row)


cdef inline int64_t _add_rows(const code_t* codes, Py_ssize_t n_features,
                              const index_t* entries, const float* gpair,
                              const double* weight, const uint8_t* active,
                              Py_ssize_t row_offset, double scale_g,
                              double scale_h, Py_ssize_t first,
                              Py_ssize_t last, const int32_t* missing,
                              const int64_t* bin_ptr, int64_t* bins,
                              Py_ssize_t f0, Py_ssize_t f1,
                              Py_ssize_t safe_features) noexcept nogil:
    """Entries ``first .. last`` of one histogram, features f0 .. f1, each
    row's pair rounded to fixed point once for the features, which sit in
    the row's cache line (``gpair``, ``weight`` and ``active`` (NULL:
    every row) point at the page's first row). The histogram's slice of
    those features is read first when the rows update it at least once
    per cache line on average. Returns the active rows added.

    The codes of the first ``safe_features`` features are not checked:
    even the largest code of the page's dtype stays inside the histogram
    there (a damaged page adds to a wrong bin of it); the codes of the
    others beyond their feature's bins are not added."""
    cdef Py_ssize_t j, f, i
    cdef int64_t gq, hq, added = 0
    cdef int32_t code
    cdef const code_t* row
    cdef Py_ssize_t slice_values = 2 * (bin_ptr[f1] - bin_ptr[f0])
    cdef Py_ssize_t checked = max(f0, min(f1, safe_features))
    if last <= first:
        return 0
    # the histogram slice is streamed into cache first (about a cache line
    # of updates each on average): the scattered adds then hit the cache
    if 8 * (last - first) * (f1 - f0) >= slice_values:
        touch_lines(bins + 2 * bin_ptr[f0], slice_values)
    for j in range(first, last):
        # a histogram's rows are scattered over the page: fetch the codes
        # and pair of a row PREFETCH_ROWS ahead (as the in-core kernel)
        if j + PREFETCH_ROWS < last:
            _prefetch_row(codes, n_features, entries[j + PREFETCH_ROWS],
                          gpair, weight, row_offset, f0, f1)
        i = entries[j]
        if active != NULL and not active[i]:
            continue
        added = added + 1
        # one rounding to fixed point per row, shared by its features: the
        # same integers as the in-core builder, so the sums are equal
        row = codes + i * n_features
        gq = fixed_point(gpair[2 * i], weight, row_offset + i, scale_g)
        hq = fixed_point(gpair[2 * i + 1], weight, row_offset + i, scale_h)
        # (g, h) as one 128-bit add (``_common.add_pair``)
        for f in range(f0, checked):
            add_pair(&bins[2 * (bin_ptr[f] + row[f])], gq, hq)
        for f in range(checked, f1):
            code = row[f]
            if code <= missing[f]:   # else a damaged code: not added
                add_pair(&bins[2 * (bin_ptr[f] + code)], gq, hq)
    return added


cdef inline void _add_item(PagePartition p, const code_t* codes, Work* w,
                           int64_t* item, Py_ssize_t row_offset,
                           Py_ssize_t f0, Py_ssize_t f1) noexcept nogil:
    cdef Py_ssize_t n_features = p.n_features
    cdef Py_ssize_t h = item[I_HIST] if w.slot == NULL else w.slot[
        item[I_HIST]]
    cdef int64_t added = _add_rows(
        codes, n_features, &p.order_v[row_offset], &p.gpair[row_offset, 0],
        p.weight, p.active + row_offset if p.active != NULL else NULL,
        row_offset, p.scale_g, p.scale_h, item[I_START], item[I_END],
        &p.missing_code[0], &p.bin_ptr[0],
        w.hist + h * 2 * p.bin_ptr[n_features], f0, f1,
        p.safe_features[sizeof(code_t) - 1])
    if f0 == 0:   # one group counts the rows
        item[I_ROWS] = added


cdef void _add_items_locked(PagePartition p, const code_t* codes, Work* w,
                            Py_ssize_t n_items,
                            Py_ssize_t row_offset) noexcept nogil:
    """The page's items added to the pool's histograms, each under its
    histogram's lock: an item whose histogram another thread holds is
    left for later (the threads start at different items, so they rarely
    meet). Exact integer sums: the order changes nothing."""
    cdef Py_ssize_t start = w.index * n_items // p.page_threads
    cdef Py_ssize_t left = n_items, i, it
    cdef int64_t* item
    cdef int32_t* lock
    for it in range(n_items):
        w.items[it * I_COLUMNS + I_ROWS] = -1     # not added yet
    # round-robin over the items not added yet, from this thread's own
    # starting item; a busy histogram is skipped, never waited for
    while left > 0:
        for i in range(n_items):
            it = (start + i) % n_items
            item = w.items + it * I_COLUMNS
            if item[I_ROWS] >= 0:
                continue
            lock = &p.locks[item[I_HIST]]
            if try_lock(lock):
                _add_item(p, codes, w, item, row_offset, 0, p.n_features)
                unlock(lock)
                left = left - 1


cdef void _add_items(PagePartition p, Py_ssize_t k, const code_t* codes,
                     Work* w, Py_ssize_t n_items, int n_threads,
                     bint by_histogram) noexcept nogil:
    """Each item's rows added to its histogram. One thread: all of them.
    ``by_histogram``: each thread takes whole items (histograms);
    otherwise thread g owns features [g F / T, (g + 1) F / T) of every
    histogram. Either way each bin has one writer."""
    cdef Py_ssize_t n_features = p.n_features
    cdef int n_groups = <int> min(n_threads, n_features)
    cdef Py_ssize_t row_offset = k * p.page_rows
    cdef Py_ssize_t g, it
    # each bin has one writer in every branch: a thread owns either whole
    # histograms (by_histogram, or under a lock) or a range of features of
    # every histogram; integer sums make the order irrelevant
    if n_groups <= 1 and p.use_locks:
        _add_items_locked(p, codes, w, n_items, row_offset)
        return
    if n_groups <= 1:
        for it in range(n_items):
            _add_item(p, codes, w, w.items + it * I_COLUMNS, row_offset, 0,
                      n_features)
        return
    if by_histogram:
        for it in prange(n_items, schedule="dynamic", num_threads=n_threads):
            _add_item(p, codes, w, w.items + it * I_COLUMNS, row_offset, 0,
                      n_features)
        return
    for g in prange(n_groups, schedule="static", num_threads=n_groups):
        for it in range(n_items):
            _add_item(p, codes, w, w.items + it * I_COLUMNS, row_offset,
                      g * n_features // n_groups,
                      (g + 1) * n_features // n_groups)


# Independent sums of the checksum: consecutive words feed different sums,
# so the loop is not one chain of dependent additions.
cdef enum:
    CHECKSUM_LANES = 4


def checksum(data, uint64_t seed=0):
    """A Fletcher-style checksum of the bytes of a contiguous array, for
    telling whether data read twice is the same (``external.py``: a
    chunk on the scan and on the binning pass): each lane l of the 8-byte
    words keeps ``a += word; b += a`` (modulo 2**64), so a changed word
    changes ``a`` and moved words change ``b``. One read of the data at
    memory speed (zlib's adler32: a few times slower). ``seed``: the
    checksum to continue (of the data before)."""
    cdef const uint8_t[::1] view = memoryview(
        np.ascontiguousarray(data)).cast("B")
    cdef Py_ssize_t n = view.shape[0]
    cdef Py_ssize_t n_words = n // 8, i, l
    cdef uint64_t a[CHECKSUM_LANES]
    cdef uint64_t b[CHECKSUM_LANES]
    cdef uint64_t word, total
    cdef const uint8_t* bytes_ = &view[0] if n else NULL
    for l in range(CHECKSUM_LANES):
        a[l] = seed + <uint64_t> l
        b[l] = seed ^ <uint64_t> n
    with nogil:
        i = 0
        while i + CHECKSUM_LANES <= n_words:
            for l in range(CHECKSUM_LANES):
                memcpy(&word, bytes_ + 8 * (i + l), 8)
                a[l] += word
                b[l] += a[l]
            i += CHECKSUM_LANES
        while i < n_words:
            memcpy(&word, bytes_ + 8 * i, 8)
            a[0] += word
            b[0] += a[0]
            i += 1
        if n % 8:
            word = 0
            memcpy(&word, bytes_ + 8 * n_words, n % 8)
            a[1] += word
            b[1] += a[1]
        total = 0
        for l in range(CHECKSUM_LANES):
            # lanes mixed by odd multipliers: swapping lanes shows
            total = total * <uint64_t> 0x9E3779B97F4A7C15ULL + a[l]
            total = total * <uint64_t> 0xC2B2AE3D27D4EB4FULL + b[l]
    return int(total)
