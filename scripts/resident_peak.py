"""What a phase adds to this process's peak resident memory (Linux), as
ordo's bench::ResidentPeak measures it for ordo (tools/bench.h): free memory
returned to the system first (gc, malloc_trim), the resident set then as the
base and its high-water mark reset through /proc/self/clear_refs; mib() is
the high-water mark since, less the base. The libraries (libtorch's pages)
are left out, so the figure compares with ordo's.
"""
import ctypes
import gc
import re


def _status_kib(name):
    with open("/proc/self/status") as f:
        m = re.search(rf"^{name}:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) if m else -1


class ResidentPeak:
    def __init__(self):
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except OSError:
            pass
        self.base = -1
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.base = _status_kib("VmRSS")
        except OSError:
            pass

    def mib(self):
        peak = _status_kib("VmHWM")
        return -1.0 if self.base < 0 or peak < 0 else (peak - self.base) / 1024.0
