"""This host's memory and the free space where vLLM downloads (adapter): ``/proc/meminfo``'s
MemTotal and MemAvailable, and the free space (``os.statvfs``, as ``shutil.disk_usage`` counts
it) of the nearest existing directory of the download target. What cannot be read stays None:
the plan says "not checked"."""

from __future__ import annotations

import os

from ..core.facts import HostFacts

MEMINFO = "/proc/meminfo"


def read_meminfo(path: str = MEMINFO) -> tuple[int | None, int | None]:
    """(MemTotal, MemAvailable) in bytes; None for a field that is not there or not a number."""
    found: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:  # ASCII text; utf-8 needs no codec import
            for line in handle:
                key, _, rest = line.partition(":")
                words = rest.split()
                if key in ("MemTotal", "MemAvailable") and words and words[0].isdigit() and words[1:] == ["kB"]:
                    found[key] = int(words[0]) * 1024
    except OSError:
        pass
    return found.get("MemTotal"), found.get("MemAvailable")


def free_space(target: str) -> tuple[str | None, int | None]:
    """(the nearest existing directory of ``target``, its filesystem's free bytes), or Nones."""
    path = os.path.abspath(target)
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None, None
        path = parent
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):  # no statvfs on this platform
        return None, None
    return path, st.f_bavail * st.f_frsize


def read_host(download_target: str) -> HostFacts:
    total, available = read_meminfo()
    where, free = free_space(download_target)
    return HostFacts(total, available, free, where)
