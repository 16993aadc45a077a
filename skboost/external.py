"""Out-of-core training: data read in chunks, binned into pages on disk.

``ExternalData(chunks, cache_dir=...)`` stands for X (and y, and the
sample weights and query ids) in the estimators' ``fit`` and ``predict``.
``chunks`` is a callable returning a fresh iterator over ``(X, y)``,
``(X, y, sample_weight)`` or ``(X, y, sample_weight, qid)`` tuples, the
same data in the same order on every call. A fit reads the chunks twice
(the paper's section 4.3, XGBoost's external memory):

1. the scan: every chunk is converted as the estimator converts X (pandas
   columns, the ``missing`` marker, sparse matrices), checked against the
   first chunk (width, dtypes, column names), fingerprinted (row count
   and a checksum), its labels, weights and query ids appended to files
   of ``cache_dir`` (read back at each fit: nothing per row stays in
   memory between fits), and its values pushed into the weighted
   quantile sketch, which streams over
   the rows in the blocks the in-core sketch uses, so the cut points are
   those of an in-core fit on the concatenated data;
2. the binning: every chunk again, checked against its fingerprint, its
   bin codes written as pages to a file under ``cache_dir``
   (``tree/pages.py``).

Training then reads the pages once per tree level, each page read by the
threads that work on it while a helper thread asks the operating system
to read ahead (``tree/finders/paged.py``). What stays in memory
is per-row state (labels, weights, gradients, margins, each row's node)
and the histograms; see :doc:`/user_guide/out_of_core` for the bound.
"""

import ctypes
import os
import shutil
import sys
import tempfile
import weakref
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .tree._paged import checksum
from .tree._sketch import WeightedQuantileSummary, _ExactBuilder
from .tree.binning import BinMapper, value_bin_caps
from .tree.pages import (DEFAULT_PAGE_BYTES, PageFile, PagedMatrix,
                         PageWriter, read_exactly, rows_per_page)

# Rows per block of the sketch: ``sketch_column``'s default chunk, so the
# streamed summaries are those of ``BinMapper.fit`` bit for bit.
SKETCH_BLOCK_ROWS = 65536


class ExternalData:
    """Training data read in chunks and kept on disk as binned pages.

    Pass it as X to ``fit`` (y, sample weights and query ids come from the
    chunks) and to ``predict`` and friends (predictions chunk by chunk).

    Parameters
    ----------
    chunks : callable
        ``chunks()`` returns a fresh iterator (or iterable) over tuples
        ``(X, y)``, ``(X, y, sample_weight)`` or ``(X, y, sample_weight,
        qid)`` (``sample_weight`` may be None), the same data in the same
        order on every call. X: numpy arrays (memory-mapped too), pandas
        DataFrames (numeric columns) or scipy.sparse matrices, all chunks
        of one kind, width, dtypes and column names.
    cache_dir : str or path-like, default=None
        Directory for the binned pages (a subdirectory is made and removed
        by :meth:`close`, or when the object is garbage collected). None:
        the system's temporary directory.
    page_bytes : int, default=1572864
        Bytes of bin codes per page; one page is in memory at a time.

    Notes
    -----
    Out of core, ``tree_method="hist"`` (depth-wise or lossguide growth,
    numeric features, one output per tree), and ``"approx"`` with global
    proposals where its cuts are proposed once (objectives of constant
    hessians, such as ``reg:squarederror``, without ``subsample``). Everything the scan
    learned is kept while the object lives, so several fits with the same
    ``max_bin``, ``missing`` and ``sparse_absent`` bin only once.

    Examples
    --------
    >>> import numpy as np
    >>> from skboost import BoostRegressor, ExternalData
    >>> rng = np.random.default_rng(0)
    >>> parts = [rng.normal(size=(500, 3)).astype(np.float32) for _ in range(4)]
    >>> def chunks():
    ...     for X in parts:
    ...         yield X, X[:, 0] * 2.0
    >>> with ExternalData(chunks) as data:
    ...     model = BoostRegressor(n_estimators=5).fit(data)
    ...     prediction = model.predict(data)
    >>> prediction.shape
    (2000,)
    """

    def __init__(self, chunks, *, cache_dir=None,
                 page_bytes=DEFAULT_PAGE_BYTES):
        if not callable(chunks):
            raise TypeError(
                "chunks must be a callable returning a fresh iterator over "
                f"(X, y[, sample_weight[, qid]]) tuples, got {chunks!r}")
        self.chunks = chunks
        self.cache_dir = cache_dir
        self.page_bytes = int(page_bytes)
        if self.page_bytes < 1:
            raise ValueError(f"page_bytes must be positive, got {page_bytes}")
        self._directory = None
        self._finalizer = None
        self._scan = None      # (key, _Scan) of the last fit
        self._paged = None     # (key, PagedMatrix) of the last binning
        self._approx = None    # (key, BinMapper) of approx's cuts

    @classmethod
    def from_npy(cls, X_files, y_files, *, sample_weight_files=None,
                 qid_files=None, mmap=True, cache_dir=None,
                 page_bytes=DEFAULT_PAGE_BYTES):
        """Chunks from ``.npy`` files: chunk k is ``X_files[k]`` with the
        labels ``y_files[k]`` (and weights, query ids when given).

        Parameters
        ----------
        X_files, y_files : sequence of str or path-like
        sample_weight_files, qid_files : sequence of str or path-like, \
default=None
        mmap : bool, default=True
            Memory-map the X files (``np.load(mmap_mode="r")``).
        cache_dir, page_bytes : see :class:`ExternalData`

        Returns
        -------
        ExternalData
        """
        lists = [list(X_files), list(y_files),
                 None if sample_weight_files is None
                 else list(sample_weight_files),
                 None if qid_files is None else list(qid_files)]
        _check_file_lists(lists, ("X_files", "y_files", "sample_weight_files",
                                  "qid_files"))

        def chunks():
            # no local names the chunk: once the caller drops it, its
            # memory-mapped pages leave the process
            for k, x_file in enumerate(lists[0]):
                yield ((np.load(x_file, mmap_mode="r" if mmap else None),
                        np.load(lists[1][k]))
                       + tuple(None if files is None else np.load(files[k])
                               for files in lists[2:]))

        return cls(chunks, cache_dir=cache_dir, page_bytes=page_bytes)

    @classmethod
    def from_parquet(cls, files, label, *, sample_weight=None, qid=None,
                     cache_dir=None, page_bytes=DEFAULT_PAGE_BYTES):
        """Chunks from Parquet files (one chunk per file, read with
        pandas): the column ``label`` is y, the columns named by
        ``sample_weight`` and ``qid`` (when given) the weights and query
        ids, every other column a feature.

        Parameters
        ----------
        files : sequence of str or path-like
        label : str
        sample_weight, qid : str, default=None
        cache_dir, page_bytes : see :class:`ExternalData`

        Returns
        -------
        ExternalData
        """
        files = list(files)
        if not files:
            raise ValueError("files must name at least one Parquet file")
        special = [c for c in (label, sample_weight, qid) if c is not None]

        def chunks():
            import pandas as pd

            for path in files:
                frame = pd.read_parquet(path)
                absent = [c for c in special if c not in frame.columns]
                if absent:
                    raise ValueError(f"the Parquet file {path} has no "
                                     f"column {absent[0]!r}")
                yield (frame.drop(columns=special), frame[label].to_numpy(),
                       None if sample_weight is None
                       else frame[sample_weight].to_numpy(),
                       None if qid is None else frame[qid].to_numpy())

        return cls(chunks, cache_dir=cache_dir, page_bytes=page_bytes)

    # -- the cache directory ---------------------------------------------

    def _cache_directory(self):
        """This object's directory under ``cache_dir`` (made on first use)."""
        if self._directory is None:
            parent = (tempfile.gettempdir() if self.cache_dir is None
                      else os.fspath(self.cache_dir))
            try:
                os.makedirs(parent, exist_ok=True)
                self._directory = tempfile.mkdtemp(prefix="skboost-external-",
                                                   dir=parent)
            except OSError as exc:
                raise ValueError(
                    f"cache_dir={parent!r} cannot hold the binned pages: "
                    f"{exc.strerror or exc}") from exc
            self._finalizer = weakref.finalize(
                self, shutil.rmtree, self._directory, ignore_errors=True)
        return self._directory

    def close(self):
        """Remove the cached pages and forget what the scan learned."""
        if self._paged is not None:
            self._paged[1].pages.release()
        if self._finalizer is not None:
            self._finalizer()
        self._directory = self._finalizer = None
        self._scan = self._paged = self._approx = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __repr__(self):
        return f"ExternalData({self.chunks!r}, cache_dir={self.cache_dir!r})"

    # -- what the estimators call ----------------------------------------

    def _iterate(self):
        """The chunks as ``_Chunk`` tuples, each checked for its shape."""
        try:
            iterator = iter(self.chunks())
        except TypeError as exc:
            raise TypeError("chunks() must return an iterator or iterable of "
                            f"tuples: {exc}") from None
        for index, item in enumerate(iterator):
            chunk = _Chunk.from_item(index, item)
            # no reference kept here while the next chunk is read: one
            # chunk in memory at a time (memory-mapped pages included)
            del item
            yield chunk
            del chunk

    def _check_for_estimator(self, estimator, *, y, reset, y_numeric=False,
                             multi_output=False):
        """``check_X`` of the estimators' ``fit``: the scan (pass 1) and
        the training data standing for X; y comes from the chunks."""
        if not reset:
            raise TypeError(
                "ExternalData is accepted as the training data of fit and "
                "as the data of predict, predict_proba and "
                "decision_function; pass arrays here")
        if y is not None:
            raise ValueError("with ExternalData, y comes from the chunks: "
                             "call fit(data) without y")
        if estimator.tree_method not in ("hist", "approx") or (
                estimator.tree_method == "approx"
                and estimator.approx_proposal != "global"):
            raise ValueError(
                "out-of-core training (ExternalData) supports "
                "tree_method='hist' only, and 'approx' with "
                "approx_proposal='global' for objectives of constant "
                f"hessians; got tree_method={estimator.tree_method!r}"
                + (f", approx_proposal={estimator.approx_proposal!r}"
                   if estimator.tree_method == "approx" else ""))
        key = _conversion_key(estimator)
        if self._scan is None or self._scan[0] != key:
            if self._scan is not None:
                self._scan[1].remove()
            self._scan = None
            self._scan = (key, _scan(self, estimator, y_numeric,
                                     multi_output))
        else:
            _restore_feature_info(estimator, self._scan[1])
        scan = self._scan[1]
        return ExternalTraining(self, scan), scan.y.load()

    def _paged_matrix(self, scan, max_bin, weight, n_threads, approx=False):
        """The binned pages for training (pass 2), re-sketched first when
        the training weights differ from the chunks' (``class_weight``,
        ``scale_pos_weight``); ``approx``: on the approximate method's
        cuts proposed once (``_approx_cuts``)."""
        mapper = scan.mapper
        if approx:
            mapper = self._approx_mapper(scan, max_bin, weight, n_threads)
        elif not _same_weights(weight, scan.load_weights()):
            mapper = _sketch_pass(self, scan, max_bin, weight, n_threads)
        key = (scan.key, _cuts_digest(mapper))
        if self._paged is not None and self._paged[0] == key:
            return self._paged[1]
        if self._paged is not None:
            self._paged[1].pages.release()
            _remove(self._paged[1].pages.path)
            self._paged = None
        paged = _binning_pass(self, scan, mapper, n_threads)
        self._paged = (key, paged)
        return paged

    def _approx_mapper(self, scan, max_bin, weight, n_threads):
        """The approximate method's cuts (kept for the next fit with the
        same bins and weights)."""
        key = (scan.key, int(max_bin), None if weight is None else
               zlib.adler32(np.ascontiguousarray(weight).view(np.uint8)))
        if self._approx is None or self._approx[0] != key:
            self._approx = None
            self._approx = (key, _approx_cuts(self, scan, max_bin, weight,
                                              n_threads))
        return self._approx[1]

    def _predict_chunks(self):
        """X of every chunk, for prediction."""
        for chunk in self._iterate():
            yield chunk.X


class ExternalTraining:
    """What ``fit`` trains on out of core: the scanned rows' count and
    width, their weights and query ids (read back from the cache
    directory when asked: this object holds no per-row array), and the
    binned pages on demand (``make_grower`` calls :meth:`paged_matrix`)."""

    out_of_core = True

    def __init__(self, data, scan):
        self.data = data
        self.scan = scan
        self.shape = (scan.n_rows, scan.n_features)

    @property
    def sample_weight(self):
        """The chunks' sample weights (float64), None if they had none."""
        return self.scan.load_weights()

    @property
    def qid(self):
        """The chunks' query ids, None if they had none."""
        return None if self.scan.qid is None else self.scan.qid.load()

    def __len__(self):
        return self.shape[0]

    def paged_matrix(self, max_bin, weight, n_threads, approx=False):
        """The PagedMatrix for ``max_bin`` bins, sketched with ``weight``
        (the finders' weights: None for unit weights); ``approx``: on the
        cuts of ``tree_method="approx"`` proposed once."""
        release_free_memory()    # the fit's set-up (labels encoded, ...)
        paged = self.data._paged_matrix(self.scan, max_bin, weight,
                                        n_threads, approx=approx)
        release_free_memory()    # the binning pass's chunks
        return paged

    def row_keys(self, weight, salt, n_threads):
        """The ranker's tie-break key of every row (``_ranking.row_keys``,
        from its values, ``weight`` and ``salt``), chunk by chunk: one more
        pass over the chunks, made for rankers only."""
        from ._ranking import row_keys

        weight = np.ascontiguousarray(weight, dtype=np.float64)
        keys = np.empty(self.shape[0], dtype=np.uint64)
        start = 0
        for _, X in _rescan_chunks(self.data, self.scan):
            stop = start + X.shape[0]
            keys[start:stop] = row_keys(X, weight[start:stop], salt,
                                        n_threads)
            start = stop
            del X   # before the next chunk is read
        return keys


@dataclass
class _Chunk:
    index: int
    X: object
    y: object
    sample_weight: object = None
    qid: object = None

    @classmethod
    def from_item(cls, index, item):
        if not isinstance(item, (tuple, list)) or not 2 <= len(item) <= 4:
            raise TypeError(
                f"chunk {index}: expected a tuple (X, y), (X, y, "
                "sample_weight) or (X, y, sample_weight, qid), got "
                f"{type(item).__name__}"
                + (f" of length {len(item)}" if hasattr(item, "__len__")
                   else ""))
        return cls(index, *item)


@dataclass
class _Scan:
    """What pass 1 learned."""

    key: tuple
    n_rows: int
    n_features: int
    y: "_RowStore"
    sample_weight: object          # _RowStore of float64, or None
    qid: object                    # _RowStore, or None
    fingerprints: list             # (rows, checksum) per chunk
    mapper: BinMapper              # cut points sketched on the chunks
    estimator_state: dict          # n_features_in_, feature_names_in_, ...
    converter: object              # the estimator's conversion settings

    def load_weights(self):
        return None if self.sample_weight is None else self.sample_weight.load()

    def remove(self):
        """Remove the files of the labels, weights and query ids."""
        for store in (self.y, self.sample_weight, self.qid):
            if store is not None:
                store.remove()


def _conversion_key(estimator):
    """What the scan depends on: the conversion of X and the bins."""
    missing = estimator.missing
    return (repr(missing), getattr(estimator, "sparse_absent", "missing"),
            repr(getattr(estimator, "categorical_features", None)),
            int(estimator.max_bin))


_FEATURE_STATE = ("n_features_in_", "feature_names_in_", "_category_map_")


def _restore_feature_info(estimator, scan):
    for name, value in scan.estimator_state.items():
        setattr(estimator, name, value)
    for name in _FEATURE_STATE:
        if name not in scan.estimator_state and hasattr(estimator, name):
            delattr(estimator, name)


def _dtype_signature(X):
    """The chunk's kind and dtypes, which every chunk must share."""
    if sp.issparse(X):
        return ("sparse", str(X.dtype))
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns"):
        return ("frame",) + tuple(str(d) for d in dtypes)
    return ("array", str(np.asarray(X).dtype))


def _convert(estimator, chunk, first, y_numeric, multi_output):
    """The chunk's X as float32 C-ordered with NaN for missing, and its
    checked y (``check_X``: the first chunk sets the feature names and
    width, the others are checked against them)."""
    from ._input.arrays import check_X

    try:
        X, y = check_X(estimator, chunk.X, y=chunk.y, reset=first,
                       y_numeric=y_numeric, multi_output=multi_output)
    except ValueError as exc:
        raise ValueError(f"chunk {chunk.index}: {exc}") from exc
    if first and getattr(estimator, "_category_map_", None) is not None:
        raise ValueError(
            "out-of-core training (ExternalData) does not support "
            "categorical features yet: encode them as numbers in the chunks")
    if sp.issparse(X):
        X = _dense(X, getattr(estimator, "sparse_absent", "missing"))
    return X, y


def _dense(X, absent):
    """A CSR chunk as float32 dense: absent entries NaN (missing) or 0.0
    (``sparse_absent="zero"``)."""
    out = np.full(X.shape, np.nan if absent == "missing" else 0.0,
                  dtype=np.float32)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    out[rows, X.indices] = X.data
    return out


def _fingerprint(X, y):
    """A cheap checksum of a converted chunk: its rows and a checksum of
    its values and labels (``_paged.checksum``, at memory speed)."""
    value = checksum(X)
    value = checksum(np.ascontiguousarray(y, dtype=np.float64), value)
    return X.shape[0], value


def _scan(data, estimator, y_numeric, multi_output):
    """Pass 1 (see the module docstring); the files of the labels, weights
    and query ids are removed on any error."""
    from ._threads import effective_n_threads

    n_threads = effective_n_threads(estimator.n_jobs)
    stores = _ScanStores(data)
    try:
        first_signature = None
        fingerprints = []
        sketch = None
        for chunk in data._iterate():
            signature = _dtype_signature(chunk.X)
            if first_signature is None:
                first_signature = signature
            elif signature != first_signature:
                raise ValueError(
                    f"chunk {chunk.index} has dtypes {signature[1:]} "
                    f"({signature[0]}), the first chunk {first_signature[1:]} "
                    f"({first_signature[0]}): every chunk must have the same "
                    "kind and dtypes")
            X, y = _convert(estimator, chunk, chunk.index == 0, y_numeric,
                            multi_output)
            weight = stores.add_extras(chunk, X.shape[0])
            if sketch is None:
                sketch = StreamingSketch(X.shape[1], estimator.max_bin,
                                         weighted=weight is not None,
                                         n_threads=n_threads)
            sketch.push(X, weight)
            stores.y.append(y)
            fingerprints.append(_fingerprint(X, y))
            del chunk, X, y, weight   # before the next chunk is read
        if sketch is None:
            raise ValueError("chunks() yielded no chunk: ExternalData needs "
                             "at least one chunk of rows")
        stores.finish()
    except BaseException:
        stores.remove()
        raise
    state = {name: getattr(estimator, name) for name in _FEATURE_STATE
             if hasattr(estimator, name)}
    release_free_memory()
    scan = _Scan(key=_conversion_key(estimator), n_rows=stores.y.n_rows,
                 n_features=sketch.n_features, y=stores.y,
                 sample_weight=stores.weight, qid=stores.qid,
                 fingerprints=fingerprints, mapper=None,
                 estimator_state=state, converter=(estimator, y_numeric,
                                                   multi_output))
    try:
        scan.mapper = _sketched_mapper(data, scan, sketch,
                                       scan.load_weights, n_threads)
    except BaseException:
        scan.remove()
        raise
    return scan


class _ScanStores:
    """The labels, sample weights and query ids of the scan, each gathered
    chunk by chunk into a ``_RowStore`` under the cache directory; weights
    and query ids given for every chunk or for none."""

    def __init__(self, data):
        directory = data._cache_directory()
        prefix = os.path.join(directory, f"rows-{os.getpid()}-{id(self)}")
        self.y = _RowStore(prefix + "-y.bin")
        self.weight = self.qid = None
        self._prefix = prefix

    def add_extras(self, chunk, n_rows):
        """Store the chunk's weights and query ids (checked: one per row);
        returns its weights (float64) or None."""
        weight = None
        for name in ("sample_weight", "qid"):
            value = getattr(chunk, name)
            kept = getattr(self, "weight" if name == "sample_weight" else name)
            if chunk.index > 0 and (value is not None) != (kept is not None):
                raise ValueError(
                    f"chunk {chunk.index} "
                    f"{'has no' if value is None else 'has'} {name}, unlike "
                    f"the first chunk: give {name} in every chunk or in none")
            if value is None:
                continue
            value = _checked_extra(chunk.index, name, value, n_rows)
            if kept is None:
                kept = _RowStore(f"{self._prefix}-{name}.bin")
                setattr(self, "weight" if name == "sample_weight" else name,
                        kept)
            kept.append(value)
            if name == "sample_weight":
                weight = value
        return weight

    def _all(self):
        return [s for s in (self.y, self.weight, self.qid) if s is not None]

    def finish(self):
        for store in self._all():
            store.finish()

    def remove(self):
        for store in self._all():
            store.remove()


def _checked_extra(index, name, value, n_rows):
    """A chunk's sample weights (float64, finite, non-negative) or query
    ids, one per row."""
    value = np.asarray(value)
    if value.shape != (n_rows,):
        raise ValueError(
            f"chunk {index}: {name} has shape {value.shape}, "
            f"expected ({n_rows},), one per row of X")
    if name == "sample_weight":
        value = value.astype(np.float64)
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError(f"chunk {index}: sample_weight must "
                             "be finite and non-negative")
    return value


class _RowStore:
    """A per-row array (labels, weights or query ids) gathered chunk by
    chunk into a file, read back whole by :meth:`load` (at each fit), so
    that it takes no memory between fits and a fit holds one copy only.

    Kept in memory instead when it cannot be one flat file: object arrays
    (string labels), or chunks of different dtypes or shapes (their
    concatenation, as ``np.concatenate`` gives it).

    Parameters
    ----------
    path : str
    """

    def __init__(self, path):
        self.path = path
        self.n_rows = 0
        self.dtype = self.tail = None
        self._file = None
        self._memory = None     # chunks (then their concatenation)

    def append(self, values):
        values = np.asarray(values)
        if self._memory is None and self._file is None and self.n_rows == 0:
            if values.dtype.hasobject:
                self._memory = []
            else:
                self.dtype, self.tail = values.dtype, values.shape[1:]
                self._file = _open_cache_file(self.path)
        if self._memory is None and (values.dtype != self.dtype
                                     or values.shape[1:] != self.tail):
            self._memory = [self.load()]       # of another dtype: in memory
            self._close()
            _remove(self.path)
        if self._memory is not None:
            self._memory.append(values)
        else:
            _write_cache_file(self._file, self.path,
                              np.ascontiguousarray(values))
        self.n_rows += values.shape[0]

    def finish(self):
        """No more chunks: the file closed (or the chunks concatenated)."""
        self._close()
        if self._memory is not None and len(self._memory) != 1:
            self._memory = [np.concatenate(self._memory)]

    def load(self):
        """The whole array (a new one from the file at each call)."""
        if self._memory is not None:
            return (self._memory[0] if len(self._memory) == 1
                    else np.concatenate(self._memory))
        if self._file is not None:
            self._file.flush()
        values = np.fromfile(self.path, dtype=self.dtype)
        return values.reshape((-1,) + self.tail)

    def _close(self):
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                raise _cache_error(exc, os.path.dirname(self.path)) from exc

    def remove(self):
        self._close()
        _remove(self.path)
        self._memory = None


def _open_cache_file(path):
    try:
        return open(path, "wb")
    except OSError as exc:
        raise _cache_error(exc, os.path.dirname(path)) from exc


def _write_cache_file(file, path, array):
    try:
        file.write(array.reshape(-1).view(np.uint8))
    except OSError as exc:
        raise _cache_error(exc, os.path.dirname(path)) from exc


def _cache_error(exc, directory):
    """The OSError of a failed write under the cache directory."""
    return OSError(exc.errno, f"writing to {directory} failed "
                   f"({exc.strerror or exc}): is cache_dir full or not "
                   "writable? Give ExternalData another cache_dir")


def _rescan_chunks(data, scan):
    """The chunks again (pass 2 and re-sketching), converted as in the
    scan and checked against its fingerprints: a different number of
    chunks or rows, or different values, is an error."""
    estimator, y_numeric, multi_output = scan.converter
    count = 0
    for chunk in data._iterate():
        if chunk.index >= len(scan.fingerprints):
            raise ValueError(
                f"chunks() yielded more chunks on a second pass than the "
                f"{len(scan.fingerprints)} of the first: it must yield the "
                "same data in the same order on every call")
        X, y = _convert(estimator, chunk, False, y_numeric, multi_output)
        expected = scan.fingerprints[chunk.index]
        found = _fingerprint(X, y)
        if found != expected:
            what = ("rows" if found[0] != expected[0] else "values (checksum)")
            raise ValueError(
                f"chunk {chunk.index} differs on a second pass of chunks(): "
                f"its {what} changed ({found[0]} rows, expected "
                f"{expected[0]}); chunks() must yield the same data in the "
                "same order on every call")
        count += 1
        index = chunk.index
        del chunk, y    # one chunk in memory at a time
        yield index, X
        del X
    if count != len(scan.fingerprints):
        raise ValueError(
            f"chunks() yielded {count} chunks on a second pass, "
            f"{len(scan.fingerprints)} on the first: it must yield the same "
            "data in the same order on every call")


def _sketch_pass(data, scan, max_bin, weight, n_threads):
    """Cut points sketched again with the training weights (an extra pass
    over the chunks)."""
    sketch = StreamingSketch(scan.n_features, max_bin,
                             weighted=weight is not None, n_threads=n_threads)
    start = 0
    for _, X in _rescan_chunks(data, scan):
        stop = start + X.shape[0]
        sketch.push(X, None if weight is None else weight[start:stop])
        start = stop
        del X       # before the next chunk is read
    return _sketched_mapper(data, scan, sketch, lambda: weight, n_threads)


# Rows per block of the column file of ``_approx_cuts``: a block is
# written transposed (its rows of feature 0, then of feature 1, ...).
COLUMN_BLOCK_ROWS = 65536


def _approx_cuts(data, scan, max_bin, weight, n_threads):
    """The cuts of ``tree_method="approx"`` for hessians that never change
    (``methods.approx_cuts_once``: every column sorted whole, its
    hessian-weighted quantiles proposed), out of core: one more pass over
    the chunks writes them column by column to a file of the cache
    directory (blocks of ``COLUMN_BLOCK_ROWS`` rows, each transposed; as
    many bytes as X in float32, removed after), then each column is read
    back, sorted and proposed on (in the calling thread)."""
    from .tree.methods import approx_cuts_of_columns

    directory = data._cache_directory()
    path = os.path.join(directory, f"columns-{os.getpid()}-{id(scan)}.f32")
    try:
        blocks = _write_columns(data, scan, path)
        with open(path, "rb") as file:
            def column(j):
                out = np.empty(scan.n_rows, dtype=np.float32)
                for offset, first, n in blocks:
                    read_exactly(file.fileno(), out[first:first + n],
                                 offset + 4 * j * n,
                                 what=f"the column file {path}")
                return out

            # in this thread: worker threads' allocator arenas would keep
            # the columns' memory (25 MiB at 2 million rows) after they
            # end; one thread costs 0.2 s there
            return approx_cuts_of_columns(column, scan.n_rows,
                                          scan.n_features, weight, max_bin,
                                          1)
    finally:
        _remove(path)


def _write_columns(data, scan, path):
    """The chunks' values written block by block, each block transposed;
    returns (file offset, first row, rows) of every block."""
    blocks, offset, row = [], 0, 0
    file = _open_cache_file(path)
    try:
        for _, X in _rescan_chunks(data, scan):
            for start in range(0, X.shape[0], COLUMN_BLOCK_ROWS):
                block = np.ascontiguousarray(
                    X[start:start + COLUMN_BLOCK_ROWS].T)
                _write_cache_file(file, path, block)
                blocks.append((offset, row, block.shape[1]))
                offset += block.nbytes
                row += block.shape[1]
            del X   # before the next chunk is read
    finally:
        try:
            file.close()
        except OSError as exc:
            raise _cache_error(exc, os.path.dirname(path)) from exc
    return blocks


def _binning_pass(data, scan, mapper, n_threads):
    """Pass 2: every chunk's bin codes, written as pages; the partial
    file is removed on any error."""
    directory = data._cache_directory()
    page_rows = rows_per_page(scan.n_features, mapper.code_dtype_,
                              data.page_bytes)
    path = os.path.join(directory, f"codes-{os.getpid()}-{id(mapper)}.bin")
    try:
        writer = PageWriter(path, scan.n_features, mapper.code_dtype_)
        try:
            for _, X in _rescan_chunks(data, scan):
                writer.write(mapper.transform(X, n_threads))
                del X   # before the next chunk is read
        finally:
            writer.close()
    except OSError as exc:
        _remove(path)
        raise _cache_error(exc, directory) from exc
    except BaseException:
        _remove(path)
        raise
    pages = PageFile(path, scan.n_rows, scan.n_features, mapper.code_dtype_,
                     page_rows)
    return PagedMatrix(pages, mapper.bin_ptr_, mapper.split_thresholds_)


def release_free_memory():
    """Hand the memory allocator's free pages back to the system (glibc's
    ``malloc_trim``; nothing elsewhere), between the passes and training.

    The passes allocate and free arrays of a chunk's size. glibc serves
    large blocks by ``mmap`` and unmaps them when freed, but raises that
    threshold to the size of each block freed (up to 32 MiB), so the
    arrays after the first come from its heap, whose free pages stay
    resident: they would add to the peak of training (about 10 MiB at 2
    million rows)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_TRIM = []


def _malloc_trim():
    if not _TRIM:
        function = None
        if sys.platform.startswith("linux"):
            try:
                function = ctypes.CDLL(None).malloc_trim
                function.argtypes = [ctypes.c_size_t]
                function.restype = ctypes.c_int
            except (OSError, AttributeError):   # not glibc (musl, ...)
                function = None
        _TRIM.append(function)
    return _TRIM[0]


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _same_weights(weight, sketched):
    """Whether the finders' weights (None: unit) are those the scan
    sketched with (None: none given)."""
    if weight is None or sketched is None:
        other = sketched if weight is None else weight
        return other is None or bool(np.all(other == 1.0))
    return weight.shape == sketched.shape and np.array_equal(weight, sketched)


def _cuts_digest(mapper):
    flat = (np.concatenate(mapper.cuts_) if mapper.cuts_
            else np.empty(0))
    return (zlib.adler32(flat.tobytes()), tuple(mapper.cut_ptr_),
            tuple(mapper.has_missing_))


def _check_file_lists(lists, names):
    n = len(lists[0])
    if n == 0:
        raise ValueError("X_files must name at least one file")
    for files, name in zip(lists[1:], names[1:]):
        if files is not None and len(files) != n:
            raise ValueError(f"{name} has {len(files)} files, X_files {n}: "
                             "one per chunk")


class StreamingSketch:
    """Cut points of data seen in pieces of any size, equal to
    ``BinMapper(max_bin).fit`` on the concatenated rows.

    ``sketch_column`` summarises a column in blocks of
    ``SKETCH_BLOCK_ROWS`` rows (exact summary of the block, pruned, merged
    into the running summary, pruned again); the rows pushed here are cut
    into the same blocks, whatever the chunks, and each feature keeps the
    same running summary. Which summary size applies depends on whether
    the feature has missing values (``value_bin_caps``: 255 value bins
    rather than 256 with ``max_bin=256``), known for sure only at the
    end. Each feature is summarised for the cap its first block says (a
    missing value in it: 255); a feature whose first missing value comes
    in a later block is *late*: its summary so far was for the wrong cap,
    and it must be sketched again over every row (``late_features``,
    ``replace``: an extra pass over its column, made by the caller).

    Parameters
    ----------
    n_features : int
    max_bin : int
    weighted : bool
        Whether rows come with weights.
    n_threads : int
    has_missing : ndarray of shape (n_features,) of bool, default=None
        Known in advance (a sketch of late features again): every block
        is summarised for the cap these give.
    """

    def __init__(self, n_features, max_bin, weighted, n_threads,
                 has_missing=None):
        self.n_features = n_features
        self.max_bin = int(max_bin)
        self.weighted = weighted
        self.n_threads = max(1, n_threads)
        self.running = [WeightedQuantileSummary.empty()
                        for _ in range(n_features)]
        self.has_missing = np.zeros(n_features, dtype=bool)
        # each feature's cap, set by its first block (or given)
        self.caps = (None if has_missing is None else
                     value_bin_caps(self.max_bin, np.asarray(has_missing)))
        self.late = np.zeros(n_features, dtype=bool)
        self._block = np.empty((n_features, SKETCH_BLOCK_ROWS),
                               dtype=np.float32)
        self._weights = np.empty(SKETCH_BLOCK_ROWS) if weighted else None
        self._filled = 0
        self._pool = ThreadPoolExecutor(max_workers=self.n_threads)
        self._builders = {}

    def push(self, X, weight=None):
        """Add rows (float32 (n, n_features), NaN = missing)."""
        if X.shape[1] != self.n_features:
            raise ValueError("rows of another width")
        start = 0
        while start < X.shape[0]:
            take = min(SKETCH_BLOCK_ROWS - self._filled, X.shape[0] - start)
            stop = self._filled + take
            if self.weighted:
                self._weights[self._filled:stop] = weight[start:start + take]
            if stop == SKETCH_BLOCK_ROWS:
                # a whole block: its columns gathered by the threads that
                # summarise them (the rows copied so far, then these)
                self._summarise_block(X[start:start + take])
            else:   # the rest waits in the block, no reference to X kept
                self._block[:, self._filled:stop] = X[start:start + take].T
                self._filled = stop
            start += take

    def _builder(self):
        """The calling thread's exact-summary builder (buffers reused)."""
        import threading

        key = threading.get_ident()
        if key not in self._builders:
            self._builders[key] = _ExactBuilder(SKETCH_BLOCK_ROWS, np.float32)
        return self._builders[key]

    def _summarise_block(self, rows=None):
        """Summarise the block: its first ``_filled`` rows in ``_block``,
        then ``rows`` (a view of the chunk: (n, n_features)), if any."""
        n_kept = self._filled
        n = n_kept + (0 if rows is None else rows.shape[0])
        weights = None if not self.weighted else self._weights[:n]
        if rows is not None:
            # transposed into the block by the pool's threads, each its
            # own rows (a memory-mapped chunk is paged in by them too)
            bounds = np.linspace(0, rows.shape[0], self.n_threads + 1,
                                 dtype=np.int64)

            def transpose(t):
                a, b = bounds[t], bounds[t + 1]
                self._block[:, n_kept + a:n_kept + b] = rows[a:b].T

            list(self._pool.map(transpose, range(self.n_threads)))
        first = self.caps is None
        if first:
            self.caps = np.zeros(self.n_features, dtype=np.int64)

        def summarise(f):
            values = self._block[f, :n]
            # NaN propagates through min: no temporary array
            missing = bool(np.isnan(np.min(values)))
            cap = int(value_bin_caps(self.max_bin, np.array([missing]))[0])
            if first:      # the first block sets the feature's cap
                self.caps[f] = cap
            elif missing and not self.has_missing[f] and cap != self.caps[f]:
                self.late[f] = True
            self.has_missing[f] |= missing
            if self.late[f]:   # its summary is redone whole: no more work
                return
            size = max(8 * int(self.caps[f]), 2)
            if weights is None:
                # counts are integers: pruning the exact summary is what
                # build(..., size) does, bit for bit (one sort)
                part = self._builder().build(values, None, 0).prune(size)
            else:
                part = self._builder().build(values, weights, size)
            self.running[f] = self.running[f].merge(part).prune(size)

        list(self._pool.map(summarise, range(self.n_features)))
        self._filled = 0

    def late_features(self):
        """Features to sketch again (their first missing value came after
        their first block), once every row is pushed."""
        if self._filled:
            self._summarise_block()
        return np.flatnonzero(self.late)

    def replace(self, features, other):
        """Take the summaries of ``features`` from ``other``, a sketch of
        those columns alone (in that order) over every row."""
        for j, f in enumerate(features):
            self.running[f] = other.running[j]
            self.caps[f] = other.caps[j]
        self.late[features] = False
        other.close()

    def close(self):
        """Free the block buffers and the threads."""
        self._pool.shutdown()
        self._block = self._weights = None
        self._builders = {}

    def mapper(self):
        """A fitted BinMapper holding the cut points (every late feature
        replaced first)."""
        if self.late_features().size:
            raise RuntimeError("late features must be sketched again first")
        self.close()
        caps = value_bin_caps(self.max_bin, self.has_missing)
        if self.caps is not None and np.any(caps != self.caps):
            raise RuntimeError("a summary was made for another cap")
        cuts = [np.asarray(self.running[f].cut_points(int(caps[f])),
                           dtype=np.float64) for f in range(self.n_features)]
        mapper = BinMapper(self.max_bin)
        mapper.has_missing_ = self.has_missing.copy()
        mapper._set_cuts(cuts)
        return mapper


def _sketched_mapper(data, scan, sketch, load_weight, n_threads):
    """The cut points of a sketch fed every chunk, its late features (see
    ``StreamingSketch``) sketched again first: one more pass over the
    chunks, their columns only (``load_weight()``: the rows' weights the
    sketch was fed, or None)."""
    late = sketch.late_features()
    if late.size:
        weight = load_weight()
        again = StreamingSketch(late.size, sketch.max_bin,
                                weighted=weight is not None,
                                n_threads=n_threads,
                                has_missing=np.ones(late.size, dtype=bool))
        start = 0
        for _, X in _rescan_chunks(data, scan):
            stop = start + X.shape[0]
            again.push(np.ascontiguousarray(X[:, late]),
                       None if weight is None else weight[start:stop])
            start = stop
            del X   # before the next chunk is read
        again.late_features()    # the last, partial block
        sketch.replace(late, again)
    return sketch.mapper()
