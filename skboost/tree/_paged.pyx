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
from libc.stdint cimport int16_t, uint16_t, uint64_t
from libc.string cimport memcpy, memset

from ._common cimport (CACHE_LINE, PREFETCH_ROWS, add_pair, fixed_point,
                      int32_t, int64_t, prefetch, uint8_t)
from .._parallel cimport threads_for_work

ctypedef fused code_t:
    uint8_t
    uint16_t

# A row's node id: int16 (2 bytes a row) when the tree's node ids fit,
# int32 otherwise (``finders/paged.py`` chooses).
ctypedef fused position_t:
    int16_t
    int32_t

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

# Rows per parallel task of phase A and of the packing; each block counts
# its rows of each histogram in LANES interleaved counters (row i in lane
# i % LANES): consecutive rows of one histogram would otherwise wait on
# each other's increment of one counter.
cdef enum:
    BLOCK_ROWS = 4096
    LANES = 4


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_level(n_rows, active, nodes, missing_code, bin_ptr, hist, gpair,
                 weight, rows, position_dtype):
    """Every per-level index the nogil loops follow, checked once a level
    (the node ids the rows carry are checked by phase A itself)."""
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
    if n_ids > np.iinfo(position_dtype).max + 1:
        raise ValueError("node ids do not fit the dtype of position")
    feature, split_bin, default_left, left, right, build_row = nodes
    split = np.asarray(feature) >= 0
    if np.any(np.asarray(feature)[split] >= n_features):
        raise ValueError("split feature outside the page's features")
    for child in (np.asarray(left)[split], np.asarray(right)[split]):
        if child.size and (child.min() < 0 or child.max() >= n_ids):
            raise ValueError("child node id outside the node arrays")
    rows = np.asarray(build_row)
    built = rows[rows >= 0]
    if built.size and built.max() >= hist.shape[0]:
        raise ValueError("build_row outside hist")
    if hist.shape[1] != bin_ptr[n_features] or hist.shape[2] != 2:
        raise ValueError("hist must be (n_hist, n_bins, 2)")


cdef class LevelPass:
    """One level's pass over the pages: ``add_page`` for each page, then
    ``finish``.

    Routes each page's rows through the splits (``route``) and adds the
    active ones to their node's histogram (``build``, nodes with
    ``build_row >= 0``); ``rows[h] +=`` the rows added to histogram h
    (the active rows of its node: the other nodes' counts follow by
    subtraction, as their histograms do). A row goes left when its code is ``<= split_bin`` (missing code:
    ``default_left``), exactly as ``RowPartition.split_nodes`` sends it.
    A code beyond its feature's bins (a damaged page) is ignored, never
    followed out of bounds; a row whose node id is outside the node arrays
    is left alone and makes ``finish`` raise.

    The rows to add are grouped by histogram before they are added (a
    counting sort over the page): adding a page's rows in row order would
    jump between the histograms of up to 2**(depth-1) nodes at every row;
    grouped, each histogram's run of rows stays in its bins.

    Parameters
    ----------
    position : ndarray of shape (n_rows,), int16 or int32
        IN/OUT: each row's node id, -1 for none.
    active : ndarray of shape (n_rows,), uint8
        The rows of the tree.
    split_feature, split_bin, default_left, left_child, right_child :
        ndarray of shape (n_ids,)
        The level's splits by node id (``split_feature`` -1: not split).
    build_row : ndarray of shape (n_ids,), int64
        Row of ``hist`` each node's histogram goes to, -1 for none.
    missing_code : ndarray of shape (n_features,), int32
    bin_ptr : ndarray of shape (n_features + 1,), int64
    gpair : ndarray of shape (n_rows, 2), float32
    weight : ndarray of shape (n_rows,), float64, or None
    scale_g, scale_h : float
        Fixed-point scales.
    hist : ndarray of shape (n_hist, n_bins, 2), int64
        IN/OUT: histograms, added to.
    rows : ndarray of shape (n_hist,), int64
        IN/OUT: rows added to each histogram, added to by ``finish``.
    target, entry_row : ndarray of shape (page_rows,), int32
        Scratch of at least a page's rows.
    route, build : bool
    n_threads : int
    """

    cdef object _refs                 # the arrays the views below point into
    cdef object rows_arr
    cdef int16_t[::1] pos16
    cdef int32_t[::1] pos32
    cdef bint wide
    cdef const uint8_t[::1] active
    cdef const int32_t[::1] split_feature
    cdef const int32_t[::1] split_bin
    cdef const uint8_t[::1] default_left
    cdef const int32_t[::1] left_child
    cdef const int32_t[::1] right_child
    cdef const int64_t[::1] build_row
    cdef const int32_t[::1] children      # (2 n_ids,) left, right of each node
    cdef const int32_t[::1] right_above   # (n_ids,) codes above go right
    cdef const int32_t[::1] bucket        # (n_ids,) histogram, n_hist: none
    cdef const int32_t[::1] missing_code
    cdef const int64_t[::1] bin_ptr
    cdef const float[:, ::1] gpair
    cdef const double* weight
    cdef double scale_g, scale_h
    cdef int64_t[:, :, ::1] hist
    cdef int32_t[::1] target
    cdef int32_t[::1] entry_row
    cdef int64_t[::1] hist_rows       # (n_hist,) rows added this level
    cdef uint8_t[::1] bad             # (threads * CACHE_LINE) bad node id seen
    cdef int64_t[::1] read_status     # (threads * 8) 0, -errno, or 1: short
    cdef int64_t[:, ::1] block_hist   # (blocks x LANES, n_hist) rows, starts
    cdef int64_t[::1] hist_start      # (n_hist + 2,) bucket starts
    cdef Py_ssize_t n_rows, n_features, n_hist, page_rows
    cdef bint route, build
    cdef int n_threads

    def __init__(self, position, active, split_feature, split_bin,
                 default_left, left_child, right_child, build_row,
                 missing_code, bin_ptr, gpair, weight, double scale_g,
                 double scale_h, hist, rows, target, entry_row,
                 bint route, bint build, int n_threads):
        self.n_threads = check_n_threads(n_threads)
        position = np.asarray(position)
        nodes = (split_feature, split_bin, default_left, left_child,
                 right_child, build_row)
        _check_level(position.shape[0], active, nodes, missing_code, bin_ptr,
                     hist, gpair, weight, rows, position.dtype)
        if position.dtype == np.int16:
            self.pos16 = position
        else:
            self.pos32 = position
            self.wide = True
        self.active, self.gpair = active, gpair
        self.split_feature, self.split_bin = split_feature, split_bin
        self.default_left = default_left
        self.left_child, self.right_child = left_child, right_child
        self.build_row = build_row
        self._set_routing(split_feature, split_bin, left_child, right_child,
                          missing_code)
        self.bucket = np.where(np.asarray(build_row) >= 0, build_row,
                               hist.shape[0]).astype(np.int32)
        self.missing_code, self.bin_ptr = missing_code, bin_ptr
        self._set_weight(weight)
        self._refs = (position, active, nodes, missing_code, bin_ptr, gpair,
                      weight)
        self.scale_g, self.scale_h = scale_g, scale_h
        self.hist, self.rows_arr = hist, rows
        self.target, self.entry_row = target, entry_row
        self.n_rows = position.shape[0]
        self.n_features = missing_code.shape[0]
        self.n_hist = hist.shape[0]
        self.page_rows = min(target.shape[0], entry_row.shape[0])
        self.route, self.build = route, build
        self.hist_rows = np.zeros(self.n_hist, dtype=np.int64)
        self.bad = np.zeros(self.n_threads * CACHE_LINE, dtype=np.uint8)
        self.read_status = np.zeros(self.n_threads * 8, dtype=np.int64)
        n_blocks = max(1, (self.page_rows + BLOCK_ROWS - 1) // BLOCK_ROWS)
        self.block_hist = np.zeros((n_blocks * LANES, self.n_hist + 1),
                                   dtype=np.int64)
        self.hist_start = np.zeros(self.n_hist + 2, dtype=np.int64)

    def _set_routing(self, split_feature, split_bin, left_child,
                     right_child, missing_code):
        """The children of node k at ``2 k`` (left) and ``2 k + 1``, and
        the split bin clipped below the missing code, so that a row's side
        is one expression: ``code > right_above[k]`` flipped for a
        missing code that goes left (``default_left``)."""
        feature = np.asarray(split_feature)
        self.children = np.column_stack(
            [left_child, right_child]).astype(np.int32).ravel()
        last_value = np.asarray(missing_code)[np.maximum(feature, 0)] - 1
        self.right_above = np.minimum(split_bin, last_value).astype(np.int32)

    def _set_weight(self, weight):
        cdef const double[::1] view
        self.weight = NULL
        if weight is not None:
            view = weight
            if view.shape[0]:
                self.weight = &view[0]

    def add_page(self, page, Py_ssize_t row_offset):
        """Route and add the rows of ``page`` ((n, n_features) row-major
        uint8 or uint16 codes of rows ``row_offset .. row_offset + n``)."""
        self._check_page(page, row_offset, page.shape[0])
        if page.shape[0]:
            self._dispatch(page, row_offset, -1, 0)

    def read_page(self, int fd, int64_t file_offset, buffer,
                  Py_ssize_t row_offset, Py_ssize_t n):
        """Read rows ``row_offset .. row_offset + n`` of the open page file
        ``fd`` (their codes from byte ``file_offset`` on) into the first
        ``n`` rows of ``buffer`` and pass them as :meth:`add_page` does.

        The read is part of the pass: each thread reads its own blocks of
        the page (POSIX ``pread``) just before routing them, so no other
        thread competes for the cores and the codes are in cache when
        they are used. Raises OSError if the file ends early or a read
        fails (the page's rows are then left unrouted)."""
        if not HAVE_PREAD:
            raise OSError("reading pages in the kernel needs POSIX pread")
        if n < 0 or n > buffer.shape[0] or file_offset < 0 or fd < 0:
            raise ValueError("the page's rows are outside the buffer or "
                             "the file")
        self._check_page(buffer, row_offset, n)
        if n == 0:
            return
        self.read_status[:] = 0
        self._dispatch(buffer[:n], row_offset, fd, file_offset)
        if _read_failed(self):
            status = np.asarray(self.read_status)
            failed = status[status != 0]
            errno = int(-failed.min()) if failed.min() < 0 else 0
            raise OSError(errno, "reading the page file failed: "
                          + (os.strerror(errno) if errno
                             else "it ended early"))

    def _check_page(self, page, Py_ssize_t row_offset, Py_ssize_t n):
        if page.ndim != 2 or page.shape[1] != self.n_features:
            raise ValueError("missing_code and bin_ptr must describe the "
                             "page's features")
        if row_offset < 0 or row_offset + n > self.n_rows:
            raise ValueError("the page's rows are outside the data")
        if n > self.page_rows:
            raise ValueError("target and entry_row need one entry per page "
                             "row")

    def _dispatch(self, page, Py_ssize_t row_offset, int fd,
                  int64_t file_offset):
        if page.dtype == np.uint8:
            if self.wide:
                _pass_page[uint8_t, int32_t](self, page, self.pos32,
                                             row_offset, fd, file_offset)
            else:
                _pass_page[uint8_t, int16_t](self, page, self.pos16,
                                             row_offset, fd, file_offset)
        elif self.wide:
            _pass_page[uint16_t, int32_t](self, page, self.pos32, row_offset,
                                          fd, file_offset)
        else:
            _pass_page[uint16_t, int16_t](self, page, self.pos16, row_offset,
                                          fd, file_offset)

    def finish(self):
        """Add the rows added to each histogram to ``rows``; raise if a
        row carried a node id outside the node arrays."""
        if np.asarray(self.bad).any():
            raise ValueError("a row's node id is outside the node arrays")
        self.rows_arr += np.asarray(self.hist_rows)


def route_and_build(page, Py_ssize_t row_offset, position, active,
                    split_feature, split_bin, default_left, left_child,
                    right_child, build_row, missing_code, bin_ptr, gpair,
                    weight, double scale_g, double scale_h, hist, rows,
                    target, entry_row, bint route, bint build,
                    int n_threads):
    """One page's pass (``LevelPass`` for a single page): route its rows
    and add them to the histograms; ``rows`` is added to."""
    level = LevelPass(position, active, split_feature, split_bin,
                      default_left, left_child, right_child, build_row,
                      missing_code, bin_ptr, gpair, weight, scale_g, scale_h,
                      hist, rows, target, entry_row, route, build,
                      n_threads)
    level.add_page(page, row_offset)
    level.finish()


cdef void _pass_page(LevelPass p, const code_t[:, ::1] page,
                     position_t[::1] position, Py_ssize_t row_offset,
                     int fd, int64_t file_offset):
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1]
    cdef Py_ssize_t n_blocks = (n + BLOCK_ROWS - 1) // BLOCK_ROWS
    cdef int phase_threads = threads_for_work(p.n_threads, 4 * n)
    if p.build:
        memset(&p.block_hist[0, 0], 0,
               n_blocks * LANES * p.block_hist.shape[1] * sizeof(int64_t))
    _route(page, row_offset, position, p, n_blocks, phase_threads, fd,
           file_offset)
    if fd >= 0 and _read_failed(p):
        return
    if not p.build:
        return
    cdef Py_ssize_t n_entries = _group_starts(p, n_blocks)
    if n_entries == 0:
        return
    _pack(p, n, n_blocks, phase_threads)
    cdef int add_threads = threads_for_work(p.n_threads,
                                            n_entries * n_features)
    _add_page(page, row_offset, p, add_threads,
              _by_histogram(p, add_threads))


cdef bint _read_failed(LevelPass p) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(p.read_status.shape[0]):
        if p.read_status[i] != 0:
            return True
    return False


cdef void _route(const code_t[:, ::1] page, Py_ssize_t row_offset,
                 position_t[::1] position, LevelPass p, Py_ssize_t n_blocks,
                 int n_threads, int fd, int64_t file_offset) noexcept:
    """Phase A: each row's node after the splits, the histogram it adds
    to (``target``; ``n_hist``, an extra bucket, for none) and how many
    rows of each block go to each bucket (``block_hist``). Raw pointers
    and no data-dependent branch: the loop reads a few bytes a row, and a
    mispredicted branch (built child or not: a coin flip) costs more.

    ``fd >= 0``: the page is first read from that file, each block by
    the thread that routes it (``file_offset``: the page's first byte);
    a failed read is recorded in ``read_status`` and the block skipped."""
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1]
    cdef Py_ssize_t n_ids = p.split_feature.shape[0]
    cdef Py_ssize_t blocks_stride = p.block_hist.shape[1]
    cdef const code_t* codes = &page[0, 0]
    cdef position_t* pos = &position[row_offset]
    cdef const uint8_t* active = &p.active[row_offset]
    cdef const int32_t* feature = &p.split_feature[0]
    cdef const int32_t* right_above = &p.right_above[0]
    cdef const uint8_t* default_left = &p.default_left[0]
    cdef const int32_t* children = &p.children[0]
    cdef const int32_t* bucket = &p.bucket[0]
    cdef const int32_t* missing = &p.missing_code[0]
    cdef int32_t* target = &p.target[0]
    cdef int64_t* blocks0 = &p.block_hist[0, 0]
    cdef uint8_t* bad = &p.bad[0]
    cdef bint route = p.route, build = p.build
    cdef int32_t none = <int32_t> p.n_hist
    cdef Py_ssize_t k, i
    cdef int32_t node, feat, code, last, t
    cdef int64_t* blocks
    cdef int64_t* read_status = &p.read_status[0]
    cdef Py_ssize_t row_bytes = n_features * sizeof(code_t)
    cdef Py_ssize_t block_end, got
    for k in prange(n_blocks, nogil=True, schedule="static",
                    num_threads=n_threads):
        blocks = blocks0 + k * LANES * blocks_stride
        block_end = min((k + 1) * BLOCK_ROWS, n)
        if fd >= 0:
            got = pread_all(fd, <char*> (codes + k * BLOCK_ROWS * n_features),
                            (block_end - k * BLOCK_ROWS) * row_bytes,
                            file_offset + k * BLOCK_ROWS * row_bytes)
            if got != (block_end - k * BLOCK_ROWS) * row_bytes:
                read_status[threadid() * 8] = got if got < 0 else 1
                continue
        for i in range(k * BLOCK_ROWS, block_end):
            node = pos[i]
            t = none
            if node < 0 or node >= n_ids:
                if node != -1:
                    bad[threadid() * CACHE_LINE] = 1
            else:
                feat = feature[node]
                if route and feat >= 0:
                    code = codes[i * n_features + feat]
                    last = missing[feat]
                    if code <= last:   # else a damaged code: stay
                        node = children[2 * node + (
                            (code > right_above[node])
                            ^ ((code == last) & default_left[node]))]
                        pos[i] = <position_t> node
                t = bucket[node] if active[i] else none
            if build:
                blocks[(i & (LANES - 1)) * blocks_stride + t] += 1
                target[i] = t


cdef Py_ssize_t _group_starts(LevelPass p, Py_ssize_t n_blocks) noexcept nogil:
    """Where each block's rows of each histogram go (grouped by histogram,
    then by block): ``block_hist`` becomes the start offsets,
    ``hist_start`` each histogram's first entry. Returns the entries."""
    cdef Py_ssize_t h, k
    cdef int64_t total = 0, rows
    for h in range(p.n_hist + 1):   # the last bucket: rows added nowhere
        p.hist_start[h] = total
        for k in range(n_blocks * LANES):
            rows = p.block_hist[k, h]
            p.block_hist[k, h] = total
            total = total + rows
        if h < p.n_hist:
            p.hist_rows[h] += total - p.hist_start[h]
    return p.hist_start[p.n_hist]


cdef void _pack(LevelPass p, Py_ssize_t n, Py_ssize_t n_blocks,
                int n_threads) noexcept:
    """The rows to add, grouped by histogram: the rows of histogram h in
    block k and lane l go to ``block_hist[k LANES + l, h]`` on (the order
    inside a histogram changes no sum)."""
    cdef Py_ssize_t blocks_stride = p.block_hist.shape[1]
    cdef const int32_t* target = &p.target[0]
    cdef int64_t* start0 = &p.block_hist[0, 0]
    cdef int32_t* entry_row = &p.entry_row[0]
    cdef Py_ssize_t k, i
    cdef int64_t t, dst
    cdef int64_t* start
    for k in prange(n_blocks, nogil=True, schedule="static",
                    num_threads=n_threads):
        start = start0 + k * LANES * blocks_stride
        for i in range(k * BLOCK_ROWS, min((k + 1) * BLOCK_ROWS, n)):
            # every row, those of no histogram into the last bucket: no
            # branch to mispredict
            t = target[i] + (i & (LANES - 1)) * blocks_stride
            dst = start[t]
            start[t] = dst + 1
            entry_row[dst] = <int32_t> i


cdef bint _by_histogram(LevelPass p, int add_threads) noexcept nogil:
    """Whole histograms per thread: when there are enough and none holds
    more than a thread's share of the rows."""
    cdef Py_ssize_t h, nonzero = 0
    cdef int64_t rows, largest = 0
    if add_threads < 2:
        return False
    for h in range(p.n_hist):
        rows = p.hist_start[h + 1] - p.hist_start[h]
        if rows > 0:
            nonzero = nonzero + 1
        if rows > largest:
            largest = rows
    return (nonzero >= 4 * add_threads
            and largest * add_threads <= p.hist_start[p.n_hist])


cdef inline void _add_rows(const code_t* codes, Py_ssize_t n_features,
                           const int32_t* entry_row, const float* gpair,
                           const double* weight, Py_ssize_t row_offset,
                           double scale_g, double scale_h,
                           Py_ssize_t first, Py_ssize_t last,
                           const int32_t* missing, const int64_t* bin_ptr,
                           int64_t* bins,
                           Py_ssize_t f0, Py_ssize_t f1) noexcept nogil:
    """Entries ``first .. last`` of one histogram, features f0 .. f1, each
    row's pair rounded to fixed point once for the features, which sit in
    the row's cache line (``gpair`` and ``weight`` point at the page's
    first row). The histogram's slice of those features is read first when
    the rows update it at least once per cache line on average."""
    cdef Py_ssize_t j, f, i, ahead
    cdef int64_t gq, hq
    cdef int32_t code
    cdef const code_t* row
    cdef Py_ssize_t slice_values = 2 * (bin_ptr[f1] - bin_ptr[f0])
    if last <= first:
        return
    if 8 * (last - first) * (f1 - f0) >= slice_values:
        touch_lines(bins + 2 * bin_ptr[f0], slice_values)
    for j in range(first, last):
        # a histogram's rows are scattered over the page: fetch the codes
        # and pair of a row PREFETCH_ROWS ahead (as the in-core kernel)
        if j + PREFETCH_ROWS < last:
            ahead = entry_row[j + PREFETCH_ROWS]
            prefetch(codes + ahead * n_features + f0)
            # the row's codes may straddle two cache lines (as in core)
            prefetch(codes + ahead * n_features + f1 - 1)
            prefetch(gpair + 2 * ahead)
            if weight != NULL:
                prefetch(weight + row_offset + ahead)
        i = entry_row[j]
        row = codes + i * n_features
        gq = fixed_point(gpair[2 * i], weight, row_offset + i, scale_g)
        hq = fixed_point(gpair[2 * i + 1], weight, row_offset + i, scale_h)
        for f in range(f0, f1):
            code = row[f]
            if code <= missing[f]:   # else a damaged code: not added
                # (g, h) as one 128-bit add (``_common.add_pair``)
                add_pair(&bins[2 * (bin_ptr[f] + code)], gq, hq)


cdef void _add_page(const code_t[:, ::1] page, Py_ssize_t row_offset,
                    LevelPass p, int n_threads, bint by_histogram) noexcept:
    """Phase B: histogram h's rows, ``hist_start[h]`` to
    ``hist_start[h + 1]``, added to its bins. ``by_histogram``: each
    thread takes whole histograms (every row read once); otherwise thread
    g owns features [g F / T, (g + 1) F / T) of every histogram. Either
    way each bin has one writer: the sums do not depend on it."""
    cdef Py_ssize_t n_features = page.shape[1]
    cdef Py_ssize_t n_hist = p.n_hist
    cdef int n_groups = <int> min(n_threads, n_features)
    cdef const code_t* codes = &page[0, 0]
    cdef const int32_t* entry_row = &p.entry_row[0]
    cdef const float* gpair = &p.gpair[row_offset, 0]
    cdef const double* weight = p.weight
    cdef double scale_g = p.scale_g, scale_h = p.scale_h
    cdef const int64_t* hist_start = &p.hist_start[0]
    cdef const int32_t* missing = &p.missing_code[0]
    cdef const int64_t* bin_ptr = &p.bin_ptr[0]
    cdef int64_t* hist = &p.hist[0, 0, 0]
    cdef Py_ssize_t hist_values = 2 * bin_ptr[n_features]
    cdef Py_ssize_t g, h
    if n_groups < 1:
        return
    if by_histogram:
        for h in prange(n_hist, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            _add_rows(codes, n_features, entry_row, gpair, weight,
                      row_offset, scale_g, scale_h, hist_start[h],
                      hist_start[h + 1], missing, bin_ptr,
                      hist + h * hist_values, 0, n_features)
        return
    for g in prange(n_groups, nogil=True, schedule="static",
                    num_threads=n_groups):
        for h in range(n_hist):
            _add_rows(codes, n_features, entry_row, gpair, weight,
                      row_offset, scale_g, scale_h, hist_start[h],
                      hist_start[h + 1], missing, bin_ptr,
                      hist + h * hist_values, g * n_features // n_groups,
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
