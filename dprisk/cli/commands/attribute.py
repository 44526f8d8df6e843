"""``dprisk attribute``: the adversary who reads the whole noisy histogram (issue 15).

Two forms. The design form ``--rho1 R --cells K [--prior FILE] [--true-cell J]`` gives the
exact probability that the MAP cell is the target's cell and the expected posterior of the
target's cell when every one of the ``K`` cells is released with DG(0, 1/(2 rho1)) noise;
with ``--strategy census-2020`` (``K = 2016``) the eleven block-level queries of the 2020
persons strategy are released, and ``--rho2 --d`` add the block group's detailed query
(Monte Carlo over releases, ``--releases`` and ``--seed``). The one-release form
``--release FILE --known FILE`` gives the posterior of every cell, the MAP cell and its risk
R'. FILEs hold one number per cell (CSV or JSON); cells are numbered from 0.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from dprisk.cli import common
from dprisk.cli.common import fmt
from dprisk.runtime.ascii_numbers import ascii_number

__all__ = ["DEFAULTS", "FORMS", "add_parser", "read_cells", "run"]

DESIGN = common.Form(
    "design", "--cells given",
    frozenset({"rho1", "cells", "prior", "true_cell", "strategy", "rho2", "d", "x2_prior",
               "releases", "seed"}),
    usage="--rho1 R --cells K [--prior FILE] [--true-cell J] [--strategy census-2020 "
    "[--rho2 R2 --d D [--x2-prior SPEC]] --releases N --seed S]", selected_by="cells")
RELEASE = common.Form(
    "one-release", "--release given",
    frozenset({"rho1", "release", "known", "prior", "true_cell"}),
    usage="--rho1 R --release FILE --known FILE [--prior FILE] [--true-cell J]",
    selected_by="release")
#: The forms of ``dprisk attribute``.
FORMS = [DESIGN, RELEASE]
#: Defaults applied after the checks (none: ``--releases`` defaults in the strategy design).
DEFAULTS: dict = {}
#: Simulated releases of the strategy design when ``--releases`` is not given.
DEFAULT_RELEASES = 2000
#: Options of the design form that apply only with ``--strategy``.
STRATEGY_ONLY = ("rho2", "d", "x2_prior", "releases", "seed")
#: The one strategy name accepted by ``--strategy``.
STRATEGIES = ("census-2020",)
#: Bytes of memory per byte of a cell file while it is read (the text, its tokens and the
#: Python floats).
FILE_BYTE_MEMORY = 48
#: Work steps (see :mod:`dprisk.runtime.work_limit`) of one simulated release of the strategy
#: design, and per other block of the block group (measured 0.3 ms and 33 us, rounded up).
RELEASE_STEPS = 100_000
RELEASE_BLOCK_STEPS = 10_000
#: Work steps per cell of a release and value of the block group's k2 window (each cell's
#: exact two-level posterior: 2.5-2.8 ns measured at rho1 = rho2 = 1e-7 and 1e-9, d = 3,
#: 2016 cells; rounded up to one step).
RELEASE_WINDOW_STEPS = 1


def add_parser(subs) -> None:
    """Register ``dprisk attribute``."""
    sub = subs.add_parser("attribute", help=common.SUBCOMMAND_HELP["attribute"],
                          description=common.describe(FORMS, __doc__.split("\n\n")[1]))
    common.add_options(sub, {
        "--rho1": (None, "rho of each cell's noise (> 0) or census:LEVEL; with --strategy the "
                   "block detailed query's rho (the others scale with their fractions)"),
        "--cells": (common.integer, "K, the number of cells (>= 2; 2016 with --strategy); "
                    "selects the design form"),
        "--prior": (None, "FILE of K prior probabilities summing to 1 (CSV or JSON; default "
                    "uniform)"),
        "--true-cell": (common.integer, "the target's cell, 0 <= J < K (default: 0 in the "
                        "design form, the MAP cell in the one-release form)"),
        "--strategy": (None, f"release every block-level query of a strategy: {STRATEGIES[0]}"),
        "--rho2": (None, "block-group detailed query rho (> 0) or census:LEVEL (--strategy)"),
        "--d": (common.integer, "number of other blocks in the block group (>= 1; with --rho2)"),
        "--x2-prior": (None, "X2 prior SPEC of the block-group level: improper | truncated:U | "
                       "point:K | PATH.py:NAME (default improper; with --rho2)"),
        "--releases": (common.integer, common.with_default(
            "simulated releases (--strategy only)", DEFAULT_RELEASES)),
        "--seed": (common.integer, f"{common.SEED_HELP}; --strategy only"),
        "--release": (None, "FILE of the K noisy counts (integers); selects the one-release "
                      "form"),
        "--known": (None, "FILE of the K known counts m_j >= 0 of everyone but the target"),
    })
    common.add_json(sub)
    sub.set_defaults(func=run)


def run(args) -> int:
    """Check the options against the chosen form, compute, print.

    ``--x2-prior`` is read first: a malformed SPEC is refused naming it whatever else is
    missing.
    """
    if args.x2_prior is not None:
        args.x2_prior = _x2_prior(args.x2_prior)
    return common.run_form(args, "attribute", FORMS, DEFAULTS,
                           {DESIGN: _design, RELEASE: _release})


def read_cells(path: str, option: str, *, integers: bool) -> list:
    """Numbers of a CSV (commas, spaces or new lines) or JSON (a list) file, one per cell.

    Raises
    ------
    ValueError
        Naming ``option``: unreadable file, or an entry that is not a number (an integer
        when ``integers``): in CSV written in ASCII digits, in JSON a number (not ``true``,
        which Python's ``float`` reads as 1, nor a string).
    """
    from dprisk.runtime.memory_limit import check_memory

    kind = "integers" if integers else "numbers"
    try:
        if not Path(path).is_file():
            raise OSError(f"{path!r} is not a regular file")
        check_memory(Path(path).stat().st_size * FILE_BYTE_MEMORY, parameter=option,
                     what=f"reading {path!r}")
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{option} must be a readable file of {kind}, one per cell: {err}") \
            from None
    try:
        if path.endswith(".json"):
            values = json.loads(text)
            if not isinstance(values, list) or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                raise ValueError  # true is not 1, nor "3" a count
        else:  # ASCII digits only: float also reads "\u0663" as 3
            values = [float(ascii_number(tok)) for tok in text.replace(",", " ").split()]
        values = [float(v) for v in values]
    except (ValueError, TypeError):
        raise ValueError(f"{option} must hold {kind}, one per cell (CSV or a JSON list)") \
            from None
    if integers:
        if any(not math.isfinite(v) or v != int(v) for v in values):
            raise ValueError(f"{option} must hold integers, one per cell")
        return [int(v) for v in values]
    return values


def _prior(args, n_cells: int | None):
    from dprisk.models.priors.histogram import check_cell_prior, uniform_prior

    if args.prior is None:
        return uniform_prior(n_cells)
    values = read_cells(args.prior, "--prior", integers=False)
    return check_cell_prior(values, n_cells, name="--prior")


def _true_cell(args, prior, default: int):
    from dprisk.models.priors.histogram import check_true_cell

    cell = default if args.true_cell is None else args.true_cell
    return check_true_cell(cell, prior, name="--true-cell")


def _design(args, method: str, seed) -> tuple[dict, list[str]]:
    from dprisk.models.census.allocation import parse_rho
    from dprisk.models.priors.histogram import check_n_cells

    common.require(args, "design", rho1="a rho > 0 or census:LEVEL")
    rho = parse_rho(args.rho1, "--rho1")
    from dprisk.inference.attribute.design import CELL_BYTES
    from dprisk.runtime.memory_limit import check_memory

    n_cells = check_n_cells(args.cells, "--cells")
    check_memory(n_cells * CELL_BYTES, parameter="--cells", what=f"{n_cells} cells")
    prior = _prior(args, n_cells)
    cell = _true_cell(args, prior, 0)
    if args.strategy is not None:
        return _strategy(args, rho, prior, cell)
    for dest in STRATEGY_ONLY:
        if common.given(args, dest):
            raise ValueError(f"{common.flag(dest)} does not apply without --strategy "
                             f"({STRATEGIES[0]}): the independent-cells design is exact")
    from dprisk.inference.attribute.design import (
        check_design_cost,
        expected_true_posterior,
        p_map_correct,
    )
    from dprisk.models.mechanism.discrete_gaussian import DEFAULT_TAIL_MASS

    with common.naming_option("rho", "--rho1"):
        for measure in ("p-map", "expected-posterior"):  # both refused before either runs
            check_design_cost(rho, prior, cell, DEFAULT_TAIL_MASS, measure=measure,
                              names=("--rho1", "--cells" if args.prior is None else "--prior"))
        p_map = p_map_correct(rho, prior=prior, true_cell=cell)
        expected = expected_true_posterior(rho, prior=prior, true_cell=cell)
    payload = {
        "p_map_correct": p_map,
        "expected_true_posterior": expected,
        "prior_true": float(prior[cell]),
        "cells": n_cells,
    }
    lines = common.payload_lines(
        f"adversary reading all {n_cells} noisy cells (rho = {fmt(rho)}), target in cell "
        f"{cell} (exact)", payload)
    return payload, lines


def _x2_prior(spec):
    """The ``--x2-prior`` spec parsed and checked, its refusal naming ``--x2-prior``.

    Checked here as the block group's scenarios check it (its values, its support at the
    design form's known count 0): refused later, the library's ``prior '...'`` was named
    ``--prior``, the cell prior's option, when that was given too.
    """
    from dprisk.models.priors.base import check_prior_values
    from dprisk.models.priors.library import check_support, parse_prior

    if not isinstance(spec, str):
        return spec  # parsed already (run)
    try:
        prior = parse_prior(spec)
        check_prior_values(prior, 0)  # untrusted code first (captured), as a scenario does
        return check_support(prior, 0)
    except ValueError as err:
        message = str(err)
        raise ValueError(f"--x2-{message}" if message.startswith("prior") else message) from None


def _strategy(args, rho: float, prior, cell: int) -> tuple[dict, list[str]]:
    from dprisk.inference.attribute.strategy import (
        BlockGroup,
        census_block_design,
        strategy_measures,
    )
    from dprisk.models.census.allocation import parse_rho
    from dprisk.models.census.histogram_2020 import GVHR_2020_SHAPE

    if args.strategy not in STRATEGIES:
        raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}, got "
                         f"{args.strategy!r}")
    n_gvhr = 1
    for size in GVHR_2020_SHAPE:
        n_gvhr *= size
    if prior.size != n_gvhr:
        raise ValueError(f"--cells must be {n_gvhr} with --strategy {args.strategy} (the 2020 "
                         f"GVHR histogram), got {prior.size}")
    from dprisk.runtime.work_limit import check_work

    group = None
    if common.given(args, "rho2") or common.given(args, "d") or common.given(args, "x2_prior"):
        common.require(args, "design with the block group", rho2="a rho > 0 or census:LEVEL",
                       d="an integer >= 1")
        import numpy as np

        group = BlockGroup.checked(parse_rho(args.rho2, "--rho2"), args.d,
                                   np.zeros(n_gvhr, dtype=np.int64),
                                   prior=_x2_prior("improper" if args.x2_prior is None
                                                   else args.x2_prior))
    releases = DEFAULT_RELEASES if args.releases is None else args.releases
    if not 2 <= releases <= 2**53:  # float(releases) sizes the work: 10**400 overflowed
        raise ValueError(f"--releases must be an integer >= 2 and <= 2**53, got {releases}")
    blocks = args.d if group is not None else 0
    window = 0
    if group is not None:  # every cell's posterior on the k2 window of rho2 + rho1 / d
        from dprisk.inference.kernels.table_kernels import DEFAULT_TAIL_MASS, initial_halfwidth

        window = 2 * initial_halfwidth(group.rho2 + rho / group.d, DEFAULT_TAIL_MASS) + 3
    check_work(float(releases) * (RELEASE_STEPS + float(blocks) * RELEASE_BLOCK_STEPS
                                  + float(prior.size) * window * RELEASE_WINDOW_STEPS),
               parameter="--releases" + (" and --d" if group is not None else "")
               + (", --rho1, --rho2" if window > 1000 else ""),
               what=f"{releases} releases" + (f" x {blocks} other blocks" if blocks else "")
               + (f" x {prior.size} cells on a k2 window of {window} values" if window else ""))
    seed = args.seed if args.seed is not None else common.draw_seed()
    import numpy as np

    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            res = strategy_measures(census_block_design(rho), cell, releases, prior=prior,
                                    block_group=group, random_seed=seed)
    except ValueError as err:
        raise _naming_rho1(err, None if group is None else group.rho2) from None
    payload = {
        "p_map_correct": res.p_map_correct,
        "expected_true_posterior": res.expected_true_posterior,
        "prior_true": float(prior[cell]),
        "cells": int(prior.size),
        "p_map_correct_mcse": res.p_map_correct_mcse,
        "expected_true_posterior_mcse": res.expected_true_posterior_mcse,
        "releases": releases,
        "seed": seed,
    }
    where = "the eleven block queries" + (" and the block group" if group else "")
    lines = common.payload_lines(
        f"adversary reading {where} of the 2020 strategy (detailed rho = {fmt(rho)}), target "
        f"in cell {cell} (Monte Carlo)", payload)
    lines.append(common.seed_line(seed, args.seed is None))
    return payload, lines


def _naming_rho1(err: ValueError, rho2: float | None = None) -> ValueError:
    """A refusal of a scaled query rho (detailed ``--rho1`` times a fraction) names --rho1.

    A refusal of the block group's ``rho2`` by its value (``rho = 1e-320 is too small``) names
    ``--rho2``.
    """
    message = str(err)
    if message.startswith("x2_prior "):  # the block group's X2 prior: --x2-prior
        return ValueError(f"--x2-prior {message[len('x2_prior '):]}")
    value = re.match(r"rho = ([^\s,;:]+)", message)
    if rho2 is not None and value and _number_or_nan(value.group(1)) == rho2:
        return ValueError(f"--rho2: {message}")
    if message.startswith("rho: "):  # a limit's refusal: the parameter, then what
        message = message[len("rho: "):]
    if message != str(err) or message.startswith("rho "):
        message = f"--rho1 (the detailed query's rho; the others are fractions of it): {message}"
    return ValueError(message)


def _number_or_nan(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _release(args, method: str, seed) -> tuple[dict, list[str]]:
    from dprisk.inference.attribute.posterior import cell_posterior
    from dprisk.models.census.allocation import parse_rho
    from dprisk.models.priors.histogram import check_known_counts

    common.require(args, "one-release", rho1="a rho > 0 or census:LEVEL",
                   known="a FILE of known counts")
    rho = parse_rho(args.rho1, "--rho1")
    release = read_cells(args.release, "--release", integers=True)
    known = check_known_counts(read_cells(args.known, "--known", integers=True), name="--known")
    if len(release) != known.size:
        raise ValueError(f"--release must have one count per cell ({known.size}, as --known), "
                         f"got {len(release)}")
    prior = _prior(args, known.size)
    post = cell_posterior(release, known, rho, prior)
    cell = _true_cell(args, prior, post.map_cell)
    payload = {
        "posterior": [float(v) for v in post.posterior],
        "map_cell": int(post.map_cell),
        "risk": float(post.risk(cell)),
    }
    lines = [f"posterior of the target's cell over {known.size} cells (rho = {fmt(rho)})",
             f"  {'map_cell':<24} {post.map_cell} (posterior "
             f"{fmt(float(post.posterior[post.map_cell]))}, {post.ties} tied)",
             f"  {'risk':<24} {fmt(payload['risk'])} (R' of cell {cell})"]
    return payload, lines
