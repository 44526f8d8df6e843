"""Records of the paper-reproduction report: what one study contributes, and the record contract.

A small module of its own so that the study modules (which build :class:`StudyResult`) and the
report writer (which consumes them) do not import each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import xarray as xr
from matplotlib.figure import Figure

from dprisk.validation.paper import claims

__all__ = ["CLAIM_STATUSES", "NUMBER_STATUSES", "RECORD_KEYS", "STATUSES", "StudyResult",
           "claim_record", "exact_record", "is_check", "validate_records"]

#: Keys of every study record (a public interface; keep exactly). ``results.json`` rows add
#: :data:`dprisk.validation.paper.record_annotations.ANNOTATION_KEYS` (the report adds them).
RECORD_KEYS = ("id", "source", "published", "computed", "mcse", "status", "explanation")
#: Statuses of a published number compared with the computed one.
NUMBER_STATUSES = ("match", "within-mc-error", "differs")
#: Statuses of a claim of the paper (:mod:`dprisk.validation.paper.claims`): whether it holds for
#: the measured quantity (the record's ``computed``; ``published`` is None).
CLAIM_STATUSES = ("holds", "does not hold")
#: Allowed values of a record's ``status``.
STATUSES = NUMBER_STATUSES + CLAIM_STATUSES


@dataclass
class StudyResult:
    """What one study contributes to the report.

    Attributes
    ----------
    name : str
        Short identifier, used as the netCDF group name.
    title : str
        Heading in the HTML report.
    records : list of dict
        Published-vs-computed records with exactly :data:`RECORD_KEYS`.
    datasets : dict of str to xarray.Dataset
        Underlying data, written to ``results.nc`` as ``/<name>/<key>``.
    figures : dict of str to matplotlib.figure.Figure
        File stem (e.g. ``"figure1"``) to figure. A study run in a worker process by
        :func:`dprisk.validation.report.runner.run_studies` comes back with each figure's
        caption and alt text in its place
        (:class:`dprisk.validation.figures.captions.FigureText`), its PNG beside the result.
    notes : list of str
        Plain-text paragraphs explaining what was computed and how.
    diagnostics : list of str
        Pre-formatted text blocks (e.g. ArviZ convergence summaries).
    seeds : dict of str to int
        Random seeds used, by purpose.
    """

    name: str
    title: str
    records: list[dict] = field(default_factory=list)
    datasets: dict[str, xr.Dataset] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    seeds: dict[str, int] = field(default_factory=dict)


def _check_claim(record: dict) -> None:
    """A claim's record: a claim status, no published number, a finite measured quantity."""
    rid, status = record["id"], record["status"]
    if claims.is_claim(rid) != (status in CLAIM_STATUSES):
        kind = "a claim" if claims.is_claim(rid) else "not a claim"
        allowed = CLAIM_STATUSES if claims.is_claim(rid) else NUMBER_STATUSES
        raise ValueError(f"record {rid!r} is {kind} of the paper: status {status!r} not in "
                         f"{allowed}")
    if status in CLAIM_STATUSES:
        computed = record["computed"]
        if record["published"] is not None:
            raise ValueError(f"claim record {rid!r} has a published number; a claim has none")
        if isinstance(computed, bool) or not isinstance(computed, int | float) \
                or not math.isfinite(computed):
            raise ValueError(f"claim record {rid!r} has no measured quantity (computed "
                             f"{computed!r})")


def validate_records(records: list[dict]) -> None:
    """Check that every record has exactly :data:`RECORD_KEYS`, a known status, unique ids.

    A claim of the paper (:func:`dprisk.validation.paper.claims.is_claim`) has a status in
    :data:`CLAIM_STATUSES`, ``published`` None and a finite measured quantity in ``computed``;
    every other record has a status in :data:`NUMBER_STATUSES`. ``differs`` and ``does not
    hold`` need an explanation.

    Raises
    ------
    ValueError
        Naming the first offending record.
    """
    seen: set[str] = set()
    for record in records:
        if tuple(sorted(record)) != tuple(sorted(RECORD_KEYS)):
            raise ValueError(f"record {record.get('id')!r} has keys {sorted(record)}")
        if record["status"] not in STATUSES:
            raise ValueError(f"record {record['id']!r} has status {record['status']!r}")
        _check_claim(record)
        if record["status"] in ("differs", "does not hold") and not record["explanation"]:
            raise ValueError(f"record {record['id']!r} is {record['status']!r} without an "
                             "explanation")
        if record["id"] in seen:
            raise ValueError(f"duplicate record id {record['id']!r}")
        seen.add(record["id"])


def is_check(record: dict) -> bool:
    """Whether a record is a check of the suite's own, not a published number compared.

    A number status (:data:`NUMBER_STATUSES`) with ``published`` None: e.g. the Bayes accuracy
    at most the worst case, or a Monte Carlo estimate against the exact value beyond the
    paper; ``match`` means the check passes. Summaries count these apart from the published
    numbers and from the claims.
    """
    return record["status"] in NUMBER_STATUSES and record["published"] is None


def claim_record(id_: str, source: str, measured, holds: bool, explanation: str) -> dict:
    """The record of a claim of the paper: ``computed`` is the measured quantity.

    ``published`` is None (the statement and the relation checked are in
    :data:`dprisk.validation.paper.claims.CLAIMS`); ``status`` is ``holds`` or ``does not hold``.
    """
    claims.get(id_)  # KeyError for an id that is not a claim
    return {"id": id_, "source": source, "published": None, "computed": float(measured),
            "mcse": None, "status": "holds" if holds else "does not hold",
            "explanation": explanation}


def exact_record(id_: str, source: str, published, computed, ok: bool, explanation: str) -> dict:
    """A record of an exact computation (``mcse`` None): ``match`` when ``ok``, else ``differs``."""
    return {"id": id_, "source": source,
            "published": None if published is None else float(published),
            "computed": float(computed), "mcse": None,
            "status": "match" if ok else "differs", "explanation": explanation}
