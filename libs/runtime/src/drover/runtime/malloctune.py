"""The C allocator's settings for a process that writes large buffers over and over: the API's
event stream copies each frame (up to megabytes) once per subscriber and write, in buffers freed
as soon as they are sent.

glibc serves such buffers with mmap, or from the top of its heap, and gives them back to the
kernel when freed: every copy then lands on fresh pages, which the kernel faults in and zeroes
first (measured: a third of the API's CPU under 50 subscribers went to page faults and zeroing,
docs/performance.md). Fixed thresholds keep freed buffers in the heap for the next copy. The
cost is memory: up to `trim` bytes of free heap stay with the process after a burst.
"""

from __future__ import annotations

import ctypes

# mallopt(3) parameters.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest on 64-bit
TRIM_THRESHOLD = 256 * 1024 * 1024


def keep_freed_buffers(mmap: int = MMAP_THRESHOLD, trim: int = TRIM_THRESHOLD) -> bool:
    """Buffers under `mmap` bytes come from the heap, and up to `trim` bytes of free heap are kept;
    False where the C library has no mallopt (not glibc): its defaults stay."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, mmap)) and bool(mallopt(M_TRIM_THRESHOLD, trim))
