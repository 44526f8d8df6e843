"""``dprisk population measure``: draw the noisy measurements of a persons file, as the DAS did.

``--persons FILE --out DIR [--seed S] [--layout table|nmf] [--json]``. The noise is the
discrete Gaussian of the 2020 DAS at the production allocation, σ² = 1/ρ_query for every
query (block ``detailed``: 10.093), drawn from counter-based streams keyed by the seed, the
level, the query and the geounit (:mod:`dprisk.inference.population.noise`): the same seed
gives the same block ``detailed`` noise in both layouts. ``table`` writes ``noisy.parquet``;
``nmf`` every level and query in the released layout (``US_Person_PL_PROD/...``). Both write
``measure.json`` (seed, layout, σ², files). ``DIR`` is written aside and put in place only
when complete (:class:`dprisk.runtime.output_directory.OutputDirectory`); bad input exits
2 with one line naming the option, nothing written.

The ``population`` dispatcher (:mod:`.population`) calls :func:`add_arguments` and
:func:`run`.
"""

from __future__ import annotations

import json
import time

from dprisk.cli.common import add_json, draw_seed, emit, integer, show_progress

__all__ = ["HELP", "MARKER", "add_arguments", "run"]

#: The marker file (manifest) of a directory this command wrote.
MARKER = ".dprisk-population-measure"

#: One-line help of the subcommand.
HELP = "draw the noisy measurements of a persons file as the 2020 DAS drew them"


def add_arguments(parser) -> None:
    """Add the options of ``dprisk population measure`` to ``parser``."""
    parser.add_argument("--persons", required=True, metavar="FILE",
                        help="persons file (.parquet or .csv): geoid, hhgq, votingage, "
                        "hispanic, cenrace, one row per person")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory (new, empty, or written by this command before)")
    parser.add_argument("--seed", type=integer, default=None, metavar="S",
                        help="seed of the noise (default: drawn and reported); the noise of a "
                        "query at a geounit depends only on (seed, level, query, geounit)")
    parser.add_argument("--layout", choices=("table", "nmf"), default="table",
                        help="table: DIR/noisy.parquet, the block detailed query (geoid, hhgq, "
                        "votingage, hispanic, cenrace, noisy, variance); nmf: every level and "
                        "query of the 2020 strategy in the released layout "
                        "(DIR/US_Person_PL_PROD/{US,State,County,Tract,Block_Group,Block}"
                        ".parquet/{DPQuery,Constraint}/State=FSS/); default table. Noise "
                        "variance: the DAS's, sigma^2 = 1/rho_query (block detailed 10.093), "
                        "not this suite's 1/(2 rho)")
    add_json(parser)


def run(args) -> int:
    """Run ``dprisk population measure``; return the exit status."""
    from dprisk.inference.population.measure import BYTES_PER_PERSON, measure
    from dprisk.inference.population.persons import count_persons, read_persons
    from dprisk.models.census.strategy import PRODUCTION_RHO
    from dprisk.runtime.memory_limit import check_memory
    from dprisk.runtime.output_directory import OutputDirectory

    drawn = args.seed is None
    seed = draw_seed() if drawn else args.seed
    target = OutputDirectory(args.out, marker=MARKER, command="dprisk population measure")
    # counted before reading: the file read whole takes about 125 B a person itself
    rows = count_persons(args.persons, name="--persons")
    check_memory(BYTES_PER_PERSON * rows, parameter="--persons",
                 what=f"the cells of {rows} persons")
    persons = read_persons(args.persons, name="--persons")
    started = time.perf_counter()
    bar = None
    if show_progress(args):
        from tqdm.auto import tqdm

        bar = tqdm(total=int(persons["geoid"].nunique()), unit="block", desc="measure",
                   leave=False)

    def fill(tmp):
        result = measure(persons, tmp, seed=seed, layout=args.layout,
                         progress=None if bar is None else bar.update)
        record = {"written_by": "dprisk population measure", "seed": seed,
                  "layout": args.layout, "rho_total": float(PRODUCTION_RHO),
                  "noise": "discrete Gaussian, pmf ∝ exp(-x²/(2σ²)), σ² = 1/rho_query (DAS)",
                  "block_detailed_variance": result.block_detailed_variance,
                  "persons": result.persons, "blocks": result.blocks, "files": result.files}
        (tmp / "measure.json").write_text(json.dumps(record, indent=1) + "\n")
        return result

    try:
        with target:
            result = target.write(fill)
    finally:
        if bar is not None:
            bar.close()
    payload = {"persons": result.persons, "blocks": result.blocks, "layout": args.layout,
               "out": str(target.out), "files": len(result.files) + 1, "rows": result.rows,
               "block_detailed_variance": result.block_detailed_variance,
               "rho_total": float(PRODUCTION_RHO), "seed": seed,
               "seconds": round(time.perf_counter() - started, 3)}
    how = (f"drawn at random; --seed {seed} reproduces this run" if drawn else "from --seed")
    lines = [f"noisy measurements of {result.persons} persons in {result.blocks} blocks "
             f"({args.layout} layout) -> {target.out}",
             f"  {'block detailed sigma^2':<24} {result.block_detailed_variance:.6g} "
             "(the DAS's: 1/rho_query)",
             f"  {'rows':<24} {result.rows}",
             f"  {'seconds':<24} {payload['seconds']}",
             f"  {'seed':<24} {seed} ({how})"]
    emit(args, payload, lines)
    return 0
