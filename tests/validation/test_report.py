"""The report writer: file layout, record contract, atomic replacement, nothing partial."""

import json
import re

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from dprisk.validation import report
from dprisk.validation.record_annotations import RESULTS_KEYS, annotate
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
    # a study's record (RECORD_KEYS) plus the report's annotations, added, none changed
    assert [tuple(sorted(r)) for r in records] == [tuple(sorted(RESULTS_KEYS))]
    assert set(RECORD_KEYS) < set(RESULTS_KEYS)
    assert {k: records[0][k] for k in RECORD_KEYS} == _record()
    assert (out / "figures" / "figure0.png").stat().st_size > 1000
    tree = xr.open_datatree(out / "results.nc")
    np.testing.assert_array_equal(tree["demo/table"]["value"].values, [0.0, 1.0, 2.0])
    tree.close()
    html = (out / "index.html").read_text()
    assert "demo/x" in html and "figures/figure0.png" in html and "R-hat fine" in html
    assert "<td>demo</td><td>mc</td><td class='num'>7</td>" in html and "pymc" in html


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


def _page_with(records, tmp_path, monkeypatch):
    def study(*, paper_scale):
        result = _fake_study(paper_scale=paper_scale)
        result.records = records
        return result

    monkeypatch.setattr(report, "STUDIES", [("demo", study)])
    write_report(tmp_path / "report", progress=False)
    return (tmp_path / "report" / "index.html").read_text()


def _mass_records():
    """Table 1's Mass rows as the single-level study writes them (one wording, own numbers)."""
    computed = [0.17772, 0.16093, 0.1195, 0.072761, 0.036328]
    printed = [0.161, 0.119, 0.073, 0.036, 0.015]
    return [
        {"id": f"table1/x1_star={k + 1}/mass", "source": "Table 1", "published": printed[k],
         "computed": computed[k], "mcse": None, "status": "differs",
         "explanation": (f"The caption says P[X1* = x1* | X1 = 1], which is {computed[k]} here. "
                         "The printed column is P[X1* = x1* | X1 = 0], the release distribution "
                         "when the target does not have the characteristic.")}
        for k in range(5)
    ]


def test_page_leads_with_findings_computed_from_records(tmp_path, monkeypatch):
    html = _page_with([*_mass_records(), _record()], tmp_path, monkeypatch)
    summary = html.index("id='summary'")
    assert summary < html.index("<figure") < html.index("id='all-records'")
    assert "<table" not in html[:summary]
    finding = html[summary:html.index("</section>")]
    # the printed and the computed column, read from the records, and a link to the evidence
    assert "0.161, 0.119, 0.073, 0.036, 0.015" in finding
    assert "0.178, 0.161, 0.119, 0.073, 0.036" in finding
    assert "4 of the first 4" in finding and "href='#rec-table1_x1_star_1_mass'" in finding
    assert "id='rec-table1_x1_star_1_mass'" in html  # the evidence: the record's row
    assert "<b>differs</b> 5" in finding and "<b>match</b> 1" in finding


def test_every_figure_has_a_caption_and_alt_text(tmp_path, monkeypatch):
    html = _page_with([_record()], tmp_path, monkeypatch)
    figures = re.findall(r"<figure[^>]*><img src='([^']+)' alt='([^']*)'>"
                         r"<figcaption>([^<]+)</figcaption></figure>", html)
    assert len(figures) == html.count("<img ") == 1
    source, alt, caption = figures[0]
    assert source == "figures/figure0.png"
    assert alt != "figure0" and "panel" in alt and caption.strip()


def test_each_explanation_is_written_once(tmp_path, monkeypatch):
    records = _mass_records()
    alone = _record("demo/alone", status="differs", explanation="A wording of its own.")
    html = _page_with([*records, alone], tmp_path, monkeypatch)
    shared = "The printed column is P[X1* = x1* | X1 = 0]"
    assert html.count(shared) == 1
    assert html.count("A wording of its own.") == 1 and "note-2" not in html  # inline, once
    assert html.count("href='#note-1'") >= len(records)
    for record in records:  # each row keeps its own number
        assert f"which is {record['computed']} here" in html


def test_annotations_name_printed_tables_and_state_claims():
    record = {**_record("table1/x1_star=1/mass"),
              "source": "Table 1 (tab:tab1; printed as Table 4)"}
    assert annotate(record) == {**record, "printed_as": "Table 4", "latex_label": "tab:tab1",
                                "claim": None}
    claim = {**_record("text4.2/fig2/rho=0.25/p=1/2/risk", status="differs", explanation="x"),
             "source": "Section 4.2 text"}
    annotated = annotate(claim)
    assert annotated["printed_as"] == "Section 4.2" and annotated["latex_label"] is None
    assert annotated["claim"]["relation"] == "≈ 1" and annotated["claim"]["holds"] is False


def test_claims_are_shown_as_claims(tmp_path, monkeypatch):
    claim = {**_record("s6/fig10_left/bounded_by_no_postprocessing", status="differs",
                       explanation="largest excess 0.0003"), "source": "Supplement S6 text"}
    html = _page_with([claim], tmp_path, monkeypatch)
    row = html[html.index("<td>s6/fig10_left/bounded_by_no_postprocessing</td>"):]
    row = row[:row.index("</tr>")]
    assert "claim: ≤ 0" in row and "does not hold" in row and ">0<" not in row
