"""Spark ML vectors (``VectorUDT``) as skboost reads them, never densified.

A ``VectorUDT`` column travels to the Python side (a barrier task's Arrow
batches, a pandas UDF's frame) as its SQL type, a struct of ``type`` (0:
sparse, 1: dense), ``size`` (sparse only), ``indices`` (sparse only) and
``values``. ``vector_matrix`` reads those four fields directly:

- every row dense: a (rows, size) float32 array, as before;
- any row sparse: a float32 CSR matrix (``scipy.sparse``) holding the
  sparse rows' stored entries and every entry of the dense rows (their
  zeros are values), never a dense (rows, size) array. What an entry a
  sparse vector does not store means is skboost's ``sparse_absent``
  (default ``"missing"``, as single-node skboost reads an absent CSR
  entry; ``"zero"``: 0.0, Spark ML's own reading of a sparse vector).
"""

import numpy as np

SPARSE, DENSE = 0, 1


def vector_matrix(kind, size, lengths, values, indices, what, name):
    """The rows of a vector column as a float32 array or CSR matrix.

    Parameters
    ----------
    kind : ndarray of shape (n_rows,)
        0 for a sparse vector, 1 for a dense one.
    size : ndarray of shape (n_rows,)
        Each sparse vector's size (anything for the dense ones).
    lengths : ndarray of shape (n_rows,)
        Number of values of each row.
    values : ndarray of shape (sum(lengths),)
        Every row's values, row after row.
    indices : ndarray
        The sparse rows' indices, row after row (one per value).
    what, name : str
        The parameter and the column, named in errors.

    Returns
    -------
    ndarray of shape (n_rows, size), float32, or scipy.sparse.csr_matrix
    """
    import scipy.sparse as sp

    kind = np.asarray(kind)
    lengths = np.asarray(lengths, dtype=np.int64)
    sparse_row = kind == SPARSE
    widths = np.where(sparse_row, np.asarray(size, dtype=np.int64), lengths)
    if widths.shape[0] and np.any(widths != widths[0]):
        sizes = np.unique(widths)
        raise ValueError(f"{what} {name!r} holds vectors of different "
                         f"sizes ({', '.join(map(str, sizes[:5]))}): every "
                         "row needs the same number of features")
    n_rows = kind.shape[0]
    width = int(widths[0]) if n_rows else 0
    values = np.asarray(values, dtype=np.float32)
    if not sparse_row.any():
        return values.reshape(n_rows, width)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    # a dense row's entries sit at 0, 1, ...: their place in the row
    columns = np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1],
                                                                lengths)
    stored = np.repeat(sparse_row, lengths)
    indices = np.asarray(indices, dtype=np.int64)
    if indices.shape[0] != int(stored.sum()):
        raise ValueError(f"{what} {name!r} holds a sparse vector whose "
                         "indices and values differ in number")
    if indices.shape[0] and (indices.min() < 0 or indices.max() >= width):
        raise ValueError(f"{what} {name!r} holds a sparse vector with an "
                         f"index outside [0, {width})")
    columns[stored] = indices
    return sp.csr_matrix((values, columns.astype(np.int32), indptr),
                         shape=(n_rows, width))


def is_vector_struct(arrow_type):
    """Whether an Arrow type is ``VectorUDT``'s struct."""
    import pyarrow as pa

    return (pa.types.is_struct(arrow_type)
            and {arrow_type.field(k).name for k in range(
                arrow_type.num_fields)} >= {"type", "size", "indices",
                                            "values"})


def arrow_vectors(column, what, name):
    """``vector_matrix`` of an Arrow struct column (``VectorUDT``'s)."""
    import pyarrow.compute as pc

    column = column.combine_chunks() if hasattr(column, "combine_chunks") \
        else column
    if column.null_count:
        raise ValueError(f"{what} {name!r} has null rows: every row needs "
                         "its feature vector")
    # flatten(): the fields with the struct's offset applied
    fields = {column.type.field(k).name: array
              for k, array in enumerate(column.flatten())}
    values, indices, size = (fields["values"], fields["indices"],
                             fields["size"])
    return vector_matrix(
        kind=fields["type"].to_numpy(zero_copy_only=False),
        size=size.fill_null(0).to_numpy(zero_copy_only=False),
        lengths=pc.list_value_length(values).fill_null(0).to_numpy(
            zero_copy_only=False),
        values=values.flatten().to_numpy(zero_copy_only=False),
        indices=indices.flatten().to_numpy(zero_copy_only=False),
        what=what, name=name)


def pandas_vectors(frame, what="featuresCol", name="features"):
    """``vector_matrix`` of a pandas UDF's struct argument (a DataFrame of
    ``type``, ``size``, ``indices``, ``values``)."""
    kind = frame["type"].to_numpy(dtype=np.int64)
    values = list(frame["values"])
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    sparse = [v for v, k in zip(frame["indices"], kind) if k == SPARSE]
    size = frame["size"].fillna(0).to_numpy(dtype=np.int64)
    return vector_matrix(
        kind=kind, size=size, lengths=lengths,
        values=(np.concatenate(values) if values else np.zeros(0)),
        indices=(np.concatenate(sparse) if sparse else np.zeros(0)),
        what=what, name=name)
