"""The ``Shard`` as a Dask actor: its long calls on a thread of its own.

Dask runs an actor's plain methods on the worker's actor thread and
registers that thread among the worker's *active* ones, whose stacks the
worker's statistical profiler walks every 10 ms
(``distributed.worker.profile.interval``), holding the GIL for each walk.
A shard's rounds are one long call with a deep stack in which the
shard's thread needs the GIL between every kernel and every exchange
step: each walk delays it, and the other shards wait for it at the next
exchange (the rounds of a fit on two local workers took ~7% longer with
the profiler on).

A coroutine method, on the other hand, is awaited on the worker's event
loop and registers no thread. ``ActorShard``'s long methods are such
coroutines: each hands its work to the shard's own single thread (always
the same one: the OpenMP team of a multi-threaded worker is kept from
call to call) and awaits it, so the event loop stays free for the abort
calls, the heartbeats and, without direct links, the peers' histograms.
The profiler stays on for everything else the worker runs (users'
dashboards unchanged); the shard's training no longer shows in it.
Spark's tasks call ``Shard`` itself, directly (``skboost.spark.task``).
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor
import contextvars
import functools

from .train import Shard

__all__ = ["ActorShard"]


def _on_own_thread(method):
    """``method`` of ``Shard`` as a coroutine that runs it on the shard's
    own thread (with the caller's context variables: ``get_worker``)."""
    @functools.wraps(method)
    async def run(self, *args):
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, method,
                                 self, *args)
        return await loop.run_in_executor(self._own_thread(), call)
    return run


class ActorShard(Shard):
    """``Shard`` whose calls that train (the rounds, the sketch, the
    binning) run off the profiled actor thread (see the module's
    docstring)."""

    _thread = None

    def _own_thread(self):
        # one thread, made on first use; it ends when the shard is
        # released (the executor is collected)
        if self._thread is None:
            self._thread = ThreadPoolExecutor(
                1, thread_name_prefix="skboost-shard")
        return self._thread

    # only methods the shard never calls itself (a call from within
    # would get a coroutine)
    grow_rounds = _on_own_thread(Shard.grow_rounds)
    grow_dart_rounds = _on_own_thread(Shard.grow_dart_rounds)
    start_fit = _on_own_thread(Shard.start_fit)
    setup = _on_own_thread(Shard.setup)
