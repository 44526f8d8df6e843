"""Records of the paper-reproduction report: what one study contributes, and the record contract.

A small module of its own so that the study modules (which build :class:`StudyResult`) and the
report writer (which consumes them) do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import xarray as xr
from matplotlib.figure import Figure

__all__ = ["RECORD_KEYS", "STATUSES", "StudyResult", "exact_record", "validate_records"]

#: Keys of every study record (a public interface; keep exactly). ``results.json`` rows add
#: :data:`dprisk.validation.record_annotations.ANNOTATION_KEYS` (the report adds them).
RECORD_KEYS = ("id", "source", "published", "computed", "mcse", "status", "explanation")
#: Allowed values of a record's ``status``.
STATUSES = ("match", "within-mc-error", "differs")


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
        File stem (e.g. ``"figure1"``) to figure.
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


def validate_records(records: list[dict]) -> None:
    """Check that every record has exactly :data:`RECORD_KEYS`, a known status, unique ids.

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
        if record["status"] == "differs" and not record["explanation"]:
            raise ValueError(f"record {record['id']!r} differs without an explanation")
        if record["id"] in seen:
            raise ValueError(f"duplicate record id {record['id']!r}")
        seen.add(record["id"])


def exact_record(id_: str, source: str, published, computed, ok: bool, explanation: str) -> dict:
    """A record of an exact computation (``mcse`` None): ``match`` when ``ok``, else ``differs``."""
    return {"id": id_, "source": source,
            "published": None if published is None else float(published),
            "computed": float(computed), "mcse": None,
            "status": "match" if ok else "differs", "explanation": explanation}
