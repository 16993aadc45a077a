"""One pass over the pages of binned rows per level: route the rows to the
children of the level's splits, and add them to the histograms of the
nodes being built (out-of-core training, ``finders/paged.py``).

In core, rows are kept sorted by node (``RowPartition``) and a node's
histogram reads its rows through that index. Out of core the binned rows
arrive page by page, in row order, so each row carries the id of its node
instead (``position``), and every page is read once per level::

    LevelPass(node arrays, ...)     checked once per level
    for each page k (rows row_offset .. row_offset + n), row-major codes:
      phase A, parallel over rows:  (read_page: the rows' codes read from
                                    the page file, block by block)
                                    position[r] -> child (if its node split)
                                    target[i] = build_row[position[r]]
      pack, parallel over rows:     the rows to add, grouped by histogram
      phase B, parallel over features or histograms:
                                    hist[target[i], bin_ptr[f] + code[f, i]]
                                        += fixed-point (g, h) of row r
    finish()                        rows added to each histogram, errors

Each bin has one writer in phase B and the sums are exact integers, so
nothing depends on the number of threads.

A level's histograms are larger than the caches (up to 2**(depth-1) of
them, 114 KiB each at 28 features x 256 bins), and a page holds only a few
hundred rows of each: adding them straight would miss the cache at almost
every update. So before a histogram's (slice's) rows of the page are added,
the slice is read once, sequentially (the hardware prefetcher streams it),
and the scattered updates that follow hit the cache.
"""

import os

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython
from cython.parallel cimport prange, threadid
from libc.stdint cimport uint16_t, uint64_t
from libc.string cimport memcpy, memset

from ._common cimport (CACHE_LINE, PREFETCH_ROWS, add_pair, fixed_point,
                      int32_t, int64_t, prefetch, uint8_t)
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

# Whether LevelPass.read_page can read pages itself (POSIX pread).
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


cdef class PagePartition:
    """The rows of every page sorted by node: each page's rows are a
    permutation of its row numbers (``order``, uint16 page-local indices)
    cut into segments, one per node with rows in the page (``segments``).

    A level's pass over the pages does, page by page, what in-core
    training does over all rows (``RowPartition``): the rows of the
    level's split nodes are moved to their children (a stable two-pass
    partition of each split node's segment, as ``_partition``), then the
    rows of each built child's segment are added to its histogram. Only
    the split nodes' rows move and only the built children's rows are
    read, and a histogram's rows of a page come grouped already.

    Per level::

        start_level(node arrays, histograms, ...)   checked once a level
        for each page k: read_page(k, fd, offset, buffer) (or add_page)
        finish_level()

    A row goes left when its code is ``<= split_bin`` (missing code:
    ``default_left``), exactly as ``RowPartition.split_nodes`` sends it; a
    code beyond its feature's bins (a damaged page) goes right and is
    never added to a histogram or followed out of bounds. Histogram sums
    are exact integers with one writer per bin, so nothing depends on the
    number of threads.

    Parameters
    ----------
    n_rows, page_rows : int
        Rows of the data and of a page (the last page may hold fewer);
        ``page_rows <= MAX_PAGE_ROWS``.
    """

    cdef readonly Py_ssize_t n_rows, page_rows, n_pages
    cdef readonly object order            # (n_rows,) uint16
    cdef index_t[::1] order_v
    cdef index_t[::1] scratch             # (page_rows,)
    cdef int32_t[:, ::1] seg_node         # (n_pages, cap) node of segment
    cdef int32_t[:, ::1] seg_bound        # (n_pages, cap + 1) starts, end
    cdef int64_t[::1] seg_count           # (n_pages,)
    cdef int32_t[::1] new_node            # (cap,) a page's next segments
    cdef int32_t[::1] new_bound           # (cap + 1,)
    cdef int64_t[:, ::1] tasks            # (max tasks, T_COLUMNS)
    cdef int64_t[:, ::1] items            # (cap, I_COLUMNS)
    cdef Py_ssize_t cap
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
    cdef int64_t[::1] hist_rows           # (n_hist,) rows added this level
    cdef int64_t[::1] read_status         # (threads * 8) 0, -errno, 1: short
    cdef Py_ssize_t n_features
    cdef bint route, build, in_level
    cdef int n_threads

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
        self.scratch = np.empty(page_rows, dtype=np.uint16)
        self.seg_count = np.zeros(self.n_pages, dtype=np.int64)
        self.cap = 0
        self._grow(8)
        self.reset()

    def _grow(self, Py_ssize_t cap):
        """Room for ``cap`` segments a page (the segments kept)."""
        cdef Py_ssize_t n_tasks = self.page_rows // TASK_ROWS + 1 + cap
        node = np.zeros((self.n_pages, cap), dtype=np.int32)
        bound = np.zeros((self.n_pages, cap + 1), dtype=np.int32)
        if self.cap:
            node[:, :self.cap] = self.seg_node
            bound[:, :self.cap + 1] = self.seg_bound
        self.seg_node, self.seg_bound = node, bound
        self.new_node = np.empty(cap, dtype=np.int32)
        self.new_bound = np.empty(cap + 1, dtype=np.int32)
        self.tasks = np.empty((n_tasks, T_COLUMNS), dtype=np.int64)
        self.items = np.empty((cap, I_COLUMNS), dtype=np.int64)
        self.cap = cap

    def reset(self):
        """Every row at the root (node 0), each page's rows in order."""
        cdef Py_ssize_t k, j, first, n
        cdef index_t[::1] order = self.order_v
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
                    bin_ptr, gpair, weight, double scale_g, double scale_h,
                    hist, rows, bint route, bint build, int n_threads):
        """Check and keep the level's arrays (see the class docstring)."""
        cdef const uint8_t[::1] active_v
        self.n_threads = check_n_threads(n_threads)
        nodes = (split_feature, split_bin, default_left, left_child,
                 right_child, build_row)
        _check_level(self.n_rows, active, nodes, missing_code, bin_ptr,
                     hist, gpair, weight, rows)
        if self._max_node() >= split_feature.shape[0]:
            raise ValueError("a row's node id is outside the node arrays")
        # splitting at most doubles the segments of a page
        needed = 2 * int(np.max(self.seg_count)) if self.n_pages else 1
        if needed > self.cap:
            self._grow(max(needed, 2 * self.cap))
        self.split_feature, self.default_left = split_feature, default_left
        self.left_child, self.right_child = left_child, right_child
        self.build_row, self.gpair = build_row, gpair
        feature = np.asarray(split_feature)
        last_value = np.asarray(missing_code)[np.maximum(feature, 0)] - 1
        self.right_above = np.minimum(split_bin, last_value).astype(np.int32)
        self.missing_code, self.bin_ptr = missing_code, bin_ptr
        active_v = active
        everyone = bool(np.all(np.asarray(active)))
        self.active = NULL if everyone or self.n_rows == 0 else &active_v[0]
        self._set_weight(weight)
        self._refs = (active, nodes, missing_code, bin_ptr, gpair, weight)
        self.scale_g, self.scale_h = scale_g, scale_h
        self.hist, self.rows_arr = hist, rows
        self.n_features = missing_code.shape[0]
        self.route, self.build = route, build
        self.hist_rows = np.zeros(hist.shape[0], dtype=np.int64)
        self.read_status = np.zeros(self.n_threads * 8, dtype=np.int64)
        self.in_level = True

    def _set_weight(self, weight):
        cdef const double[::1] view
        self.weight = NULL
        if weight is not None:
            view = weight
            if view.shape[0]:
                self.weight = &view[0]

    def add_page(self, Py_ssize_t k, page):
        """Route and add the rows of page k (``page``: its (n, n_features)
        row-major uint8 or uint16 codes)."""
        self._check_page(k, page, page.shape[0])
        if page.shape[0]:
            self._dispatch(k, page, -1, 0)

    def read_page(self, Py_ssize_t k, int fd, int64_t file_offset, buffer):
        """Read page k from the open page file ``fd`` (its codes from byte
        ``file_offset`` on) into the first rows of ``buffer`` and pass it
        as :meth:`add_page` does.

        The read is part of the pass: the pass's threads read the page's
        blocks (POSIX ``pread``) just before working on them, so no other
        thread competes for the cores. Raises OSError if the file ends
        early or a read fails (the page is then left as it was)."""
        if not HAVE_PREAD:
            raise OSError("reading pages in the kernel needs POSIX pread")
        if k < 0 or k >= self.n_pages:
            raise ValueError("page outside the data")
        n = min(self.page_rows, self.n_rows - k * self.page_rows)
        if n > buffer.shape[0] or file_offset < 0 or fd < 0:
            raise ValueError("the page's rows are outside the buffer or "
                             "the file")
        self._check_page(k, buffer, n)
        self.read_status[:] = 0
        self._dispatch(k, buffer[:n], fd, file_offset)
        if _read_failed(self):
            status = np.asarray(self.read_status)
            failed = status[status != 0]
            errno = int(-failed.min()) if failed.min() < 0 else 0
            raise OSError(errno, "reading the page file failed: "
                          + (os.strerror(errno) if errno
                             else "it ended early"))

    def _check_page(self, Py_ssize_t k, page, Py_ssize_t n):
        if not self.in_level:
            raise ValueError("start_level first")
        if k < 0 or k >= self.n_pages:
            raise ValueError("page outside the data")
        if page.ndim != 2 or page.shape[1] != self.n_features:
            raise ValueError("missing_code and bin_ptr must describe the "
                             "page's features")
        if n != min(self.page_rows, self.n_rows - k * self.page_rows):
            raise ValueError("the page's rows are not page k's rows")

    def _dispatch(self, Py_ssize_t k, page, int fd, int64_t file_offset):
        if page.dtype == np.uint8:
            _pass_page[uint8_t](self, k, page, fd, file_offset)
        else:
            _pass_page[uint16_t](self, k, page, fd, file_offset)

    def finish_level(self):
        """Add the rows added to each histogram to ``rows``."""
        self.in_level = False
        self.rows_arr += np.asarray(self.hist_rows)
        self._refs = None

    def add_values(self, value, raw, Py_ssize_t column, int n_threads):
        """``raw[row, column] += value[node of row]`` for every row."""
        value = np.ascontiguousarray(value, dtype=np.float64)
        if value.ndim != 1 or value.shape[0] <= self._max_node():
            raise ValueError("value needs one entry per node id")
        if raw.shape[0] != self.n_rows or not 0 <= column < raw.shape[1]:
            raise ValueError("raw must be (n_rows, n_columns)")
        _add_values(self, value, raw, column, check_n_threads(n_threads))


cdef void _add_values(PagePartition p, const double[::1] value,
                      double[:, :] raw, Py_ssize_t column,
                      int n_threads) noexcept:
    cdef Py_ssize_t k, s, j, first
    cdef double v
    cdef const index_t* order
    for k in prange(p.n_pages, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads, p.n_rows)):
        first = k * p.page_rows
        order = &p.order_v[first]
        for s in range(p.seg_count[k]):
            v = value[p.seg_node[k, s]]
            for j in range(p.seg_bound[k, s], p.seg_bound[k, s + 1]):
                raw[first + order[j], column] += v


cdef void _pass_page(PagePartition p, Py_ssize_t k,
                     const code_t[:, ::1] page, int fd,
                     int64_t file_offset) noexcept:
    cdef Py_ssize_t n = page.shape[0]
    cdef int threads = threads_for_work(p.n_threads, 4 * n)
    if fd >= 0:
        _read_blocks(<void*> &page[0, 0], n * page.shape[1] * sizeof(code_t), p,
                     page.shape[1] * sizeof(code_t), threads, fd,
                     file_offset)
        if _read_failed(p):
            return
    if p.route:
        _partition(p, k, page, threads)
    if p.build:
        _build(p, k, page)


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
    for j in range(start, end):
        if j + PARTITION_AHEAD < end:
            prefetch(codes + order[j + PARTITION_AHEAD] * n_features + feat)
        i = order[j]
        code = codes[i * n_features + feat]
        goes_right = (code > above) ^ ((code == last) & missing_left)
        scratch[left] = i
        scratch[right - 1] = i
        left += 1 - goes_right
        right -= goes_right
    return left - start


cdef void _partition(PagePartition p, Py_ssize_t k,
                     const code_t[:, ::1] page, int n_threads) noexcept:
    """The rows of the page's split segments to their children: tasks
    split into ``scratch`` (parallel), their places from the counts, the
    rows copied back (parallel), the page's segments replaced."""
    cdef Py_ssize_t n_features = page.shape[1]
    cdef Py_ssize_t first = k * p.page_rows
    cdef index_t* order = &p.order_v[first]
    cdef index_t* scratch = &p.scratch[0]
    cdef const code_t* codes = &page[0, 0]
    cdef int64_t* tasks = &p.tasks[0, 0]
    cdef Py_ssize_t n_tasks = _make_tasks(p, k)
    cdef Py_ssize_t t
    cdef int32_t node, feat
    if n_tasks == 0:
        return
    for t in prange(n_tasks, nogil=True, schedule="static",
                    num_threads=n_threads):
        node = <int32_t> tasks[t * T_COLUMNS + T_LEFT]   # the node, for now
        feat = p.split_feature[node]
        tasks[t * T_COLUMNS + T_LEFT] = _split_task(
            codes, n_features, order, scratch, tasks[t * T_COLUMNS + T_START],
            tasks[t * T_COLUMNS + T_END], feat, p.right_above[node],
            p.missing_code[feat], p.default_left[node])
    _place_segments(p, k)
    for t in prange(n_tasks, nogil=True, schedule="static",
                    num_threads=n_threads):
        _place_task(order, scratch, tasks + t * T_COLUMNS)


cdef Py_ssize_t _make_tasks(PagePartition p, Py_ssize_t k) noexcept nogil:
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
            task = &p.tasks[n_tasks, 0]
            task[T_START] = a
            task[T_END] = min(a + TASK_ROWS, b)
            task[T_LEFT] = node
            n_tasks = n_tasks + 1
            a = task[T_END]
    p.tasks[n_tasks, T_START] = -1    # the end of the table
    return n_tasks


cdef void _place_segments(PagePartition p, Py_ssize_t k) noexcept nogil:
    """Where each task's left and right rows go (the left rows of a split
    segment first, in task order, then its right rows), and the page's
    new segments: a split node's segment becomes its children's (empty
    ones dropped), the others stay."""
    cdef Py_ssize_t s, a, b, t = 0, n_new = 0, t_end
    cdef int64_t left_rows, left_to, right_to
    cdef int32_t node
    for s in range(p.seg_count[k]):
        node = p.seg_node[k, s]
        a = p.seg_bound[k, s]
        b = p.seg_bound[k, s + 1]
        if p.split_feature[node] < 0:
            p.new_node[n_new] = node
            p.new_bound[n_new] = <int32_t> a
            n_new = n_new + 1
            continue
        left_rows = 0
        t_end = t
        while p.tasks[t_end, T_START] >= a and p.tasks[t_end, T_START] < b:
            left_rows = left_rows + p.tasks[t_end, T_LEFT]
            t_end = t_end + 1
        left_to, right_to = a, a + left_rows
        while t < t_end:
            p.tasks[t, T_LEFT_TO] = left_to
            p.tasks[t, T_RIGHT_TO] = right_to
            left_to = left_to + p.tasks[t, T_LEFT]
            right_to = right_to + (p.tasks[t, T_END] - p.tasks[t, T_START]
                                   - p.tasks[t, T_LEFT])
            t = t + 1
        if left_rows > 0:
            p.new_node[n_new] = p.left_child[node]
            p.new_bound[n_new] = <int32_t> a
            n_new = n_new + 1
        if left_rows < b - a:
            p.new_node[n_new] = p.right_child[node]
            p.new_bound[n_new] = <int32_t> (a + left_rows)
            n_new = n_new + 1
    p.new_bound[n_new] = p.seg_bound[k, p.seg_count[k]]
    for s in range(n_new):
        p.seg_node[k, s] = p.new_node[s]
        p.seg_bound[k, s] = p.new_bound[s]
    p.seg_bound[k, n_new] = p.new_bound[n_new]
    p.seg_count[k] = n_new


cdef inline void _place_task(index_t* order, const index_t* scratch,
                             const int64_t* task) noexcept nogil:
    cdef Py_ssize_t start = task[T_START], left = task[T_LEFT]
    memcpy(order + task[T_LEFT_TO], scratch + start,
           left * sizeof(index_t))
    memcpy(order + task[T_RIGHT_TO], scratch + start + left,
           (task[T_END] - start - left) * sizeof(index_t))


cdef void _build(PagePartition p, Py_ssize_t k,
                 const code_t[:, ::1] page) noexcept:
    """The rows of the page's built segments added to their histograms;
    ``hist_rows`` += the active rows added."""
    cdef Py_ssize_t s, i, n_items = 0, total = 0, largest = 0, rows
    cdef int64_t h
    for s in range(p.seg_count[k]):
        h = p.build_row[p.seg_node[k, s]]
        if h < 0:
            continue
        p.items[n_items, I_HIST] = h
        p.items[n_items, I_START] = p.seg_bound[k, s]
        p.items[n_items, I_END] = p.seg_bound[k, s + 1]
        rows = p.seg_bound[k, s + 1] - p.seg_bound[k, s]
        total = total + rows
        largest = max(largest, rows)
        n_items = n_items + 1
    if n_items == 0:
        return
    cdef int threads = threads_for_work(p.n_threads, total * page.shape[1])
    # whole histograms per thread when there are enough and none holds
    # more than a thread's share of the rows
    cdef bint by_histogram = (threads > 1 and n_items >= 4 * threads
                              and largest * threads <= total)
    _add_items(p, k, page, n_items, threads, by_histogram)
    for i in range(n_items):
        p.hist_rows[p.items[i, I_HIST]] += p.items[i, I_ROWS]


cdef inline int64_t _add_rows(const code_t* codes, Py_ssize_t n_features,
                              const index_t* entries, const float* gpair,
                              const double* weight, const uint8_t* active,
                              Py_ssize_t row_offset, double scale_g,
                              double scale_h, Py_ssize_t first,
                              Py_ssize_t last, const int32_t* missing,
                              const int64_t* bin_ptr, int64_t* bins,
                              Py_ssize_t f0, Py_ssize_t f1) noexcept nogil:
    """Entries ``first .. last`` of one histogram, features f0 .. f1, each
    row's pair rounded to fixed point once for the features, which sit in
    the row's cache line (``gpair``, ``weight`` and ``active`` (NULL:
    every row) point at the page's first row). The histogram's slice of
    those features is read first when the rows update it at least once
    per cache line on average. Returns the active rows added."""
    cdef Py_ssize_t j, f, i, ahead
    cdef int64_t gq, hq, added = 0
    cdef int32_t code
    cdef const code_t* row
    cdef Py_ssize_t slice_values = 2 * (bin_ptr[f1] - bin_ptr[f0])
    if last <= first:
        return 0
    if 8 * (last - first) * (f1 - f0) >= slice_values:
        touch_lines(bins + 2 * bin_ptr[f0], slice_values)
    for j in range(first, last):
        # a histogram's rows are scattered over the page: fetch the codes
        # and pair of a row PREFETCH_ROWS ahead (as the in-core kernel)
        if j + PREFETCH_ROWS < last:
            ahead = entries[j + PREFETCH_ROWS]
            prefetch(codes + ahead * n_features + f0)
            # the row's codes may straddle two cache lines (as in core)
            prefetch(codes + ahead * n_features + f1 - 1)
            prefetch(gpair + 2 * ahead)
            if weight != NULL:
                prefetch(weight + row_offset + ahead)
        i = entries[j]
        if active != NULL and not active[i]:
            continue
        added = added + 1
        row = codes + i * n_features
        gq = fixed_point(gpair[2 * i], weight, row_offset + i, scale_g)
        hq = fixed_point(gpair[2 * i + 1], weight, row_offset + i, scale_h)
        for f in range(f0, f1):
            code = row[f]
            if code <= missing[f]:   # else a damaged code: not added
                # (g, h) as one 128-bit add (``_common.add_pair``)
                add_pair(&bins[2 * (bin_ptr[f] + code)], gq, hq)
    return added


cdef void _add_items(PagePartition p, Py_ssize_t k,
                     const code_t[:, ::1] page, Py_ssize_t n_items,
                     int n_threads, bint by_histogram) noexcept:
    """Each item's rows added to its histogram. ``by_histogram``: each
    thread takes whole items (histograms); otherwise thread g owns
    features [g F / T, (g + 1) F / T) of every histogram. Either way each
    bin has one writer: the sums do not depend on it."""
    cdef Py_ssize_t n_features = page.shape[1]
    cdef int n_groups = <int> min(n_threads, n_features)
    cdef Py_ssize_t row_offset = k * p.page_rows
    cdef const code_t* codes = &page[0, 0]
    cdef const index_t* entries = &p.order_v[row_offset]
    cdef const float* gpair = &p.gpair[row_offset, 0]
    cdef const double* weight = p.weight
    cdef const uint8_t* active = (p.active + row_offset
                                  if p.active != NULL else NULL)
    cdef double scale_g = p.scale_g, scale_h = p.scale_h
    cdef const int32_t* missing = &p.missing_code[0]
    cdef const int64_t* bin_ptr = &p.bin_ptr[0]
    cdef int64_t* hist = &p.hist[0, 0, 0]
    cdef int64_t* items = &p.items[0, 0]
    cdef Py_ssize_t hist_values = 2 * bin_ptr[n_features]
    cdef Py_ssize_t g, it, f0, f1
    cdef int64_t added
    if n_groups < 1:
        return
    if by_histogram:
        for it in prange(n_items, nogil=True, schedule="dynamic",
                         num_threads=n_threads):
            items[it * I_COLUMNS + I_ROWS] = _add_rows(
                codes, n_features, entries, gpair, weight, active,
                row_offset, scale_g, scale_h, items[it * I_COLUMNS + I_START],
                items[it * I_COLUMNS + I_END], missing, bin_ptr,
                hist + items[it * I_COLUMNS + I_HIST] * hist_values,
                0, n_features)
        return
    for g in prange(n_groups, nogil=True, schedule="static",
                    num_threads=n_groups):
        f0 = g * n_features // n_groups
        f1 = (g + 1) * n_features // n_groups
        for it in range(n_items):
            added = _add_rows(
                codes, n_features, entries, gpair, weight, active,
                row_offset, scale_g, scale_h, items[it * I_COLUMNS + I_START],
                items[it * I_COLUMNS + I_END], missing, bin_ptr,
                hist + items[it * I_COLUMNS + I_HIST] * hist_values, f0, f1)
            if f0 == 0:   # one group counts the rows
                items[it * I_COLUMNS + I_ROWS] = added


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
