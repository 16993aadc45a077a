"""The class trees of a boosting round grown side by side.

A multiclass round grows one tree per class on that class's gradients, all
computed before the round: the K trees do not depend on each other. Grown
one after another, each with every thread, a tree's serial parts (the
driver's Python work per level, small nodes, thread start-up and barriers
of many short parallel regions) leave the other cores idle. Grown side by
side, a worker per thread, each tree single-threaded, one tree's serial
parts overlap another's kernels (which release the GIL). Each worker has its
own finder (row partition, histogram pool) over the one binned copy of the
data.

The trees are the same bit for bit: a tree does not depend on the number
of threads, and nothing random is drawn while the trees grow (this path is
taken only without column sampling; row samples are drawn before, in class
order, as the sequential loop draws them).
"""

import queue
from concurrent.futures import ThreadPoolExecutor

from ..tree._column_sampler import ColumnSampler
from ..tree.driver import GrowthDriver
from ..tree.finders import HistFinder


def class_workers(grower, n_outputs, n_threads, n_parallel, refits_leaves):
    """How many class trees of a round to grow at once: one per thread (at
    most one per class) for the hist method on dense data without column
    sampling; 1 (one after another) otherwise."""
    p = grower.params
    if (n_outputs < 2 or n_threads < 2 or n_parallel != 1 or refits_leaves
            or type(grower.finder) is not HistFinder
            or min(p.colsample_bytree, p.colsample_bylevel,
                   p.colsample_bynode) < 1.0):
        return 1
    return min(n_outputs, n_threads)


def _single_threaded_copy(grower):
    """A grower like ``grower`` with its own finder state, one thread, over
    the same binned data."""
    f = grower.finder
    finder = HistFinder(f.binned, f.thresholds, f.params, 1, weight=f.weight,
                        categorical=f.categorical)
    sampler = ColumnSampler(grower.sampler.n_features, 1.0, 1.0, 1.0,
                            grower.sampler.rng)
    return GrowthDriver(finder, grower.params, sampler)


def grow_class_trees(grower, gpair, actives, n_workers, finish):
    """Grow the tree of every class (``gpair[k]`` on the rows
    ``actives[k]``) with ``n_workers`` single-threaded growers; call
    ``finish(k, tree, leaf_rows)`` in the worker right after class k's tree
    (before its grower is reused: ``leaf_rows`` refers to its partition).
    Returns the trees in class order."""
    copies = getattr(grower, "_class_copies", None)
    if copies is None or len(copies) < n_workers:
        copies = [_single_threaded_copy(grower) for _ in range(n_workers)]
        grower._class_copies = copies    # reused by the following rounds
    idle = queue.SimpleQueue()
    for copy in copies[:n_workers]:
        idle.put(copy)

    def grow(k):
        worker = idle.get()
        try:
            tree, leaf_rows = worker.grow(gpair[k], actives[k])
            finish(k, tree, leaf_rows)
            return tree
        finally:
            idle.put(worker)

    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        return list(pool.map(grow, range(len(actives))))
