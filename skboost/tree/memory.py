"""Memory a fit will need, estimated before the large arrays are allocated.

The large arrays of a fit have sizes known from the input and the
parameters: the binned matrix (``hist``), the presorted column blocks
(``exact`` and ``approx``), and the pool of gradient histograms (open nodes
x bins x 16 bytes, grown by doubling). Each is checked against the memory
this process can still get (``available_memory``: the kernel's
``MemAvailable``, a cgroup limit, an address-space rlimit) before it is
allocated; when it does not fit, :class:`TrainingMemoryError` (a
MemoryError) names the estimate and the parameters that change it, instead
of the process being killed half-way through.
"""

import os
import resource

# bytes of one histogram bin: int64 gradient and hessian sums
HIST_BIN_BYTES = 16
# bytes of one presorted entry: float32 value and int32 row
PRESORTED_ENTRY_BYTES = 8


class TrainingMemoryError(MemoryError):
    """A fit would need more memory than this process can get."""


def _meminfo_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available(root="/sys/fs/cgroup"):
    try:
        with open(os.path.join(root, "memory.max")) as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(root, "memory.current")) as f:
            return max(0, int(limit) - int(f.read()))
    except (OSError, ValueError):
        return None


def _address_space_available():
    """What an ``RLIMIT_AS`` limit leaves of the address space."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return max(0, soft - int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return soft


def available_memory():
    """Bytes this process can still allocate (the least of the known
    limits), or None when none is known."""
    limits = [m for m in (_meminfo_available(), _cgroup_available(),
                          _address_space_available()) if m is not None]
    return min(limits) if limits else None


def _gib(n_bytes):
    return f"{n_bytes / 2 ** 30:.3g} GiB"


def check_fits(n_bytes, what, advice):
    """Raise :class:`TrainingMemoryError` when ``n_bytes`` more bytes do
    not fit in the memory available.

    Parameters
    ----------
    n_bytes : int
        The estimate.
    what : str
        What it is for, with its formula (``"histograms: 512 nodes x ..."``).
    advice : str
        The parameters to change.
    """
    available = available_memory()
    if available is not None and n_bytes > available:
        raise TrainingMemoryError(
            f"training would need about {_gib(n_bytes)} for {what}, more "
            f"than the {_gib(available)} this process can allocate: "
            f"{advice}")


def histogram_bytes(n_histograms, n_bins):
    return int(n_histograms) * int(n_bins) * HIST_BIN_BYTES


def check_histogram_pool(n_histograms, n_bins):
    """Before allocating ``n_histograms`` histograms of ``n_bins`` bins."""
    check_fits(histogram_bytes(n_histograms, n_bins),
               f"gradient histograms ({n_histograms} nodes x {n_bins} bins x "
               f"{HIST_BIN_BYTES} bytes)",
               "lower max_depth or max_leaves (fewer nodes open at once), or "
               "max_bin (fewer bins per feature)")


def check_binned(n_rows, n_features, max_bin):
    """Before binning: the codes (1 or 2 bytes per entry)."""
    code_bytes = 1 if max_bin <= 256 else 2
    n_bytes = n_rows * n_features * code_bytes
    check_fits(n_bytes, f"the binned data ({n_rows} rows x {n_features} "
                        f"features x {code_bytes} byte(s))",
               "use max_bin <= 256 (one byte per value), or fewer rows or "
               "features")


def check_presorted(n_entries, n_features):
    """Before presorting ``n_entries`` present values (exact, approx)."""
    n_bytes = n_entries * PRESORTED_ENTRY_BYTES + (n_features + 1) * 8
    check_fits(n_bytes, f"the presorted columns ({n_entries} present values "
                        f"x {PRESORTED_ENTRY_BYTES} bytes)",
               "use tree_method='hist' (one byte per value), or fewer rows "
               "or features")


def check_training_memory(X, params, present_entries=None):
    """The up-front checks of a fit on X (``make_grower``): the arrays the
    chosen finder allocates before its first tree.

    ``present_entries``: stored values of sparse X (None: dense, every
    entry counts, an upper bound).
    """
    n_rows, n_features = X.shape
    entries = (n_rows * n_features if present_entries is None
               else int(present_entries))
    if params.tree_method == "hist" and present_entries is None:
        check_binned(n_rows, n_features, params.max_bin)
    else:
        check_presorted(entries, n_features)
