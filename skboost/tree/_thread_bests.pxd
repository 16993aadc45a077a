# The per-thread best candidates of a parallel split scan, and their merge:
# written once here for the three scans that keep them (_hist_split,
# _vector_hist, _exact_scan).
#
# Each thread of a scan keeps its own best candidate of every node, so the
# threads never write to shared memory while they scan. Thread t's best of
# node k is best[t * stride + k]:
#
#     thread 0:  [ node 0 | node 1 | ... | node n-1 | (padding) ]
#     thread 1:  [ node 0 | node 1 | ... | node n-1 | (padding) ]   <- stride
#     ...
#
# After the scan, node k's winner is the best of its column under the total
# order of _common.is_better (gain, then feature, then threshold). The order
# is total, so the winner is the same whichever thread found which
# candidate: the merged result does not depend on the number of threads or
# on how the dynamic schedule handed out the tasks.

from ._common cimport SplitCandidate, is_better
from ._hist_candidate cimport HistCandidate, VectorCandidate


# The records the scans keep per thread: the exact scan's bare candidate,
# and the histogram scans' candidates that carry a SplitCandidate as
# their ``split`` field.
ctypedef fused thread_best_t:
    SplitCandidate
    HistCandidate
    VectorCandidate


cdef inline const SplitCandidate* candidate_of(
        const thread_best_t* record) noexcept nogil:
    """The SplitCandidate inside a per-thread record."""
    if thread_best_t is SplitCandidate:
        return record
    else:
        return &record.split


cdef inline int winning_thread(const thread_best_t* best, Py_ssize_t stride,
                               int n_threads, Py_ssize_t k) noexcept nogil:
    """The thread whose best of node k wins under the total order (0 when
    thread 0's stands); ``best[t * stride + k]`` is thread t's. A thread
    that found no admissible split (feature < 0) never wins."""
    cdef int t, winner = 0
    cdef const SplitCandidate* c
    for t in range(1, n_threads):
        c = candidate_of(&best[t * stride + k])
        if c.feature >= 0 and is_better(c.gain, c.feature, c.threshold,
                                        candidate_of(&best[winner * stride
                                                           + k])):
            winner = t
    return winner


cdef inline void merge_thread_bests(thread_best_t* best, Py_ssize_t stride,
                                    int n_threads,
                                    Py_ssize_t n_nodes) noexcept nogil:
    """Every node's winner copied into thread 0's row (``best[k]``)."""
    cdef Py_ssize_t k
    cdef int t
    for k in range(n_nodes):
        t = winning_thread(best, stride, n_threads, k)
        if t > 0:
            best[k] = best[t * stride + k]
