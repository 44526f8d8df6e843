"""Hostile prior files, one table: untrusted code refused the same way by every method.

Each row of :data:`PRIOR_FILES` is a prior file (written to the test's ``tmp_path``) that must
be refused. It is tried

* through the command line (in-process ``dprisk.cli.main``) with ``--json`` for ``posterior``
  with each method (exact, Gibbs, PyMC), for the nested-levels ``posterior`` and for
  ``marginal``: exit status 2, exactly one line
  on stderr naming the file and the problem, nothing on stdout;
* through the Python API (``Scenario.two_level``, ``exact_posterior``, ``gibbs_sample``,
  ``sample_posterior`` with ``method="pymc"``): ``ValueError`` naming the file.

The check runs once, when the scenario is built (``dprisk.models.priors.base.
check_prior_values``), before any method allocates or samples, so a refused row is fast.
``N_CASES`` is the number of parametrised cases (quoted in the README).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dprisk.cli import main

HEADER = (
    "import numpy as np\n"
    "import pytensor.tensor as pt\n"
    "from dprisk.models.priors.library import UserPrior\n"
)
ZERO = "pt.zeros_like(k2, dtype='float64')"
#: The end of a file defining a sound prior (the rows that print before it are refused).
GOOD = "from dprisk.models.priors.library import ImproperUniform\nprior = ImproperUniform()\n"

#: name -> (file text, a word of the expected message)
PRIOR_FILES = {
    "nan_everywhere": (HEADER + "prior = UserPrior(lambda k2, k1: pt.full_like(k2, np.nan, "
                       "dtype='float64'))\n", "NaN"),
    "nan_somewhere": (HEADER + "prior = UserPrior(lambda k2, k1: "
                      "pt.log(pt.cast(k2 - k1, 'float64') - np.float64(3.0)))\n", "NaN"),
    "plus_inf": (HEADER + f"prior = UserPrior(lambda k2, k1: {ZERO} + np.float64(np.inf))\n",
                 "above"),
    "above_bound": (HEADER + f"prior = UserPrior(lambda k2, k1: {ZERO} + np.float64(2.0))\n",
                    "above"),
    "minus_inf_everywhere": (HEADER + f"prior = UserPrior(lambda k2, k1: {ZERO} - "
                             "np.float64(np.inf))\n", "-inf"),
    "empty_support": (HEADER + f"prior = UserPrior(lambda k2, k1: {ZERO}, "
                      "support=lambda k1: (k1 + 5, k1 + 2))\n", "no possible"),
    "exits_at_import": ("import sys\nsys.exit(0)\n", "SystemExit"),
    "exits_nonzero_at_import": ("import sys\nsys.exit(3)\n", "SystemExit"),
    "prints_at_import": ("print('hello')\n"
                         "from dprisk.models.priors.library import ImproperUniform\n"
                         "prior = ImproperUniform()\n", "print"),
    "raises_multiline": ("raise RuntimeError('first line\\nsecond line')\n", "RuntimeError"),
    "factory_raises": ("def prior():\n    raise RuntimeError('factory broke')\n", "factory"),
    "factory_exits": ("import sys\ndef prior():\n    sys.exit(0)\n", "SystemExit"),
    "factory_prints": ("from dprisk.models.priors.library import ImproperUniform\n"
                       "def prior():\n    print('hi')\n    return ImproperUniform()\n", "print"),
    "logp_raises": (HEADER + "def bad(k2, k1):\n    raise RuntimeError('logp broke')\n"
                    "prior = UserPrior(bad)\n", "logp"),
    "logp_prints": (HEADER + f"def noisy(k2, k1):\n    print('hi')\n    return {ZERO}\n"
                    "prior = UserPrior(noisy)\n", "print"),
    "logp_exits": (HEADER + "import sys\ndef bad(k2, k1):\n    sys.exit(1)\n"
                   "prior = UserPrior(bad)\n", "SystemExit"),
    "support_raises": (HEADER + "def sup(k1):\n    raise RuntimeError('support broke')\n"
                       f"prior = UserPrior(lambda k2, k1: {ZERO}, support=sup)\n", "support"),
    "support_not_numbers": (HEADER + f"prior = UserPrior(lambda k2, k1: {ZERO}, "
                            "support=lambda k1: ('a', None))\n", "support"),
    "scipy_logp": ("from scipy import stats\nfrom dprisk.models.priors.library import UserPrior\n"
                   "prior = UserPrior(lambda k2, k1: stats.poisson.logpmf(k2 - k1, 3.0))\n",
                   "logp"),
    "logp_not_a_number": ("from dprisk.models.priors.library import UserPrior\n"
                          "prior = UserPrior(lambda k2, k1: 'zero')\n", "logp"),
    # Output written under Python's sys.stdout, straight to file descriptor 1.
    "os_write_at_import": ("import os\nos.write(1, b'raw\\n')\n" + GOOD, "print"),
    "os_system_at_import": ("import os\nos.system('echo from-a-shell')\n" + GOOD, "print"),
    "c_printf_at_import": ("import ctypes\nctypes.CDLL(None).printf(b'from C\\n')\n" + GOOD,
                           "print"),
    "factory_os_write": ("import os\nfrom dprisk.models.priors.library import ImproperUniform\n"
                         "def prior():\n    os.write(1, b'x')\n    return ImproperUniform()\n",
                         "print"),
    "logp_os_write": (HEADER + f"import os\ndef noisy(k2, k1):\n    os.write(1, b'x')\n"
                      f"    return {ZERO}\nprior = UserPrior(noisy)\n", "print"),
    "support_os_system": (HEADER + "import os\ndef sup(k1):\n    os.system('echo s')\n"
                          f"    return (k1, None)\nprior = UserPrior(lambda k2, k1: {ZERO}, "
                          "support=sup)\n", "print"),
}

RELEASE = ["--x1-star", "2", "--x2-star", "5", "--y1-star", "3"]
TWO_LEVEL = ["--rho1", "0.5", "--rho2", "0.5", "--d", "3"]
COMMANDS = {
    "exact": ["posterior", *TWO_LEVEL, *RELEASE, "--method", "exact"],
    "gibbs": ["posterior", *TWO_LEVEL, *RELEASE, "--method", "gibbs", "--draws", "50",
              "--seed", "1"],
    "pymc": ["posterior", *TWO_LEVEL, *RELEASE, "--method", "pymc", "--draws", "50",
             "--seed", "1"],
    "marginal": ["marginal", *TWO_LEVEL, "--x2", "4"],
    "nested": ["posterior", "--rhos", "0.5,0.5,0.5", "--siblings", "3,3", "--stars",
               "2,5,9,3,6", "--method", "exact"],
}
N_CASES = len(PRIOR_FILES) * (len(COMMANDS) + 2)


@pytest.fixture
def prior_spec(tmp_path, request):
    name = request.param
    path = tmp_path / f"{name}.py"
    path.write_text(PRIOR_FILES[name][0])
    return f"{path}:prior", name


def _assert_refuses_prior(argv, prior_spec, capture):
    """``dprisk ARGV`` exits 2 with one stderr line naming the prior's file and its defect,
    nothing on stdout, no traceback (``capture``: capsys, or capfd for what user code wrote to
    the file descriptors)."""
    spec, name = prior_spec
    try:
        status = main(argv)
    except SystemExit as exc:  # pragma: no cover - would be a defect
        status = exc.code
    out, err = capture.readouterr()
    assert status == 2, (status, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert spec.rsplit(":", 1)[0] in lines[0]
    assert PRIOR_FILES[name][1] in lines[0], lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("prior_spec", sorted(PRIOR_FILES), indirect=True)
def test_cli_refuses_hostile_prior(prior_spec, command, capsys):
    _assert_refuses_prior([*COMMANDS[command], "--prior", prior_spec[0], "--json"],
                          prior_spec, capsys)


@pytest.mark.parametrize("prior_spec", sorted(PRIOR_FILES), indirect=True)
def test_prior_command_refuses_hostile_prior(prior_spec, capfd):
    """``dprisk prior SPEC`` (and ``dr.two_level.prior_sensitivity``) refuse as the methods do.

    Before the fix, a ``support`` that raised ran outside the capture (exit 1, "failed:
    RuntimeError") and one that printed wrote to standard output ahead of the JSON.
    capfd: output written to file descriptor 1 by user code counts too.
    """
    _assert_refuses_prior(["prior", prior_spec[0], "--json"], prior_spec, capfd)


@pytest.mark.parametrize("prior_spec", sorted(PRIOR_FILES), indirect=True)
def test_api_refuses_hostile_prior_for_every_method(prior_spec, capsys):
    from dprisk.inference.two_level.exact import exact_posterior
    from dprisk.inference.two_level.gibbs import gibbs_sample
    from dprisk.inference.two_level.sampling import sample_posterior
    from dprisk.models.scenario import Scenario

    spec, name = prior_spec
    params = {"rho1": 0.5, "rho2": 0.5, "d": 3, "prior": spec}
    calls = [
        lambda: Scenario.two_level(**params),
        lambda: exact_posterior(2, 5, 3, **params),
        lambda: gibbs_sample(2, 5, 3, draws=10, random_seed=1, **params),
        lambda: sample_posterior(2, 5, 3, method="pymc", draws=10, tune=10, random_seed=1,
                                 **params),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="prior") as info:
            call()
        message = str(info.value)
        assert "\n" not in message
        assert spec.rsplit(":", 1)[0] in message
        assert PRIOR_FILES[name][1] in message, message
    assert capsys.readouterr().out == ""


def test_a_good_prior_file_still_loads(tmp_path, capsys):
    """The check does not refuse a sound prior (a NegBin-like user prior with a support)."""
    path = tmp_path / "good.py"
    path.write_text(HEADER + "prior = UserPrior(lambda k2, k1: -pt.log(np.float64(2.0)) * "
                    "pt.cast(k2 - k1 + 1, 'float64'), support=lambda k1: (k1, None))\n")
    status = main(["posterior", *TWO_LEVEL, *RELEASE, "--prior", f"{path}:prior", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.count("\n") == 1 and out.startswith("{")


#: Rows whose output bypasses ``sys.stdout``: run in a process of its own, whose real standard
#: output (file descriptor 1) must stay empty (in-process, ``capsys`` sees ``sys.stdout``
#: only). The process is a fork of the session's ``process_server`` running ``dprisk`` as its
#: console script does, its descriptors 1 and 2 files of its own (no new interpreter and
#: imports per row); the sound chatty prior below runs through the console script itself.
FD_ROWS = ["os_write_at_import", "os_system_at_import", "c_printf_at_import", "logp_os_write"]


@pytest.mark.parametrize("name", FD_ROWS)
def test_output_to_file_descriptor_1_never_reaches_stdout(name, tmp_path, process_server):
    path = tmp_path / f"{name}.py"
    path.write_text(PRIOR_FILES[name][0])
    done = process_server.wait(process_server.start(
        [*COMMANDS["exact"], "--prior", f"{path}:prior", "--json"], tmp_path), timeout=300)
    assert done.status == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "must not print" in done.stderr, done.stderr


def test_writes_to_file_descriptor_2_are_dropped_and_the_prior_loads(tmp_path):
    """A sound prior that writes to stderr (several lines, below Python) is not refused."""
    path = tmp_path / "chatty.py"
    path.write_text("import os\nos.write(2, b'one\\ntwo\\n')\nos.system('echo three >&2')\n"
                    + GOOD)
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("dprisk")), *COMMANDS["exact"], "--prior",
         f"{path}:prior", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["method"] == "exact"
