"""keep_freed_memory: freed large tensors are reused instead of mapped and faulted in again."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nco.allocator import keep_freed_memory, user_settings

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")

# 48 MiB tensors: above glibc's largest adaptive mmap threshold (32 MiB), so with its defaults
# every one is mapped afresh and each of its pages faulted in when written.
CHILD = """
import json, resource, sys, torch
from nco.allocator import keep_freed_memory
took = keep_freed_memory() if sys.argv[1] == "tuned" else None
for _ in range(20):  # small allocations in between split freed blocks until the heap settles
    torch.empty(12 << 20).fill_(1.0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    torch.empty(12 << 20).fill_(1.0)
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"took": took, "faults": after - before}))
"""


def _child(script: str, mode: str) -> dict:
    """The JSON line a fresh Python process running `script` with argument `mode` prints."""
    out = subprocess.run(
        [sys.executable, "-c", script, mode], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.skipif(user_settings(), reason="the environment sets malloc thresholds")
def test_freed_tensors_are_reused_without_page_faults():
    default, tuned = _child(CHILD, "default"), _child(CHILD, "tuned")
    assert tuned["took"] is True
    pages = 10 * (48 << 20) // 4096
    assert default["faults"] > pages // 2  # glibc's defaults fault every tensor in again
    assert tuned["faults"] < pages // 20  # kept in the heap: its pages stay mapped


@pytest.mark.parametrize(
    "name, value",
    [("MALLOC_MMAP_THRESHOLD_", "131072"), ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")],
)
def test_a_users_own_malloc_settings_are_kept(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert keep_freed_memory() is False


# Many small tensors kept alive between freed large ones: the heap's top stays in use, so glibc's
# own trimming (threshold 1 GiB after keep_freed_memory) returns nothing of the ~400 MiB freed.
FRAGMENTED = """
import json, sys, torch
from nco.allocator import keep_freed_memory, release_freed_memory
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20
keep_freed_memory()
big, small = [], []
for _ in range(100):
    big.append(torch.ones(1 << 20))   # 4 MiB each
    small.append(torch.ones(64))
big.clear()
before = rss()
ran = release_freed_memory() if sys.argv[1] == "release" else None
print(json.dumps({"ran": ran, "before": before, "after": rss()}))
"""


@pytest.mark.skipif(user_settings(), reason="the environment sets malloc thresholds")
def test_release_gives_freed_heap_pages_back():
    kept, released = _child(FRAGMENTED, "keep"), _child(FRAGMENTED, "release")
    assert kept["after"] - kept["before"] > -50  # without it the freed 400 MiB stay resident
    assert released["ran"] is True
    assert released["before"] - released["after"] > 300  # MiB returned to the kernel
