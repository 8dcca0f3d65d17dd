"""What the benchmarks print beside their timings: the machine's load, and this process's memory from /proc."""
from __future__ import annotations

import os
import re


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``"1.0 / 0.8 / 0.5"``."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def proc_mb(field: str) -> int:
    """A field of /proc/self/status in MB (``VmRSS``: resident now; ``VmHWM``: its peak); 0 where there is none."""
    try:
        with open("/proc/self/status") as f:
            found = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return 0
    return int(found.group(1)) // 1024 if found else 0
