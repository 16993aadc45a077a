"""LambdaMART gradients: per-query pairwise kernels, parallel over queries.

For a query, documents are ranked by their current scores (descending);
equal scores by increasing label, then by increasing row key (``row_keys``:
a hash of the row's data, weight and salt, which moves with the row), then
by row order, so that the lambdas do not depend on the order of a query's
rows. A pair (high, low) of documents with different labels, where
``high`` has the larger label, contributes the RankNet gradient of
``log(1 + exp(-(s_high - s_low)))`` weighted by ``|delta|``, the change of the
ranking metric if the two documents swapped places (1 for
``rank:pairwise``)::

    sigma   = sigmoid(s_high - s_low)
    delta   = |delta metric| / (|s_high - s_low| + 0.01)   (unless all scores tie)
    g_high += (sigma - 1) delta       g_low -= (sigma - 1) delta
    h_high += 2 max(sigma (1 - sigma), eps) delta       (same for h_low)

Pairs are chosen by ``pair_method``: ``TOPK`` pairs each of the ``num_pair``
best-ranked documents with every document below it; ``MEAN`` pairs every
document with ``num_pair`` random documents of other labels (a per-query
random stream seeded by ``(iteration, query)``, so results do not depend on
the number of threads). The query's pairs are then normalised: ``TOPK`` by
``log2(1 + S) / S`` where ``S = sum of -2 g`` over the pairs, ``MEAN`` by
``1 / num_pair`` (``normalise``; XGBoost's ``lambdarank_normalization``,
LightGBM's ``lambdarank_norm``). This follows XGBoost's LambdaMART.

Position debiasing (``lambdarank_unbiased``, Hu et al., "Unbiased
LambdaMART", WWW 2019, as XGBoost implements it): a document's *position*
is its place in the query's input order (the order it was shown in, for
click data). With ``t_plus[p]`` and ``t_minus[p]`` the estimated bias
ratios of the first ``k`` positions (1 at the start), a pair whose two
positions are both below ``k`` has its lambda and hessian divided by
``t_plus[pos_high] * t_minus[pos_low]``, and adds its cost
``c = log(1 / (1 - sigma)) |delta|`` to the row accumulators
``li[pos_high] += c / t_minus[pos_low]`` and ``lj[pos_low] += c /
t_plus[pos_high]``; after the round the caller sums them per position over
the queries and sets ``t_plus[p] = (li[p] / li[0])^(1 / (1 + norm))``
(``t_minus`` likewise from ``lj``).

NDCG uses the gains ``2^y - 1`` (``exp_gain``) or ``y`` and the discount
``1 / log2(2 + rank)``, ``|delta NDCG|`` divided by the ideal DCG of the
query's best ``ideal_k`` documents (XGBoost: the truncation level with
``TOPK``, the whole query with ``MEAN``; LightGBM: its truncation level);
MAP uses binary labels.
"""

import numpy as np
import scipy.sparse as sp

from skboost._openmp_helpers import check_n_threads

cimport cython
from cython.parallel cimport parallel, prange
from libc.math cimport fabs, log, log2, pow
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libc.stdlib cimport free, malloc, qsort

from ._math cimport sigmoid

cdef enum RankMetric:
    METRIC_PAIRWISE = 0
    METRIC_NDCG = 1
    METRIC_MAP = 2

cdef enum PairMethod:
    PAIRS_TOPK = 0
    PAIRS_MEAN = 1

METRIC_CODES = {"rank:pairwise": METRIC_PAIRWISE, "rank:ndcg": METRIC_NDCG,
                "rank:map": METRIC_MAP}
PAIR_METHOD_CODES = {"topk": PAIRS_TOPK, "mean": PAIRS_MEAN}


cdef struct PairOptions:
    # how a query's pairs are made and scaled (the same for every query)
    int method               # PAIRS_TOPK or PAIRS_MEAN
    Py_ssize_t num_pair      # top-k truncation, or random pairs per document
    Py_ssize_t ideal_k       # NDCG: ideal DCG over the best ideal_k (0: all)
    bint score_normalise     # |delta| / (|s_high - s_low| + 0.01)
    bint normalise           # the query's log2(1 + S) / S or 1 / num_pair

# the hessian floor of a pair (XGBoost's): a pair whose sigmoid saturates
# still adds a positive hessian, so a leaf's H never collapses to 0
cdef double EPS = 1e-16
# |s_high - s_low| + this divides delta (score_normalise): pairs already
# far apart in score weigh less, and a zero gap does not divide by zero
cdef double SCORE_DIFF_OFFSET = 0.01


cdef struct Keyed:
    double key
    double label      # ties of key: the lower label first
    uint64_t tie      # then the lower row key (``row_keys``)
    int64_t index     # then the lower index


cdef inline bint ranks_before(const Keyed* x, const Keyed* y) noexcept nogil:
    """Larger key first; equal keys by increasing label, then row key, then
    index (a total order)."""
    if x.key != y.key:
        return x.key > y.key
    if x.label != y.label:
        return x.label < y.label
    if x.tie != y.tie:
        return x.tie < y.tie
    return x.index < y.index


cdef int by_key_descending(const void* a, const void* b) noexcept nogil:
    """``ranks_before`` as a qsort comparator."""
    cdef const Keyed* x = <const Keyed*> a
    cdef const Keyed* y = <const Keyed*> b
    if ranks_before(x, y):
        return -1
    return 1 if ranks_before(y, x) else 0


cdef inline Keyed plain_keyed(double key, int64_t index) noexcept nogil:
    """An item ordered by key, then index alone."""
    cdef Keyed item
    item.key = key
    item.label = 0.0
    item.tie = 0
    item.index = index
    return item


# Queries up to this many documents are sorted by insertion (no call per
# comparison); longer ones by qsort. Either gives the one total order.
cdef Py_ssize_t INSERTION_SORT_MAX = 64


cdef void sort_ranked(Keyed* items, Py_ssize_t count) noexcept nogil:
    """Sort by ``ranks_before``."""
    cdef Py_ssize_t i, j
    cdef Keyed item
    if count > INSERTION_SORT_MAX:
        qsort(items, count, sizeof(Keyed), by_key_descending)
        return
    for i in range(1, count):
        item = items[i]
        j = i
        while j > 0 and ranks_before(&item, &items[j - 1]):
            items[j] = items[j - 1]
            j = j - 1
        items[j] = item


# 2^y - 1 of the labels 0 .. 31 (rank:ndcg's largest with exp_gain)
cdef double[32] EXP_GAINS
for _label in range(32):
    EXP_GAINS[_label] = pow(2.0, _label) - 1.0


cdef inline double gain_of(double label, bint exp_gain) noexcept nogil:
    # the table answers the usual small integer labels without a pow call
    if not exp_gain:
        return label
    if 0 <= label < 32 and label == <int> label:
        return EXP_GAINS[<int> label]
    return pow(2.0, label) - 1.0


cdef inline double discount(Py_ssize_t rank) noexcept nogil:
    return 1.0 / log2(2.0 + rank)


cdef inline uint64_t next_random(uint64_t* state) noexcept nogil:
    """minstd: x <- 48271 x mod (2^31 - 1)."""
    state[0] = (state[0] * 48271) % 2147483647
    return state[0]


cdef struct QueryView:
    # The documents of one query in rank order (rank 0: the highest score).
    # Rank r is row ``begin + order[r].index``; the per-rank arrays are
    # gathered once, so that the pair loop (count^2 / 2 pairs) reads them
    # contiguously and computes no gain or discount (pow, log2) per pair.
    Keyed* order
    double* label          # label of rank r
    double* score          # score of rank r
    double* gain           # NDCG gain of rank r (2^y - 1 or y)
    const double* discount # 1 / log2(2 + r), one table for every query
    double* n_relevant     # MAP: relevant documents among ranks 0..r
    double* precision_sum  # MAP: sum of label / (k + 1) over ranks 0..k
    float* pairs           # (gradient, hessian) of rank r, accumulated
    Py_ssize_t count
    int metric
    bint exp_gain
    double inverse_ideal   # NDCG: 1 / ideal DCG
    bint normalise_by_score  # divide |delta| by the score gap (not all tied)
    # position debiasing (NULL t_plus: off): the bias ratios of the first
    # n_positions positions, and the query's rows' cost accumulators
    const double* t_plus
    const double* t_minus
    Py_ssize_t n_positions
    double* li
    double* lj


cdef QueryView query_view(Keyed* order, double* values, float* pairs,
                          Py_ssize_t longest, const double* discount,
                          Py_ssize_t count, int metric,
                          bint exp_gain) noexcept nogil:
    """A query's view into one thread's buffers (each for the longest
    query): ``order`` the ranking, ``values`` 5 arrays of doubles,
    ``pairs`` the (gradient, hessian) sums."""
    cdef QueryView q
    q.order = order
    q.label = values
    q.score = values + longest
    q.gain = values + 2 * longest
    q.n_relevant = values + 3 * longest
    q.precision_sum = values + 4 * longest
    q.pairs = pairs
    q.discount = discount
    q.count = count
    q.metric = metric
    q.exp_gain = exp_gain
    q.inverse_ideal = 0.0
    q.normalise_by_score = False
    q.t_plus = NULL
    q.t_minus = NULL
    q.n_positions = 0
    q.li = NULL
    q.lj = NULL
    return q


cdef inline double delta_metric(QueryView* q, Py_ssize_t rank_a,
                                Py_ssize_t rank_b) noexcept nogil:
    """|change of the metric| if the documents at ranks a < b swapped."""
    cdef double between, r_a = rank_a + 1.0, r_b = rank_b + 1.0
    if q.metric == METRIC_NDCG:
        return fabs((q.gain[rank_a] - q.gain[rank_b])
                    * (q.discount[rank_a] - q.discount[rank_b])) * q.inverse_ideal
    if q.metric == METRIC_PAIRWISE:
        return 1.0
    # MAP: the relevant one moves from a to b (or b to a); each relevant
    # document strictly between loses (or gains) one relevant above it.
    between = q.precision_sum[rank_b - 1] - q.precision_sum[rank_a]
    if q.label[rank_a] > q.label[rank_b]:
        return fabs(q.n_relevant[rank_b] / r_b - q.n_relevant[rank_a] / r_a
                    - between) / q.n_relevant[q.count - 1]
    return fabs((q.n_relevant[rank_a] + 1.0) / r_a - q.n_relevant[rank_b] / r_b
                + between) / q.n_relevant[q.count - 1]


cdef inline double debias_pair(QueryView* q, Py_ssize_t high,
                               Py_ssize_t low, double s,
                               double delta) noexcept nogil:
    """Position debiasing of the pair at ranks (high, low): add its cost
    to the accumulators of the two positions; return what its lambda and
    hessian are divided by (1 when a position is beyond the tracked ones
    or its ratio is negligible)."""
    cdef Py_ssize_t pos_high = q.order[high].index, pos_low = q.order[low].index
    cdef double cost
    if pos_high >= q.n_positions or pos_low >= q.n_positions:
        return 1.0
    # cost = log(1 / (1 - sigma)) |delta|, the pair's logistic loss
    cost = -log(1.0 - s) * delta if s < 1.0 else 0.0
    if q.t_minus[pos_low] >= EPS:
        q.li[pos_high] += cost / q.t_minus[pos_low]
    if q.t_plus[pos_high] >= EPS:
        q.lj[pos_low] += cost / q.t_plus[pos_high]
    if q.t_minus[pos_low] >= EPS and q.t_plus[pos_high] >= EPS:
        return q.t_plus[pos_high] * q.t_minus[pos_low]
    return 1.0


cdef inline double add_pair(QueryView* q, Py_ssize_t rank_a,
                            Py_ssize_t rank_b) noexcept nogil:
    """Add the lambda gradients of the documents at two ranks; return the
    pair's ``-2 g`` (for the top-k normalisation), 0 for equal labels."""
    cdef Py_ssize_t high, low, swap_rank
    if q.label[rank_a] == q.label[rank_b]:
        return 0.0
    # delta_metric wants rank_a < rank_b; the gradient's sign wants the
    # higher label as `high`, whatever its rank
    if rank_a > rank_b:
        swap_rank = rank_a
        rank_a = rank_b
        rank_b = swap_rank
    high, low = rank_a, rank_b
    if q.label[high] < q.label[low]:
        high, low = low, high
    cdef double diff = q.score[high] - q.score[low]
    cdef double delta = delta_metric(q, rank_a, rank_b)
    if q.normalise_by_score:
        delta = delta / (fabs(diff) + SCORE_DIFF_OFFSET)
    cdef double s = sigmoid(diff)
    cdef double lam = (s - 1.0) * delta
    cdef double curvature = s * (1.0 - s)
    # fmax(curvature, EPS), inline (EPS for NaN, as fmax)
    cdef double h = 2.0 * (curvature if curvature > EPS else EPS) * delta
    cdef double debias
    if q.t_plus != NULL:
        debias = debias_pair(q, high, low, s, delta)
        lam = lam / debias
        h = h / debias
    q.pairs[2 * high] += <float> lam
    q.pairs[2 * low] -= <float> lam
    q.pairs[2 * high + 1] += <float> h
    q.pairs[2 * low + 1] += <float> h
    return -2.0 * lam


cdef void rank_documents(QueryView* q, const double* label,
                         const double* score, const uint64_t* tie,
                         bint score_normalise) noexcept nogil:
    """Sort the query's rows by score (ties: by label, then row key) and
    gather labels, scores and gains in rank order; clear the pair sums."""
    cdef Py_ssize_t r, row
    # sort keyed copies, then gather the per-rank arrays once: the pair
    # loop then reads label, score and gain by rank, contiguously
    for r in range(q.count):
        q.order[r].key = score[r]
        q.order[r].label = label[r]
        q.order[r].tie = tie[r]
        q.order[r].index = r
    sort_ranked(q.order, q.count)
    for r in range(q.count):
        row = q.order[r].index
        q.label[r] = label[row]
        q.score[r] = score[row]
        q.gain[r] = gain_of(label[row], q.exp_gain)
        q.pairs[2 * r] = 0.0
        q.pairs[2 * r + 1] = 0.0
    q.normalise_by_score = (score_normalise
                            and q.score[0] != q.score[q.count - 1])


cdef void prepare_metric(QueryView* q, Keyed* scratch,
                         Py_ssize_t ideal_k) noexcept nogil:
    """Ideal DCG (NDCG) of the best ``ideal_k`` documents (0: all), or
    relevant counts and precision sums (MAP)."""
    cdef Py_ssize_t r
    cdef Py_ssize_t n_ideal = (q.count if ideal_k <= 0
                               else min(ideal_k, q.count))
    cdef double ideal = 0.0, y
    if q.metric == METRIC_NDCG:
        # the gains in decreasing order (gains increase with the label)
        for r in range(q.count):
            scratch[r] = plain_keyed(q.gain[r], r)
        sort_ranked(scratch, q.count)
        for r in range(n_ideal):
            ideal = ideal + scratch[r].key * q.discount[r]
        q.inverse_ideal = 1.0 / ideal if ideal > 0 else 0.0
    elif q.metric == METRIC_MAP:
        # prefix sums over the ranks, so that delta_metric of any pair is
        # O(1) instead of a walk over the ranks between the two
        for r in range(q.count):
            y = q.label[r]
            q.n_relevant[r] = y + (q.n_relevant[r - 1] if r else 0.0)
            q.precision_sum[r] = (y / (r + 1.0)
                                  + (q.precision_sum[r - 1] if r else 0.0))


cdef double topk_pairs(QueryView* q, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef double total = 0.0
    # ranks in order, so the pairs (and the float32 sums they add to) come
    # in one fixed order: the lambdas are the same on every run
    for i in range(min(k, q.count)):
        for j in range(i + 1, q.count):
            total = total + add_pair(q, i, j)
    return total


cdef void mean_pairs(QueryView* q, Py_ssize_t num_pair, Keyed* by_label,
                     uint64_t seed) noexcept nogil:
    """Each document paired with ``num_pair`` random documents whose label
    differs (drawn from outside its block of equal labels)."""
    cdef Py_ssize_t r, i = 0, j, n_left, n_right, sample, member, other
    # minstd's state must lie in [1, 2^31 - 2]: the seed mapped into it
    cdef uint64_t state = seed % 2147483646 + 1
    # Documents grouped by label; a member of the block [i, j) of equal
    # labels draws its partners among the ranks outside the block:
    #
    #     by_label:  [ 0 .. i ) [ i .. j ) [ j .. count )
    #                  n_left     block      n_right
    #
    # a draw in [0, n_left + n_right) maps past the block when >= n_left
    for r in range(q.count):  # ranks, ordered by label (descending)
        by_label[r] = plain_keyed(q.label[r], r)
    sort_ranked(by_label, q.count)
    while i < q.count:
        j = i + 1
        while j < q.count and by_label[j].key == by_label[i].key:
            j = j + 1
        n_left = i
        n_right = q.count - j
        if n_left + n_right:
            for sample in range(num_pair):
                for member in range(i, j):
                    other = <Py_ssize_t> (next_random(&state)
                                          % <uint64_t> (n_left + n_right))
                    if other >= n_left:
                        other = other - i + j
                    add_pair(q, by_label[member].index, by_label[other].index)
        i = j


cdef void write_pairs(QueryView* q, float* out, double factor,
                      bint scaled) noexcept nogil:
    """The pair sums of each rank, times ``factor`` if ``scaled``, into the
    rows' (gradient, hessian) pairs ``out``."""
    cdef Py_ssize_t r, row
    for r in range(q.count):
        row = q.order[r].index
        if scaled:
            out[2 * row] = <float> (q.pairs[2 * r] * factor)
            out[2 * row + 1] = <float> (q.pairs[2 * r + 1] * factor)
        else:
            out[2 * row] = q.pairs[2 * r]
            out[2 * row + 1] = q.pairs[2 * r + 1]


cdef void query_lambdas(QueryView* q, const double* label,
                        const double* score, const uint64_t* tie,
                        float* out, const PairOptions* pairs,
                        uint64_t seed, Keyed* scratch) noexcept nogil:
    """The LambdaMART pairs of one query of at least two documents."""
    cdef double total
    # per query: rank (a sort), the metric's tables, the pairs, then the
    # pair sums written back to the query's rows in row order
    rank_documents(q, label, score, tie, pairs.score_normalise)
    prepare_metric(q, scratch, pairs.ideal_k)
    if pairs.method == PAIRS_TOPK:
        total = topk_pairs(q, pairs.num_pair)
        write_pairs(q, out, log2(1.0 + total) / total if total > 0 else 1.0,
                    pairs.normalise and total > 0)
    else:
        mean_pairs(q, pairs.num_pair, scratch, seed)
        write_pairs(q, out, 1.0 / pairs.num_pair, pairs.normalise)


def _check_queries(query_ptr, n_rows):
    ptr = np.asarray(query_ptr)
    if (ptr.ndim != 1 or ptr.shape[0] < 1 or ptr[0] != 0
            or ptr[ptr.shape[0] - 1] != n_rows):
        raise ValueError("query_ptr must start at 0 and end at the number "
                         "of rows")
    if np.any(np.diff(ptr) < 0):
        raise ValueError("query_ptr must be non-decreasing")


def lambda_gradient(const double[::1] y not None,            # IN (n,) labels
                    const double[::1] raw not None,          # IN (n,) scores
                    const int64_t[::1] query_ptr not None,   # IN (n_queries + 1,)
                    float[:, ::1] gpair not None,            # OUT (n, 2)
                    *, str objective, str pair_method, Py_ssize_t num_pair,
                    bint exp_gain, bint score_normalise, Py_ssize_t iteration,
                    int n_threads, Py_ssize_t ideal_k=0, bint normalise=True,
                    const uint64_t[::1] row_key=None,        # IN (n,) or None
                    const double[::1] t_plus=None,           # IN (k,) or None
                    const double[::1] t_minus=None,          # IN (k,) or None
                    double[::1] li=None,                     # OUT (n,) or None
                    double[::1] lj=None,                     # OUT (n,) or None
                    const int64_t[::1] query_number=None,    # IN (n_queries,) or None
                    Py_ssize_t n_numbered=0):
    """Fill ``gpair`` with the unweighted LambdaMART pairs of every query.

    With ``t_plus`` and ``t_minus`` (the position-bias ratios of the first
    ``k`` positions), the pairs are debiased and each row's position-cost
    accumulators ``li`` and ``lj`` (zeroed here) filled, as the module
    docstring says; the caller sums them per position.

    After the arrays, every argument is keyword-only: the objective and
    its pair method, ``num_pair``, the gain and score-normalisation flags,
    the boosting ``iteration`` (it seeds the random pairs), ``n_threads``
    (the threads of the parallel region over queries), ``ideal_k`` (NDCG's
    ideal DCG over the best ``ideal_k`` documents; 0: the whole query),
    ``normalise`` (the per-query scaling of the pairs) and the optional
    ``row_key``.

    The random pairs of query ``q`` are seeded by ``(iteration,
    query_number[q])`` among ``n_numbered`` queries (None: ``q`` among
    these queries): a part of a fit's queries (a Dask shard's) given their
    numbers among all of them draws the pairs one process draws.

    Rows of query ``q`` are ``query_ptr[q]:query_ptr[q + 1]``. Labels must be
    valid for the objective (checked by the caller: non-negative integers,
    binary for ``rank:map``). Documents of equal scores are ranked by
    increasing label, then by increasing ``row_key`` (``row_keys``: a key
    that moves with the row, so that the lambdas do not depend on the order
    of the rows within a query), then by row order; None: all keys 0.
    """
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n = y.shape[0]
    row_key = _checked_lambda_inputs(raw, query_ptr, objective, pair_method,
                                     num_pair, ideal_k, gpair, row_key, n)
    cdef bint unbiased = _checked_bias_inputs(t_plus, t_minus, li, lj, n)
    cdef Py_ssize_t n_queries = query_ptr.shape[0] - 1
    query_number, n_numbered = _checked_query_numbers(query_number,
                                                      n_numbered, n_queries)
    cdef Py_ssize_t longest = int(np.max(np.diff(query_ptr))) if n_queries else 0
    gpair[:, :] = 0.0
    if n == 0 or longest == 0:
        return
    # the discounts 1 / log2(2 + rank) once for the longest query, shared
    # read-only by every thread
    discount_table = np.empty(longest, dtype=np.float64)
    cdef double[::1] discounts = discount_table
    cdef Py_ssize_t r
    for r in range(longest):
        discounts[r] = discount(r)
    no_memory = np.zeros(n_queries, dtype=np.uint8)
    cdef PairOptions pairs
    pairs.method = PAIR_METHOD_CODES[pair_method]
    pairs.num_pair = num_pair
    pairs.ideal_k = ideal_k
    pairs.score_normalise = score_normalise
    pairs.normalise = normalise
    _all_queries(y, raw, query_ptr, row_key, discounts,
                 METRIC_CODES[objective], pairs, exp_gain,
                 _Seeds(iteration=iteration, number=query_number,
                        n_numbered=n_numbered), gpair, no_memory, n_threads,
                 t_plus if unbiased else None, t_minus if unbiased else None,
                 li if unbiased else None, lj if unbiased else None)
    if no_memory.any():
        raise MemoryError("no memory for the per-query ranking buffers")


def _checked_query_numbers(query_number, Py_ssize_t n_numbered,
                           Py_ssize_t n_queries):
    """The queries' numbers among all of a fit's (``arange`` for None) and
    how many there are, checked (the nogil loop indexes without checks)."""
    if query_number is None:
        return np.arange(n_queries, dtype=np.int64), n_queries
    numbers = np.asarray(query_number)
    if numbers.shape[0] != n_queries:
        raise ValueError("query_number must have one entry per query")
    if n_queries and (numbers.min() < 0 or numbers.max() >= n_numbered):
        raise ValueError("query_number must lie in [0, n_numbered)")
    return query_number, n_numbered


cdef class _Seeds:
    """What seeds each query's random pairs: ``iteration * n_numbered +
    number[q]``."""
    cdef Py_ssize_t iteration
    cdef Py_ssize_t n_numbered
    cdef const int64_t[::1] number

    def __cinit__(self, *, Py_ssize_t iteration, const int64_t[::1] number,
                  Py_ssize_t n_numbered):
        self.iteration = iteration
        self.number = number
        self.n_numbered = n_numbered


def _checked_bias_inputs(t_plus, t_minus, li, lj, Py_ssize_t n):
    """Whether the pairs are debiased (all four arrays given), after
    checking their sizes (the nogil loop indexes without checks)."""
    given = [a is not None for a in (t_plus, t_minus, li, lj)]
    if not any(given):
        return False
    if not all(given):
        raise ValueError("position debiasing needs t_plus, t_minus, li and "
                         "lj together")
    if t_plus.shape[0] != t_minus.shape[0] or t_plus.shape[0] < 1:
        raise ValueError("t_plus and t_minus must have the same length >= 1")
    if li.shape[0] != n or lj.shape[0] != n:
        raise ValueError("li and lj must have one entry per row")
    li[:] = 0.0   # the accumulators start each round at 0
    lj[:] = 0.0
    return True


def _checked_lambda_inputs(raw, query_ptr, str objective, str pair_method,
                           Py_ssize_t num_pair, Py_ssize_t ideal_k, gpair,
                           row_key, Py_ssize_t n):
    """lambda_gradient's checks (the nogil loop indexes without checks);
    returns the row keys, zeros for None."""
    if raw.shape[0] != n or gpair.shape[0] != n:
        raise ValueError("y, raw and gpair must have the same number of rows")
    if gpair.shape[1] != 2:
        raise ValueError("gpair must hold (gradient, hessian) pairs")
    if objective not in METRIC_CODES or pair_method not in PAIR_METHOD_CODES:
        raise ValueError(f"unknown ranking objective {objective!r} or pair "
                         f"method {pair_method!r}")
    if num_pair < 1:
        raise ValueError("num_pair must be at least 1")
    if ideal_k < 0:
        raise ValueError("ideal_k must be >= 0 (0: the whole query)")
    _check_queries(query_ptr, n)
    if row_key is None:
        row_key = np.zeros(n, dtype=np.uint64)
    if row_key.shape[0] != n:
        raise ValueError("row_key must have one entry per row")
    return row_key


cdef struct Debias:
    # the bias ratios of the tracked positions and every row's cost
    # accumulators (NULL t_plus: no debiasing)
    const double* t_plus
    const double* t_minus
    Py_ssize_t n_positions
    double* li
    double* lj


cdef Debias debias_of(const double[::1] t_plus, const double[::1] t_minus,
                      double[::1] li, double[::1] lj):
    """The arrays of position debiasing as pointers (all NULL without)."""
    cdef Debias bias
    bias.t_plus = &t_plus[0] if t_plus is not None else NULL
    bias.t_minus = &t_minus[0] if t_plus is not None else NULL
    bias.n_positions = t_plus.shape[0] if t_plus is not None else 0
    bias.li = &li[0] if t_plus is not None else NULL
    bias.lj = &lj[0] if t_plus is not None else NULL
    return bias


cdef inline void attach_bias(QueryView* q, const Debias* bias,
                             Py_ssize_t begin) noexcept nogil:
    """Debias the query whose rows start at ``begin``: the shared ratios,
    its own rows of the accumulators."""
    q.t_plus = bias.t_plus
    q.t_minus = bias.t_minus
    q.n_positions = bias.n_positions
    q.li = bias.li + begin
    q.lj = bias.lj + begin


cdef void _all_queries(const double[::1] y, const double[::1] raw,
                       const int64_t[::1] query_ptr,
                       const uint64_t[::1] row_key,
                       const double[::1] discounts, int metric,
                       PairOptions pairs, bint exp_gain,
                       _Seeds seeds,
                       float[:, ::1] gpair, unsigned char[::1] failed,
                       int n_threads, const double[::1] t_plus,
                       const double[::1] t_minus, double[::1] li,
                       double[::1] lj) noexcept:
    """Every query's lambdas, in parallel over queries; a query whose
    thread got no buffers is flagged in ``failed``."""
    cdef Py_ssize_t n_queries = query_ptr.shape[0] - 1
    cdef Py_ssize_t longest = discounts.shape[0]
    cdef Py_ssize_t g, begin, q_count
    cdef QueryView q
    cdef Keyed* order_buffer = NULL
    cdef double* values_buffer = NULL
    cdef float* pairs_buffer = NULL
    # position debiasing: each query writes its own rows of li and lj
    cdef Debias bias = debias_of(t_plus, t_minus, li, lj)
    cdef const int64_t* number = &seeds.number[0] if n_queries else NULL
    cdef uint64_t first_seed = <uint64_t> (seeds.iteration * seeds.n_numbered)
    # A query's documents are its own rows of y, raw and gpair: queries are
    # independent tasks, each thread with buffers sized for the longest
    # query (allocated once per thread, not per query). Dynamic: query
    # lengths vary, and a query costs up to its length squared. The random
    # pairs are seeded by (iteration, the query's number among the fit's),
    # never by the thread or the worker, so the gradients do not depend on
    # the thread count or on how queries are spread over workers.
    with nogil, parallel(num_threads=n_threads):
        order_buffer = <Keyed*> malloc(2 * longest * sizeof(Keyed))
        values_buffer = <double*> malloc(5 * longest * sizeof(double))
        pairs_buffer = <float*> malloc(2 * longest * sizeof(float))
        for g in prange(n_queries, schedule="dynamic"):
            begin = query_ptr[g]
            q_count = query_ptr[g + 1] - begin
            if q_count < 2:
                continue
            if (order_buffer == NULL or values_buffer == NULL
                    or pairs_buffer == NULL):
                failed[g] = 1
                continue
            # assigned whole, so that q is private to each thread
            q = query_view(order_buffer, values_buffer, pairs_buffer,
                           longest, &discounts[0], q_count, metric, exp_gain)
            if bias.t_plus != NULL:
                attach_bias(&q, &bias, begin)
            query_lambdas(&q, &y[begin], &raw[begin], &row_key[begin],
                          &gpair[begin, 0], &pairs,
                          first_seed + <uint64_t> number[g],
                          order_buffer + longest)
        free(order_buffer)
        free(values_buffer)
        free(pairs_buffer)


# --------------------------------------------------------------------------
# Row keys: the tie-break of documents with equal scores and equal labels
# --------------------------------------------------------------------------

cdef inline uint64_t mix(uint64_t h) noexcept nogil:
    """splitmix64's finaliser: a bijection of 64 bits that spreads each."""
    h = (h ^ (h >> 30)) * <uint64_t> 0xbf58476d1ce4e5b9
    h = (h ^ (h >> 27)) * <uint64_t> 0x94d049bb133111eb
    return h ^ (h >> 31)


cdef inline uint64_t add_entry(uint64_t h, int64_t feature,
                               float value) noexcept nogil:
    """Chain one entry (feature, value) into the hash ``h``; missing (NaN)
    and zero values are skipped, so that a dense row and a sparse row of the
    same values hash alike whatever their absent entries mean."""
    cdef uint32_t bits
    if value != value or value == 0:
        return h
    memcpy(&bits, &value, sizeof(float))
    return mix(h ^ ((<uint64_t> feature << 32) | bits))


cdef inline uint64_t finish_key(uint64_t h, double weight) noexcept nogil:
    cdef uint64_t bits
    memcpy(&bits, &weight, sizeof(double))
    return mix(h ^ mix(bits))


def row_keys(X, const double[::1] weight not None, uint64_t salt,
             int n_threads):
    """A 64-bit key per row from its data, its weight and ``salt``.

    The key moves with the row: rows in another order get the same keys,
    which is what makes the ranking of documents with equal scores and
    labels (``lambda_gradient``) independent of the order of the rows
    within a query. The key chains a hash of each present, non-zero entry
    (feature index and float32 bits, in feature order), then the weight,
    starting from ``salt`` (the ranker's integer ``random_state``).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, C order, or \
scipy.sparse matrix
        NaN = missing.
    weight : ndarray of shape (n_rows,)
    salt : int
    n_threads : int

    Returns
    -------
    keys : ndarray of shape (n_rows,), uint64
    """
    n_threads = check_n_threads(n_threads)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        indptr = X.indptr.astype(np.int64)
        if (indptr[0] != 0 or np.any(np.diff(indptr) < 0)
                or not indptr[X.shape[0]] == X.indices.shape[0]
                == X.data.shape[0]):
            raise ValueError("X is not a valid CSR matrix")
        return _sparse_row_keys(indptr,
                                X.indices.astype(np.int64),
                                X.data.astype(np.float32, copy=False),
                                weight, salt, n_threads)
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2 or X.shape[0] != weight.shape[0]:
        raise ValueError("X must be 2-D with one weight per row")
    return _dense_row_keys(X, weight, salt, n_threads)


def _dense_row_keys(const float[:, ::1] X, const double[::1] weight,
                    uint64_t salt, int n_threads):
    keys = np.empty(X.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] out = keys
    cdef Py_ssize_t i, j
    cdef uint64_t h
    cdef uint64_t start = mix(salt ^ <uint64_t> 0x9e3779b97f4a7c15)
    with nogil:
        for i in prange(X.shape[0], schedule="static", num_threads=n_threads):
            h = start
            for j in range(X.shape[1]):
                h = add_entry(h, j, X[i, j])
            out[i] = finish_key(h, weight[i])
    return keys


def _sparse_row_keys(const int64_t[::1] indptr, const int64_t[::1] indices,
                     const float[::1] data, const double[::1] weight,
                     uint64_t salt, int n_threads):
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if weight.shape[0] != n:
        raise ValueError("X must have one weight per row")
    keys = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] out = keys
    cdef Py_ssize_t i, e
    cdef uint64_t h
    cdef uint64_t start = mix(salt ^ <uint64_t> 0x9e3779b97f4a7c15)
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            h = start
            for e in range(indptr[i], indptr[i + 1]):
                h = add_entry(h, indices[e], data[e])
            out[i] = finish_key(h, weight[i])
    return keys
