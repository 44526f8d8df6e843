"""``dprisk population synth``: a synthetic state's persons file.

``--persons N --seed S --out DIR`` writes ``DIR/persons.parquet`` (columns ``geoid``,
``hhgq``, ``votingage``, ``hispanic``, ``cenrace``; the model:
:mod:`dprisk.inference.population.synth`). The seed is drawn and reported when not given; the
same seed gives the same rows. ``DIR`` may be new, empty, or written by this command before
(then replaced in one step; files the user added are kept).
"""

from __future__ import annotations

from dprisk.cli.common import EXIT_OK, SEED_HELP, add_json, draw_seed, emit, integer, seed_line
from dprisk.runtime.ascii_numbers import ascii_digits

__all__ = ["HELP", "MARKER", "add_arguments", "run"]

HELP = ("a synthetic state's persons (persons.parquet): 2010 block sizes by band, tract "
        "compositions that cluster, group quarters")
#: Marker file of a directory this command wrote.
MARKER = ".dprisk-population-synth"


def add_arguments(parser) -> None:
    """``--persons``, ``--seed``, ``--state``, ``--out``, ``--json``."""
    parser.add_argument("--persons", type=integer, required=True, metavar="N",
                        help="number of persons, an integer >= 1")
    parser.add_argument("--seed", type=integer, default=None, metavar="S", help=SEED_HELP)
    parser.add_argument("--state", default="01", metavar="SS",
                        help="two-digit state FIPS code of the GEOIDs (default: 01)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory; persons.parquet is written there")
    add_json(parser)


def run(args) -> int:
    """Draw the persons and write ``DIR/persons.parquet``."""
    from dprisk.inference.population.synth import BYTES_PER_PERSON, synthesize
    from dprisk.runtime.memory_limit import check_memory
    from dprisk.runtime.output_directory import OutputDirectory

    if args.persons < 1:
        raise ValueError(f"--persons must be an integer >= 1, got {args.persons}")
    if not ascii_digits(args.state, 2):
        raise ValueError(f"--state must be a two-digit FIPS code (two ASCII digits 0-9), "
                         f"got {args.state!r}")
    check_memory(BYTES_PER_PERSON * args.persons, parameter="--persons",
                 what=f"a population of {args.persons} persons")
    seed, drawn = (args.seed, False) if args.seed is not None else (draw_seed(), True)
    target = OutputDirectory(args.out, marker=MARKER, command="dprisk population synth")
    frame = synthesize(args.persons, seed, state=args.state)
    with target:
        target.write(lambda tmp: frame.to_parquet(tmp / "persons.parquet", index=False,
                                                  engine="pyarrow"))
    path = target.out / "persons.parquet"
    blocks = int(frame["geoid"].nunique())
    payload = {"persons": len(frame), "blocks": blocks,
               "tracts": int(frame["geoid"].str[:11].nunique()), "state": args.state,
               "out": str(path), "seed": seed}
    lines = [f"{len(frame)} persons in {blocks} blocks written to {path}",
             seed_line(seed, drawn)]
    emit(args, payload, lines)
    return EXIT_OK
