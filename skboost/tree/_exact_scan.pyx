"""Sparsity-aware exact greedy split finder (paper Algorithms 1 and 3).

The training matrix is presorted once per fit (``_presorted.SortedColumns``)
and its blocks kept regrouped by the open nodes of the level being grown
(``_node_blocks.NodeBlocks``): a node's entries of a feature form one group,
in value order. One level of the tree is grown at a time, and a node's
candidates for a feature come from one walk of its group, with its sums in
registers. A split of the groups planned after the previous level is carried
out feature by feature, just before each feature's scan, while its entries
are in cache.

A candidate threshold sits between two consecutive distinct values of a node
(their midpoint). The forward walk puts missing values on the right; for the
nodes where feature j has missing values a backward walk puts them on the
left, so each split learns the direction of missing values. The group's
gradients are gathered once into a scratch buffer that both walks read.

Most candidates cannot beat their node's best so far; each is first tested
without the two divisions of its gain (see ``consider``), and a whole group
is first tested in vectors (``any_may_win``).

Threads split the features. Each thread keeps its own best candidates;
bests are merged with a total order (gain, feature, threshold), so the
result does not depend on the number of threads.
"""

import numpy as np

cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, fabsf
from libc.stdlib cimport free

from .._parallel cimport capped
from ._common cimport (CACHE_LINE, NO_FEATURE, NO_SLOT, PREFETCH_ROWS,
                       SplitCandidate, int32_t, int64_t, is_better,
                       padded_count, prefetch, reset_candidate, uint8_t)
from ._context cimport SplitContext, reg_params
from ._gain cimport (NodeBounds, RegParams, bounded_leaf_score,
                     bounded_split_loss_reduction, children_score_floor,
                     feature_directions, is_l2_only, leaf_score, may_reach,
                     node_bounds_array, split_loss_reduction,
                     split_loss_reduction_l2)
from ._node_blocks cimport (BlockData, GroupData, NodeBlocks, SplitStep,
                            _block_data, _group_data, close_child_groups,
                            split_step_feature)
from ._presorted cimport SortedColumns
from ._thread_bests cimport merge_thread_bests

from .splits import empty_records


def root_sums(const float[:, ::1] gpair not None,
              const uint8_t[::1] active not None, weight=None):
    """(G, H): the sums of the (weighted) gradient pairs of the active
    rows, in float64, in row order."""
    cdef Py_ssize_t r, n_rows = gpair.shape[0]
    if gpair.shape[1] != 2 or active.shape[0] != n_rows:
        raise ValueError("gpair must be (n_rows, 2), active (n_rows,)")
    cdef bint weighted = weight is not None
    cdef const double[::1] w = _check_weight(weight, n_rows)
    cdef double G = 0.0, H = 0.0
    with nogil:
        for r in range(n_rows):
            if active[r]:
                if weighted:
                    G += <double> gpair[r, 0] * w[r]
                    H += <double> gpair[r, 1] * w[r]
                else:
                    G += gpair[r, 0]
                    H += gpair[r, 1]
    return G, H


# --------------------------------------------------------------------------
# The walks of one node's group
# --------------------------------------------------------------------------

ctypedef struct NodeContext:
    # one node's constants while its group of one feature is walked
    int32_t feature
    double G               # the node's totals
    double H
    int64_t count          # its active rows
    double parent_score
    const RegParams* p
    bint l2_only
    bint bounded           # the model has monotone constraints: use bounds
    NodeBounds bounds      # the node's, with the feature's constraint
    SplitCandidate* best   # the node's best so far (this thread's)


ctypedef struct NodeWalk:
    # the running state of one walk over a group
    double G               # sums of the entries met so far
    double H
    int64_t count          # number of rows met so far
    float last_value       # value of the previous entry
    # the summed children scores a candidate must reach to possibly beat
    # the node's best (see `consider`); -inf: no cheap test
    double need


ctypedef struct ZeroBlock:
    # a node's implicit zero block (absent entries read as 0.0): its totals
    # minus its stored entries of the feature being scanned
    double G
    double H
    int64_t count
    bint touched           # set up for this feature
    bint has_group         # the node has present entries of this feature


cdef inline bint offer(SplitCandidate* best, double gain, int32_t feature,
                       double threshold, double G_left, double H_left,
                       bint default_left) noexcept nogil:
    if is_better(gain, feature, threshold, best):
        best.gain = gain
        best.feature = feature
        best.threshold = threshold
        best.G_left = G_left
        best.H_left = H_left
        best.default_left = default_left
        return True
    return False


cdef inline double reduction(double G_left, double H_left, double G_right,
                             double H_right,
                             const NodeContext* c) noexcept nogil:
    if c.bounded:
        return bounded_split_loss_reduction(G_left, H_left, G_right, H_right,
                                            c.parent_score, &c.bounds, c.p)
    if c.l2_only:
        return split_loss_reduction_l2(G_left, H_left, G_right, H_right,
                                       c.parent_score, c.p.reg_lambda)
    return split_loss_reduction(G_left, H_left, G_right, H_right,
                                c.parent_score, c.p)


cdef inline double children_score_needed(const NodeContext* c) noexcept nogil:
    """The children_score_floor of the node's best (see ``_gain.pxd``);
    -inf when the cheap test does not apply (L1 term or clipping, or no
    best)."""
    if not c.l2_only or c.best.feature == NO_FEATURE:
        return -INFINITY
    return children_score_floor(c.best.gain, c.parent_score)


cdef inline void consider(NodeWalk* a, const NodeContext* c, double G_left,
                          double H_left, double G_right, double H_right,
                          double threshold, bint default_left) noexcept nogil:
    """Offer a candidate split whose children both satisfy
    min_child_weight.

    Most candidates cannot beat the node's best, and the gain costs two
    divisions: only the candidates passing the division-free ``may_reach``
    test against the node's floor get their gain computed and offered (the
    same gains and choices as without the test)."""
    # one branch, rarely taken (several would each be mispredicted often)
    cdef bint may_win = (
        (H_left >= c.p.min_child_weight) & (H_right >= c.p.min_child_weight)
        & ((a.need == -INFINITY)
           | may_reach(a.need, G_left, H_left, G_right, H_right,
                       c.p.reg_lambda)))
    if not may_win:
        return
    if offer(c.best, reduction(G_left, H_left, G_right, H_right, c),
             c.feature, threshold, G_left, H_left, default_left):
        a.need = children_score_needed(c)


cdef inline double midpoint(float below, float above) noexcept nogil:
    return 0.5 * (<double> below + <double> above)


cdef inline double above_present(float largest) noexcept nogil:
    """The threshold of the split that sends every present value left:
    XGBoost's exact method puts it at ``largest + (|largest| + 1e-6)``,
    computed in float32 (its ``kRtEps`` gap); +inf when that overflows."""
    cdef float gap = fabsf(largest) + <float> 1e-6
    cdef float threshold = largest + gap
    return threshold


cdef inline void consider_missingness(NodeWalk* a, const NodeContext* c,
                                      float largest) noexcept nogil:
    """The split on missingness itself, once a walk has summed every
    present entry (``a``): every present value left and the missing ones
    right, at XGBoost's threshold for this partition (so that unseen larger
    values go where XGBoost sends them); and, for a feature with a monotone
    constraint, the same partition in the other order (missing values left),
    which the constraint may admit where it refuses the first.

    Both the walks and the pre-test's shortcut (``scan_group``) offer the
    split through here, so a node's best does not depend on which of them
    ran (that depends on the features a thread scanned before)."""
    consider(a, c, a.G, a.H, c.G - a.G, c.H - a.H, above_present(largest),
             False)
    if c.bounded and c.bounds.direction != 0:
        consider(a, c, c.G - a.G, c.H - a.H, a.G, a.H, -INFINITY, True)


cdef inline void restart(NodeWalk* a) noexcept nogil:
    a.G = 0.0
    a.H = 0.0
    a.count = 0
    a.last_value = 0.0


cdef inline void forward_step(NodeWalk* a, const NodeContext* c, float v,
                              double g, double h, int64_t n) noexcept nogil:
    """Entries of value v (n rows, sums g, h) arrive in ascending order: the
    boundary below them is a candidate (left = what came before, missing
    right), then they join the left side."""
    if a.count > 0 and v != a.last_value:
        consider(a, c, a.G, a.H, c.G - a.G, c.H - a.H,
                 midpoint(a.last_value, v), False)
    a.G += g
    a.H += h
    a.count += n
    a.last_value = v


cdef inline void backward_step(NodeWalk* a, const NodeContext* c, float v,
                               double g, double h, int64_t n) noexcept nogil:
    """The mirror image: descending order, right = what came before,
    missing left."""
    if a.count > 0 and v != a.last_value:
        consider(a, c, c.G - a.G, c.H - a.H, a.G, a.H,
                 midpoint(v, a.last_value), True)
    a.G += g
    a.H += h
    a.count += n
    a.last_value = v


ctypedef struct GroupBuffers:
    # one thread's per-entry buffers (``longest`` doubles each) for the
    # group being scanned: its gradient pairs and the walks' running sums
    double* g
    double* h
    double* below_G        # sums of entries [0, k): the forward walk's
    double* below_H
    double* above_G        # sums of entries [k, n): the backward walk's
    double* above_H


cdef inline void gather_gradients(const int32_t* rows, Py_ssize_t n,
                                  const float[:, ::1] gpair,
                                  const double[::1] weight, bint weighted,
                                  double* g, double* h) noexcept nogil:
    """The weighted gradient pairs of a group's rows into g, h."""
    cdef Py_ssize_t k
    cdef int32_t row
    # gathered once into contiguous buffers: the pre-test and both walks
    # then read them sequentially instead of chasing rows three times
    for k in range(n):
        # the rows of a group are in value order, i.e. scattered: fetch the
        # gradients of an entry ahead (paper section 4.2)
        if k + PREFETCH_ROWS < n:
            prefetch(&gpair[rows[k + PREFETCH_ROWS], 0])
        row = rows[k]
        g[k] = gpair[row, 0]
        h[k] = gpair[row, 1]
        if weighted:
            g[k] *= weight[row]
            h[k] *= weight[row]


cdef inline void running_sums(const double* g, const double* h,
                              Py_ssize_t n, const GroupBuffers* b,
                              bint with_above, double* G,
                              double* H) noexcept nogil:
    """The sums of entries [0, k) into ``b.below_G[k]``, ``b.below_H[k]``
    (the forward walk's order: ascending), the sums of all n into G, H,
    and if ``with_above``, the sums of entries [k, n) into ``b.above_G[k]``,
    ``b.above_H[k]`` (the backward walk's order: descending). The two are
    run in one loop: four independent chains of additions instead of two
    loops each waiting on the latency of its own."""
    cdef Py_ssize_t k, j
    cdef double G_below = 0.0, H_below = 0.0, G_above = 0.0, H_above = 0.0
    # the sums are accumulated in the walks' own order (forward ascending,
    # backward descending), so the pre-test sees the very doubles the
    # walks compute, and its answer is theirs bit for bit
    if with_above:
        for k in range(n):
            b.below_G[k] = G_below
            b.below_H[k] = H_below
            G_below += g[k]
            H_below += h[k]
            j = n - 1 - k
            G_above += g[j]
            H_above += h[j]
            b.above_G[j] = G_above
            b.above_H[j] = H_above
    else:
        for k in range(n):
            b.below_G[k] = G_below
            b.below_H[k] = H_below
            G_below += g[k]
            H_below += h[k]
    G[0] = G_below
    H[0] = H_below


cdef void walk_group(const NodeContext* c, const float* values,
                     const double* g, const double* h, Py_ssize_t n,
                     const ZeroBlock* zero) noexcept nogil:
    """Every candidate of one node for one feature: the forward walk
    (missing right), all present entries against the missing ones, and,
    when the node has missing values, the backward walk (missing left).
    ``zero`` (NULL if none) is the node's zero block, walked at value 0."""
    cdef NodeWalk a
    cdef Py_ssize_t k
    cdef bint zero_pending = zero != NULL and zero.count > 0
    # The two walks over one group (values ascending, m = missing rows):
    #
    #     forward:   | v0 v1 v1 v2 | ... |      left = entries met, right =
    #                  -->  each boundary      the rest and the missing rows
    #     backward:  | v0 v1 v1 v2 | ... |      right = entries met, left =
    #                  each boundary  <--      the rest and the missing rows
    #
    # A boundary is a change of value (equal values never split). The zero
    # block (absent entries read as 0.0) is one more run, of value 0, met
    # where 0 falls among the values.
    a.need = children_score_needed(c)
    restart(&a)
    for k in range(n):
        if zero_pending and values[k] > 0:
            forward_step(&a, c, 0.0, zero.G, zero.H, zero.count)
            zero_pending = False
        forward_step(&a, c, values[k], g[k], h[k], 1)
    if zero_pending:
        forward_step(&a, c, 0.0, zero.G, zero.H, zero.count)
    if a.count == 0:
        return
    if a.count == c.count:
        # no missing value: both directions would give the same candidates;
        # the forward walk's send missing values right (XGBoost's exact
        # method does the same where the feature has missing values in the
        # training data; ExactFinder turns the others left, as it does)
        return
    consider_missingness(&a, c, a.last_value)
    restart(&a)
    zero_pending = zero != NULL and zero.count > 0
    for k in range(n - 1, -1, -1):
        if zero_pending and values[k] < 0:
            backward_step(&a, c, 0.0, zero.G, zero.H, zero.count)
            zero_pending = False
        backward_step(&a, c, values[k], g[k], h[k], 1)
    if zero_pending:
        backward_step(&a, c, 0.0, zero.G, zero.H, zero.count)


cdef extern from *:
    """
    /* The pre-test (_gain.pxd: may_reach, symmetric in the two children)
       of every position k in [1, n) of a group, boundary or not (see
       any_passes): side_G[k], side_H[k] are the sums of one child, the
       other's are the node's totals minus them. Built once per vector unit
       where the compiler dispatches at load time (GCC or Clang on x86-64
       glibc: AVX-512, AVX2 or baseline SSE2 clones), a plain loop
       elsewhere. The clones give the same bits (no contraction into fused
       multiply-adds: -ffp-contract=off). */
    #if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
    #if __has_attribute(target_clones)
    #define SKB_VECTOR_CLONES \\
        __attribute__((target_clones("avx512f", "avx2", "default")))
    #endif
    #endif
    #ifndef SKB_VECTOR_CLONES
    #define SKB_VECTOR_CLONES
    #endif
    SKB_VECTOR_CLONES
    static int skb_any_position_passes(
            const double* side_G, const double* side_H, Py_ssize_t n,
            double G, double H, double lam, double mcw, double need) {
        int passes = 0;
        Py_ssize_t k;
        for (k = 1; k < n; k++) {
            double G_one = side_G[k], H_one = side_H[k];
            double G_other = G - G_one, H_other = H - H_one;
            double a_one = H_one + lam, a_other = H_other + lam;
            passes |= (H_one >= mcw) & (H_other >= mcw)
                & (G_one * G_one * a_other + G_other * G_other * a_one
                   >= need * (a_one * a_other));
        }
        return passes;
    }
    """
    bint any_position_passes "skb_any_position_passes"(
        const double* side_G, const double* side_H, Py_ssize_t n, double G,
        double H, double lam, double mcw, double need) noexcept nogil


cdef inline bint any_passes(const float* values, const double* side_G,
                            const double* side_H, Py_ssize_t n, double G,
                            double H, double lam, double mcw,
                            double need) noexcept nogil:
    """Whether a candidate k in [1, n) (a boundary between distinct
    values) passes the pre-test, one child's sums being ``side_G[k]``,
    ``side_H[k]`` (the test is symmetric: either child will do).

    First every position, boundary or not, in the widest vectors (no
    float/double mix); only if one passes, the boundaries alone."""
    if not any_position_passes(side_G, side_H, n, G, H, lam, mcw, need):
        return False
    cdef Py_ssize_t k
    cdef int passes = 0
    for k in range(1, n):
        passes |= ((values[k] != values[k - 1])
                   & may_reach(need, side_G[k], side_H[k], G - side_G[k],
                               H - side_H[k], lam)
                   & (side_H[k] >= mcw) & (H - side_H[k] >= mcw))
    return passes


cdef bint any_may_win(const NodeContext* c, const float* values,
                      const GroupBuffers* b, Py_ssize_t n,
                      double need) noexcept nogil:
    """Whether any candidate of the group (either direction) passes the
    node's pre-test at floor ``need``; False lets the walks be skipped, as
    none of their candidates could then beat the node's best.

    The running sums (``running_sums``) are the walks' own, in the same
    order (``below`` ascending, ``above`` descending), so
    the tests are the walks' tests, bit for bit; the floor only rises
    during the walks. Kept apart from them, in arrays of their own, the
    tests have no loop-carried dependency and are vectorised.
    """
    cdef double lam = c.p.reg_lambda, mcw = c.p.min_child_weight
    # forward (missing right): left = entries below k
    if any_passes(values, b.below_G, b.below_H, n, c.G, c.H, lam, mcw,
                  need):
        return True
    if n == c.count:
        return False  # no missing value: no backward walk
    # backward (missing left): right = entries from k up
    return any_passes(values, b.above_G, b.above_H, n, c.G, c.H, lam,
                      mcw, need)


cdef void scan_group(const NodeContext* c, const float* values,
                     const double* g, const double* h,
                     const GroupBuffers* b, Py_ssize_t n,
                     const ZeroBlock* zero) noexcept nogil:
    """``walk_group``, skipped when ``any_may_win`` shows that no
    candidate of the walks can win: then only the split on missingness
    itself is offered. ``b.below_*`` hold the group's running sums."""
    cdef NodeWalk a
    cdef double need
    # the pre-test applies in the common case only: no zero block (it is
    # not in the running sums), more than one entry, no L1 or clipping
    # (the division-free bound is exact only for G^2 / (H + lambda)), and a
    # best to beat
    if zero == NULL and n > 1 and c.l2_only and (
            c.best.feature != NO_FEATURE):
        need = children_score_needed(c)
        if not any_may_win(c, values, b, n, need):
            if n < c.count:
                a.need = need
                # the sums of all n entries, in the walks' order
                a.G = b.below_G[n - 1] + g[n - 1]
                a.H = b.below_H[n - 1] + h[n - 1]
                consider_missingness(&a, c, values[n - 1])
            return
    walk_group(c, values, g, h, n, zero)


# --------------------------------------------------------------------------
# One feature's groups: scanned, or split into the children's and scanned
# --------------------------------------------------------------------------

ctypedef struct LevelScan:
    # what every group's scan of a level reads
    Py_ssize_t n_features
    const float* values
    const int32_t* rows
    const int64_t* col_ptr
    const int64_t* group_ptr
    const int64_t* group_count
    const int32_t* group_slot
    const int64_t* group_end
    const double* node_G
    const double* node_H
    const int64_t* node_count
    const double* parent_score
    const RegParams* p
    bint l2_only
    const NodeBounds* node_bounds      # per slot; NULL: no monotone constraint
    const signed char* direction       # per feature
    bint zero_absent
    const int64_t* missing_ptr
    const int32_t* missing_rows
    const int32_t* row_slot


cdef inline void node_context(NodeContext* c, const LevelScan* L,
                              int32_t feature, int32_t slot,
                              SplitCandidate* best) noexcept nogil:
    c.feature = feature
    c.G = L.node_G[slot]
    c.H = L.node_H[slot]
    c.count = L.node_count[slot]
    c.parent_score = L.parent_score[slot]
    c.p = L.p
    c.l2_only = L.l2_only
    c.bounded = L.node_bounds != NULL
    if c.bounded:
        c.bounds = L.node_bounds[slot]
        c.bounds.direction = L.direction[feature]
    c.best = &best[slot]


cdef inline ZeroBlock* zero_block(ZeroBlock* zero, int32_t slot,
                                  int32_t* touched, Py_ssize_t* n_touched,
                                  const LevelScan* L) noexcept nogil:
    """Node ``slot``'s zero block, set to its totals when first met."""
    cdef ZeroBlock* z = &zero[slot]
    if not z.touched:
        z.touched = True
        z.has_group = False
        z.G = L.node_G[slot]
        z.H = L.node_H[slot]
        z.count = L.node_count[slot]
        touched[n_touched[0]] = slot
        n_touched[0] += 1
    return z


ctypedef struct FeatureScratch:
    # one thread's buffers while it scans a feature
    GroupBuffers group
    ZeroBlock* zero        # one per slot
    int32_t* touched       # one per slot: the zero blocks in use
    Py_ssize_t n_touched
    SplitCandidate* best   # one per slot: this thread's bests


cdef void scan_node_group(const LevelScan* L, int32_t f, int32_t slot,
                          const float* values, Py_ssize_t n,
                          const double* g, const double* h,
                          FeatureScratch* w,
                          const uint8_t[:, ::1] feature_allowed) noexcept nogil:
    """Node ``slot``'s group of feature f (n entries, their gradient pairs
    in g, h): its running sums, then its candidates."""
    cdef double G, H
    cdef NodeContext c
    cdef ZeroBlock* z = NULL
    # column sampling: a node skips the features it may not use
    if n == 0 or not feature_allowed[slot, f]:
        return
    # the backward walk's sums too, when the node has missing values (the
    # zero block, if any, is not in them: such groups are walked)
    running_sums(g, h, n, &w.group, n < L.node_count[slot], &G, &H)
    if L.zero_absent:
        # the present entries leave the node's zero block
        z = zero_block(w.zero, slot, w.touched, &w.n_touched, L)
        z.has_group = True
        z.G -= G
        z.H -= H
        z.count -= n
    node_context(&c, L, f, slot, w.best)
    scan_group(&c, values, g, h, &w.group, n, z)


cdef void missing_entries_out_of_zero_blocks(
        const LevelScan* L, int32_t f, const float[:, ::1] gpair,
        const double[::1] weight, bint weighted,
        const uint8_t[:, ::1] feature_allowed,
        FeatureScratch* w) noexcept nogil:
    """Absent entries read as 0.0: feature f's stored missing entries leave
    their nodes' zero blocks."""
    cdef int64_t k
    cdef int32_t row, slot
    cdef ZeroBlock* z
    for k in range(L.missing_ptr[f], L.missing_ptr[f + 1]):
        row = L.missing_rows[k]
        slot = L.row_slot[row]
        if slot == NO_SLOT or not feature_allowed[slot, f]:
            continue
        z = zero_block(w.zero, slot, w.touched, &w.n_touched, L)
        z.G -= gpair[row, 0] * (weight[row] if weighted else 1.0)
        z.H -= gpair[row, 1] * (weight[row] if weighted else 1.0)
        z.count -= 1


cdef void scan_zero_only_nodes(const LevelScan* L, int32_t f,
                               FeatureScratch* w) noexcept nogil:
    """The nodes with stored missing entries of feature f but no present
    one: their zero block against their missing entries. Resets the zero
    blocks for the next feature."""
    cdef Py_ssize_t t
    cdef int32_t slot
    cdef ZeroBlock* z
    cdef NodeContext c
    # only the zero blocks touched for this feature are visited and reset
    # (a list, not a sweep over every slot: deep levels have many slots)
    for t in range(w.n_touched):
        slot = w.touched[t]
        z = &w.zero[slot]
        if not z.has_group:
            node_context(&c, L, f, slot, w.best)
            walk_group(&c, NULL, NULL, NULL, 0, z)
        z.touched = False
    w.n_touched = 0


cdef void scan_feature(const LevelScan* L, int32_t f,
                       const float[:, ::1] gpair, const double[::1] weight,
                       bint weighted, const uint8_t[:, ::1] feature_allowed,
                       FeatureScratch* w) noexcept nogil:
    """Every open node's candidates on feature f: one walk per group."""
    cdef int64_t i, begin = L.col_ptr[f]
    cdef int32_t slot
    if L.zero_absent:
        missing_entries_out_of_zero_blocks(L, f, gpair, weight, weighted,
                                           feature_allowed, w)
    # the feature's groups lie back to back in its block (see
    # _node_blocks): group i spans [previous end, group_end[i])
    for i in range(L.group_ptr[f], L.group_ptr[f] + L.group_count[f]):
        slot = L.group_slot[i]
        if feature_allowed[slot, f]:
            gather_gradients(&L.rows[begin], L.group_end[i] - begin, gpair,
                             weight, weighted, w.group.g, w.group.h)
            scan_node_group(L, f, slot, &L.values[begin],
                            L.group_end[i] - begin, w.group.g, w.group.h, w,
                            feature_allowed)
        begin = L.group_end[i]
    if L.zero_absent:
        scan_zero_only_nodes(L, f, w)


# split_and_scan_feature routes each group into its children's groups and
# scans both at once, while the entries are in cache:
#
#     block:    [ node s: e0 e1 e2 e3 e4 ]            (value order)
#     dst:      [ left: e0 e3 | right: e1 e2 e4 ]     (still value order)
#     g, h:     [ e0 e3 ->        <- e4 e2 e1 ]       (the right's reversed
#                                                      before its scan)
# (one function over 60 lines: the group loop routes each group's entries
# and scans both children while they are in cache; its steps are helpers
# already, what is left is the loop's bookkeeping)
cdef void split_and_scan_feature(const LevelScan* L, const SplitStep* step,
                                 int32_t f, int tid,
                                 const float[:, ::1] gpair,
                                 const double[::1] weight, bint weighted,
                                 const uint8_t[:, ::1] feature_allowed,
                                 FeatureScratch* w) noexcept nogil:
    """``split_feature_groups`` and ``scan_feature`` in one pass: each
    entry's row is looked up once, for its child and its gradient pair,
    and each child's group is scanned while in cache. The left child's
    pairs fill the buffers from the front, the right child's from the
    back."""
    cdef const BlockData* src = &step.src
    cdef const BlockData* dst = &step.dst
    cdef const GroupData* now = &step.now
    cdef const GroupData* out = &step.out
    cdef float* spare_values = step.spare_values + tid * step.spare_stride
    cdef int32_t* spare_rows = step.spare_rows + tid * step.spare_stride
    cdef int64_t i, k, n, n_left, n_right, left_start, end
    cdef int64_t written = src.col_ptr[f], group_begin = src.col_ptr[f]
    cdef int64_t n_groups = 0, first_out = out.ptr[f]
    cdef int32_t left
    cdef const float* gpair_base = &gpair[0, 0]
    cdef const double* weight_base = &weight[0] if weighted else NULL
    cdef double* g = w.group.g
    cdef double* h = w.group.h
    if L.zero_absent:
        missing_entries_out_of_zero_blocks(L, f, gpair, weight, weighted,
                                           feature_allowed, w)
    for i in range(now.ptr[f], now.ptr[f] + now.count[f]):
        left = step.left_slot[now.slot[i]]
        end = now.end[i]
        if left == NO_SLOT:
            group_begin = end
            continue
        n = end - group_begin
        left_start = written
        if step.balanced[now.slot[i]]:
            route_group_branch_free(src, dst, group_begin, end,
                                    step.row_slot, left, gpair_base,
                                    weight_base, &written, spare_values,
                                    spare_rows, g, h, &n_left, &n_right)
        else:
            route_group(src, dst, group_begin, end, step.row_slot, left,
                        gpair_base, weight_base, &written, spare_values,
                        spare_rows, g, h, &n_left, &n_right)
        n_groups = close_child_groups(dst, out, first_out + n_groups, left,
                                      n_left, &written, spare_values,
                                      spare_rows, n_right) - first_out
        if n_right:
            reverse(&g[n - n_right], n_right)
            reverse(&h[n - n_right], n_right)
        scan_node_group(L, f, left, &dst.values[left_start], n_left, g, h,
                        w, feature_allowed)
        scan_node_group(L, f, left + 1, &dst.values[left_start + n_left],
                        n_right, &g[n - n_right], &h[n - n_right], w,
                        feature_allowed)
        group_begin = end
    out.count[f] = n_groups
    if L.zero_absent:
        scan_zero_only_nodes(L, f, w)


cdef inline int32_t read_entry(const BlockData* src, int64_t k,
                               int64_t last, const int32_t* row_slot,
                               const float* gpair, const double* weight,
                               int32_t* row, double* g_row,
                               double* h_row) noexcept nogil:
    """Entry k's row, its (weighted) gradient pair and, returned, its slot.
    The rows of a group are in value order, i.e. scattered: the slot and
    gradients of the entry PREFETCH_ROWS ahead (at most ``last``) are
    fetched now (paper section 4.2)."""
    cdef int32_t ahead = src.rows[k + PREFETCH_ROWS
                                  if k + PREFETCH_ROWS < last else last]
    prefetch(&row_slot[ahead])
    prefetch(&gpair[2 * ahead])
    row[0] = src.rows[k]
    g_row[0] = gpair[2 * row[0]]
    h_row[0] = gpair[2 * row[0] + 1]
    if weight != NULL:
        g_row[0] = g_row[0] * weight[row[0]]
        h_row[0] = h_row[0] * weight[row[0]]
    return row_slot[row[0]]


cdef void route_group(const BlockData* src, const BlockData* dst,
                      int64_t begin, int64_t end, const int32_t* row_slot,
                      int32_t left, const float* gpair, const double* weight,
                      int64_t* written, float* spare_values,
                      int32_t* spare_rows, double* g, double* h,
                      int64_t* n_left, int64_t* n_right) noexcept nogil:
    """The entries [begin, end) of a group to its node's children: the
    left child's written from ``written`` on, the right child's to the
    spare buffers; their gradient pairs (times ``weight``, unless NULL) to
    g, h (n = end - begin entries), the left child's from the front, the
    right child's from the back. For a node whose children are of very
    different sizes, where the branch on the side is well predicted."""
    cdef int64_t k, n = end - begin, last = end - 1
    cdef int64_t to = written[0], lefts = 0, rights = 0
    cdef int32_t row, slot
    cdef double g_row, h_row
    # entries of rows in neither child (finished leaves, unsampled) are
    # dropped: the groups shrink as the tree grows
    for k in range(begin, end):
        slot = read_entry(src, k, last, row_slot, gpair, weight, &row,
                          &g_row, &h_row)
        if slot == left:
            dst.values[to] = src.values[k]
            dst.rows[to] = row
            to += 1
            g[lefts] = g_row
            h[lefts] = h_row
            lefts += 1
        elif slot == left + 1:
            spare_values[rights] = src.values[k]
            spare_rows[rights] = row
            rights += 1
            g[n - rights] = g_row
            h[n - rights] = h_row
    written[0] = to
    n_left[0] = lefts
    n_right[0] = rights


cdef void route_group_branch_free(
        const BlockData* src, const BlockData* dst, int64_t begin,
        int64_t end, const int32_t* row_slot, int32_t left,
        const float* gpair, const double* weight, int64_t* written,
        float* spare_values, int32_t* spare_rows, double* g, double* h,
        int64_t* n_left, int64_t* n_right) noexcept nogil:
    """``route_group`` for a node whose children are of comparable sizes,
    where the side of an entry is a coin toss: the entry is written to
    both sides, and the side it belongs to moves on. The write to the other
    side lands on a free position, or on the one both sides would take
    next, then with the same pair."""
    cdef int64_t k, n = end - begin, last = end - 1
    cdef int64_t to = written[0], lefts = 0, rights = 0
    cdef int64_t is_left, is_right
    cdef int32_t row, slot
    cdef double g_row, h_row
    cdef float value
    for k in range(begin, end):
        slot = read_entry(src, k, last, row_slot, gpair, weight, &row,
                          &g_row, &h_row)
        is_left = slot == left
        is_right = slot == left + 1
        value = src.values[k]
        dst.values[to] = value
        dst.rows[to] = row
        spare_values[rights] = value
        spare_rows[rights] = row
        g[lefts] = g_row
        h[lefts] = h_row
        g[n - 1 - rights] = g_row
        h[n - 1 - rights] = h_row
        to += is_left
        lefts += is_left
        rights += is_right
    written[0] = to
    n_left[0] = lefts
    n_right[0] = rights


cdef inline void reverse(double* x, Py_ssize_t n) noexcept nogil:
    """Reverse x[0:n] in place."""
    cdef Py_ssize_t a = 0, b = n - 1
    cdef double t
    while a < b:
        t = x[a]
        x[a] = x[b]
        x[b] = t
        a += 1
        b -= 1


# --------------------------------------------------------------------------
# One level: every open node's best split
# --------------------------------------------------------------------------

# (one function: the public entry point, whose docstring is the kernel's
# contract; the code is a dozen lines of checks before _find_regularised)
def find_best_splits(
        blocks,                                # IN SortedColumns or NodeBlocks
        const float[:, ::1] gpair not None,    # IN (n_rows, 2)
        const int32_t[::1] row_slot not None,  # IN (n_rows,)
        const double[::1] node_G not None,     # IN (n_slots,)
        const double[::1] node_H not None,     # IN (n_slots,)
        const int64_t[::1] node_count not None,  # IN (n_slots,) active rows
        const uint8_t[:, ::1] feature_allowed not None,  # (n_slots, n_features)
        *, SplitContext context not None, weight=None, bounds=None,
        monotone=None):
    """Best split of every open node of a level, over all allowed features.

    Parameters
    ----------
    blocks : SortedColumns or NodeBlocks
        The presorted ``SortedColumns`` (grouped here by ``row_slot``) or a
        ``NodeBlocks`` already grouped for ``row_slot`` (the grower keeps
        one across levels; a split of its groups planned at the previous
        level is carried out here).
    gpair : ndarray of shape (n_rows, 2), float32
        Unweighted gradient pairs of the rows.
    row_slot : ndarray of shape (n_rows,), int32
        Slot of each row among the level's open nodes, -1 for none.
    node_G, node_H : ndarray of shape (n_slots,), float64
        The open nodes' (weighted) gradient and hessian sums.
    node_count : ndarray of shape (n_slots,), int64
        The open nodes' numbers of active rows.
    feature_allowed : ndarray of shape (n_slots, n_features), uint8
        The features each node may split on (column sampling).
    context : SplitContext
        Regularisation and thread count (scales and categorical limits
        are not used).
    weight : ndarray of shape (n_rows,), float64, default=None
        Multiplies the gradient pairs inside the float64 sums; None for
        unit weights. A weight w then adds exactly what w copies of the row
        add, so fitting with integer weights gives the same sums, hence the
        same tie-breaks, as fitting on repeated rows.
    bounds : array-like of shape (n_slots, 2), float64, default=None
        Each node's monotone bounds on its weight; None when the model has
        no monotone constraint (see ``_hist_split.find_best_splits_hist``).
    monotone : array-like of shape (n_features,), int8, default=None
        Each feature's monotone constraint (-1, 0, +1), read with
        ``bounds``.

    Returns
    -------
    splits : ndarray of shape (n_slots,), dtype ``splits.SPLIT_RECORD``
        Each node's best split: ``gain`` (loss reduction before gamma),
        ``feature`` (-1 where no split satisfies min_child_weight),
        ``threshold``, ``default_left``, ``G_left`` and ``H_left``
        (statistics of the left child); ``split_bin`` -1, ``Gq_left`` and
        ``Hq_left`` 0, ``cat_kind`` 0 (numeric).
    """
    cdef Py_ssize_t n_slots = node_G.shape[0]
    cdef int n_threads = capped(context.n_threads)
    cdef SortedColumns columns = _columns_of(blocks)
    _check_inputs(columns, gpair, row_slot, node_G, node_H, node_count,
                  feature_allowed)
    cdef NodeBlocks grouped = _grouped_blocks(blocks, row_slot, n_slots,
                                              n_threads)
    cdef const double[::1] weight_view = _check_weight(weight,
                                                       gpair.shape[0])
    return _find_regularised(grouped, gpair, row_slot, node_G, node_H,
                             node_count, feature_allowed, weight_view,
                             weight is not None, context, bounds, monotone,
                             n_threads)


cdef object _find_regularised(NodeBlocks grouped, const float[:, ::1] gpair,
                              const int32_t[::1] row_slot,
                              const double[::1] node_G,
                              const double[::1] node_H,
                              const int64_t[::1] node_count,
                              const uint8_t[:, ::1] feature_allowed,
                              const double[::1] weight_view, bint weighted,
                              SplitContext context, bounds, monotone,
                              int n_threads):
    """find_best_splits with the context's regularisation and the monotone
    bounds and directions as the C structs the scan reads."""
    cdef RegParams p = reg_params(context)
    cdef const signed char[::1] direction = feature_directions(
        monotone, grouped.columns.n_features)
    cdef NodeBounds* node_bounds = node_bounds_array(bounds,
                                                     node_G.shape[0])
    try:
        return _find_level(grouped, gpair, row_slot, node_G, node_H,
                           node_count, feature_allowed, weight_view,
                           weighted, &p, node_bounds, direction, n_threads)
    finally:
        free(node_bounds)


cdef object _find_level(NodeBlocks grouped, const float[:, ::1] gpair,
                        const int32_t[::1] row_slot,
                        const double[::1] node_G, const double[::1] node_H,
                        const int64_t[::1] node_count,
                        const uint8_t[:, ::1] feature_allowed,
                        const double[::1] weight_view, bint weighted,
                        const RegParams* p, const NodeBounds* node_bounds,
                        const signed char[::1] direction, int n_threads):
    """find_best_splits after its checks and conversions."""
    cdef Py_ssize_t n_slots = node_G.shape[0]
    cdef double[::1] parent_score = _parent_scores(node_G, node_H, p,
                                                   node_bounds)
    # a split of the groups planned at the previous level is carried out
    # feature by feature, each just before its scan
    cdef bint splitting = grouped._pending is not None
    # (a level: every feature in parallel, each thread its own bests; then
    # the merge of the threads' bests under the total order)
    cdef SplitStep step
    if splitting:
        step = grouped._split_step(n_threads)
    cdef LevelScan L
    _level_scan(&L, grouped, &step if splitting else NULL, row_slot, node_G,
                node_H, node_count, parent_score, p)
    L.node_bounds = node_bounds
    L.direction = &direction[0]
    cdef ThreadScratch scratch = ThreadScratch(n_threads, n_slots,
                                               grouped.longest)
    # the features no open node may split on are only moved, not scanned
    cdef const uint8_t[::1] used = np.asarray(feature_allowed).any(
        axis=0).astype(np.uint8)
    scan_level(&L, &step, splitting, used, gpair, weight_view,
               weighted, feature_allowed, scratch.base,
               scratch.stride, n_threads)
    merge_thread_bests(scratch.best, scratch.best_stride, n_threads, n_slots)
    if splitting:
        grouped._commit()
    return _candidates_to_records(scratch.best, n_slots)


cdef void scan_level(const LevelScan* L, const SplitStep* step,
                     bint splitting, const uint8_t[::1] used,
                     const float[:, ::1] gpair, const double[::1] weight,
                     bint weighted, const uint8_t[:, ::1] feature_allowed,
                     FeatureScratch* scratch_base, Py_ssize_t scratch_stride,
                     int n_threads) noexcept nogil:
    """Every feature of the level, in parallel: split its groups if a
    split is planned (``step``), and scan them if a node may use it."""
    cdef Py_ssize_t f
    cdef int tid
    # one feature per task: a feature's block, groups and scratch are the
    # task's own, and candidates go to the thread's own bests, so threads
    # share no write. Dynamic: features differ in entries and in how many
    # groups the pre-test skips
    for f in prange(L.n_features, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        if splitting and used[f]:
            split_and_scan_feature(L, step, <int32_t> f, tid, gpair,
                                   weight, weighted, feature_allowed,
                                   &scratch_base[tid * scratch_stride])
        elif splitting:
            split_step_feature(step, <int32_t> f, tid)
        elif used[f]:
            scan_feature(L, <int32_t> f, gpair, weight, weighted,
                         feature_allowed, &scratch_base[tid * scratch_stride])


cdef class ThreadScratch:
    """Each thread's scratch for one call of ``find_best_splits``: its best
    candidate of every slot, its zero blocks, and the per-entry buffers of
    the group it scans (``FeatureScratch``).

    Each thread's scratch starts on its own cache lines: a line shared by
    two threads would bounce between their cores (false sharing).

    Parameters
    ----------
    n_threads : int
    n_slots : int
        Open nodes of the level.
    longest : int
        Entries of the longest group (the per-entry buffers' size).
    """

    cdef object _buffers               # the arrays the pointers point into
    cdef FeatureScratch* base          # thread t's at base[t * stride]
    cdef Py_ssize_t stride
    cdef SplitCandidate* best          # thread t's at best[t * best_stride]
    cdef Py_ssize_t best_stride

    def __cinit__(self, int n_threads, Py_ssize_t n_slots,
                  Py_ssize_t longest):
        cdef Py_ssize_t zero_stride = padded_count(n_slots, sizeof(ZeroBlock))
        # per entry: its gradient pair, then the walks' running sums
        cdef Py_ssize_t buffer_stride = padded_count(longest, sizeof(double))
        self.best_stride = padded_count(n_slots, sizeof(SplitCandidate))
        self.stride = padded_count(1, sizeof(FeatureScratch))
        best_buffer = np.empty(n_threads * self.best_stride
                               * sizeof(SplitCandidate) + CACHE_LINE,
                               dtype=np.uint8)
        zero_buffer = np.zeros(n_threads * zero_stride * sizeof(ZeroBlock)
                               + CACHE_LINE, dtype=np.uint8)
        gh_buffer = np.empty(n_threads * 6 * buffer_stride * sizeof(double)
                             + CACHE_LINE, dtype=np.uint8)
        touched_buffer = np.empty((n_threads, max(n_slots, 1)),
                                  dtype=np.int32)
        scratch_buffer = np.empty(n_threads * self.stride
                                  * sizeof(FeatureScratch) + CACHE_LINE,
                                  dtype=np.uint8)
        self._buffers = (best_buffer, zero_buffer, gh_buffer, touched_buffer,
                         scratch_buffer)
        self.best = <SplitCandidate*> aligned(best_buffer)
        self.base = <FeatureScratch*> aligned(scratch_buffer)
        cdef ZeroBlock* zero = <ZeroBlock*> aligned(zero_buffer)
        cdef double* gh = <double*> aligned(gh_buffer)
        cdef int32_t[:, ::1] touched = touched_buffer
        cdef int t
        for t in range(n_threads):
            self._set_thread(t, n_slots, &zero[t * zero_stride],
                             &gh[t * 6 * buffer_stride], buffer_stride,
                             &touched[t, 0])

    cdef void _set_thread(self, int t, Py_ssize_t n_slots, ZeroBlock* zero,
                          double* gh, Py_ssize_t buffer_stride,
                          int32_t* touched):
        """Thread t's scratch: no best yet, its zero blocks, its buffers
        (six of ``buffer_stride`` doubles from ``gh``)."""
        cdef FeatureScratch* scratch = &self.base[t * self.stride]
        cdef Py_ssize_t s
        for s in range(n_slots):
            reset_candidate(&self.best[t * self.best_stride + s])
        scratch.group.g = gh
        scratch.group.h = &gh[buffer_stride]
        scratch.group.below_G = &gh[2 * buffer_stride]
        scratch.group.below_H = &gh[3 * buffer_stride]
        scratch.group.above_G = &gh[4 * buffer_stride]
        scratch.group.above_H = &gh[5 * buffer_stride]
        scratch.zero = zero
        scratch.touched = touched
        scratch.n_touched = 0
        scratch.best = &self.best[t * self.best_stride]


cdef char* aligned(object buffer):
    """First cache-line boundary inside a uint8 buffer (which has
    CACHE_LINE spare bytes for it)."""
    cdef unsigned char[::1] view = buffer
    cdef size_t address = <size_t> &view[0]
    return <char*> &view[0] + (-address) % CACHE_LINE


def _columns_of(blocks):
    if isinstance(blocks, NodeBlocks):
        return blocks.columns
    if isinstance(blocks, SortedColumns):
        return blocks
    raise TypeError("blocks must be SortedColumns or NodeBlocks, got "
                    f"{type(blocks).__name__}")


def _grouped_blocks(blocks, row_slot, Py_ssize_t n_slots, int n_threads):
    """``blocks`` grouped for ``row_slot``."""
    if isinstance(blocks, SortedColumns):
        grouped = NodeBlocks(blocks)
        grouped.start(row_slot, n_slots, n_threads)
        return grouped
    if blocks.n_slots != n_slots:
        raise ValueError(f"the blocks are grouped for {blocks.n_slots} "
                         f"slots, not {n_slots}")
    return blocks


cdef double[::1] _parent_scores(const double[::1] node_G,
                                const double[::1] node_H,
                                const RegParams* p,
                                const NodeBounds* node_bounds):
    """Each open node's own score (at least one entry); with monotone
    bounds (not NULL), from its weight clipped into them."""
    cdef Py_ssize_t s, n_slots = node_G.shape[0]
    cdef double[::1] parent_score = np.empty(max(n_slots, 1))
    for s in range(n_slots):
        if node_bounds == NULL:
            parent_score[s] = leaf_score(node_G[s], node_H[s], p)
        else:
            parent_score[s] = bounded_leaf_score(node_G[s], node_H[s],
                                                 &node_bounds[s], p)
    return parent_score


cdef void _level_scan(LevelScan* L, NodeBlocks grouped, const SplitStep* step,
                      const int32_t[::1] row_slot,
                      const double[::1] node_G, const double[::1] node_H,
                      const int64_t[::1] node_count,
                      const double[::1] parent_score, const RegParams* p):
    """Pointers into validated arrays (kept alive by the caller). The
    groups scanned are those a planned split (``step``, NULL if none)
    writes, else the current ones."""
    cdef SortedColumns columns = grouped.columns
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    cdef const int32_t[::1] missing_rows = columns.missing_rows
    cdef BlockData data
    cdef GroupData groups
    if step != NULL:
        data = step.dst
        groups = step.out
    else:
        data = _block_data(columns.col_ptr, grouped.values, grouped.rows)
        groups = _group_data(grouped.group_ptr, grouped.group_count,
                             grouped.group_slot, grouped.group_end)
    L.n_features = columns.n_features
    L.values = data.values
    L.rows = data.rows
    L.col_ptr = data.col_ptr
    L.group_ptr = groups.ptr
    L.group_count = groups.count
    L.group_slot = groups.slot
    L.group_end = groups.end
    L.node_G = &node_G[0] if node_G.shape[0] else NULL
    L.node_H = &node_H[0] if node_H.shape[0] else NULL
    L.node_count = &node_count[0] if node_count.shape[0] else NULL
    L.parent_score = &parent_score[0]
    L.p = p
    L.l2_only = is_l2_only(p)
    L.zero_absent = columns.zero_absent
    L.missing_ptr = &missing_ptr[0]
    L.missing_rows = &missing_rows[0] if missing_rows.shape[0] else NULL
    L.row_slot = &row_slot[0] if row_slot.shape[0] else NULL


cdef object _candidates_to_records(const SplitCandidate* best,
                                   Py_ssize_t n):
    """The bests of n slots as ``SPLIT_RECORD`` rows: numeric splits, no
    bin (-1) and no fixed-point sums (0). The one place the exact finder's
    candidates become records."""
    records = empty_records(n)
    gain, threshold = np.empty(n), np.empty(n)
    G_left, H_left = np.empty(n), np.empty(n)
    feature = np.empty(n, dtype=np.int32)
    default_left = np.empty(n, dtype=np.uint8)
    cdef double[::1] gain_view = gain, threshold_view = threshold
    cdef double[::1] G_view = G_left, H_view = H_left
    cdef int32_t[::1] feature_view = feature
    cdef uint8_t[::1] default_left_view = default_left
    cdef Py_ssize_t s
    # columns filled in C, then assigned whole: a record at a time through
    # numpy would cost a Python call per field and node
    for s in range(n):
        gain_view[s] = best[s].gain
        feature_view[s] = best[s].feature
        threshold_view[s] = best[s].threshold
        default_left_view[s] = best[s].default_left
        G_view[s] = best[s].G_left
        H_view[s] = best[s].H_left
    records["gain"] = gain
    records["feature"] = feature
    records["threshold"] = threshold
    records["default_left"] = default_left
    records["G_left"] = G_left
    records["H_left"] = H_left
    return records


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_weight(weight, n_rows):
    if weight is None:
        return np.ones(1, dtype=np.float64)  # never read
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    if weight.shape != (n_rows,):
        raise ValueError("weight must have one entry per row")
    return weight


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_inputs(columns, gpair, row_slot, node_G, node_H, node_count,
                  feature_allowed):
    """Shapes that the nogil scan relies on (the blocks themselves were
    validated by SortedColumns, the context by SplitContext)."""
    n_slots = node_G.shape[0]
    if gpair.shape[1] != 2 or gpair.shape[0] != columns.n_rows or (
            row_slot.shape[0] != columns.n_rows):
        raise ValueError("gpair must be (n_rows, 2) and row_slot (n_rows,)")
    if not (node_H.shape[0] == node_count.shape[0] == n_slots):
        raise ValueError("node statistics must all have n_slots entries")
    if (feature_allowed.shape[0] != n_slots
            or feature_allowed.shape[1] != columns.n_features):
        raise ValueError("feature_allowed must be (n_slots, n_features)")
    slots = np.asarray(row_slot)
    if slots.size and (slots.max() >= n_slots or slots.min() < -1):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
