"""Every rho option of every subcommand at the ends of its range, sized before it allocates.

The table is every subcommand x every one of its rho options (found in the argparse parsers:
the long options spelt ``--rho``, ``--rhoN`` or ``--rhos``, so a new subcommand or option is
covered without an edit here) x rho in :data:`RHOS`. Each case runs in a child forked from one
server process that imported the command line once (:mod:`tests.reliability.fork_runner`, the
session's ``sizing_server`` shared with ``test_address_space.py``),
with its address space capped at :data:`ADDRESS_SPACE` (``RLIMIT_AS``, the default memory
limit) and the work limit at :data:`WORK_LIMIT` steps (about a second by the estimate of
:mod:`dprisk.runtime.work_limit`), and must end within :data:`CPU_SECONDS` of CPU (the
command's own work: the server imported the libraries it uses, ``fork_runner.PRELOAD``) with

* an answer: exit status 0, nothing on stderr; or
* a refusal: exit status 2, nothing on stdout, one stderr line naming the option as typed.

A command that sizes its work and memory before allocating refuses what it cannot do inside
the limits at once; one that does not ends with a ``MemoryError`` (exit 1), a kill, or runs
past the CPU bound. The limit is CPU time of the child (``wait4``), not wall time, so that
other processes on a shared machine do not count; a child still running after
:data:`WALL_SECONDS` is killed (a failure).

Each subcommand's option is set in a base command line of :data:`BASES` (a valid command
using the option, the value at ``RHO``); a (subcommand, option) without a base runs as
``dprisk SUBCOMMAND --OPTION RHO`` alone (it must still keep the contract; a refusal must then
name some option). ``explore`` serves until stopped and ``reproduce`` takes no rho.

The default run takes :data:`DEFAULT_RHOS` (the two ends that exercise the sizing: a tiny rho
whose noise window is huge, and the rho of no finite window); the whole table is marked slow
(``make bench`` and ``pytest -m slow`` run it).
"""

from __future__ import annotations

import re

import pytest

from dprisk.cli.common import SUBCOMMAND_HELP
from dprisk.cli.main import build_parser
from dprisk.cli.parsers import subparser

#: The address-space cap of every child (the default DPRISK_MEMORY_LIMIT, 2 GiB).
ADDRESS_SPACE = 2 * 1024**3
#: DPRISK_WORK_LIMIT of every child: 2e8 steps, about 0.9 s by the work estimates.
WORK_LIMIT = "2e8"
#: CPU seconds a case may take (answer or refusal).
CPU_SECONDS = 5.0
#: Wall seconds after which a child is killed (a failure: it would have run on).
WALL_SECONDS = 120.0
#: The rho values of the issue's table.
RHOS = ["1e-6", "1e-9", "1e-13", "1e-320", "1e100"]
#: The values run by default; the rest of the table is slow.
DEFAULT_RHOS = {"1e-13", "1e-320", "1e100"}
#: Subcommands without a rho to size (explore serves until stopped).
NOT_RUN = {"explore"}
#: (subcommand, option) -> a valid command line using the option, its value ``RHO``.
BASES = {
    ("summary", "--rho1"): ["summary", "--rho1", "RHO"],
    ("summary", "--rho2"): ["summary", "--rho1", "0.5", "--rho2", "RHO"],
    ("posterior", "--rho1"): ["posterior", "--rho1", "RHO", "--x1-star", "1"],
    ("posterior", "--rho2"): ["posterior", "--rho1", "0.5", "--rho2", "RHO", "--d", "3",
                              "--x1-star", "1", "--x2-star", "5", "--y1-star", "4"],
    ("posterior", "--rhos"): ["posterior", "--rhos", "RHO,0.5,0.5", "--siblings", "3,3",
                              "--stars", "1,5,15,4,10"],
    ("marginal", "--rho1"): ["marginal", "--rho1", "RHO"],
    ("marginal", "--rho2"): ["marginal", "--rho1", "0.5", "--rho2", "RHO", "--d", "3",
                             "--x2", "5"],
    ("marginal", "--rhos"): ["marginal", "--rhos", "RHO,0.5"],
    ("sweep", "--rho1"): ["sweep", "--rho1", "RHO", "--rho2", "0.25", "--d", "3", "--x2", "2",
                          "--out", "s.nc"],
    ("sweep", "--rho2"): ["sweep", "--rho1", "0.5", "--rho2", "RHO", "--d", "3", "--x2", "2",
                          "--out", "s.nc"],
    ("epsilon", "--rho"): ["epsilon", "--rho", "RHO"],
    ("budget", "--rho1"): ["budget", "--rho1", "RHO", "--measure", "marginal-posterior",
                           "--target", "0.9", "--d", "3", "--x2", "5"],
    ("attribute", "--rho1"): ["attribute", "--rho1", "RHO", "--cells", "4"],
    ("attribute", "--rho2"): ["attribute", "--rho1", "0.5", "--strategy", "census-2020",
                              "--cells", "2016", "--rho2", "RHO", "--d", "3", "--releases",
                              "20", "--seed", "1"],
    ("product", "--rho1"): ["product", "--rho1", "RHO", "--rho2", "0.5", "--others", "3"],
    ("product", "--rho2"): ["product", "--rho1", "0.5", "--rho2", "RHO", "--others", "3"],
}
#: Cases that still fail, each a strict expected failure (so that one fixed shows up as an
#: unexpected pass and is removed from here). None today: every case answers or refuses.
STILL_FAILING: dict[str, str] = {}
_RHO_OPTION = re.compile(r"--rho(\d*|s)$")


def rho_options() -> list[tuple[str, str]]:
    """Every (subcommand, rho option) of the parsers, in the order ``dprisk --help`` lists."""
    parser = build_parser([name for name in SUBCOMMAND_HELP if name not in NOT_RUN])
    found = []
    for name in SUBCOMMAND_HELP:
        if name in NOT_RUN:
            continue
        for action in subparser(parser, name)._actions:
            found += [(name, option) for option in action.option_strings
                      if _RHO_OPTION.match(option)]
    return found


def _argv(command: str, option: str, rho: str) -> list[str]:
    base = BASES.get((command, option), [command, option, "RHO"])
    return [word.replace("RHO", rho) for word in base]


CASES = {f"{command} {option} {rho}": (option, _argv(command, option, rho))
         for command, option in rho_options() for rho in RHOS}


@pytest.fixture
def server(sizing_server):
    """The session's fork server of the sizing tables (``conftest.py``)."""
    return sizing_server


def test_every_rho_option_has_a_base():
    """The table found the rho options (a renamed option would silently drop its cases)."""
    options = set(rho_options())
    assert {("product", "--rho1"), ("summary", "--rho2"), ("marginal", "--rhos")} <= options
    assert set(BASES) <= options, set(BASES) - options


def _marks(case: str) -> list:
    default = case.rsplit(" ", 1)[1] in DEFAULT_RHOS and case not in STILL_FAILING
    marks = [] if default else [pytest.mark.slow]
    if case in STILL_FAILING:  # slow too: seconds of CPU each for a known failure
        marks.append(pytest.mark.xfail(reason=STILL_FAILING[case], strict=True))
    return marks


@pytest.mark.parametrize("case", [pytest.param(case, id=case, marks=_marks(case))
                                  for case in CASES])
def test_rho_option_sized_before_allocating(case, server, tmp_path):
    option, argv = CASES[case]
    done = server.run([*argv, "--json"], tmp_path, env={"DPRISK_WORK_LIMIT": WORK_LIMIT},
                      address_space=ADDRESS_SPACE, timeout=WALL_SECONDS)
    shown = f"{case}: status {done.status}, {done.cpu:.1f} s CPU, " \
            f"{done.maxrss / 2**20:.0f} MiB; {done.stderr.strip()[-600:]}"
    assert done.status in (0, 2), shown
    assert done.cpu < CPU_SECONDS, shown
    if done.status == 2:
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and done.stdout == "", shown
        named = option if (argv[0], option) in BASES else "--"
        assert named in lines[0], shown
    else:
        assert done.stderr == "" and done.stdout.startswith("{"), shown
