"""``dprisk sweep``: P[correct decision] over parameter grids, written to a netCDF file.

Every grid option is parsed by :func:`dprisk.cli.grids.parse_grid` (a value, a comma list or
a range) and swept, even with a single value. ``--method mc`` runs the Monte Carlo study at
every point with the seed :func:`dprisk.inference.sweeps.sweep.point_seed` of the sweep's seed;
that seed is drawn when ``--seed`` is not given (or taken from an interrupted or finished mc
sweep at the same ``--out``, so that a rerun resumes it) and reported.
"""

from __future__ import annotations

import math
from pathlib import Path

from dprisk.cli.common import (
    EXIT_OK,
    SEED_HELP,
    SUBCOMMAND_HELP,
    WORK_HELP,
    Form,
    add_json,
    apply_defaults,
    check_form,
    check_writable_dir,
    emit,
    integer,
    naming_out,
    sampling_seed,
    seed_line,
    show_progress,
    with_default,
)
from dprisk.cli.grids import GRID_SYNTAX

__all__ = ["DEFAULTS", "FORM", "RECORD_BYTES", "add_parser", "run"]

#: The one form of ``dprisk sweep``; the Monte Carlo options apply to ``--method mc`` only.
FORM = Form("grid", "every sweep", frozenset({"method"}), methods=("exact", "mc"),
            sampling=("mc",), sampled=frozenset({"datasets", "draws", "seed"}))
#: Defaults applied after the checks (the Monte Carlo budget of ``dprisk marginal``).
DEFAULTS = {"datasets": 20_000, "draws": 1000}
#: Bytes per grid point of the printed records (a dict and its JSON text), checked against
#: the memory limit (:mod:`dprisk.runtime.memory_limit`) before any grid is built.
RECORD_BYTES = 1024


def add_parser(subs) -> None:
    """Register ``dprisk sweep`` with every option, its default and the grid syntax."""
    swp = subs.add_parser(
        "sweep",
        help=SUBCOMMAND_HELP["sweep"],
        description=f"{GRID_SYNTAX} Every grid option is swept (a single value is a grid of "
        "one point). --datasets, --draws and --seed apply to --method mc only.",
    )
    swp.add_argument("--rho1", required=True, help="grid of block rho, 0 < rho <= 1e100 "
                     "(census:LEVEL allowed)")
    swp.add_argument("--rho2", required=True, help="grid of block-group rho, > 0; every "
                     "point needs rho2 + rho1/d <= 1e6 (above, exit status 2)")
    swp.add_argument("--d", required=True, help="grid of the number of other blocks (>= 1)")
    swp.add_argument("--x2", required=True, help="grid of the true block-group count")
    swp.add_argument("--p", default="0.5",
                     help=with_default("grid of the prior P[X1 = m+1]", "0.5"))
    swp.add_argument("--known", default="0", help=with_default("grid of m", "0"))
    swp.add_argument("--prior", default="improper",
                     help=with_default("comma list of X2 prior SPECs", "improper"))
    swp.add_argument("--method", default=None, help=with_default(
        "exact | mc (the Monte Carlo study at every point)", "exact"))
    swp.add_argument("--datasets", type=integer, default=None, help=with_default(
        f"simulated releases per point (mc only; 2 <= N, the MCSE needs two; {WORK_HELP}, "
        "all points together)",
        DEFAULTS["datasets"]))
    swp.add_argument("--draws", type=integer, default=None, help=with_default(
        "Gibbs draws per release (mc only)", DEFAULTS["draws"]))
    swp.add_argument("--seed", type=integer, default=None,
                     help=f"{SEED_HELP}; at most 2**53 (stored in the file); mc only")
    swp.add_argument("--out", required=True, help="output netCDF file (.nc); a rerun of an "
                     "interrupted sweep computes only the missing chunks")
    swp.add_argument("--scheduler", default=None, help="Dask scheduler address; it must "
                     "answer, and have a worker, within 10 s (environment variable "
                     "DPRISK_SCHEDULER_TIMEOUT) (default: compute in this process)")
    add_json(swp)
    swp.set_defaults(func=run)


def run(args) -> int:
    """Parse the grids, run the sweep, print the records."""
    from dprisk.cli.grids import parse_grid, sweep_records
    from dprisk.inference.sweeps.store import check_out
    from dprisk.inference.sweeps.sweep import connect, sweep_table
    from dprisk.models.checks import check_positive_int

    check_form(args, "sweep", FORM, [FORM])
    apply_defaults(args, DEFAULTS)
    out = Path(args.out)
    if out.suffix != ".nc":
        raise ValueError(f"--out must be a netCDF path ending in .nc, got {args.out!r}")
    check_writable_dir(out, "--out")
    with naming_out():
        check_out(out)  # a directory, a device or a file not written by a sweep: refused
    _check_grid_memory(args)
    grids = {
        "rho1": parse_grid(args.rho1, "rho1", kind=float),
        "rho2": parse_grid(args.rho2, "rho2", kind=float),
        "d": parse_grid(args.d, "d", kind=int),
        "x2": parse_grid(args.x2, "x2", kind=int),
        "p": parse_grid(args.p, "p", kind=float),
        "known": parse_grid(args.known, "known", kind=int),
    }
    priors = parse_grid(args.prior, "prior", kind=str)
    method = FORM.method(args)
    seed, drawn = sampling_seed(args, FORM)
    if seed is not None:  # mc_options["seed"], checked here to name --seed in the refusal
        check_positive_int(seed, "seed", minimum=0)
    how = "from --seed"
    if drawn and (resumed := _stored_seed(out)) is not None:
        seed, drawn, how = resumed, False, f"of the sweep already at {out}"
    mc_options = None
    if seed is not None:
        mc_options = {"seed": seed, "datasets": args.datasets, "draws": args.draws}
    client = connect(args.scheduler, name="--scheduler") if args.scheduler else None
    try:
        with naming_out():
            table = sweep_table(**grids, prior=priors if len(priors) > 1 else priors[0],
                                method=method, mc_options=mc_options, out=str(out),
                                client=client, progress=show_progress(args))
    finally:
        if client is not None:
            client.close()
    payload = {
        "out": str(out),
        "dims": {name: int(size) for name, size in table.sizes.items()},
        "records": sweep_records(table),
    }
    lines = [f"sweep written to {out}", f"  dims: {payload['dims']}"]
    lines += [f"  {record}" for record in payload["records"][:20]]
    if len(payload["records"]) > 20:
        lines.append(f"  … {len(payload['records']) - 20} more")
    if seed is not None:
        payload["seed"] = seed
        lines.append(seed_line(seed, drawn, how))
    emit(args, payload, lines)
    return EXIT_OK


def _grid_size(text: str, kind: type) -> int:
    """Points a grid option asks for, counted without building it (1 when it cannot tell).

    A comma list has one point per item; ``A:B:N[:log]`` (numbers) N points; ``A:B[:STEP]``
    (integers) ``(B - A) // STEP + 1``. Malformed text counts 1: :func:`parse_grid` names it.
    """
    if "," in text:
        return text.count(",") + 1
    parts = text.strip().split(":")
    if len(parts) < 2 or parts[0] == "census":
        return 1
    try:
        if kind is int:
            step = int(parts[2]) if len(parts) > 2 else 1
            return max(1, (int(parts[1]) - int(parts[0])) // step + 1) if step > 0 else 1
        return max(1, int(parts[2])) if len(parts) > 2 else 1
    except ValueError:
        return 1


def _check_grid_memory(args) -> None:
    """Refuse, before any grid is built, a sweep whose points exceed the memory or work limit.

    Each point costs :data:`RECORD_BYTES` (its printed record) on top of the sweep's own
    arrays; the option with the largest grid is named.
    """
    from dprisk.inference.sweeps.sweep import check_sweep_work
    from dprisk.runtime.memory_limit import check_memory

    sizes = {name: _grid_size(getattr(args, name), kind) for name, kind in
             (("rho1", float), ("rho2", float), ("d", int), ("x2", int), ("p", float),
              ("known", int), ("prior", str))}
    points = math.prod(sizes.values())
    largest = max(sizes, key=sizes.get)
    check_memory(RECORD_BYTES * points, parameter=f"--{largest}",
                 what=f"a sweep of {points} grid points ({sizes[largest]} from --{largest}; "
                 "one record each)")
    swept = ", ".join(name for name, size in sizes.items() if size > 1) or "the grid"
    check_sweep_work(points, swept, FORM.method(args),
                     {"datasets": args.datasets, "draws": args.draws})


def _stored_seed(out: Path) -> int | None:
    """The seed of a Monte Carlo sweep already stored (interrupted or finished) at ``out``."""
    from dprisk.inference.sweeps.store import stored_manifest

    manifest = stored_manifest(out)
    if manifest is None or manifest.get("method") != "mc":
        return None
    seed = manifest.get("mc_options", {}).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

