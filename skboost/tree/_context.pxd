from ._gain cimport RegParams, make_reg_params


cdef class SplitContext:
    # The fixed settings of the split kernels (see _context.pyx), validated
    # at construction; the kernels read these C fields once, before their
    # nogil loops.
    cdef readonly double reg_lambda, reg_alpha, max_delta_step, min_child_weight
    # fixed-point scales of the tree's gradient sums (1.0 when unused)
    cdef readonly double scale_g, scale_h
    cdef readonly int n_threads, max_cat_to_onehot, max_cat_threshold


cdef inline RegParams reg_params(SplitContext context):
    """The context's regularisation as the struct of ``_gain.pxd``."""
    return make_reg_params(context.reg_lambda, context.reg_alpha,
                           context.max_delta_step, context.min_child_weight)
