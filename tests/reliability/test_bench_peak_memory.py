"""``timing.run_with_peak``: a command's own peak memory, not the benchmark process's.

Linux keeps a process's peak resident size across ``exec``, and ``subprocess`` starts a command
by ``vfork``: a command started from a process that once held N bytes reports at least N as its
own peak. ``bench_population_measure`` printed 2.4 GB for each of its four steps after the
earlier modules of ``run.py`` (the steps' own peaks are 0.5-1.6 GB), failing issue 34's
memory rows. The command is forked by a small interpreter instead; these tests hold this
process's peak above 300 MB first.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from benchmark_scripts import BENCHMARKS, load_benchmark

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux's ru_maxrss rules")

MB = 2**20


@pytest.fixture(scope="module")
def timing():
    held = np.ones(300 * MB // 8)  # touched: this process's peak is now above 300 MB
    del held
    return load_benchmark("timing")


def test_a_command_started_here_reports_this_process_peak_as_its_own(timing):
    """The trap itself (so the test of the fix below is not vacuous)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    assert usage.ru_maxrss * 1024 >= 300 * MB


def test_run_with_peak_reports_the_commands_own_peak(timing):
    done, cpu, peak = timing.run_with_peak([sys.executable, "-c", "pass"])
    assert done.returncode == 0 and done.args == [sys.executable, "-c", "pass"]
    assert 0 < peak < 100 * MB and cpu > 0
    code = "import numpy as np; held = np.ones(200 * 2**20 // 8)"
    _, _, peak = timing.run_with_peak([sys.executable, "-c", code])
    assert 200 * MB <= peak < 300 * MB  # the command's 200 MB and its interpreter, not ours


def test_run_with_peak_passes_output_and_exit_status_through(timing):
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    done, _, _ = timing.run_with_peak([sys.executable, "-c", code], capture_output=True,
                                      text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    done, _, _ = timing.run_with_peak([sys.executable, "-c",
                                       "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert done.returncode == 128 + 9
    with pytest.raises(subprocess.CalledProcessError):
        timing.run_with_peak([str(BENCHMARKS / "no-such-command")], check=True,
                             capture_output=True)
