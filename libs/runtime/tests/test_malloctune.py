"""The API's allocator settings (drover.runtime.malloctune): buffers copied and freed over and
over, as the event stream's per-subscriber writes are, land on pages already mapped instead of
fresh ones the kernel must fault in and zero. Each case runs in a process of its own (the
settings are the process's)."""

from __future__ import annotations

import subprocess
import sys

BUFFERS = 300
HELD = 20  # buffers alive at once, as writes wait on slow subscribers
PAGES_PER_MB = 256

CHILD = f"""
import resource, sys
from drover.runtime import malloctune
if sys.argv[1] == "tuned":
    assert malloctune.keep_freed_buffers()
body = bytes(1 << 20)
held = []
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({BUFFERS}):
    held.append(b"".join([b"100000\\r\\n", body, b"\\r\\n"]))
    if len(held) > {HELD}:
        held.clear()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_freed_buffers_are_reused_not_faulted_in_again() -> None:
    tuned = _faults("tuned")
    # Only the first window of buffers needs new pages; later copies reuse them.
    assert tuned < 2 * (HELD + 1) * PAGES_PER_MB
    # Without the settings, glibc hands each buffer back and faults the next one in afresh.
    assert _faults("plain") > BUFFERS * PAGES_PER_MB // 2
