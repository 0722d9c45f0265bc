"""glibc malloc settings that keep freed tensor memory in the process for reuse.

By default glibc serves every block above a threshold (128 KiB, adapting up to 32 MiB) by mmap
and gives it back to the kernel on free. A CPU decoder allocates and frees the same large
activations at every step, so each step maps fresh pages and the kernel zero-fills them on
first touch. Raising the mmap and trim thresholds lets the heap keep those blocks; after a few
steps it holds enough of them and stops growing, at the price of a larger resident set
(measurements: docs/performance.md, `benchmarks/bench_allocator.py`). A user's own glibc
malloc settings (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, glibc.malloc tunables) are
left as they are, and so are other C libraries and an allocator put in front of glibc's by
LD_PRELOAD.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

# mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
DEFAULT_THRESHOLD = 1 << 30


def glibc(name: str, argtypes: list[type]) -> Any | None:
    """glibc's function `name` taking `argtypes` and returning an int, or None off Linux or
    where the C library has no such function."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    function.restype = ctypes.c_int
    return function


def user_settings() -> bool:
    """Whether the environment sets glibc's malloc thresholds itself."""
    env = os.environ
    return bool(
        env.get("MALLOC_MMAP_THRESHOLD_")
        or env.get("MALLOC_TRIM_THRESHOLD_")
        or "glibc.malloc" in env.get("GLIBC_TUNABLES", "")
    )


def keep_freed_memory(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Serve blocks below `threshold` bytes from the heap and keep up to that much freed memory.

    Returns whether glibc took both settings (False off Linux, without glibc's mallopt, or
    where the environment sets the thresholds). Call it at a process's start: it changes the
    process-wide allocator, so nco's commands and sampling workers call it, and the library
    functions do not.
    """
    mallopt = None if user_settings() else glibc("mallopt", [ctypes.c_int, ctypes.c_int])
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, threshold)) and bool(mallopt(M_TRIM_THRESHOLD, threshold))


def release_freed_memory() -> bool:
    """Give the heap's free pages back to the kernel (glibc `malloc_trim(0)`); returns whether
    it ran.

    With `keep_freed_memory`'s thresholds the heap keeps what one phase of work freed, and the
    blocks of phases with other tensor shapes (sampling, training, validation, the next epoch's
    instance size) fragment it, so a long run's resident set grows from epoch to epoch. Measured
    on the JSSP CPU run (one process, configs/experiment/jssp_cpu.yaml): 7.8, 8.6, 9.4 GB
    between the sampling phases of three epochs; `malloc_trim(0)` called on the live process
    took it from 10.4 to 1.2 GB. Call it between phases, not inside one, where the kept blocks
    are what makes the allocator fast.
    """
    trim = glibc("malloc_trim", [ctypes.c_size_t])
    if trim is None:
        return False
    trim(0)
    return True
