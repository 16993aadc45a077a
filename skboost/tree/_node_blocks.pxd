# The presorted blocks regrouped by the open nodes of a level (see
# _node_blocks.pyx), and the C views of them that the exact scan
# (_exact_scan.pyx) reads and splits while it scans.

from libc.string cimport memcpy

from ._common cimport int32_t, int64_t, uint8_t
from ._presorted cimport SortedColumns


ctypedef struct BlockData:
    # presorted entries (the originals or the working copy)
    const int64_t* col_ptr
    float* values
    int32_t* rows


ctypedef struct GroupData:
    const int64_t* ptr      # (n_features + 1,) room of each feature's groups
    int64_t* count          # (n_features,)
    int32_t* slot
    int64_t* end


ctypedef struct SplitStep:
    # a planned split of the groups (see NodeBlocks.split)
    BlockData src
    BlockData dst
    GroupData now
    GroupData out
    const int32_t* row_slot
    const int32_t* left_slot
    # per current slot: its children hold comparable numbers of rows
    const uint8_t* balanced
    float* spare_values    # one buffer per thread, spare_stride apart
    int32_t* spare_rows
    Py_ssize_t spare_stride



cdef class NodeBlocks:
    cdef readonly SortedColumns columns
    cdef readonly Py_ssize_t longest     # entries of the longest block
    cdef readonly Py_ssize_t n_slots
    cdef readonly object values          # the originals or the working copy
    cdef readonly object rows
    cdef readonly object group_ptr
    cdef readonly object group_count
    cdef readonly object group_slot
    cdef readonly object group_end
    cdef object _work_values
    cdef object _work_rows
    cdef object _pending         # the arrays of a planned split, or None
    cdef object _spare_values    # per-thread buffers of a split under way
    cdef object _spare_rows

    cdef SplitStep _split_step(self, int n_threads) except *


cdef BlockData _block_data(col_ptr, values, rows)
cdef GroupData _group_data(ptr, count, slot, end)
cdef void split_feature_groups(int32_t f, const BlockData* src,
                               const BlockData* dst, const GroupData* now,
                               const GroupData* out, const int32_t* row_slot,
                               const int32_t* left_slot, float* spare_values,
                               int32_t* spare_rows) noexcept nogil


cdef inline void split_step_feature(const SplitStep* step, int32_t f,
                                    int tid) noexcept nogil:
    split_feature_groups(f, &step.src, &step.dst, &step.now, &step.out,
                         step.row_slot, step.left_slot,
                         step.spare_values + tid * step.spare_stride,
                         step.spare_rows + tid * step.spare_stride)



cdef inline int64_t close_child_groups(const BlockData* dst,
                                       const GroupData* out, int64_t next,
                                       int32_t left, int64_t n_left,
                                       int64_t* written,
                                       const float* spare_values,
                                       const int32_t* spare_rows,
                                       int64_t n_right) noexcept nogil:
    """After a group's entries were routed: record the left child's group
    (its n_left entries end at ``written``) and the right child's, whose
    n_right entries are copied from the spare buffers after it. ``next``
    is the index of the next group of ``out``; returns the one after."""
    if n_left:
        out.slot[next] = left
        out.end[next] = written[0]
        next += 1
    if n_right:
        memcpy(&dst.values[written[0]], spare_values,
               n_right * sizeof(float))
        memcpy(&dst.rows[written[0]], spare_rows, n_right * sizeof(int32_t))
        written[0] += n_right
        out.slot[next] = left + 1
        out.end[next] = written[0]
        next += 1
    return next

