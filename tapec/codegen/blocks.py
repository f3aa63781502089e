"""Blocked, multi-threaded evaluation of large fused elementwise kernels.

A fused kernel written as whole-array NumPy statements makes one pass over memory per
operation, each through arrays larger than the caches. Evaluated on blocks of rows
that fit in a core's L2 cache, every temporary stays in cache; the blocks are shared
out among `tapec.num_threads()` threads (NumPy's loops release the GIL), each taking
one contiguous run of blocks. Each element is computed by the same operations as
unblocked, so the values are the same.

Generated code calls `tapec_blocked(kernel, operands, sliced, shape, dtype, scratch=k)`:
`kernel` computes the fused expression from its operands into the block of the output,
through k scratch blocks its thread reuses for every block (its ufuncs write with
`out=`: no temporary is allocated, no result copied; fuse/kernel_printer.py);
`sliced[k]` says whether operand k spans the result's first axis (its rows are cut
along with the result's) or is broadcast along it (passed whole).

Kernels printed for numexpr call it through `NumexprThreads`, which runs them on the
same `tapec.num_threads()` threads.
"""
from __future__ import annotations

import contextvars
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config

BLOCK_BYTES = 256 * 1024      # per operand block: several temporaries fit in a 1-2 MiB L2
MIN_SIZE = 1 << 17            # elements; below this a whole-array pass is as fast
# Fusion's cost-model weight per result element (fuse.py: add 1, divide 4, exp 20...)
# from which blocking pays. Below it the kernel is bound by memory traffic, and blocks
# add a copy of each block's result into the output: `W * (1 - y**2)` (cost ~1 per
# element) ran 1.5x slower blocked, the W3 gradient (~110) 2.9x faster on 2 threads.
MIN_COST_PER_ELEMENT = 10

_pool = None
_pool_size = 0
_pool_lock = threading.Lock()


def eligible(shape, input_shapes) -> tuple | None:
    """`sliced` flags for a kernel of result `shape`, or None when blocking cannot help
    (too small, 0-d, or no operand spans the first axis)."""
    shape = tuple(shape)
    if not shape or shape[0] < 2 or math.prod(shape) < MIN_SIZE:
        return None
    sliced = tuple(len(s) == len(shape) and s[0] == shape[0] for s in map(tuple, input_shapes))
    return sliced if any(sliced) else None


def eager(impl, values, shape, dtype):
    """An eager elementwise op's value, `impl(*values)`, computed in blocks on
    `tapec.num_threads()` threads; None where that does not pay, and the caller computes
    it whole: one thread, a small result, or a loop bound by memory rather than by
    arithmetic. Most of NumPy's transcendental loops are vectorised (about 1 ns per
    element, as fast as memory brings the operands); a few are not (float64 sin and cos
    here: 15 ns), and only those gain from more cores. Which is which depends on the
    NumPy build and the CPU, so it is measured, once per loop and dtype."""
    if config.num_threads() <= 1:
        return None
    sliced = eligible(shape, [np.shape(v) for v in values])
    if sliced is None:
        return None
    key = (impl, dtype, tuple(np.result_type(v) for v in values))
    bound = _COMPUTE_BOUND.get(key)
    if bound is None:
        bound = _COMPUTE_BOUND[key] = _measure(impl, values)
    return tapec_blocked(impl, values, sliced, shape, dtype) if bound else None


# (loop, result dtype, operand dtypes) -> whether the loop is bound by arithmetic (eager)
_COMPUTE_BOUND = {}
_SAMPLE = 1 << 14                # elements timed
COMPUTE_BOUND_NS = 4.0           # per element, single-threaded


def _measure(impl, values) -> bool:
    """Whether `impl` takes at least COMPUTE_BOUND_NS per element on a sample of the
    operands (their first elements; the best of two runs, so one preempted run does
    not decide)."""
    sample = [np.asarray(v).reshape(-1)[:_SAMPLE] if np.size(v) >= _SAMPLE else
              np.asarray(v).reshape(-1)[:1] for v in values]
    best = math.inf
    with np.errstate(all="ignore"):          # the real call reports the user's values
        for _ in range(2):
            start = time.perf_counter()
            impl(*sample)
            best = min(best, time.perf_counter() - start)
    return best * 1e9 / _SAMPLE >= COMPUTE_BOUND_NS


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="tapec-blocks")
            _pool_size = workers
        return _pool


def tapec_blocked(kernel, operands, sliced, shape, dtype, scratch=None):
    """The kernel's result, of `shape` and `dtype`, computed block by block.

    With `scratch` (a count, generated kernels), the kernel takes two more arguments: the
    block of the output, which it writes its result into, and `scratch` blocks of that
    shape and dtype, allocated once per thread and reused for every block; else its
    result is copied into the output."""
    out = np.empty(shape, dtype)
    rows = shape[0]
    row_bytes = max(1, out.itemsize * (out.size // rows))
    step = max(1, BLOCK_BYTES // row_bytes)

    def run(start, stop):
        if scratch is not None:
            buffers = np.empty((scratch, min(step, stop - start), *shape[1:]), dtype)
        for s in range(start, stop, step):
            e = min(s + step, stop)
            blocks = [o[s:e] if cut else o for o, cut in zip(operands, sliced)]
            if scratch is None:
                out[s:e] = kernel(*blocks)
            else:
                kernel(*blocks, out[s:e], [b[:e - s] for b in buffers])

    blocks = -(-rows // step)                   # ceiling division
    threads = min(config.num_threads(), blocks)
    if threads <= 1:
        run(0, rows)
        return out
    # contiguous runs of whole blocks, one per thread; this thread takes the first
    per_thread = -(-blocks // threads) * step
    bounds = [(s, min(s + per_thread, rows)) for s in range(0, rows, per_thread)]
    pool = _executor(len(bounds) - 1)
    # the caller's context (NumPy's errstate lives in a context variable) in each worker
    futures = [pool.submit(contextvars.copy_context().run, run, s, e) for s, e in bounds[1:]]
    error = None
    try:
        run(*bounds[0])
    except BaseException as raised:      # noqa: BLE001  (re-raised once the workers are done)
        error = raised
    for future in futures:               # never return while a worker still writes `out`
        try:
            future.result()
        except BaseException as raised:  # noqa: BLE001
            error = error or raised
    if error is not None:
        raise error
    return out


class NumexprThreads:
    """numexpr as generated code sees it: `evaluate` runs on `tapec.num_threads()`
    threads (capped at numexpr's MAX_THREADS), so `tapec.set_num_threads(1)` holds for
    numexpr kernels as it does for blocked ones.

    numexpr's thread count is global to the process, and changing it restarts its
    threads (about 50 us), so it is set only when it differs from tapec's and is not
    restored after the call: while tapec's compiled code runs numexpr, tapec's setting
    wins. Every other attribute is numexpr's own."""

    __slots__ = ("_module",)

    def __init__(self, module):
        self._module = module

    def evaluate(self, *args, **kwargs):
        module = self._module
        wanted = min(config.num_threads(), getattr(module, "MAX_THREADS", 1 << 16))
        if module.get_num_threads() != wanted:
            module.set_num_threads(wanted)
        return module.evaluate(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._module, name)
