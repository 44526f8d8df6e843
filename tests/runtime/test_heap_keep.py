"""A report worker's C heap keeps the memory NumPy frees (glibc's mallopt)."""

import platform
import subprocess
import sys

from dprisk.runtime.heap_keep import HEAP_SETTINGS

#: In a new interpreter (the settings last for the process): set them, then make and free
#: arrays of 1 MiB; prints whether the settings were taken and the numbers' checksum.
SETTINGS_THEN_ARRAYS = """
import numpy as np
from dprisk.runtime.heap_keep import keep_freed_memory
done = keep_freed_memory()
total = sum(int((np.arange(1 << 17) * k).sum()) for k in range(20))
print(done, total)
"""


def test_glibc_takes_the_settings_and_numpy_computes_the_same():
    out = subprocess.run([sys.executable, "-c", SETTINGS_THEN_ARRAYS], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == str(platform.libc_ver()[0] == "glibc")
    assert int(out[1]) == sum(k * (1 << 17) * ((1 << 17) - 1) // 2 for k in range(20))


def test_the_mmap_threshold_is_glibcs_largest():
    # mallopt refuses an mmap threshold above 32 MiB on 64-bit glibc (HEAP_MAX_SIZE / 2)
    assert max(HEAP_SETTINGS.values()) >= HEAP_SETTINGS[-3] == 32 << 20
