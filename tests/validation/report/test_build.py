"""The report writer: file layout, record contract, atomic replacement, nothing partial."""

import importlib
import importlib.util
import json
import re
import sys

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from dprisk.validation.paper.record_annotations import RESULTS_KEYS, annotate
from dprisk.validation.paper.records import exact_record
from dprisk.validation.report import build as report
from dprisk.validation.report import page as PAGE
from dprisk.validation.report.build import RECORD_KEYS, StudyResult, validate_records, write_report


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
    assert f"time: {summary['seconds']:.1f} s" in html  # the time the command prints


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


def _validation_loaded_by(module: str) -> set[str]:
    """The ``dprisk.validation`` modules that importing ``module`` loads, in this process.

    Every ``dprisk.validation`` module is taken out of ``sys.modules`` first (and put back
    after, with the ``dprisk.validation`` attribute of the ``dprisk`` package): the import
    then runs each module of the package it needs afresh, as a new interpreter would (issue
    36: a new interpreter, ``fresh_python.modules_loaded_by``, cost about 2.3 s of CPU, almost
    all of it importing Matplotlib, xarray and pandas again). The libraries and the lower
    layers (``dprisk.runtime``, ``models``, ``inference``) stay loaded: no module of theirs
    imports ``dprisk.validation`` (the import-linter layers contract, ``lint-imports``).
    """
    package = sys.modules["dprisk"]
    saved = {name: loaded for name, loaded in sys.modules.items()
             if name == "dprisk.validation" or name.startswith("dprisk.validation.")}
    attribute = package.__dict__.get("validation")
    for name in saved:
        del sys.modules[name]
    try:
        importlib.import_module(module)
        return {name for name in sys.modules
                if name == "dprisk.validation" or name.startswith("dprisk.validation.")}
    finally:
        for name in [name for name in sys.modules
                     if name == "dprisk.validation" or name.startswith("dprisk.validation.")]:
            del sys.modules[name]
        sys.modules.update(saved)
        if attribute is not None:
            package.validation = attribute


def test_importing_the_report_imports_no_study():
    """The studies are imported when run, so the report and the studies form no cycle."""
    loaded = _validation_loaded_by("dprisk.validation.report.build")
    assert "dprisk.validation.report.build" in loaded and len(loaded) > 10  # run afresh
    studies = ["beyond.decision_summary", "paper.single_level", "paper.two_level",
               "paper.studies", "paper.supplement", "sbc.calibration", "beyond.decisions",
               "beyond.whole_record", "beyond.unknown_others", "figures.single_level",
               "report.screenshot"]
    assert all(importlib.util.find_spec(f"dprisk.validation.{s}") for s in studies)  # not stale
    assert [s for s in studies if f"dprisk.validation.{s}" in loaded] == []


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


def _decision_summary_study(*, paper_scale):
    """The decision summary study with its real table and a stand-in figure (no curves)."""
    from dprisk.validation.beyond import decision_summary as summary_study

    fig = Figure()
    fig.add_subplot().plot([0.1, 1.0], [0.6, 0.8])
    return StudyResult(name=PAGE.DECISION_SUMMARY, title="Decision summary",
                       datasets={"table": summary_study.summary_table()},
                       figures={"decision_summary_accuracy": fig}, notes=["a lead note"])


def test_page_opens_with_the_decision_summary(tmp_path, monkeypatch):
    from dprisk.inference.privacy.decision_summary import decision_summary
    from dprisk.validation.report.screenshot import check_report

    monkeypatch.setattr(report, "STUDIES", [("decision", _decision_summary_study),
                                            ("demo", _fake_study)])
    write_report(tmp_path / "report", progress=False)
    html = (tmp_path / "report" / "index.html").read_text()
    body = html[html.index("<body>"):]
    first = re.search(r"<section id='([^']+)'>", body)
    assert first.group(1) == PAGE.DECISION_SUMMARY  # the first section of the page
    lead = body[first.start():body.index("</section>", first.start())]
    assert lead.index("<table class='decision'>") < lead.index("<img ")  # table, then figure
    assert body.index("</section>") < body.index("id='summary'")  # then the findings
    assert body.count(f"id='{PAGE.DECISION_SUMMARY}'") == 1  # not repeated as a study
    # the table's numbers are decision_summary()'s, at the page's rounding
    expected = decision_summary(census=True)
    rows = re.findall(r"<tr><td class='num'>([^<]+)</td>((?:<td class='num'>[^<]*</td>)+)</tr>",
                      lead)
    assert [label for label, _ in rows] == ["1/2", "1/5", "1/10", "1/50", "1/864"]
    for (_, cells), row in zip(rows, expected.rows, strict=True):
        shown = re.findall(r"<td class='num'>([^<]*)</td>", cells)
        assert shown == [format(getattr(row, name), fmt)
                         for name, _, fmt in PAGE.DECISION_COLUMNS]
    for value in (f"{expected.epsilon_bun_steinke:.2f}", f"{expected.epsilon_cks:.2f}",
                  f"[{expected.epsilon_pld_lower:.4f}, {expected.epsilon_pld_upper:.4f}]",
                  f"{expected.worst_case_accuracy_all:.4f}"):
        assert value in lead
    # CKS at the paper's rho = 2.56 (17.16), not the Census's stated 17.14 (its production
    # rho): the lead called it "the Census's Canonne–Kamath–Steinke" without the rho
    assert (f"{expected.epsilon_cks:.2f} (Canonne–Kamath–Steinke, the conversion the Census "
            "uses, at this ρ = 2.56, not the Census's production ρ)") in lead
    assert check_report(tmp_path / "report")["figures"] == 2  # the screenshot's checks pass


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


def test_notes_are_numbered_in_the_order_the_page_shows_them(tmp_path, monkeypatch):
    # The page shows the records group by group (table or figure), but numbered the notes in
    # the records' order: a group whose records came back in two runs (here demo's) showed
    # its notes as 1, 3 and the next group's as 2 (the report read notes 1-6, 9-15, 7, 8, 16).
    def shared(id_, wording):
        return _record(id_, status="differs", explanation=f"{wording} wording, {id_[-1]}.")

    records = [shared("demo/a1", "First"), shared("demo/a2", "First"),
               {**shared("other/b1", "Second"), "source": "Table 9"},
               {**shared("other/b2", "Second"), "source": "Table 9"},
               shared("demo/a3", "Third"), shared("demo/a4", "Third")]
    html = _page_with(records, tmp_path, monkeypatch)
    shown = [int(n) for n in re.findall(r"id='note-(\d+)'><b>Note", html)]
    assert shown == [1, 2, 3]
    linked = [int(n) for n in re.findall(r"href='#note-(\d+)'>note", html)]
    assert linked == [1, 1, 2, 2, 3, 3]  # rows in page order: demo's four, then other's
    assert html.index("First wording") < html.index("Third wording") < html.index(
        "Second wording")


def test_annotations_name_printed_tables_and_state_claims():
    record = {**_record("table1/x1_star=1/mass"), "source": "Table 4"}
    assert annotate(record) == {**record, "printed_as": "Table 4", "latex_label": "tab:tab1",
                                "claim": None}
    s6 = {**_record("s2/figure8/rho=1/n=5/total_variation"), "source": "Supplement S2 text "
          "(Figure 9)", "published": None, "status": "holds"}
    assert annotate(s6)["printed_as"] == "Supplement S2"
    assert annotate(s6)["latex_label"] == "fig:plot8"  # printed Figure 9 is LaTeX's plot8
    claim = {**_record("text4.2/fig2/rho=0.25/p=1/2/risk", status="does not hold",
                       explanation="x"), "source": "Section 4.2 text", "published": None}
    annotated = annotate(claim)
    assert annotated["printed_as"] == "Section 4.2" and annotated["latex_label"] is None
    assert annotated["claim"]["relation"].startswith("≈ 1")
    assert annotated["claim"]["holds"] is False
    assert "R at ρ1 = 0.25" in annotated["claim"]["measured"]


def _claim_record(id_="s6/fig10_left/bounded_by_no_postprocessing", **changes):
    return {**_record(id_, status="does not hold", explanation="largest excess 0.0003"),
            "source": "Supplement S6 text", "published": None, "computed": 0.0003, **changes}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (_record(status="holds"), "not a claim"),  # a published number cannot 'hold'
        (_record(status="does not hold", explanation="x"), "not a claim"),
        (_claim_record(status="match"), "is a claim"),  # a claim is not a number to match
        (_claim_record(status="differs"), "is a claim"),
        (_claim_record(published=0.0), "published"),
        (_claim_record(computed=None), "measured quantity"),
        (_claim_record(computed=float("nan")), "measured quantity"),
        (_claim_record(computed="small"), "measured quantity"),
        (_claim_record(explanation=""), "explanation"),
    ],
)
def test_claim_statuses_only_for_claim_records(record, message):
    with pytest.raises(ValueError, match=message):
        validate_records([record])


def test_exact_record_status_follows_ok():
    # the beyond-the-paper studies (DAS noise, unknown others) build their records here
    kept = exact_record("x/check", "here", None, 1.0, True, "fine")
    failed = exact_record("x/check", "here", 0.5, 1.0, False, "off by 0.5")
    assert (kept["status"], failed["status"]) == ("match", "differs")
    assert failed["published"] == 0.5 and kept["published"] is None and kept["mcse"] is None


def test_claim_records_are_accepted_with_a_measured_quantity():
    validate_records([_claim_record(), _claim_record("s6/fig10_left/data_processing_bound",
                                                     status="holds", computed=-5e-4)])


def test_every_claim_states_what_is_measured():
    from dprisk.validation.paper import claims
    from dprisk.validation.paper import published as pub

    assert len(claims.CLAIMS) == 31
    for claim in claims.CLAIMS.values():
        assert claim.statement and claim.measured and claim.relation, claim.id
    # every published bound or 'approximately' statement is a claim, and nothing else is
    assert {v.id for v in pub.PUBLISHED if v.kind in ("claim", "bound")} <= set(claims.CLAIMS)
    assert not {v.id for v in pub.PUBLISHED if v.kind not in ("claim", "bound")} \
        & set(claims.CLAIMS)


def test_claims_are_shown_as_claims(tmp_path, monkeypatch):
    html = _page_with([_claim_record(), _record()], tmp_path, monkeypatch)
    row = html[html.index("<td>s6/fig10_left/bounded_by_no_postprocessing</td>"):]
    row = row[:row.index("</tr>")]
    assert "claim: ≤ 0" in row and "does not hold" in row and ">0<" not in row
    assert "Measured: largest excess" in row and ">0.0003<" in row
    summary = html[html.index("id='summary'"):html.index("</section>")]
    assert "1 published numbers recomputed" in summary
    assert "1 claims of the paper checked" in summary and "<b>does not hold</b> 1" in summary
    # the claim's group header counts it too (not only the number statuses)
    group = html[html.index("<h3 id='group-s6"):]
    assert "<span class='does-not-hold'>does not hold 1</span>" in group[:group.index("</p>")]


def test_checks_without_a_published_number_are_counted_apart(tmp_path, monkeypatch):
    # a record with no published number (e.g. summary/bayes_le_worst_case) was counted among
    # the "published numbers recomputed" (the report's 210 held 29 such checks)
    check = {**_record("demo/check"), "published": None}
    monkeypatch.setattr(report, "STUDIES", [("demo", lambda *, paper_scale: StudyResult(
        name="demo", title="Demo", records=[_record(), check, _claim_record()]))])
    summary = write_report(tmp_path / "report", progress=False)
    assert summary["status_counts"] == {"match": 2, "does not hold": 1}  # every record
    assert summary["check_status_counts"] == {"match": 1}
    html = (tmp_path / "report" / "index.html").read_text()
    counts = html[html.index("id='summary'"):html.index("</section>")]
    assert "1 published numbers recomputed: <span class='match'><b>match</b> 1</span>" in counts
    assert "1 checks of the suite (no published number; match: it passes): " \
           "<span class='match'><b>match</b> 1</span>" in counts
    assert "1 claims of the paper checked" in counts


def test_a_one_line_diagnostic_is_shown_once():
    """A one-sentence diagnostic was repeated in full under a summary holding the same sentence
    (the whole-record SBC line, twice on the page); a table keeps its header as summary."""
    study = _fake_study(paper_scale=False)
    study.diagnostics = ["SBC: p = 0.5 (seed 3): passes.", "mean  sd  r_hat\nx   1.0 0.1 1.00"]
    html = "".join(PAGE._study_section(study))
    assert html.count("SBC: p = 0.5 (seed 3): passes.") == 1
    assert "<details><summary>mean  sd  r_hat</summary><pre>mean  sd  r_hat\nx" in html
