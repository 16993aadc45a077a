"""Feature contributions of every row: path-dependent TreeSHAP, Saabas
contributions and SHAP interaction values, parallel over rows.

The formulation (Quadrature TreeSHAP)
-------------------------------------
For one leaf ``l`` with value ``v``, let ``P`` be the distinct features split
on along its path. For feature ``j`` in ``P``, ``z_j`` is the product of the
cover fractions ``cover(child) / cover(parent)`` of the path's edges on
``j``, and ``o_j`` is 1 when the row follows every one of those edges (its
value, a missing value by the default direction, or a category by its left
set), else 0. The path-dependent value of a coalition ``S`` is
``v prod_{j in S} o_j prod_{j not in S} z_j`` (Lundberg et al. 2020), so the
Shapley value of ``i`` in ``P`` (``d = |P|``) is::

    phi_i = v (o_i - z_i) sum_{S in P-i} |S|!(d-1-|S|)!/d! prod_S o prod_rest z
          = v (o_i - z_i) int_0^1 prod_{j != i} (z_j + (o_j - z_j) t) dt

because ``|S|!(d-1-|S|)!/d!`` is the Beta integral
``int_0^1 t^|S| (1-t)^(d-1-|S|) dt``. The integrand is a polynomial of
degree ``d - 1``: Gauss-Legendre quadrature with ``ceil(d/2)`` points on
[0, 1] is exact. Likewise the SHAP interaction value (XGBoost's definition:
half the change of ``phi_j`` when ``i`` is always present rather than always
absent) is ``Phi_ij = v/2 (o_i - z_i)(o_j - z_j) int prod_{k != i,j} f_k``,
and the diagonal ``Phi_ii = phi_i - sum_{j != i} Phi_ij``.

Contributions cost O(nodes x points) per row and tree: a pass down the tree
carries ``G(t) = prod f_j(t)`` at every quadrature point (a repeated feature
divides out its ancestor's factor and multiplies in the merged one), a pass
up sums ``H(t) = sum_leaves v G(t)`` per subtree, and each edge adds
``sum_q w_q H(t_q) (o - z) / f(t_q)`` to its feature, minus the same term
with the factor of the nearest ancestor edge on the same feature (which adds
it again for the same leaves). Every per-node factor, its inverse and
``(o - z) / f`` depend on the row only through ``o`` in {0, 1}: they are
tabulated once per tree for both values, so the row passes are
multiply-adds. Interaction values need every pair of a leaf's path
features: O(leaves x depth^2 x points) per row and tree.

Trees are processed one after another (their tables built once), the rows
of each tree in parallel; a row's outputs are summed tree after tree in the
same order whatever the number of threads.
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

from ._predictor import _check_categorical, _check_forest

cimport cython

from cython.parallel cimport prange, threadid
from libc.stdint cimport uint32_t

from ._common cimport NO_CHILD, int32_t, int64_t, uint8_t
from ._sparse cimport SparseRows


ctypedef struct Forest:
    # the validated node arrays of all trees (tree-local child indices)
    const int32_t* left
    const int32_t* right
    const int32_t* feature
    const double* threshold
    const uint8_t* default_left
    const double* value
    const double* cover
    const int32_t* cat_of_node     # index of the node's categorical split, or -1
    const int64_t* cat_ptr
    const int32_t* cat_size
    const uint32_t* cat_bits


ctypedef struct TreeTables:
    # Row-independent quantities of one tree, tree-local node indices.
    # The edge into node n is (parent[n] -> n), on feature feat_in[n].
    int64_t start              # first node of the tree in the forest
    int32_t n_nodes
    int32_t n_q                # quadrature points
    const double* w            # their weights (n_q)
    int32_t* parent
    int32_t* feat_in
    int32_t* dup               # nearest ancestor edge on the same feature, or -1
    double* z_edge             # cover fraction of the edge
    double* z                  # merged with the ancestor edges on its feature
    int32_t* n_unique          # distinct features on the path to the node
    double* mean               # cover-weighted mean of the leaves below
    # for o in {0, 1}, at [(n * 2 + o) * n_q + q]:
    double* fac                # f = z + (o - z) t_q
    double* inv                # 1 / f (0 where f = 0)
    double* coef               # (o - z) / f (0 where o = z)
    double* wcoef              # w_q (o - z) / f
    # interactions: the deepest edge of every distinct feature on the path
    # of leaf n is leaf_edges[n * max_unique .. + n_unique[n] - 1]
    int32_t* leaf_edges
    int32_t max_unique


ctypedef struct Rows:
    # the rows to explain: dense (row-major) or CSR, scattered row by row
    # into a per-thread buffer of absent values
    const float* dense            # NULL for CSR
    const int64_t* indptr
    const int32_t* indices
    const float* data
    float* buffers                # (n_threads, buffer_stride)
    Py_ssize_t buffer_stride
    float absent
    Py_ssize_t n_rows
    Py_ssize_t n_features


ctypedef struct Scratch:
    # per-thread work arrays: thread t's starts at t * stride
    double* G                     # nodes x quadrature points
    Py_ssize_t G_stride
    uint8_t* om                   # nodes
    Py_ssize_t om_stride
    double* C                     # distinct path features x points
    Py_ssize_t C_stride


cdef inline int goes_left(const Forest* fr, int64_t i, const float* x) noexcept nogil:
    """Where node ``i`` (an inner node) sends the row ``x``: the predictor's
    rule (``x < threshold``, NaN by ``default_left``, categories by their
    left set, unseen ones by ``default_left``)."""
    cdef float v = x[fr.feature[i]]
    cdef int32_t k = fr.cat_of_node[i], c
    if k < 0:
        if v != v:
            return fr.default_left[i]
        return <double> v < fr.threshold[i]
    if not (v >= 0 and v < fr.cat_size[k]):   # NaN fails too
        return fr.default_left[i]
    c = <int32_t> v
    if c != v:
        return fr.default_left[i]
    if c >= 32 * (fr.cat_ptr[k + 1] - fr.cat_ptr[k]):
        return 0
    return (fr.cat_bits[fr.cat_ptr[k] + (c >> 5)] >> (c & 31)) & 1


cdef inline double cover_fraction(double child, double parent) noexcept nogil:
    """Share of the parent's cover in the child (one half of an empty
    parent's, so that the fractions of two children still add up to 1)."""
    if parent > 0:
        return child / parent
    return 0.5


cdef void prepare_paths(const Forest* fr, TreeTables* tt) noexcept nogil:
    """parent, feat_in, dup, z_edge, z, n_unique (down) and mean (up)."""
    cdef int64_t s = tt.start
    cdef int32_t n, c, m, k, f
    # a child's index is larger than its parent's (_check_forest): one
    # forward pass sees every parent's tables before its children's, and
    # one backward pass every child's mean before its parent's
    tt.parent[0] = -1
    tt.feat_in[0] = -1
    tt.dup[0] = -1
    tt.n_unique[0] = 0
    tt.z[0] = 1.0
    for n in range(tt.n_nodes):
        if fr.left[s + n] == NO_CHILD:
            continue
        f = fr.feature[s + n]
        for k in range(2):
            c = fr.left[s + n] if k == 0 else fr.right[s + n]
            tt.parent[c] = n
            tt.feat_in[c] = f
            tt.z_edge[c] = cover_fraction(fr.cover[s + c], fr.cover[s + n])
            # the nearest ancestor edge on the same feature: its factor is
            # divided out when this edge's merged one comes in
            tt.dup[c] = -1
            m = n
            while m > 0:
                if tt.feat_in[m] == f:
                    tt.dup[c] = m
                    break
                m = tt.parent[m]
            tt.z[c] = tt.z_edge[c]
            if tt.dup[c] >= 0:
                tt.z[c] = tt.z[c] * tt.z[tt.dup[c]]
            tt.n_unique[c] = tt.n_unique[n] + (tt.dup[c] < 0)
    for n in range(tt.n_nodes - 1, -1, -1):
        if fr.left[s + n] == NO_CHILD:
            tt.mean[n] = fr.value[s + n]
        else:
            tt.mean[n] = (tt.z_edge[fr.left[s + n]] * tt.mean[fr.left[s + n]]
                          + tt.z_edge[fr.right[s + n]]
                          * tt.mean[fr.right[s + n]])


cdef void prepare_factors(TreeTables* tt, const double* t_q) noexcept nogil:
    """fac, inv, coef, wcoef of every edge for o = 0 and o = 1."""
    cdef int32_t n, o, q
    cdef int64_t at
    cdef double z, f
    # o is the only row-dependent input of an edge's factors, and it is 0
    # or 1: both tables are computed here once per tree, so the per-row
    # passes only look them up (layout [(n * 2 + o) * n_q + q]: a node's
    # points contiguous for the inner loops)
    for n in range(1, tt.n_nodes):
        z = tt.z[n]
        for o in range(2):
            at = (<int64_t> n * 2 + o) * tt.n_q
            for q in range(tt.n_q):
                f = z + (o - z) * t_q[q]
                tt.fac[at + q] = f
                tt.inv[at + q] = 1.0 / f if f != 0 else 0.0
                tt.coef[at + q] = (o - z) / f if o != z and f != 0 else 0.0
                tt.wcoef[at + q] = tt.w[q] * tt.coef[at + q]


cdef void prepare_leaf_edges(const Forest* fr, TreeTables* tt) noexcept nogil:
    """For every leaf, the deepest edge of each distinct feature on its path
    (the edge that holds the feature's merged z and o)."""
    cdef int32_t n, m, k, count
    cdef int32_t* edges
    cdef bint seen
    for n in range(tt.n_nodes):
        if fr.left[tt.start + n] != NO_CHILD:
            continue
        # walking up from the leaf, the first edge met on each feature is
        # its deepest one, the edge whose z and o are the merged ones
        edges = tt.leaf_edges + <int64_t> n * tt.max_unique
        count = 0
        m = n
        while m > 0:
            seen = False
            for k in range(count):
                if tt.feat_in[edges[k]] == tt.feat_in[m]:
                    seen = True
                    break
            if not seen:
                edges[count] = m
                count = count + 1
            m = tt.parent[m]


cdef inline void down_pass(const Forest* fr, const TreeTables* tt,
                           const float* x, double* G, uint8_t* om) noexcept nogil:
    """``om[n]``: the row follows every edge on feat_in[n] down to n;
    ``G[n, q]``: product over the distinct features of the path to n of
    their merged factors at t_q."""
    cdef int64_t s = tt.start
    cdef int32_t n, c, a, k, q, hot, n_q = tt.n_q
    cdef const double* fc
    cdef const double* ia
    cdef double* Gc
    cdef const double* Gn
    for q in range(n_q):
        G[q] = 1.0
    om[0] = 1
    # parents before children (see prepare_paths): G of a child is its
    # parent's times the edge's factor, divided by the factor of the
    # ancestor edge on the same feature that the merged factor replaces
    for n in range(tt.n_nodes):
        if fr.left[s + n] == NO_CHILD:
            continue
        hot = fr.left[s + n] if goes_left(fr, s + n, x) else fr.right[s + n]
        Gn = G + <int64_t> n * n_q
        for k in range(2):
            c = fr.left[s + n] if k == 0 else fr.right[s + n]
            a = tt.dup[c]
            om[c] = (c == hot) & (om[a] if a >= 0 else 1)
            fc = tt.fac + (<int64_t> c * 2 + om[c]) * n_q
            Gc = G + <int64_t> c * n_q
            if a >= 0:
                ia = tt.inv + (<int64_t> a * 2 + om[a]) * n_q
                for q in range(n_q):
                    Gc[q] = Gn[q] * fc[q] * ia[q]
            else:
                for q in range(n_q):
                    Gc[q] = Gn[q] * fc[q]


cdef void shap_row(const Forest* fr, const TreeTables* tt, const float* x,
                   double* phi, double* G, uint8_t* om) noexcept nogil:
    """Adds the tree's TreeSHAP values of row ``x`` to ``phi``."""
    cdef int64_t s = tt.start
    cdef int32_t n, a, q, l, r, n_q = tt.n_q
    cdef double* H
    cdef const double* cn
    cdef const double* ca
    cdef double v, total
    if tt.n_nodes == 1:
        return
    down_pass(fr, tt, x, G, om)
    # up: G[n] becomes H[n] = sum over the leaves below n of value * G
    for n in range(tt.n_nodes - 1, 0, -1):
        H = G + <int64_t> n * n_q
        l = fr.left[s + n]
        if l == NO_CHILD:
            v = fr.value[s + n]
            for q in range(n_q):
                H[q] = H[q] * v
        else:
            r = fr.right[s + n]
            for q in range(n_q):
                H[q] = G[<int64_t> l * n_q + q] + G[<int64_t> r * n_q + q]
        # the edge's term, minus that of the ancestor edge on the feature,
        # which already counted the same leaves (quadrature: sum over q)
        cn = tt.wcoef + (<int64_t> n * 2 + om[n]) * n_q
        total = 0.0
        a = tt.dup[n]
        if a >= 0:
            ca = tt.wcoef + (<int64_t> a * 2 + om[a]) * n_q
            for q in range(n_q):
                total = total + H[q] * (cn[q] - ca[q])
        else:
            for q in range(n_q):
                total = total + H[q] * cn[q]
        phi[tt.feat_in[n]] += total


cdef void saabas_row(const Forest* fr, const TreeTables* tt, const float* x,
                     double* phi) noexcept nogil:
    """Adds the tree's Saabas contributions of row ``x`` to ``phi``: along
    the row's path, each split's feature gets the change of the mean."""
    cdef int64_t s = tt.start
    cdef int32_t n = 0, c
    # the row's own path only: O(depth), no quadrature
    while fr.left[s + n] != NO_CHILD:
        c = fr.left[s + n] if goes_left(fr, s + n, x) else fr.right[s + n]
        phi[fr.feature[s + n]] += tt.mean[c] - tt.mean[n]
        n = c


cdef void interaction_row(const Forest* fr, const TreeTables* tt,
                          const float* x, double* out, Py_ssize_t width,
                          double* G, uint8_t* om, double* C) noexcept nogil:
    """Adds the tree's SHAP interaction values of row ``x`` to ``out``
    (a (width, width) matrix, row-major), leaf by leaf."""
    cdef int64_t s = tt.start
    cdef int32_t n, i, j, d, q, n_q = tt.n_q
    cdef const int32_t* edges
    cdef const double* Gl
    cdef const double* W
    cdef const double* A
    cdef double half_v, phi_i, pair
    cdef Py_ssize_t fi, fj
    if tt.n_nodes == 1:
        return
    down_pass(fr, tt, x, G, om)
    for n in range(tt.n_nodes):
        if fr.left[s + n] != NO_CHILD:
            continue
        edges = tt.leaf_edges + <int64_t> n * tt.max_unique
        d = tt.n_unique[n]
        Gl = G + <int64_t> n * n_q
        half_v = 0.5 * fr.value[s + n]
        # C[i, q]: the leaf's integrand with feature i's factor divided out
        # (times v/2); the diagonal gets phi_i, each pair's term is then
        # moved from the two diagonals to the pair, so every row of the
        # matrix still sums to phi_i
        for i in range(d):
            W = tt.wcoef + (<int64_t> edges[i] * 2 + om[edges[i]]) * n_q
            phi_i = 0.0
            for q in range(n_q):
                C[i * n_q + q] = half_v * Gl[q] * W[q]
                phi_i = phi_i + C[i * n_q + q]
            fi = tt.feat_in[edges[i]]
            out[fi * width + fi] += 2.0 * phi_i
        for i in range(d):
            fi = tt.feat_in[edges[i]]
            for j in range(i + 1, d):
                A = tt.coef + (<int64_t> edges[j] * 2 + om[edges[j]]) * n_q
                pair = 0.0
                for q in range(n_q):
                    pair = pair + C[i * n_q + q] * A[q]
                fj = tt.feat_in[edges[j]]
                out[fi * width + fj] += pair
                out[fj * width + fi] += pair
                out[fi * width + fi] -= pair
                out[fj * width + fj] -= pair


# what a call computes
cdef enum:
    TREE_SHAP = 0
    SAABAS = 1
    INTERACTIONS = 2


cdef class ShapForest:
    """The trees of a model, validated once, ready for TreeSHAP.

    Parameters
    ----------
    left_child, right_child, feature, threshold, default_left, value, cover : ndarray
        Concatenated node arrays of all trees (``_tree.NODE_FIELDS``).
    tree_start : ndarray of shape (n_trees + 1,)
    tree_group : ndarray of shape (n_trees,)
    n_features, n_groups : int
    cat_node, cat_size, cat_ptr, cat_bits : ndarray, optional
        The categorical splits of all trees, as for ``PackedForest``.
    """

    cdef readonly object arrays          # the validated node arrays
    cdef readonly object cat_of_node, cat_size, cat_ptr, cat_bits
    cdef readonly object tree_start, tree_group
    cdef readonly object tree_unique     # most distinct features on a path
    cdef readonly Py_ssize_t n_features, n_groups, n_trees
    cdef object gauss_t, gauss_w         # (max points + 1, max points)
    cdef Forest fr

    def __init__(self, left_child, right_child, feature, threshold,
                 default_left, value, cover, tree_start, tree_group,
                 Py_ssize_t n_features, Py_ssize_t n_groups, cat_node=None,
                 cat_size=None, cat_ptr=None, cat_bits=None):
        arrays = [np.ascontiguousarray(a, dtype=d) for a, d in (
            (left_child, np.int32), (right_child, np.int32),
            (feature, np.int32), (threshold, np.float64),
            (default_left, np.uint8), (value, np.float64),
            (cover, np.float64))]
        self.tree_start = np.ascontiguousarray(tree_start, dtype=np.int64)
        self.tree_group = np.ascontiguousarray(tree_group, dtype=np.int32)
        _check_forest(n_features, *arrays[:6], self.tree_start,
                      self.tree_group, n_groups)
        if arrays[6].shape != arrays[0].shape:
            raise ValueError("cover must have one entry per node")
        if not np.all(np.isfinite(arrays[6])) or np.any(arrays[6] < 0):
            raise ValueError("TreeSHAP needs finite, non-negative node covers "
                             "(hessian sums)")
        # categorical splits as a per-node index into the split table (-1:
        # numeric), so goes_left tests one int before the numeric compare
        node, size, ptr, bits = _check_categorical(
            arrays[0], cat_node, cat_size, cat_ptr, cat_bits)
        cat_of_node = np.full(max(arrays[0].shape[0], 1), -1, dtype=np.int32)
        cat_of_node[node] = np.arange(node.shape[0], dtype=np.int32)
        self.arrays = arrays
        self.cat_of_node, self.cat_size = cat_of_node, size
        self.cat_ptr, self.cat_bits = ptr, bits
        self.n_features, self.n_groups = n_features, n_groups
        self.n_trees = self.tree_group.shape[0]
        self._bind()
        self.tree_unique = self._unique_features_per_tree()
        self._gauss_tables(int(self.tree_unique.max(initial=0) + 1) // 2)

    def _bind(self):
        """The C view of the arrays (owned by this object)."""
        cdef const int32_t[::1] left = self.arrays[0], right = self.arrays[1]
        cdef const int32_t[::1] feat = self.arrays[2]
        cdef const double[::1] thr = self.arrays[3]
        cdef const uint8_t[::1] dl = self.arrays[4]
        cdef const double[::1] val = self.arrays[5], cov = self.arrays[6]
        cdef const int32_t[::1] con = self.cat_of_node, size = self.cat_size
        cdef const int64_t[::1] ptr = self.cat_ptr
        cdef const uint32_t[::1] bits = self.cat_bits
        if left.shape[0] == 0:
            return          # no trees: nothing is ever read
        self.fr.left, self.fr.right, self.fr.feature = &left[0], &right[0], &feat[0]
        self.fr.threshold, self.fr.default_left = &thr[0], &dl[0]
        self.fr.value, self.fr.cover = &val[0], &cov[0]
        self.fr.cat_of_node, self.fr.cat_ptr = &con[0], &ptr[0]
        self.fr.cat_size = &size[0] if size.shape[0] else NULL
        self.fr.cat_bits = &bits[0]

    def _gauss_tables(self, int max_points):
        """Gauss-Legendre points and weights on [0, 1] for 1..max_points."""
        # row k holds the k-point rule: ceil(d/2) points integrate the
        # degree d - 1 polynomial of a path of d features exactly
        max_points = max(max_points, 1)
        self.gauss_t = np.zeros((max_points + 1, max_points))
        self.gauss_w = np.zeros((max_points + 1, max_points))
        for k in range(1, max_points + 1):
            x, w = np.polynomial.legendre.leggauss(k)
            self.gauss_t[k, :k] = (x + 1.0) / 2.0
            self.gauss_w[k, :k] = w / 2.0

    def _scratch_tables(self, int32_t max_nodes, int32_t max_q,
                        int32_t max_unique):
        """Arrays behind a TreeTables for trees up to these sizes."""
        nodes = max(max_nodes, 1)
        per_q = nodes * 2 * max(max_q, 1)
        return dict(
            parent=np.zeros(nodes, np.int32), feat_in=np.zeros(nodes, np.int32),
            dup=np.zeros(nodes, np.int32), n_unique=np.zeros(nodes, np.int32),
            z_edge=np.zeros(nodes), z=np.zeros(nodes), mean=np.zeros(nodes),
            fac=np.zeros(per_q), inv=np.zeros(per_q), coef=np.zeros(per_q),
            wcoef=np.zeros(per_q),
            leaf_edges=np.zeros(nodes * max(max_unique, 1), np.int32))

    cdef void _point_tables(self, TreeTables* tt, dict a):
        cdef int32_t[::1] parent = a["parent"], feat_in = a["feat_in"]
        cdef int32_t[::1] dup = a["dup"], n_unique = a["n_unique"]
        cdef int32_t[::1] leaf_edges = a["leaf_edges"]
        cdef double[::1] z_edge = a["z_edge"], z = a["z"], mean = a["mean"]
        cdef double[::1] fac = a["fac"], inv = a["inv"], coef = a["coef"]
        cdef double[::1] wcoef = a["wcoef"]
        tt.parent, tt.feat_in, tt.dup = &parent[0], &feat_in[0], &dup[0]
        tt.n_unique, tt.leaf_edges = &n_unique[0], &leaf_edges[0]
        tt.z_edge, tt.z, tt.mean = &z_edge[0], &z[0], &mean[0]
        tt.fac, tt.inv, tt.coef, tt.wcoef = &fac[0], &inv[0], &coef[0], &wcoef[0]

    def _unique_features_per_tree(self):
        """Most distinct features on any root-to-leaf path, per tree."""
        cdef const int64_t[::1] start = self.tree_start
        sizes = np.diff(self.tree_start)
        out = np.zeros(self.n_trees, dtype=np.int32)
        cdef int32_t[::1] unique = out
        cdef TreeTables tt
        cdef Py_ssize_t t
        if self.n_trees == 0:
            return out
        # prepare_paths counts the distinct features on every path; only
        # the tables it fills are needed (one quadrature point, one edge)
        tables = self._scratch_tables(int(sizes.max()), 1, 1)
        self._point_tables(&tt, tables)
        for t in range(self.n_trees):
            tt.start, tt.n_nodes = start[t], <int32_t> (start[t + 1] - start[t])
            prepare_paths(&self.fr, &tt)
            unique[t] = tables["n_unique"][:tt.n_nodes].max()
        return out

    def explain(self, X, double[:, ::1] out not None, Py_ssize_t first,
                Py_ssize_t last, int n_threads, int kind):
        """Adds the explanations by trees [first, last) to ``out``.

        Parameters
        ----------
        X : ndarray of shape (n_rows, n_features), float32 C-ordered, or SparseRows
        out : ndarray of shape (n_rows, n_groups * width), float64
            IN/OUT. Group g of row r is ``out[r, g * width:(g + 1) * width]``:
            ``width = n_features + 1`` contributions (the last one the
            expected value) for ``kind`` 0 (TreeSHAP) and 1 (Saabas), or the
            ``(n_features + 1) ** 2`` interaction matrix, row-major, for
            ``kind`` 2 (the expected value at its last entry).
        first, last : int
            Tree range.
        n_threads : int
        kind : {0, 1, 2}
            TreeSHAP, Saabas, interactions.
        """
        n_threads = check_n_threads(n_threads)
        cdef bint sparse = isinstance(X, SparseRows)
        cdef Py_ssize_t n_rows, width
        n_rows, width = self._checked_call(X, sparse, out, first, last, kind)
        if last == first or n_rows == 0:
            return
        sizes = np.diff(self.tree_start)[first:last]
        unique = self.tree_unique[first:last]
        cdef int32_t max_q = (int(unique.max()) + 1) // 2 or 1
        tables = self._scratch_tables(int(sizes.max()), max_q,
                                      int(unique.max()))
        cdef TreeTables tt
        self._point_tables(&tt, tables)
        cdef Scratch scratch
        kept = _thread_scratch(&scratch, n_threads, max(sizes.max(), 1),
                               max_q, max(int(unique.max()), 1))
        cdef Rows rows
        keep = _rows_view(&rows, X, sparse, n_threads)  # owns the buffers
        cdef const double[:, ::1] gauss_t = self.gauss_t
        cdef const double[:, ::1] gauss_w = self.gauss_w
        cdef const int64_t[::1] start = self.tree_start
        cdef const int32_t[::1] group = self.tree_group
        cdef const int32_t[::1] tree_unique = self.tree_unique
        cdef Py_ssize_t t
        # trees one after another, so a row's sums are added in tree order
        # whatever the number of threads; each tree's tables are built
        # (with the GIL, row-independent) before its rows run in parallel
        for t in range(first, last):
            _prepare_tree(&self.fr, &tt, start[t], start[t + 1],
                          tree_unique[t], gauss_t, gauss_w, kind)
            with nogil:
                explain_tree(&self.fr, &tt, &rows, &out[0, 0], out.shape[1],
                             group[t] * width, width, &scratch, n_threads,
                             kind)


    def _checked_call(self, X, bint sparse, double[:, ::1] out,
                      Py_ssize_t first, Py_ssize_t last, int kind):
        """explain's arguments checked against the forest; returns the
        number of rows and the width of one group's explanation."""
        if kind not in (TREE_SHAP, SAABAS, INTERACTIONS):
            raise ValueError(f"unknown kind {kind}")
        n_rows = X.n_rows if sparse else X.shape[0]
        n_cols = X.n_features if sparse else X.shape[1]
        if n_cols != self.n_features:
            raise ValueError(f"X has {n_cols} features, the forest expects "
                             f"{self.n_features}")
        if not 0 <= first <= last <= self.n_trees:
            raise ValueError("tree range outside the forest")
        cdef Py_ssize_t width = self.n_features + 1
        if kind == INTERACTIONS:
            width = width * width
        if out.shape[0] != n_rows or out.shape[1] != self.n_groups * width:
            raise ValueError("out must be (n_rows, n_groups * width)")
        return n_rows, width


cdef object _thread_scratch(Scratch* scratch, int n_threads,
                            Py_ssize_t max_nodes, Py_ssize_t max_q,
                            Py_ssize_t max_unique):
    """Each thread's work arrays (G: nodes x points, om: nodes, C: path
    features x points), one row of each per thread; returns the arrays the
    pointers point into (the caller keeps them alive)."""
    cdef double[:, ::1] G = np.zeros((n_threads, max_nodes * max_q))
    cdef uint8_t[:, ::1] om = np.zeros((n_threads, max_nodes), dtype=np.uint8)
    cdef double[:, ::1] C = np.zeros((n_threads, max_unique * max_q))
    scratch.G, scratch.G_stride = &G[0, 0], G.shape[1]
    scratch.om, scratch.om_stride = &om[0, 0], om.shape[1]
    scratch.C, scratch.C_stride = &C[0, 0], C.shape[1]
    return (G.base, om.base, C.base)


cdef object _rows_view(Rows* rows, X, bint sparse, int n_threads):
    """Fill ``rows`` with pointers into X (and per-thread row buffers for
    sparse X); returns the arrays that must outlive the pointers."""
    cdef const float[:, ::1] dense
    cdef SparseRows Xs
    cdef const int64_t[::1] indptr
    cdef const int32_t[::1] indices
    cdef const float[::1] data
    cdef float[:, ::1] buffers
    rows.dense = NULL
    if not sparse:
        dense = X
        rows.dense = &dense[0, 0]
        rows.n_rows, rows.n_features = dense.shape[0], dense.shape[1]
        return X
    Xs = X
    indices_arr = Xs.indices if Xs.indices.shape[0] else np.zeros(1, np.int32)
    data_arr = Xs.data if Xs.data.shape[0] else np.zeros(1, np.float32)
    buffers_arr = np.full((n_threads, max(Xs.n_features, 1)), Xs.absent_value,
                          dtype=np.float32)
    indptr, indices, data, buffers = (Xs.indptr, indices_arr, data_arr,
                                      buffers_arr)
    rows.indptr, rows.indices, rows.data = &indptr[0], &indices[0], &data[0]
    rows.buffers, rows.buffer_stride = &buffers[0, 0], buffers.shape[1]
    rows.absent = Xs.absent_value
    rows.n_rows, rows.n_features = Xs.n_rows, Xs.n_features
    return (Xs, indices_arr, data_arr, buffers_arr)


cdef void _prepare_tree(const Forest* fr, TreeTables* tt, int64_t start,
                        int64_t stop, int32_t n_unique,
                        const double[:, ::1] gauss_t,
                        const double[:, ::1] gauss_w, int kind):
    """Tree ``[start, stop)``'s tables (paths, and the quadrature factors or
    leaf edges its ``kind`` needs), row-independent, before its rows run."""
    tt.start, tt.n_nodes = start, <int32_t> (stop - start)
    tt.max_unique = max(n_unique, 1)
    tt.n_q = max((n_unique + 1) // 2, 1)
    tt.w = &gauss_w[tt.n_q, 0]
    prepare_paths(fr, tt)
    if kind != SAABAS:
        prepare_factors(tt, &gauss_t[tt.n_q, 0])
    if kind == INTERACTIONS:
        prepare_leaf_edges(fr, tt)


cdef void explain_tree(const Forest* fr, const TreeTables* tt,
                       const Rows* rows, double* out, Py_ssize_t out_stride,
                       Py_ssize_t offset, Py_ssize_t width,
                       const Scratch* scratch, int n_threads,
                       int kind) noexcept nogil:
    """One tree, the rows in parallel: row r's explanation is added at
    ``out + r * out_stride + offset`` (``offset``: the tree's group)."""
    cdef Py_ssize_t r, n_features = rows.n_features
    cdef int64_t k
    cdef int tid
    cdef const float* x
    cdef float* buf
    cdef double* dest
    cdef double expected = tt.mean[0]
    # rows are independent: each writes only its own row of out. A sparse
    # row is scattered into the thread's dense buffer of absent values and
    # the buffer restored afterwards, at the cost of its stored entries
    for r in prange(rows.n_rows, schedule="static", num_threads=n_threads):
        tid = threadid()
        if rows.dense != NULL:
            x = rows.dense + r * n_features
        else:
            buf = rows.buffers + tid * rows.buffer_stride
            for k in range(rows.indptr[r], rows.indptr[r + 1]):
                buf[rows.indices[k]] = rows.data[k]
            x = buf
        dest = out + r * out_stride + offset
        if kind == TREE_SHAP:
            shap_row(fr, tt, x, dest, scratch.G + tid * scratch.G_stride,
                     scratch.om + tid * scratch.om_stride)
        elif kind == SAABAS:
            saabas_row(fr, tt, x, dest)
        else:
            interaction_row(fr, tt, x, dest, n_features + 1,
                            scratch.G + tid * scratch.G_stride,
                            scratch.om + tid * scratch.om_stride,
                            scratch.C + tid * scratch.C_stride)
        dest[width - 1] += expected
        if rows.dense == NULL:
            for k in range(rows.indptr[r], rows.indptr[r + 1]):
                buf[rows.indices[k]] = rows.absent
