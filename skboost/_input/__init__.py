"""Input conversion: numpy, pandas, polars/arrow and scipy.sparse ``X`` to
what the kernels read (float32 dense with NaN for missing, or canonical
CSR), categorical columns (``categorical.CategoryMap``), sample weights."""
