"""Keep freed memory in the process on glibc, so training steps stop paying page faults.

A training step allocates and frees the same large buffers over and over (activations,
gradients, a stacked chunk of client parameters: W1's vmapped 2NN step frees ~8 MB per leaf
and step). glibc's malloc hands freed memory at the top of the heap back to the kernel once it
exceeds ``M_TRIM_THRESHOLD`` (128 KiB, raised dynamically up to 32 MiB) and serves blocks above
``M_MMAP_THRESHOLD`` with fresh ``mmap`` calls; either way the next step touches new pages and
takes a page fault per 4 KiB. :func:`keep_freed_memory` raises the trim threshold to 1 GiB
(the heap keeps up to 1 GiB free for reuse) and fixes the mmap threshold at 32 MiB, the top of
its dynamic range (``mallopt(3)``; this is what ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_`` do from
the environment, and what jemalloc/tcmalloc do by design).

Measured on this project's 2-core CPU (benchmarks/RESULTS.md, "Where clients are stacked, and the
allocator"): a W1 2NN step
(B = 50) vmapped over 25 clients, 1.47 → 0.84 ms per client; a W4 round at p = 1.0, 18.1 → 12.4 s
(vectorized engine) and 16.4 → 11.5 s (plain PyTorch loop); W1 at p = 1.0, 5.76 → 5.17 s.
Peak memory is not raised (the same buffers are reused); freed memory up to 1 GiB is not
returned to the system until the process ends, which for a training job is when it is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # <malloc.h>
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD = 1 << 30
MMAP_THRESHOLD = 32 << 20  # blocks above this (whole datasets) still get their own mapping, freed at once


def keep_freed_memory() -> bool:
    """Set glibc's trim threshold to 1 GiB and its mmap threshold to 32 MiB in this process.

    Returns:
        True when both were set; False where the C library has no ``mallopt`` (macOS, musl)
        or refused a value: nothing is changed then and training runs as before (slower).
    """
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
