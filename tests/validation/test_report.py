"""The report writer: file layout, record contract, atomic replacement, nothing partial."""

import json

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from dprisk.validation import report
from dprisk.validation.report import RECORD_KEYS, StudyResult, validate_records, write_report


def _record(id_="demo/x", status="match", explanation=""):
    return {"id": id_, "source": "Table 0", "published": 0.5, "computed": 0.5004, "mcse": None,
            "status": status, "explanation": explanation}


def _fake_study(*, paper_scale):
    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    data = xr.Dataset({"value": ("x", np.arange(3.0))}, coords={"x": [1, 2, 3]})
    return StudyResult(name="demo", title="Demo study", records=[_record()],
                       datasets={"table": data}, figures={"figure0": fig},
                       notes=["a note"], diagnostics=["R-hat fine"], seeds={"mc": 7})


def _failing_study(*, paper_scale):
    raise RuntimeError("boom")


def test_report_layout_and_contract(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "STUDIES", [("demo", _fake_study)])
    out = tmp_path / "report"
    summary = write_report(out, progress=False)
    assert summary["n_records"] == 1 and summary["n_figures"] == 1
    records = json.loads((out / "results.json").read_text())
    assert [tuple(sorted(r)) for r in records] == [tuple(sorted(RECORD_KEYS))]
    assert (out / "figures" / "figure0.png").stat().st_size > 1000
    tree = xr.open_datatree(out / "results.nc")
    np.testing.assert_array_equal(tree["demo/table"]["value"].values, [0.0, 1.0, 2.0])
    tree.close()
    html = (out / "index.html").read_text()
    assert "demo/x" in html and "figures/figure0.png" in html and "R-hat fine" in html
    assert "seed demo/mc" in html and "pymc" in html


def test_report_replaces_atomically_and_failure_keeps_old(tmp_path, monkeypatch):
    out = tmp_path / "report"
    monkeypatch.setattr(report, "STUDIES", [("demo", _fake_study)])
    write_report(out, progress=False)
    write_report(out, progress=False)  # replacing an existing report
    before = (out / "results.json").read_text()
    monkeypatch.setattr(report, "STUDIES", [("demo", _fake_study), ("bad", _failing_study)])
    with pytest.raises(RuntimeError, match="boom"):
        write_report(out, progress=False)
    assert (out / "results.json").read_text() == before  # the old report is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary leftovers


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{**_record(), "extra": 1}], "keys"),
        ([_record(status="close")], "status"),
        ([_record(status="differs")], "explanation"),
        ([_record(), _record()], "duplicate"),
    ],
)
def test_validate_records_rejects_bad_records(records, message):
    with pytest.raises(ValueError, match=message):
        validate_records(records)


def test_importing_the_report_imports_no_study():
    """The studies are imported when run, so the report and the studies form no cycle."""
    import subprocess
    import sys

    code = ("import sys, dprisk.validation.report; "
            "studies = ['single_level_paper', 'hierarchical_paper', 'studies_paper', "
            "'supplement', 'sbc', 'screenshot']; "
            "print([s for s in studies if f'dprisk.validation.{s}' in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
