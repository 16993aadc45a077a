"""Weighted quantile sketch (paper section 3.3 and appendix A).

The approximate and histogram split finders need, per feature, cut points
that split the data into bins of about equal *weight* (the hessian, or the
sample weight). For data that does not fit one sort, the paper builds them
from *summaries* that can be merged (summaries of two parts give a summary of
the union) and pruned (a summary shrunk to a fixed size), each step with a
proven bound on the rank error. XGBoost's ``WQSummary`` (SetCombine = merge,
SetPrune = prune) is the reference design; the bounds below are derived and
stated in one currency, the error of the answer to a rank query, so that the
``eps`` a summary reports is exactly what :meth:`query` guarantees.

Rank semantics
--------------
The data D is a multiset of pairs (x, w), w > 0: NaN values and zero
weights are dropped before anything else; negative weights are an error.
W = sum of the weights. For any real x::

    r-(x) = weight of the values <  x        (rank below x)
    r+(x) = weight of the values <= x        = r-(x) + w(x)
    w(x)  = weight of the value x itself     (0 if x is not in D)

A summary holds W (exactly, up to float64 rounding) and entries
(x_i, rmin_i, rmax_i, wmin_i), i = 1..k, x_1 < x_2 < ... < x_k, each x_i a
value of D, with the invariant the proofs use:

    (I)  rmin_i <= r-(x_i)      (lower bound on the weight strictly below)
         rmax_i >= r+(x_i)      (upper bound on the weight at or below)
         0 <= wmin_i <= w(x_i)  (lower bound on the weight of x_i)
    (E)  x_1 = min D and x_k = max D
    (T)  rmin_{i+1} >= rmin_i + wmin_i and rmax_i <= rmax_{i+1} - wmin_{i+1}
         (neighbours' bounds agree, as the true ranks do: r-(x_{i+1}) >=
         r+(x_i))

Write a_i = rmin_i + wmin_i and b_i = rmax_i - wmin_i. Since r+ = r- + w,
(I) gives a_i <= r+(x_i) and b_i >= r-(x_i): the true rank interval
[r-(x_i), r+(x_i)] reaches at least down to b_i and at least up to a_i.
(T) gives a_i <= rmin_{i+1} <= a_{i+1} and b_i <= rmax_i <= b_{i+1}:

    (M)  a and b are nondecreasing.

Exact summaries satisfy (T) with equality; a subset of entries keeps it
(chain the inequalities; wmin >= 0) and so does merge (below). The bounds
proved here do not rely on (M); it makes :meth:`query`'s bisection find the
best candidates and prune's greedy walk optimal for its threshold.

Rank error and the certified bound
----------------------------------
Answering the value x to a query for rank r in [0, W] has error

    err(x, r) = distance from r to [r-(x), r+(x)]
              = max(0, r-(x) - r, r - r+(x))

(0 exactly when x is a weighted r-quantile of D). By (I),
err(x_i, r) <= f_i(r) = max(0, b_i - r, r - a_i). A summary's bound is

    E = max(0, b_1, W - a_k, max_i (b_i - a_i) / 2, max_i (b_{i+1} - a_i) / 2)

and ``eps = E / W``. An exact summary (rmin = r-, rmax = r+, wmin = w) has
b_1 = 0, a_k = W, b_i - a_i = -w(x_i) < 0 and b_{i+1} = r-(x_{i+1}) =
r+(x_i) = a_i, so E = 0. ``eps`` is computed from the entries each time a
summary is made; it never exceeds the a priori bounds of Theorems 2 and 3,
which are what tracking eps through merges and prunes would give.

**Theorem 1 (query).** For every r in [0, W], min_i f_i(r) <= E.

Write L_i = min(b_i, (a_i + b_i)/2), U_i = max(a_i, (a_i + b_i)/2) and
h_i = max(0, (b_i - a_i)/2). Then f_i(r) = dist(r, [L_i, U_i]) + h_i
(if b_i <= a_i the interval is [b_i, a_i] and h_i = 0; otherwise f_i is a V
of slope 1 with its floor h_i at the midpoint), and L_i + h_i = b_i,
U_i - h_i = a_i. (i) If r <= L_1: f_1(r) = L_1 + h_1 - r <= b_1.
(ii) If r >= U_k: f_k(r) = r - a_k <= W - a_k. (iii) If r lies in some
[L_i, U_i]: f_i(r) = h_i. (iv) Otherwise L_1 < r < L_k (r < U_k, and r is
not in [L_k, U_k]), so some i has L_i <= r < L_{i+1}; r is not in
[L_i, U_i], so r > U_i, f_i(r) = r - a_i and f_{i+1}(r) = b_{i+1} - r,
whose minimum is at most (b_{i+1} - a_i)/2. [] :meth:`query` bisects for
an i with L_i <= r < L_{i+1} (the largest with L_i <= r, by (M)) and
answers the better of x_i, x_{i+1}: by (iii) and (iv) that is within E.

**Theorem 2 (merge).** merge(A, B) satisfies (I), (E), (T), and
E(A u B) <= E(A) + E(B); hence eps(A u B) <= (eps_A W_A + eps_B W_B)/W
<= max(eps_A, eps_B): absolute errors add, relative errors do not grow.

For a value x of the merged list, B's part of its entry is B's own entry if
x is a value of B's summary, else, with y_j < x < y_{j+1} its neighbours in
B's summary, (rmin, rmax, wmin) = (a^B_j, b^B_{j+1}, 0) (a^B_0 = 0 and
b^B_{k+1} = W_B past the ends). These satisfy (I) for B: every B-value
<= y_j is < x, and every B-value <= x is < y_{j+1}. Ranks of the union add,
so the sum of A's and B's parts satisfies (I). Every term of E is linear in
(a, b, W), and for each term A's part is a term of E(A): a merged entry's
b - a has A's part b^A_i - a^A_i (x a value of A) or b^A_{j+1} - a^A_j (x
between y_j and y_{j+1}); for consecutive merged values x < x', with j such
that y_j <= x < x' <= y_{j+1}, A's part of b(x') - a(x) is
b^A_{j+1} - a^A_j; and A's parts of b(x_1) and W - a(x_k) are b^A_1 and
W_A - a^A_{k_A}. The same for B, so each term is at most E(A) + E(B).
(T) holds side by side: for consecutive merged values x < x', A's parts
satisfy rmin^A(x') >= rmin^A(x) + wmin^A(x) (A's (T) when both are A's
values, equality when x' is not, rmin^A(x') >= a^A_j when x is not), and
the same for rmax and for B; sums of the two sides keep it. []

**Theorem 3 (prune).** prune(S, m), m >= 2, keeps a subset of at most m
entries, the first and the last among them, with
E' <= E + W / (2 (m - 1)), i.e. eps' <= eps + 1 / (2 (m - 1)).

Kept entries keep their (rmin, rmax, wmin), so (I), (E) and (T) hold, and
the only new terms of E' are (b_q - a_p)/2 for kept neighbours p < q. Given
a threshold tau, the greedy walk keeps entry 1, then from a kept p the
furthest q with b_q <= a_p + tau, until the last entry: every new term is
<= tau/2. For tau = 2E + D, D = W/(m-1): the step from p reaches q >= p+1
(b_{p+1} - a_p <= 2E), and unless q is the last entry, b_{q+1} > a_p + tau
while b_{q+1} - a_q <= 2E, so a_q > a_p + D. The t-th kept entry that is
not the last thus has t*D < a <= W, t <= m - 2: at most m - 1 such entries
plus the last. [] :meth:`prune` bisects for a smaller tau that still keeps
at most m entries (with (M) the greedy walk is optimal for a given tau), so
in practice E' stays near W/(2(m-1)) instead of growing with every prune.

Cut points: see :meth:`WeightedQuantileSummary.cut_points`.

Floating point: the bounds hold in exact arithmetic; in float64 each rank is
a sum of weights, off by a relative n * 2**-53 at most, and exact summaries
report eps = 0 (the bound of exact arithmetic).
"""

import operator

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset


# How the sketch runs (sketch_column): the column is streamed in chunks of
# ``chunk_size`` values; each chunk is sorted once and aggregated into an
# exact summary (one entry per distinct value, its ranks the running sums
# of the weights), pruned to ``summary_size`` entries, merged into the
# running summary and the result pruned again:
#
#     chunk 1 --sort, aggregate--> exact --prune--+
#                                                 +--merge--prune--> running
#     chunk 2 --sort, aggregate--> exact --prune--+                     |
#     chunk 3 --sort, aggregate--> exact --prune------------merge--prune
#     ...
#
# Memory stays O(chunk_size + summary_size) whatever the number of rows,
# and the cost is one sort per chunk plus linear merges and prunes. Every
# step below is a sequential loop over sorted float64 arrays: no threads,
# so a summary depends only on the data, its order and chunk_size.

# Bisection of prune's threshold stops when the bracket is this fraction of
# the threshold: the bound loses at most this relative amount.
cdef double TAU_RELATIVE_PRECISION = 2.0 ** -8


cdef inline double rank_up_low(double rmin, double wmin) noexcept nogil:
    """a_i: lower bound on r+(x_i), the weight at or below x_i."""
    return rmin + wmin


cdef inline double rank_down_high(double rmax, double wmin) noexcept nogil:
    """b_i: upper bound on r-(x_i), the weight strictly below x_i."""
    return rmax - wmin


cdef inline double certified_error(double a, double b,
                                   double r) noexcept nogil:
    """f_i(r) = max(0, b_i - r, r - a_i) >= err(x_i, r) (Theorem 1)."""
    return max(0.0, max(b - r, r - a))


cdef inline double interval_low(double a, double b) noexcept nogil:
    """L_i = min(b_i, (a_i + b_i)/2): where f_i reaches its floor."""
    return b if b <= a else 0.5 * (a + b)


# merge_entries is the two-pointer merge of two sorted lists, as in merge
# sort: each step emits the smaller head (both heads when they are equal).
#
#     A:  a1      a2  a3          (i walks A)
#     B:      b1  b2      b3      (j walks B)
#     ->  a1  b1  a2+b2  a3  b3   (n counts the merged entries)
#
# A value of one side only adds, from the other side, the bounds of the
# gap it falls in: below_* (a_j of the other side's last entry passed) to
# rmin, and b_{j+1} of the other side's next entry (its total weight past
# its end) to rmax.
cdef Py_ssize_t merge_entries(
        const double[::1] x_a,         # IN (n_a,) values of A, increasing
        const double[::1] rmin_a,      # IN (n_a,)
        const double[::1] rmax_a,      # IN (n_a,)
        const double[::1] wmin_a,      # IN (n_a,)
        double weight_a,               # IN total weight of A
        const double[::1] x_b,         # IN (n_b,) values of B, increasing
        const double[::1] rmin_b,      # IN (n_b,)
        const double[::1] rmax_b,      # IN (n_b,)
        const double[::1] wmin_b,      # IN (n_b,)
        double weight_b,               # IN total weight of B
        double[::1] x,                 # OUT (>= n_a + n_b,)
        double[::1] rmin,              # OUT (>= n_a + n_b,)
        double[::1] rmax,              # OUT (>= n_a + n_b,)
        double[::1] wmin,              # OUT (>= n_a + n_b,)
) noexcept nogil:
    """Merge two summaries (Theorem 2); returns the number of entries.

    A value present in one summary only gets, from the other, the bounds of
    the gap it falls in (``_take_one_side``). "A only" and "B only" are the
    one helper with the operands swapped, every addition in the same order,
    so merge(A, B) == merge(B, A) bit for bit.
    """
    cdef Py_ssize_t i = 0, j = 0, n = 0
    cdef Py_ssize_t n_a = x_a.shape[0], n_b = x_b.shape[0]
    cdef double below_a = 0.0, below_b = 0.0
    while i < n_a or j < n_b:
        if j == n_b or (i < n_a and x_a[i] < x_b[j]):
            below_a = _take_one_side(x_a, rmin_a, rmax_a, wmin_a, i,
                                     rmax_b, wmin_b, j, weight_b, below_b,
                                     x, rmin, rmax, wmin, n)
            i += 1
        elif i == n_a or x_b[j] < x_a[i]:
            below_b = _take_one_side(x_b, rmin_b, rmax_b, wmin_b, j,
                                     rmax_a, wmin_a, i, weight_a, below_a,
                                     x, rmin, rmax, wmin, n)
            j += 1
        else:  # the same value in both
            x[n] = x_a[i]
            rmin[n] = rmin_a[i] + rmin_b[j]
            rmax[n] = rmax_a[i] + rmax_b[j]
            wmin[n] = wmin_a[i] + wmin_b[j]
            below_a = rank_up_low(rmin_a[i], wmin_a[i])
            below_b = rank_up_low(rmin_b[j], wmin_b[j])
            i += 1
            j += 1
        n += 1
    return n


cdef inline double _take_one_side(
        const double[::1] x_s, const double[::1] rmin_s,
        const double[::1] rmax_s, const double[::1] wmin_s, Py_ssize_t i,
        const double[::1] rmax_o, const double[::1] wmin_o, Py_ssize_t j,
        double weight_o, double below_o, double[::1] x, double[::1] rmin,
        double[::1] rmax, double[::1] wmin, Py_ssize_t n) noexcept nogil:
    """Entry n of the merge: entry i of one side, whose value the other
    side lacks. ``below_o`` (a_j of the other side's last entry passed) is
    a lower bound on the other side's weight <= the value, b_{j+1} of its
    next entry (its total weight ``weight_o`` past its end) an upper bound.
    Returns this side's a_i, its ``below`` for the other side's next."""
    x[n] = x_s[i]
    rmin[n] = rmin_s[i] + below_o
    if j < rmax_o.shape[0]:
        rmax[n] = rmax_s[i] + rank_down_high(rmax_o[j], wmin_o[j])
    else:
        rmax[n] = rmax_s[i] + weight_o
    wmin[n] = wmin_s[i]
    return rank_up_low(rmin_s[i], wmin_s[i])


cdef double error_bound(const double[::1] rmin,   # IN (n,)
                        const double[::1] rmax,   # IN (n,)
                        const double[::1] wmin,   # IN (n,)
                        double total_weight) noexcept nogil:
    """E of the module docstring: the certified rank error of :meth:`query`."""
    cdef Py_ssize_t i, n = rmin.shape[0]
    cdef double a, b, e
    if n == 0:
        return 0.0
    # the two end terms: b_1 (rank queries below the first entry) and
    # W - a_k (above the last)
    e = max(0.0, rank_down_high(rmax[0], wmin[0]))
    e = max(e, total_weight - rank_up_low(rmin[n - 1], wmin[n - 1]))
    # one pass for the interior terms: an entry's own uncertainty
    # (b_i - a_i) / 2 and the gap to its successor (b_{i+1} - a_i) / 2
    for i in range(n):
        a = rank_up_low(rmin[i], wmin[i])
        b = rank_down_high(rmax[i], wmin[i])
        e = max(e, 0.5 * (b - a))
        if i + 1 < n:
            e = max(e, 0.5 * (rank_down_high(rmax[i + 1], wmin[i + 1]) - a))
    return e


cdef inline Py_ssize_t furthest_in_reach(const double* high, Py_ssize_t n,
                                         Py_ssize_t p, double reach,
                                         Py_ssize_t guess) noexcept nogil:
    """The q of greedy_walk's scan from p (the largest q in [p + 1, n - 1]
    with q == p + 1 or b_q <= reach), found from ``guess`` when b is
    nondecreasing: then b_j <= reach holds for a prefix of j >= p + 2, so
    any start finds its end. From the previous jump's length as the guess,
    two comparisons a kept entry when the jumps are even (as a chunk of
    distinct values gives), against a comparison per entry for the scan."""
    cdef Py_ssize_t q = min(max(guess, p + 1), n - 1)
    if q > p + 1 and high[q] > reach:    # past the end of the prefix
        q -= 1
        while q > p + 1 and high[q] > reach:
            q -= 1
        return q
    while q + 1 < n and high[q + 1] <= reach:
        q += 1
    return q


cdef Py_ssize_t greedy_walk(const double* low,     # IN (n,) a_i
                            const double* high,    # IN (n,) b_i
                            Py_ssize_t n,
                            double tau,
                            Py_ssize_t limit,
                            Py_ssize_t* keep,          # OUT (limit,) or NULL
                            bint high_sorted,      # b nondecreasing
                            ) noexcept nogil:
    """Entries kept by prune's greedy walk for threshold ``tau`` (Theorem 3).

    From a kept entry p, jump to the furthest q > p with b_q <= a_p + tau
    (at least p + 1; "furthest" by a linear scan that stops at the first
    entry out of reach, which is the furthest overall by (M), and then no
    walk keeps fewer entries). Returns the number of entries kept, or
    ``limit + 1`` as soon as it exceeds ``limit``. (Galloping was slower
    than the scan: its branches are unpredictable.) ``low`` and ``high``
    hold every entry's a_i and b_i (``rank_up_low``, ``rank_down_high``),
    computed once for all the walks of a prune. With ``high_sorted`` (b
    nondecreasing, checked by the caller) the scan starts at the previous
    jump's length (``furthest_in_reach``: the same q).
    """
    # The walk over the entries, keeping p and jumping as far as tau
    # allows:
    #
    #     entries:  0   1   2   3   4   5   6   7
    #     kept:     p ----------> q ------> q' -> last
    #               b_q <= a_p + tau, b_{q+1} > a_p + tau
    #
    # The first and the last entries are always kept (invariant (E)).
    cdef Py_ssize_t p = 0, q, count = 1, jump = 1
    cdef double reach
    if keep != NULL:
        keep[0] = 0
    while p < n - 1:
        reach = low[p] + tau
        if high_sorted:
            q = furthest_in_reach(high, n, p, reach, p + jump)
            jump = q - p
        else:
            q = p + 1
            while q + 1 < n and high[q + 1] <= reach:
                q += 1
        p = q
        # the bisection only needs to know "too many": stop counting early
        if count == limit:
            return limit + 1
        if keep != NULL:
            keep[count] = p
        count += 1
    return count


def _walks(const double[::1] low not None, const double[::1] high not None,
           double tau, Py_ssize_t limit):
    """The entries greedy_walk keeps by its scan and, when ``high`` is
    nondecreasing, from the previous jump (None otherwise): for tests."""
    n = low.shape[0]
    if high.shape[0] != n or n < 1 or limit < 1:
        raise ValueError("low and high of one length >= 1, limit >= 1")
    out = []
    cdef Py_ssize_t[::1] keep
    for fast in (False, True):
        if fast and not nondecreasing(&high[0], n):
            out.append(None)
            continue
        kept = np.empty(limit, dtype=np.intp)
        keep = kept
        count = greedy_walk(&low[0], &high[0], n, tau, limit, &keep[0], fast)
        out.append(kept[:count] if count <= limit else None)
    return out


cdef bint nondecreasing(const double* values, Py_ssize_t n) noexcept nogil:
    """Whether values[0] <= values[1] <= ... (False with a NaN)."""
    cdef Py_ssize_t i
    cdef bint sorted_so_far = True
    # no early exit: a reduction the compiler can vectorise
    for i in range(1, n):
        sorted_so_far &= values[i - 1] <= values[i]
    return sorted_so_far


cdef enum:
    # independent running maxima of prepare_walks: one maximum is a chain
    # of dependent compare-selects (~4 cycles each); four chains overlap
    MAX_LANES = 4


cdef inline double larger(double value, double best) noexcept nogil:
    """``max(best, value)`` as Cython computes it: value if value > best
    (so a NaN never replaces best, and of equal values best stays)."""
    return value if value > best else best


cdef double prepare_walks(const double[::1] rmin,   # IN (n,), n >= 2
                          const double[::1] rmax,   # IN (n,)
                          const double[::1] wmin,   # IN (n,)
                          double total_weight,
                          Py_ssize_t max_size,
                          double* low,              # OUT (n,) a_i
                          double* high,             # OUT (n,) b_i
                          bint* high_sorted,        # OUT b nondecreasing
                          ) noexcept nogil:
    """Everything the walks of a prune need, in two passes over the
    entries: their a_i and b_i, whether b is nondecreasing, and the
    bisection's lower end, a threshold too small for a walk to keep at
    most ``max_size`` entries (or just enough: then it is the answer), the
    larger of the two bounds ``select_pruned``'s docstring derives.

    The two maxima (the largest gap b_{i+1} - a_i, the heaviest entry
    rmax_i - rmin_i) run in MAX_LANES independent lanes, combined at the
    end. A maximum does not depend on the order it is taken in, except
    for which of 0.0 and -0.0 it keeps, which no comparison of the walks
    tells apart: the entries kept are the same.
    """
    cdef Py_ssize_t i, k, n = rmin.shape[0]
    cdef double gap[MAX_LANES]
    cdef double heavy[MAX_LANES]
    cdef bint sorted_so_far = True
    for i in range(n):     # vectorised: no dependence between entries
        low[i] = rank_up_low(rmin[i], wmin[i])
        high[i] = rank_down_high(rmax[i], wmin[i])
    for k in range(MAX_LANES):
        gap[k] = -INFINITY
        heavy[k] = 0.0
    # lane k takes the entries i = k mod MAX_LANES; the gaps pair each
    # entry with the next (i < n - 1), as does the order check
    i = 0
    while i + MAX_LANES < n:
        for k in range(MAX_LANES):
            gap[k] = larger(high[i + k + 1] - low[i + k], gap[k])
            heavy[k] = larger(rmax[i + k] - rmin[i + k], heavy[k])
            sorted_so_far &= high[i + k] <= high[i + k + 1]
        i += MAX_LANES
    while i < n - 1:
        gap[0] = larger(high[i + 1] - low[i], gap[0])
        heavy[0] = larger(rmax[i] - rmin[i], heavy[0])
        sorted_so_far &= high[i] <= high[i + 1]
        i += 1
    heavy[0] = larger(rmax[n - 1] - rmin[n - 1], heavy[0])
    for k in range(1, MAX_LANES):
        gap[0] = larger(gap[k], gap[0])
        heavy[0] = larger(heavy[k], heavy[0])
    high_sorted[0] = sorted_so_far
    # Nudged down so that rounding never makes it feasible when it is not.
    return max(gap[0], (total_weight - max_size * heavy[0])
               / (max_size - 1) * (1.0 - 1e-9))


cdef Py_ssize_t select_pruned(const double[::1] rmin,    # IN (n,)
                              const double[::1] rmax,    # IN (n,)
                              const double[::1] wmin,    # IN (n,)
                              double total_weight,
                              double error,              # E of the summary
                              Py_ssize_t max_size,       # m >= 2, < n
                              Py_ssize_t* keep,          # OUT (max_size,)
                              double* scratch,           # (2 n,) work space
                              ) noexcept nogil:
    """Indices prune keeps (Theorem 3); returns how many (<= max_size).

    Bisects for the smallest threshold whose greedy walk keeps at most
    ``max_size`` entries, between a threshold too small and the threshold of
    the proof, 2E + W/(m - 1). Too small: below max_i (b_{i+1} - a_i) a step
    from p to p + 1 is refused; and the m - 1 gaps between kept entries hold
    all the weight of the values not kept, at least W - m * max_i w(x_i)
    with w(x_i) <= rmax_i - rmin_i, so one gap's b_q - a_p >= r-(x_q) -
    r+(x_p) is at least the average of that.
    """
    cdef Py_ssize_t n = rmin.shape[0]
    cdef double* low = scratch          # a_i of every entry, then b_i:
    cdef double* high = scratch + n     # once for every walk below
    # (M) holds in exact arithmetic; where rounding broke it (high_sorted
    # False), the walks scan entry by entry
    cdef bint high_sorted
    cdef double tau_low = prepare_walks(rmin, rmax, wmin, total_weight,
                                        max_size, low, high, &high_sorted)
    return bisect_walks(low, high, n, high_sorted, tau_low, total_weight,
                        error, max_size, keep)


cdef Py_ssize_t select_pruned_unit(const double* starts,  # IN (n + 1,)
                                   Py_ssize_t n,          # entries, > max_size
                                   double longest_run,    # the largest count
                                   double total_weight,
                                   Py_ssize_t max_size,   # m >= 2
                                   Py_ssize_t* keep,      # OUT (max_size,)
                                   ) noexcept nogil:
    """``select_pruned`` of an exact summary of unit weights, given as
    ``run_starts`` gives it: the same entries, without prepare_walks'
    pass. Its ranks are integers, exact in float64: a_i = rmin_i + wmin_i
    is rmax_i = starts[i + 1] and b_i = rmax_i - wmin_i is rmin_i =
    starts[i] bit for bit, b is nondecreasing, every gap b_{i+1} - a_i is
    0.0 and the heaviest entry's rmax_i - rmin_i is the longest run."""
    # prepare_walks' lower end with every gap 0.0
    cdef double tau_low = max(0.0, (total_weight - max_size * longest_run)
                              / (max_size - 1) * (1.0 - 1e-9))
    return bisect_walks(starts + 1, starts, n, True, tau_low, total_weight,
                        0.0, max_size, keep)


cdef Py_ssize_t bisect_walks(const double* low,     # IN (n,) a_i
                             const double* high,    # IN (n,) b_i
                             Py_ssize_t n,
                             bint high_sorted,      # b nondecreasing
                             double tau_low,        # too small, or the answer
                             double total_weight,
                             double error,          # E of the summary
                             Py_ssize_t max_size,   # m >= 2, < n
                             Py_ssize_t* keep,      # OUT (max_size,)
                             ) noexcept nogil:
    """The bisection of ``select_pruned`` from its lower end; returns how
    many entries the walk of the threshold found keeps (in ``keep``).

    The threshold found is the last one whose walk kept at most
    ``max_size`` entries, so that walk's entries are the answer: each walk
    records its entries (``Walks``) and the last feasible one is kept,
    instead of walking the threshold once more at the end."""
    cdef Walks walks
    cdef double tau
    start_walks(&walks, keep, max_size)
    # Theorem 3's threshold, always feasible in exact arithmetic
    cdef double tau_high = max(2.0 * error + total_weight / (max_size - 1),
                               tau_low)
    cdef double span = high[n - 1] - low[0]
    if walk_fits(&walks, low, high, n, tau_low, high_sorted):
        tau = tau_low
    else:
        # Rounding may leave tau_high infeasible by a hair: widen it.
        while not walk_fits(&walks, low, high, n, tau_high, high_sorted):
            tau_high = max(2.0 * tau_high, max(span, total_weight))
        # each walk is O(n): the bisection costs about
        # log2(1 / TAU_RELATIVE_PRECISION) = 8 walks, and ends feasible
        # (tau_high), so the prune never keeps more than max_size entries
        while tau_high - tau_low > TAU_RELATIVE_PRECISION * tau_high:
            tau = tau_low + 0.5 * (tau_high - tau_low)
            # the midpoint rounds onto an end: the bracket cannot shrink
            if tau <= tau_low or tau >= tau_high:
                break
            if walk_fits(&walks, low, high, n, tau, high_sorted):
                tau_high = tau
            else:
                tau_low = tau
        tau = tau_high
    return finish_walks(&walks, low, high, n, tau, high_sorted)


# The walks of one bisection: each writes its entries into ``trial``;
# a feasible one's become ``best`` (the two buffers swap), so ``best``
# always holds the walk of the latest feasible threshold, which is the
# one the bisection ends on. ``spare`` is the buffer allocated here (the
# other is the caller's keep), NULL if allocation failed: then the walks
# record nothing and the last threshold is walked again.
cdef struct Walks:
    Py_ssize_t* best
    Py_ssize_t* trial
    Py_ssize_t* spare
    Py_ssize_t* keep
    Py_ssize_t best_count        # -1: no feasible walk recorded
    Py_ssize_t max_size


cdef inline void start_walks(Walks* walks, Py_ssize_t* keep,
                             Py_ssize_t max_size) noexcept nogil:
    walks.spare = <Py_ssize_t*> malloc(max_size * sizeof(Py_ssize_t))
    walks.keep = keep
    walks.best = keep
    walks.trial = walks.spare
    walks.best_count = -1
    walks.max_size = max_size


cdef inline bint walk_fits(Walks* walks, const double* low,
                           const double* high, Py_ssize_t n, double tau,
                           bint high_sorted) noexcept nogil:
    """Whether the walk of ``tau`` keeps at most max_size entries (then
    recorded as the best)."""
    cdef Py_ssize_t* swap
    cdef Py_ssize_t count = greedy_walk(low, high, n, tau, walks.max_size,
                                        walks.trial, high_sorted)
    if count > walks.max_size:
        return False
    if walks.trial != NULL:
        swap = walks.best
        walks.best = walks.trial
        walks.trial = swap
        walks.best_count = count
    return True


cdef Py_ssize_t finish_walks(Walks* walks, const double* low,
                             const double* high, Py_ssize_t n, double tau,
                             bint high_sorted) noexcept nogil:
    """The entries of the walk of ``tau`` (the last feasible one) in keep;
    returns how many. Frees the spare buffer."""
    cdef Py_ssize_t count = walks.best_count
    if count < 0:
        count = greedy_walk(low, high, n, tau, walks.max_size, walks.keep,
                            high_sorted)
    elif walks.best != walks.keep:
        memcpy(walks.keep, walks.best, count * sizeof(Py_ssize_t))
    free(walks.spare)
    return count


cdef Py_ssize_t query_index(const double[::1] rmin,    # IN (n,)
                            const double[::1] rmax,    # IN (n,)
                            const double[::1] wmin,    # IN (n,)
                            double rank) noexcept nogil:
    """Index of the answer to a rank query (proof of Theorem 1).

    Bisects for an i with L_i <= rank < L_{i+1} (the largest i with
    L_i <= rank, as L is nondecreasing by (M)) and returns the better of
    i, i+1 (ties to the lower index); 0 when rank < L_1, k - 1 when
    L_k <= rank.
    """
    cdef Py_ssize_t n = rmin.shape[0], lo = 0, hi = n, mid
    cdef double a_lo, b_lo, a_prev, b_prev
    # lower-bound bisection: afterwards lo is the first entry with
    # L_lo > rank, so entry lo - 1 is the last with L <= rank
    while lo < hi:
        mid = (lo + hi) // 2
        if interval_low(rank_up_low(rmin[mid], wmin[mid]),
                        rank_down_high(rmax[mid], wmin[mid])) <= rank:
            lo = mid + 1
        else:
            hi = mid
    # rank below every L (case (i)) or past every L (case (ii))
    if lo == 0:
        return 0
    if lo == n:
        return n - 1
    # case (iii) or (iv): the better of the two neighbours lo - 1 and lo;
    # a tie keeps the lower index, so the answer is deterministic
    a_lo = rank_up_low(rmin[lo], wmin[lo])
    b_lo = rank_down_high(rmax[lo], wmin[lo])
    a_prev = rank_up_low(rmin[lo - 1], wmin[lo - 1])
    b_prev = rank_down_high(rmax[lo - 1], wmin[lo - 1])
    if (certified_error(a_lo, b_lo, rank)
            < certified_error(a_prev, b_prev, rank)):
        return lo
    return lo - 1


cdef _make_summary(values, rmin, rmax, wmin, double total_weight, bint exact):
    """A summary over the given (float64, contiguous, owned) arrays."""
    cdef WeightedQuantileSummary s = WeightedQuantileSummary.__new__(
        WeightedQuantileSummary)
    # summaries are immutable: merge and prune return new ones, so a
    # summary can be shared (by chunks, by Dask workers) without copies
    for arr in (values, rmin, rmax, wmin):
        arr.flags.writeable = False
    s._values = values
    s._rmin = rmin
    s._rmax = rmax
    s._wmin = wmin
    s._total_weight = total_weight
    s._exact = exact
    cdef const double[::1] rmin_v = rmin, rmax_v = rmax, wmin_v = wmin
    # eps is measured on the entries, not tracked through the operations:
    # it is never above the a priori bounds and usually well below them
    if exact or total_weight <= 0.0:
        s._eps = 0.0
    else:
        with nogil:
            s._eps = error_bound(rmin_v, rmax_v, wmin_v,
                                 total_weight) / total_weight
    return s


def _rebuild(values, rmin, rmax, wmin, total_weight, exact):
    """Unpickle a summary."""
    def own(v):
        return np.array(v, dtype=np.float64)
    return _make_summary(own(values), own(rmin), own(rmax), own(wmin),
                         float(total_weight), bool(exact))


def _empty_array():
    return np.empty(0, dtype=np.float64)


ctypedef fused value_t:
    float
    double


cdef Py_ssize_t run_starts(
        const value_t[::1] sorted_values,   # IN (n,) increasing, NaN last
        double[::1] starts,                 # OUT (n + 1,)
        double* longest_run,                # OUT
) noexcept nogil:
    """The exact summary of an unweighted sorted column, as positions:
    where each run of equal values starts, and after the last where the
    values end (the first NaN: np.sort puts them last); returns the
    number of runs, and the longest one's length in ``longest_run``.

    With unit weights the ranks are positions in the sorted values: run
    i's entry has x_i = sorted_values[starts[i]], rmin_i = starts[i],
    rmax_i = starts[i + 1] and wmin_i = rmax_i - rmin_i. Counts below
    2**53 are exact in float64, so these are the very doubles a running
    sum of the counts gives (``exact_ranks``), and only the starts are
    written here: the prune (``select_pruned_unit``) walks them, and only
    the kept entries' values and ranks are made."""
    cdef Py_ssize_t k, n = sorted_values.shape[0], n_runs = 0, n_values = n
    cdef Py_ssize_t start = 0, longest = 0
    cdef value_t v, run_value = 0
    # one sequential pass: equal values are adjacent after the sort, so a
    # value unequal to its run's first value starts the next run
    for k in range(n):
        v = sorted_values[k]
        # NaN != NaN: the first NaN ends the values (they sort last)
        if v != v:
            n_values = k
            break
        if n_runs == 0 or v != run_value:
            longest = max(longest, k - start)
            start = k
            run_value = v
            starts[n_runs] = <double> k
            n_runs += 1
    longest_run[0] = <double> max(longest, n_values - start)
    starts[n_runs] = <double> n_values
    return n_runs


cdef Py_ssize_t aggregate_weighted(
        const value_t[::1] values,          # IN (n,)
        const double[::1] weights,          # IN (n,) finite, >= 0
        const Py_ssize_t[::1] order,        # IN (n,) argsort of values
        double[::1] x,                      # OUT (n,) distinct values
        double[::1] wmin,                   # OUT (n,) total weight of each
) noexcept nogil:
    """Distinct values of a weighted column (zero weights skipped) and their
    total weights, summed in sorted order; returns how many."""
    cdef Py_ssize_t k, row, n = values.shape[0], n_out = 0
    cdef value_t v
    cdef double w
    # the values are read through the argsort (the weights must follow
    # their rows); the weights of a run of equal values are summed in
    # sorted order, which fixes the float64 rounding for given data
    for k in range(n):
        row = order[k]
        v = values[row]
        if v != v:
            break
        w = weights[row]
        if w == 0.0:
            continue
        if n_out > 0 and v == x[n_out - 1]:
            wmin[n_out - 1] += w
        else:
            x[n_out] = v
            wmin[n_out] = w
            n_out += 1
    return n_out



# The chunk sort of an unweighted float32 column (most of the sketch's
# time) is an LSD radix sort of the values' bits: three counting passes
# of 11, 11 and 10 bits over keys that order like the floats (the sign
# bit flipped for positives, every bit for negatives), against
# ~log2(65536) = 16 comparison passes of numpy's sort. The sorted
# values are the same floats in the same order as np.sort's, so the
# summary is the same bit for bit, with two exceptions handled apart:
# NaNs are dropped (np.sort puts them last, and aggregation stops at the
# first), and a chunk holding -0.0 goes to np.sort, since -0.0 == 0.0
# and which of the two np.sort puts first (the value an entry keeps) is
# up to its algorithm.
#
# Where numpy sorts float32 in AVX-512 registers (numpy 2's x86-simd-sort,
# AVX512_SKX), np.sort itself is faster: 0.24 against 0.84 ms for a chunk
# of 65,536 values on an AVX-512 Xeon. It sorts every chunk then (NaN
# last, where aggregation stops; the same floats in the same order, so
# the same summaries).


def _numpy_sorts_in_avx512():
    """Whether this numpy sorts float32 with its AVX-512 kernel."""
    if int(np.__version__.split(".")[0]) < 2:
        return False
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        return False
    return bool(__cpu_features__.get("AVX512_SKX", False))


cdef bint _numpy_sort = _numpy_sorts_in_avx512()


def set_numpy_sort(bint enabled):
    """Sort unweighted float32 chunks with np.sort where numpy does it in
    AVX-512 (True, the default), or with the radix sort; returns the
    previous setting. The same summaries either way."""
    global _numpy_sort
    previous = _numpy_sort
    _numpy_sort = enabled and _numpy_sorts_in_avx512()
    return previous


cdef enum:
    RADIX_BITS = 11
    RADIX_BUCKETS = 2048            # 2 ** RADIX_BITS
    RADIX_PASSES = 3                # 11 + 11 + 10 bits

cdef union FloatBits:
    float f
    uint32_t u


cdef inline uint32_t float_key(uint32_t bits) noexcept nogil:
    """An unsigned key ordered like the float of ``bits`` (not NaN)."""
    if bits & 0x80000000u:
        return ~bits
    return bits | 0x80000000u


cdef inline float key_float(uint32_t key) noexcept nogil:
    """The float whose ``float_key`` is ``key``."""
    cdef FloatBits v
    v.u = key & 0x7fffffffu if key & 0x80000000u else ~key
    return v.f


cdef Py_ssize_t radix_sort_float32(float* values,        # IN/OUT (n,)
                                   Py_ssize_t n,
                                   uint32_t* keys,       # scratch (n,)
                                   uint32_t* spare,      # scratch (n,)
                                   Py_ssize_t* counts,   # scratch (3 * 2048,)
                                   ) noexcept nogil:
    """Sorts the non-NaN values of ``values`` into its first entries and
    returns how many there are; -1 (nothing sorted) if one is -0.0."""
    cdef Py_ssize_t i, m = 0, p, total, c
    cdef FloatBits v
    cdef uint32_t key
    cdef uint32_t* src = keys
    cdef uint32_t* dst = spare
    cdef uint32_t* swap
    cdef int shift
    memset(counts, 0, RADIX_PASSES * RADIX_BUCKETS * sizeof(Py_ssize_t))
    # pass 0: keys of the values that are not NaN, and the counts of all
    # three digits at once
    for i in range(n):
        v.f = values[i]
        if (v.u & 0x7fffffffu) > 0x7f800000u:     # NaN
            continue
        if v.u == 0x80000000u:                    # -0.0
            return -1
        key = float_key(v.u)
        keys[m] = key
        m += 1
        counts[key & 0x7ff] += 1
        counts[RADIX_BUCKETS + ((key >> 11) & 0x7ff)] += 1
        counts[2 * RADIX_BUCKETS + (key >> 22)] += 1
    if m == 0:
        return 0
    for p in range(RADIX_PASSES):
        shift = p * RADIX_BITS
        # a digit shared by every key moves nothing: skip its pass
        if counts[p * RADIX_BUCKETS + ((src[0] >> shift) & 0x7ff)] == m:
            continue
        total = 0
        for c in range(RADIX_BUCKETS):      # counts -> first positions
            i = counts[p * RADIX_BUCKETS + c]
            counts[p * RADIX_BUCKETS + c] = total
            total += i
        for i in range(m):                  # stable: keeps earlier passes
            key = src[i]
            c = p * RADIX_BUCKETS + ((key >> shift) & 0x7ff)
            dst[counts[c]] = key
            counts[c] += 1
        swap = src
        src = dst
        dst = swap
    for i in range(m):
        values[i] = key_float(src[i])
    return m

cdef void exact_ranks(const double[::1] w,     # IN (n,)
                      double[::1] rmin,        # OUT (n,)
                      double[::1] rmax,        # OUT (n,)
                      Py_ssize_t n) noexcept nogil:
    """Ranks of an exact summary: sequential sums, so rmin_i + w_i is
    rmax_i bit for bit and rmax_i is rmin_{i+1}."""
    cdef Py_ssize_t i
    cdef double total = 0.0
    # one running sum, written twice: rmax_i and rmin_{i+1} are the same
    # double, so neighbours satisfy (T) with equality and eps is 0
    for i in range(n):
        rmin[i] = total
        total = total + w[i]
        rmax[i] = total


def _check_weights(weights, n):
    """Weights as float64, validated: finite and non-negative."""
    weights = np.asarray(weights)
    if weights.shape != (n,):
        raise ValueError(
            f"weights must have the shape of values ({n},), "
            f"got {weights.shape}")
    weights = weights.astype(np.float64, copy=False)
    if n and not np.isfinite(weights).all():
        raise ValueError("weights must be finite")
    if n and weights.min() < 0.0:
        raise ValueError("weights must be non-negative")
    return weights


def _as_column(values):
    """``values`` as a 1-D array (not copied)."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    return values


cdef class _ExactBuilder:
    """Builds exact summaries of chunks of up to ``capacity`` values in
    buffers allocated once, optionally pruned before anything of chunk size
    is copied out (sketch_column calls it for every chunk)."""

    cdef object values_buf, x, rmin, rmax, wmin, radix_counts
    cdef Py_ssize_t capacity
    cdef bint single_precision

    def __init__(self, Py_ssize_t capacity, dtype):
        self.capacity = capacity
        # float32 sorts about twice as fast; anything else goes to float64.
        self.single_precision = dtype == np.float32
        self.values_buf = np.empty(
            capacity, dtype=np.float32 if self.single_precision
            else np.float64)
        self.x = np.empty(capacity, dtype=np.float64)
        # one more: the unweighted path's runs end with the values' end
        self.rmin = np.empty(capacity + 1, dtype=np.float64)
        self.rmax = np.empty(capacity, dtype=np.float64)
        self.wmin = np.empty(capacity, dtype=np.float64)
        # the radix sort's counts (its keys and their copy live in ``x``,
        # free until the sorted values are aggregated into it)
        self.radix_counts = np.empty(RADIX_PASSES * RADIX_BUCKETS,
                                     dtype=np.intp)

    def build(self, values, weights, Py_ssize_t max_size,
              sorted_order=None, bint scratch=False):
        """Exact summary of ``values`` (1-D, length <= capacity), pruned to
        ``max_size`` entries when that is >= 2 and the summary is larger.
        ``sorted_order``: the argsort of ``values`` (``chunk_orders``),
        kept by a caller that summarises them again with other weights.
        ``scratch``: ``values`` is the caller's copy, of the buffer's dtype
        and contiguous, which may be sorted in place (no copy is made)."""
        cdef Py_ssize_t n = values.shape[0], n_out
        if n > self.capacity:
            raise ValueError(f"chunk of {n} values > capacity {self.capacity}")
        if scratch and (values.dtype != self.values_buf.dtype
                        or not values.flags.c_contiguous
                        or not values.flags.writeable):
            raise ValueError("scratch values must be writeable, contiguous "
                             f"and of dtype {self.values_buf.dtype}")
        # else the chunk is copied into the builder's buffer (sorting in
        # place must not touch the caller's array); the buffers are reused
        # by every chunk, so a streamed column allocates them once
        if scratch:
            buf = values
        else:
            buf = self.values_buf[:n]
            buf[...] = values            # casts to the buffer's dtype
        cdef double[::1] x = self.x, rmin = self.rmin
        cdef double[::1] rmax = self.rmax, wmin = self.wmin
        cdef const float[::1] v32
        cdef const double[::1] v64, w_v
        cdef const Py_ssize_t[::1] order
        # unweighted: sort the values themselves (cheaper than an argsort);
        # weighted: an argsort, so each weight follows its value
        if weights is None:
            return self._unweighted(buf, max_size)
        w_v = _check_weights(weights, n)
        if sorted_order is None:
            order = np.argsort(buf).astype(np.intp, copy=False)
        elif sorted_order.shape[0] != n:
            raise ValueError("sorted_order must have one entry per value")
        else:
            order = sorted_order
        if self.single_precision:
            v32 = buf
            with nogil:
                n_out = aggregate_weighted(v32, w_v, order, x, wmin)
        else:
            v64 = buf
            with nogil:
                n_out = aggregate_weighted(v64, w_v, order, x, wmin)
        with nogil:
            exact_ranks(wmin, rmin, rmax, n_out)
        # the total weight is the last exact rank; a summary that fits is
        # copied out of the shared buffers as it is (and stays exact)
        total = rmax[n_out - 1] if n_out else 0.0
        if max_size < 2 or n_out <= max_size:
            return _make_summary(self.x[:n_out].copy(),
                                 self.rmin[:n_out].copy(),
                                 self.rmax[:n_out].copy(),
                                 self.wmin[:n_out].copy(), total, True)
        return self._pruned(n_out, total, max_size)

    def _unweighted(self, buf, Py_ssize_t max_size):
        """``build`` of an unweighted chunk ``buf`` (the builder's to sort):
        its runs' starts (``run_starts``, in the buffer ``rmin``), pruned
        on them (``select_pruned_unit``) when ``max_size`` >= 2 is
        smaller; only the entries kept get their values and ranks."""
        cdef double[::1] starts = self.rmin
        cdef const float[::1] v32
        cdef const double[::1] v64
        cdef Py_ssize_t n_runs, count
        cdef double longest_run
        if self.single_precision:
            sorted_values = self._sorted_float32(buf)
            v32 = sorted_values
            with nogil:
                n_runs = run_starts(v32, starts, &longest_run)
        else:
            buf.sort()                   # in place; NaN last
            sorted_values = v64 = buf
            with nogil:
                n_runs = run_starts(v64, starts, &longest_run)
        cdef double total = starts[n_runs]
        exact = max_size < 2 or n_runs <= max_size
        if exact:
            rmin = self.rmin[:n_runs].copy()
            rmax = self.rmin[1:n_runs + 1].copy()
        else:
            keep = np.empty(max_size, dtype=np.intp)
            count = _keep_unit(starts, n_runs, longest_run, total, max_size,
                               keep)
            kept = keep[:count]
            rmin = self.rmin[kept]
            rmax = self.rmin[kept + 1]
        values = np.asarray(sorted_values)[rmin.astype(np.intp)]
        return _make_summary(values.astype(np.float64), rmin, rmax,
                             rmax - rmin, total, exact)

    def _sorted_float32(self, buf):
        """The float32 chunk ``buf`` sorted in place, NaN left out (or
        last): the radix sort, or np.sort for a chunk with -0.0."""
        cdef float[::1] v = buf
        # two uint32 keys a row in the float64 buffer x (8 bytes a row)
        cdef uint32_t[::1] keys = self.x.view(np.uint32)
        cdef Py_ssize_t[::1] counts = self.radix_counts
        cdef Py_ssize_t n = v.shape[0], m = 0
        if n == 0:
            return buf
        if _numpy_sort:
            buf.sort()                   # in place; NaN last
            return buf
        with nogil:
            m = radix_sort_float32(&v[0], n, &keys[0], &keys[n], &counts[0])
        if m < 0:
            buf.sort()                   # in place; NaN last
            return buf
        return buf[:m]

    def _pruned(self, Py_ssize_t n_out, double total, Py_ssize_t max_size):
        """The exact summary of the buffers' first ``n_out`` entries,
        pruned to ``max_size`` before anything of chunk size is copied:
        only the kept entries leave the buffers (error 0: it was exact)."""
        cdef double[::1] rmin = self.rmin, rmax = self.rmax, wmin = self.wmin
        cdef Py_ssize_t count
        keep = np.empty(max_size, dtype=np.intp)
        cdef Py_ssize_t[::1] keep_v = keep
        cdef double[::1] scratch = np.empty(2 * n_out)
        with nogil:
            count = select_pruned(rmin[:n_out], rmax[:n_out], wmin[:n_out],
                                  total, 0.0, max_size, &keep_v[0],
                                  &scratch[0])
        kept = keep[:count]
        return _make_summary(self.x[kept], self.rmin[kept], self.rmax[kept],
                             self.wmin[kept], total, False)


cdef Py_ssize_t _keep_unit(double[::1] starts, Py_ssize_t n_runs,
                           double longest_run, double total,
                           Py_ssize_t max_size, keep):
    """``select_pruned_unit`` into the intp array ``keep``."""
    cdef Py_ssize_t[::1] keep_v = keep
    cdef Py_ssize_t count
    with nogil:
        count = select_pruned_unit(&starts[0], n_runs, longest_run, total,
                                   max_size, &keep_v[0])
    return count


def _check_max(name, value, minimum):
    value = operator.index(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


cdef class WeightedQuantileSummary:
    """A mergeable, prunable summary of (value, weight) pairs with a proven
    rank-error bound.

    Entries are (value, rmin, rmax, wmin), sorted by value, one per distinct
    value kept: rmin is a lower bound on the weight strictly below the value,
    rmax an upper bound on the weight at or below it, wmin a lower bound on
    the weight of the value itself (module docstring, invariant (I)).

    Build one with :meth:`from_data` (exact) or :meth:`empty`, combine with
    :meth:`merge`, shrink with :meth:`prune`; summaries are immutable.

    Attributes
    ----------
    values, rmin, rmax, wmin : ndarray of float64, read-only
    total_weight : float
        Total weight of the data summarised (exact, up to float64 rounding).
    size : int
        Number of entries.
    eps : float
        Proven bound on the rank error of :meth:`query`, as a fraction of
        ``total_weight``; 0 for exact summaries.
    is_exact : bool
        Whether every distinct value is present with its exact ranks.
    """

    cdef object _values, _rmin, _rmax, _wmin
    cdef double _total_weight, _eps
    cdef bint _exact

    def __cinit__(self):
        self._values = self._rmin = self._rmax = self._wmin = None
        self._total_weight = 0.0
        self._eps = 0.0
        self._exact = True

    def __init__(self):
        """An empty summary; see :meth:`from_data` and :meth:`empty`."""
        empty = _empty_array()
        empty.flags.writeable = False
        self._values = self._rmin = self._rmax = self._wmin = empty

    @classmethod
    def empty(cls):
        """The summary of no data."""
        return _make_summary(_empty_array(), _empty_array(), _empty_array(),
                             _empty_array(), 0.0, True)

    @classmethod
    def from_data(cls, values, weights=None):
        """Exact summary of a 1-D array of values (eps = 0).

        Parameters
        ----------
        values : array-like of shape (n,)
            NaN values are ignored.
        weights : array-like of shape (n,), default=None
            Non-negative, finite; None means 1 each. Zero-weight entries are
            ignored (all-zero weights give an empty summary).

        Raises
        ------
        ValueError
            On negative or non-finite weights, or mismatched shapes.
        """
        values = _as_column(values)
        return _ExactBuilder(values.shape[0], values.dtype).build(
            values, weights, 0)

    @property
    def values(self):
        """Values of the entries, increasing (read-only)."""
        return self._values.view()

    @property
    def rmin(self):
        """Lower bounds on the weight strictly below each value."""
        return self._rmin.view()

    @property
    def rmax(self):
        """Upper bounds on the weight at or below each value."""
        return self._rmax.view()

    @property
    def wmin(self):
        """Lower bounds on the weight of each value."""
        return self._wmin.view()

    @property
    def total_weight(self):
        """Total weight of the data summarised."""
        return self._total_weight

    @property
    def size(self):
        """Number of entries."""
        return self._values.shape[0]

    @property
    def eps(self):
        """Proven rank-error bound of :meth:`query` / total_weight."""
        return self._eps

    @property
    def is_exact(self):
        """Whether every distinct value is present with exact ranks."""
        return bool(self._exact)

    def __len__(self):
        return self._values.shape[0]

    def __repr__(self):
        return (f"WeightedQuantileSummary(size={self.size}, "
                f"total_weight={self._total_weight!r}, eps={self._eps:.3g}, "
                f"is_exact={self.is_exact})")

    def __reduce__(self):
        return (_rebuild, (self._values, self._rmin, self._rmax, self._wmin,
                           self._total_weight, self._exact))

    def merge(self, WeightedQuantileSummary other not None):
        """Summary of the union of both summaries' data (Theorem 2).

        Absolute rank errors add: E <= E_self + E_other, so
        ``eps <= (eps_self W_self + eps_other W_other) / W <= max`` of both.
        The result is exact when both are. Commutative: ``a.merge(b)`` and
        ``b.merge(a)`` hold the same entries bit for bit.
        """
        cdef Py_ssize_t n_a = self.size, n_b = other.size, n
        capacity = n_a + n_b
        x = np.empty(capacity, dtype=np.float64)
        rmin = np.empty(capacity, dtype=np.float64)
        rmax = np.empty(capacity, dtype=np.float64)
        wmin = np.empty(capacity, dtype=np.float64)
        cdef const double[::1] xa = self._values, xb = other._values
        cdef const double[::1] rmin_a = self._rmin, rmin_b = other._rmin
        cdef const double[::1] rmax_a = self._rmax, rmax_b = other._rmax
        cdef const double[::1] wmin_a = self._wmin, wmin_b = other._wmin
        cdef double[::1] x_v = x, rmin_v = rmin, rmax_v = rmax, wmin_v = wmin
        cdef double weight_a = self._total_weight
        cdef double weight_b = other._total_weight
        with nogil:
            n = merge_entries(xa, rmin_a, rmax_a, wmin_a, weight_a,
                              xb, rmin_b, rmax_b, wmin_b, weight_b,
                              x_v, rmin_v, rmax_v, wmin_v)
        return _make_summary(x[:n].copy(), rmin[:n].copy(), rmax[:n].copy(),
                             wmin[:n].copy(), weight_a + weight_b,
                             self._exact and other._exact)

    def prune(self, max_size):
        """Summary of the same data with at most ``max_size`` entries
        (Theorem 3).

        Keeps the first and last entries and a subset of the others with
        their bounds unchanged. Proven bound: the certified rank error grows
        by at most ``total_weight / (2 (max_size - 1))``, i.e.
        ``eps_after <= eps_before + 1 / (2 (max_size - 1))``. The threshold
        of the greedy walk is bisected to the smallest that keeps at most
        ``max_size`` entries (within a relative 2**-8), so the growth is
        usually much smaller. A summary that already fits is returned as is
        (and stays exact).

        Parameters
        ----------
        max_size : int, >= 2
        """
        cdef Py_ssize_t m = _check_max("max_size", max_size, 2)
        cdef Py_ssize_t n = self.size, count
        if n <= m:
            return self
        keep = np.empty(m, dtype=np.intp)
        cdef Py_ssize_t[::1] keep_v = keep
        cdef const double[::1] rmin = self._rmin, rmax = self._rmax
        cdef const double[::1] wmin = self._wmin
        cdef double weight = self._total_weight
        cdef double error = self._eps * self._total_weight
        cdef double[::1] scratch = np.empty(2 * n)
        with nogil:
            count = select_pruned(rmin, rmax, wmin, weight, error, m,
                                  &keep_v[0], &scratch[0])
        kept = keep[:count]
        return _make_summary(self._values[kept], self._rmin[kept],
                             self._rmax[kept], self._wmin[kept],
                             self._total_weight, False)

    def query(self, double rank):
        """A value whose true rank interval [r-(x), r+(x)] lies within
        ``eps * total_weight`` of ``rank`` (Theorem 1).

        Parameters
        ----------
        rank : float in [0, total_weight]

        Raises
        ------
        ValueError
            On an empty summary or a rank outside [0, total_weight].
        """
        # one query through the vectorised path, so that a single query and
        # cut_points answer a rank identically
        if self.size == 0:
            raise ValueError("query of an empty summary")
        if not (0.0 <= rank <= self._total_weight):
            raise ValueError(
                f"rank must be in [0, {self._total_weight}], got {rank}")
        targets = np.array([rank], dtype=np.float64)
        return float(self._values[self._query_indices(targets)[0]])

    def _query_indices(self, targets):
        """Indices of the answers to each rank of ``targets`` (float64)."""
        out = np.empty(targets.shape[0], dtype=np.intp)
        cdef const double[::1] rmin = self._rmin, rmax = self._rmax
        cdef const double[::1] wmin = self._wmin, t = targets
        cdef Py_ssize_t[::1] out_v = out
        cdef Py_ssize_t k
        with nogil:
            for k in range(t.shape[0]):
                out_v[k] = query_index(rmin, rmax, wmin, t[k])
        return out

    def cut_points(self, max_bin):
        """Interior cut points for at most ``max_bin`` bins of the data.

        A value v falls in bin ``searchsorted(cuts, v, side="right")``: a
        split at a cut sends the values < cut left.

        - Exact summary with at most ``max_bin`` distinct values: the
          midpoints of consecutive distinct values (float64; where the
          midpoint is not strictly between them, by overflow or rounding,
          the upper value), one bin per value.
        - Otherwise: the answers to the queries for ranks k W / max_bin,
          k = 1 .. max_bin - 1, sorted, deduplicated and without the minimum
          (no empty first bin).

        Bounds (second case, E = eps W, t_k = k W / max_bin): each answer
        u_k has err(u_k, t_k) <= E (Theorem 1), and so do the answers sorted
        (among u_0..u_k one is >= the k-th smallest, among u_k..u_B one is
        <= it, and r-, r+ are nondecreasing). So every cut is within E of
        its target rank, and every target within E of a cut or of the
        minimum (which answers t_0 = 0 exactly). For consecutive distinct
        sorted answers u_k < u_{k+1}, the weight strictly between them is
        r-(u_{k+1}) - r+(u_k) <= (t_{k+1} + E) - (t_k - E) = W / max_bin + 2E,
        and above the last cut W - r+(u_{B-1}) <= W / max_bin + E. A bin
        thus holds at most one bin's width plus 2E besides the weight of one
        value (its left cut; the minimum for the first bin), which no cut
        can split. No bin-width term enters the rank error of the cuts
        themselves.
        """
        cdef Py_ssize_t n_bins = _check_max("max_bin", max_bin, 1)
        n = self.size
        if n == 0 or n_bins == 1:
            return _empty_array()
        # few distinct values: a bin per value, cut halfway between
        # neighbours (the midpoint of two huge floats may overflow to inf,
        # and of two adjacent floats may round onto one of them)
        if self._exact and n <= n_bins:
            lo = self._values[:n - 1]
            hi = self._values[1:]
            with np.errstate(over="ignore", invalid="ignore"):
                mid = 0.5 * (lo + hi)
            return np.where((lo < mid) & (mid < hi), mid, hi)
        # equally spaced target ranks, clamped so that no rounding puts one
        # outside [0, W], where Theorem 1 is stated
        targets = (np.arange(1, n_bins, dtype=np.float64)
                   * self._total_weight / n_bins)
        np.minimum(targets, self._total_weight, out=targets)
        # answers repeat where one value is heavier than a bin; a cut at the
        # minimum would leave the first bin empty
        cuts = np.unique(self._values[self._query_indices(targets)])
        return cuts[cuts > self._values[0]]


def chunk_orders(values, chunk_size=65536):
    """The argsort of every chunk of ``values`` as ``sketch_column`` sorts
    them for a weighted summary: kept by a caller that summarises the same
    values again and again with other weights (the hessians of every tree
    of the approximate method on Dask), and passed back as ``orders``."""
    values = _as_column(values)
    dtype = np.float32 if values.dtype == np.float32 else np.float64
    chunk_size = _check_max("chunk_size", chunk_size, 1)
    return [np.argsort(np.asarray(values[start:start + chunk_size],
                                  dtype=dtype)).astype(np.intp, copy=False)
            for start in range(0, values.shape[0], chunk_size)]


def default_summary_size(max_bin):
    """Entries a summary keeps after each prune for ``max_bin`` cut points:
    ``8 * max_bin`` (as XGBoost), at least 2."""
    return max(8 * max_bin, 2)


def _checked_chunking(max_bin, chunk_size, summary_size):
    """``sketch_column``'s chunk size and summary size, checked (positive
    integers; a summary of at least 2 entries, ``8 * max_bin`` if None)."""
    max_bin = _check_max("max_bin", max_bin, 1)
    chunk_size = _check_max("chunk_size", chunk_size, 1)
    if summary_size is None:
        summary_size = default_summary_size(max_bin)
    return chunk_size, _check_max("summary_size", summary_size, 2)


def sketch_column(values, weights=None, max_bin=256, chunk_size=65536,
                  summary_size=None, orders=None):
    """Weighted quantile summary of one column, streamed in chunks.

    Each chunk gets an exact summary (sort and aggregate duplicates), pruned
    to ``summary_size`` entries, merged into the running summary, which is
    pruned again.

    Parameters
    ----------
    values : array-like of shape (n,)
        NaN values are ignored.
    weights : array-like of shape (n,), default=None
        Non-negative, finite; None means 1 each.
    max_bin : int, default=256
        The cut points the summary is meant for; sets the default size.
    chunk_size : int, default=65536
        Rows per chunk.
    summary_size : int, default=None
        Entries kept after each prune (>= 2); None means ``8 * max_bin``
        (as XGBoost).
    orders : list of ndarray, default=None
        ``chunk_orders(values, chunk_size)``, kept by the caller: the
        chunks are not sorted again (the same summary, bit for bit).

    Returns
    -------
    summary : WeightedQuantileSummary
        Its ``eps`` is the certified bound. A priori, with chunk weights
        W_1, ..., W_c, U_j = W_1 + ... + W_j and s = summary_size,
        eps W <= sum_j (W_j + U_j) / (2 (s - 1)) (Theorem 3 for both prunes
        of step j, Theorem 2 for the merge), which grows with the number of
        chunks; the bisected prune keeps the certified eps near
        1 / (2 (s - 1)) in practice.
    """
    chunk_size, summary_size = _checked_chunking(max_bin, chunk_size,
                                                 summary_size)
    values = _as_column(values)
    cdef Py_ssize_t n = values.shape[0]
    if weights is not None:
        weights = _check_weights(weights, n)
    running = WeightedQuantileSummary.empty()
    if n == 0:
        return running
    # the chunks are summarised in row order and merged left to right: the
    # same rows in the same order give the same summary bit for bit
    builder = _ExactBuilder(min(chunk_size, n), values.dtype)
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        part = builder.build(values[start:stop],
                             None if weights is None else weights[start:stop],
                             summary_size,
                             None if orders is None or weights is None
                             else orders[start // chunk_size])
        running = running.merge(part).prune(summary_size)
    return running


def sketch_columns(X, features, max_bins, weights=None, chunk_size=65536):
    """``sketch_column(X[:, f], weights, max_bin=max_bins[j])`` for every
    ``f = features[j]``, the same summaries bit for bit, in one pass over
    the rows of X.

    ``sketch_column`` of a column of a row-major X first needs the column
    copied out: a gather that reads every cache line of X, once per
    feature. Here the rows are taken a chunk at a time (``chunk_size``,
    as sketch_column's chunks), and each feature's chunk is summarised and
    merged into its running summary before the next chunk: the chunk's
    rows are read from memory once, and from cache by the other features.
    Each feature's chunks are the same values, built, merged and pruned in
    the same order as sketch_column's, so nothing changes but the order
    in which the features take turns.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
    features : sequence of int
        The columns to sketch.
    max_bins : sequence of int
        Each one's ``max_bin`` (summary size ``8 * max_bin``).
    weights : array-like of shape (n_rows,), default=None
    chunk_size : int, default=65536

    Returns
    -------
    list of WeightedQuantileSummary, one per feature.
    """
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    features = [operator.index(f) for f in features]
    max_bins = [_check_max("max_bin", b, 1) for b in max_bins]
    if len(max_bins) != len(features):
        raise ValueError("one max_bin per feature")
    if any(not 0 <= f < X.shape[1] for f in features):
        raise ValueError("a feature is outside [0, n_features)")
    chunk_size = _check_max("chunk_size", chunk_size, 1)
    sizes = [default_summary_size(b) for b in max_bins]
    cdef Py_ssize_t n = X.shape[0]
    if weights is not None:
        weights = _check_weights(weights, n)
    running = [WeightedQuantileSummary.empty() for _ in features]
    if n == 0:
        return running
    builder = _ExactBuilder(min(chunk_size, n), X.dtype)
    for start, stop, columns, scratch in _chunk_columns(X, features,
                                                        chunk_size):
        w = None if weights is None else weights[start:stop]
        for j in range(len(features)):
            part = builder.build(columns[j], w, sizes[j], scratch=scratch)
            running[j] = running[j].merge(part).prune(sizes[j])
    return running


cdef enum:
    # rows per step of gather_columns: 16 float32 values of a feature are
    # one cache line of its column
    GATHER_ROWS = 16


def _chunk_columns(X, features, Py_ssize_t chunk_size):
    """``(start, stop, columns, scratch)`` for each chunk of X's rows:
    ``columns[j]`` holds ``X[start:stop, features[j]]``. For a C-ordered
    float32 X they are gathered in one pass over the chunk's rows into a
    buffer of the caller's (``scratch``: it may be sorted in place),
    instead of a strided copy of each column, which reads the chunk's
    every cache line once per feature; otherwise they are views of X."""
    cdef Py_ssize_t n = X.shape[0], start, stop
    features = np.asarray(features, dtype=np.intp).reshape(-1)
    gather = X.dtype == np.float32 and X.flags.c_contiguous
    if gather:
        buffer = np.empty((features.shape[0], min(chunk_size, n)),
                          dtype=np.float32)
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        if not gather:
            rows = X[start:stop]
            yield start, stop, [rows[:, f] for f in features], False
            continue
        gather_columns(X, start, stop, features, buffer)
        yield start, stop, [buffer[j, :stop - start]
                            for j in range(features.shape[0])], True


def gather_columns(const float[:, ::1] X not None,      # IN (n_rows, n_features)
                   Py_ssize_t start, Py_ssize_t stop,   # IN rows start..stop-1
                   const Py_ssize_t[::1] features not None,  # IN (k,)
                   float[:, ::1] out not None):         # OUT (k, >= stop-start)
    """``out[j, :stop - start] = X[start:stop, features[j]]`` for every j,
    reading X's rows once, in order. A step takes GATHER_ROWS rows (in the
    first-level cache after the first feature reads them) and writes one
    cache line of each feature's column."""
    cdef Py_ssize_t n = stop - start, block, block_stop, j, f, r
    cdef Py_ssize_t n_out = features.shape[0]
    if not 0 <= start <= stop <= X.shape[0]:
        raise ValueError("rows start..stop must lie within X")
    if out.shape[0] != n_out or out.shape[1] < n:
        raise ValueError("out must have a row per feature, of >= stop - "
                         "start values")
    feature_array = np.asarray(features)
    if n_out and (feature_array.min() < 0
                  or feature_array.max() >= X.shape[1]):
        raise ValueError("a feature is outside [0, n_features)")
    block = 0
    with nogil:
        while block < n:
            block_stop = min(block + GATHER_ROWS, n)
            for j in range(n_out):
                f = features[j]
                for r in range(block, block_stop):
                    out[j, r] = X[start + r, f]
            block = block_stop
