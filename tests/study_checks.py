"""Shared checks of the study tests (imported as the top-level module ``study_checks``)."""

from dprisk.validation.paper.records import validate_records


def assert_records_match(records, count):
    """Check that ``records`` are well formed, number ``count`` and all have status match."""
    validate_records(records)
    assert len(records) == count
    assert {r["status"] for r in records} == {"match"}
