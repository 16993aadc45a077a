"""Binned rows on disk, in pages, read back page by page.

A page holds ``page_rows`` consecutive rows (the last page fewer), its
codes stored row-major (``(rows, n_features)``, uint8 or uint16, a row's
codes in one cache line), one page after the other in a single file.
Training reads every page once per tree level (``finders/paged.py``):
the kernel's threads read the pages themselves, each into its own buffer
(``kernel_file``), while a separate thread asks the operating system to
fetch the file from disk (the paper's section 4.3: blocks on disk, read
ahead while the CPUs work). With the pages in the page cache a read is a
copy, best made by the threads that use the page: a third thread copying
would take a core from them. Only those buffers are in memory, whatever
the number of rows. ``pages()`` reads ahead into two buffers on a second
thread instead (for callers that only read).
"""

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# Bytes of codes per page: the page worked on is what the binned data
# costs in memory.
DEFAULT_PAGE_BYTES = 3 << 19

_CAN_HINT = hasattr(os, "posix_fadvise")
_NOWAIT = getattr(os, "RWF_NOWAIT", None)


# Rows a page holds at most: training numbers a page's rows by a uint16
# (``_paged.PagePartition``).
MAX_PAGE_ROWS = 65536


def rows_per_page(n_features, code_dtype, page_bytes=DEFAULT_PAGE_BYTES):
    """Rows of a page of about ``page_bytes`` bytes (at least 1024, at
    most ``MAX_PAGE_ROWS``)."""
    row_bytes = max(1, n_features) * np.dtype(code_dtype).itemsize
    return min(MAX_PAGE_ROWS, max(1024, int(page_bytes) // row_bytes))


def read_exactly(fd, out, offset, what="the file"):
    """Fill the contiguous array ``out`` with the bytes of ``fd`` from
    ``offset`` (``os.preadv`` may return fewer bytes than asked); an
    OSError naming ``what`` if the file ends first."""
    view = memoryview(out).cast("B")
    done = 0
    while done < view.nbytes:
        got = os.preadv(fd, [view[done:]], offset + done)
        if got <= 0:
            raise OSError(f"{what} ended early")
        done += got


class PageWriter:
    """Appends row-major bin codes, in pieces of any size, to ``path``
    (pages are fixed row ranges of the one file).

    Parameters
    ----------
    path : str
    n_features : int
    code_dtype : numpy dtype (uint8 or uint16)
    """

    def __init__(self, path, n_features, code_dtype):
        self.path = path
        self.n_features = n_features
        self.code_dtype = np.dtype(code_dtype)
        self.n_rows = 0
        self._file = open(path, "wb")

    def write(self, codes):
        """Append rows (``codes``: (n, n_features), row-major)."""
        codes = np.ascontiguousarray(codes, dtype=self.code_dtype)
        if codes.ndim != 2 or codes.shape[1] != self.n_features:
            raise ValueError("codes of another width")
        self._file.write(memoryview(codes).cast("B"))
        self.n_rows += codes.shape[0]

    def close(self):
        """Flush to disk and close the file."""
        if self._file is not None:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
            finally:
                self._file.close()
                self._file = None


class PageFile:
    """The pages of one binned data set, read page by page.

    Parameters
    ----------
    path : str
    n_rows, n_features : int
    code_dtype : numpy dtype
    page_rows : int
    """

    def __init__(self, path, n_rows, n_features, code_dtype, page_rows):
        self.path = path
        self.n_rows = int(n_rows)
        self.n_features = int(n_features)
        self.code_dtype = np.dtype(code_dtype)
        self.page_rows = int(page_rows)
        self.n_pages = -(-self.n_rows // self.page_rows)
        expected = self.n_rows * self.n_features * self.code_dtype.itemsize
        size = os.path.getsize(path)
        if size != expected:
            raise ValueError(
                f"the page file {path} holds {size} bytes, expected "
                f"{expected}: the cache was changed or truncated")
        self._buffers = None          # pages()'s two buffers
        self._reader = None
        self._row_bytes = self.n_features * self.code_dtype.itemsize

    def page_bounds(self, k):
        """First row and number of rows of page k."""
        first = k * self.page_rows
        return first, min(self.page_rows, self.n_rows - first)

    def _read(self, fd, k, buffer):
        first, n = self.page_bounds(k)
        page = buffer[:n]
        offset = first * self.n_features * self.code_dtype.itemsize
        read_exactly(fd, page.reshape(-1), offset,
                     what=f"the page file {self.path}")
        return first, page

    def pages(self):
        """Yield ``(first_row, codes)`` for every page in order, codes
        (rows, n_features) valid until the next page is asked for; the
        next page is read on another thread meanwhile."""
        if self._buffers is None:
            self._buffers = [np.empty((self.page_rows, self.n_features),
                                      dtype=self.code_dtype)
                             for _ in range(2)]
        reader = self._helper()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            ahead = reader.submit(self._read, fd, 0, self._buffers[0])
            for k in range(self.n_pages):
                current = ahead.result()
                if k + 1 < self.n_pages:
                    ahead = reader.submit(self._read, fd, k + 1,
                                          self._buffers[(k + 1) % 2])
                yield current
        finally:
            ahead.result() if not ahead.done() else None
            os.close(fd)

    def _helper(self):
        if self._reader is None:
            self._reader = ThreadPoolExecutor(max_workers=1)
        return self._reader

    @contextlib.contextmanager
    def kernel_file(self):
        """The page file open (its descriptor) for a kernel that reads
        every page itself (``_paged.PagePartition.read_pages``): the
        threads that work on a page copy it from the page cache, no third
        thread competes with them for the cores. Meanwhile a helper thread
        asks the operating system to fetch the pages not in the page cache
        from disk (``posix_fadvise(WILLNEED)``, asynchronous), so that from
        a cold cache the disk reads ahead while the CPUs work."""
        fd = os.open(self.path, os.O_RDONLY)
        hint = None
        try:
            if _CAN_HINT:
                hint = self._helper().submit(self._hint, fd, 0, self.n_pages)
            yield fd
        finally:
            if hint is not None:    # before the file is closed
                hint.result()
            os.close(fd)

    def _hint(self, fd, start, stop):
        """Ask for pages ``start .. stop - 1`` to be read into the page
        cache (no wait for the disk), unless a probe of each page's first
        byte finds them there already (the common case between passes:
        asking costs a page-cache lookup per 4 KiB, ~2% of a fit)."""
        stop = min(self.n_pages, stop)
        if start >= stop or self._cached(fd, start, stop):
            return
        first = start * self.page_rows
        last = min(self.n_rows, stop * self.page_rows)
        os.posix_fadvise(fd, first * self._row_bytes,
                         (last - first) * self._row_bytes,
                         os.POSIX_FADV_WILLNEED)

    def _cached(self, fd, start, stop):
        """Whether the first byte of each of pages ``start .. stop - 1``
        is in the page cache (a read that may not wait for the disk,
        ``RWF_NOWAIT``; False where the platform has none)."""
        if _NOWAIT is None:
            return False
        probe = bytearray(1)
        try:
            for k in range(start, stop):
                if os.preadv(fd, [probe], k * self.page_rows
                             * self._row_bytes, _NOWAIT) != 1:
                    return False
        except OSError:    # BlockingIOError: not cached; or unsupported
            return False
        return True

    def release(self):
        """Free the page buffers and the reader thread (until next use)."""
        if self._reader is not None:
            self._reader.shutdown(wait=True)
        self._buffers = None
        self._reader = None

    def evict(self):
        """Drop the pages from the operating system's page cache (a cold
        read next time; ``posix_fadvise`` where the platform has it)."""
        if not hasattr(os, "posix_fadvise"):
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class PagedMatrix:
    """Binned training data kept on disk: what the out-of-core finder
    reads (``finders/paged.py``), with the histogram layout of its bins.

    Attributes
    ----------
    pages : PageFile
    bin_ptr : ndarray of shape (n_features + 1,), int64
    missing_code : ndarray of shape (n_features,), int32
    split_thresholds : ndarray of shape (n_bins,)
        Tree threshold of each "split after bin" (``HistogramLayout``).
    shape : (n_rows, n_features)
    """

    out_of_core = True

    def __init__(self, pages, bin_ptr, split_thresholds):
        self.pages = pages
        self.bin_ptr = np.ascontiguousarray(bin_ptr, dtype=np.int64)
        self.missing_code = (np.diff(self.bin_ptr) - 1).astype(np.int32)
        self.split_thresholds = np.asarray(split_thresholds,
                                           dtype=np.float64)
        self.n_rows = pages.n_rows
        self.n_features = pages.n_features
        self.n_bins = int(self.bin_ptr[-1])
        self.shape = (self.n_rows, self.n_features)
