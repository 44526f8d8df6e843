"""The report page: the answer first, then the findings, the studies, every record.

:func:`render_html` turns the studies' :class:`~dprisk.validation.paper.records.StudyResult` objects
into one self-contained page (figures are linked from ``figures/``, nothing else is fetched):

1. the decision summary on the first screen (the study named :data:`DECISION_SUMMARY`, when
   present): its table (dataset ``table``: one row per prior, epsilon in its attributes) beside
   its figure, read from the study's data, never recomputed here;
2. the summary of the reproduction: counts by status and the findings where the paper's
   numbers differ (:mod:`dprisk.validation.report.findings`), each linked to its evidence;
3. the other studies, each with its notes and figures; every figure has a caption
   (:mod:`dprisk.validation.figures.captions`) and alt text describing its panels;
4. the full published-vs-computed table grouped by table or figure of the paper. Records
   whose explanations share one wording (the same text up to its numbers) reference one
   numbered note, written once; a row shows only the sentences its own numbers change. Long
   text is collapsible (``<details>``).
"""

from __future__ import annotations

import html
import re
from collections import Counter

from dprisk.models.mechanism.discrete_gaussian import DEFAULT_TAIL_MASS
from dprisk.validation.figures.captions import alt_text, caption
from dprisk.validation.paper.record_annotations import annotate, printed_name
from dprisk.validation.paper.records import (
    CLAIM_STATUSES,
    NUMBER_STATUSES,
    STATUSES,
    StudyResult,
    is_check,
)
from dprisk.validation.report.findings import findings

__all__ = ["DAS_NOISE_COLUMNS", "DECISION_COLUMNS", "DECISION_SUMMARY", "explanation_notes",
           "render_html", "row_anchor"]

#: Name of the study rendered first, as the decision summary
#: (:mod:`dprisk.validation.beyond.decision_summary`).
DECISION_SUMMARY = "decision_summary"
#: Columns of the decision table: variable of its ``table`` dataset, header, format.
DECISION_COLUMNS = (
    ("posterior_block", "posterior, block only", ".4f"),
    ("posterior_block_group", "posterior, with the block group", ".4f"),
    ("marginal_risk", "marginal risk R (block)", ".3f"),
    ("accuracy", "Bayes accuracy", ".4f"),
    ("worst_case_accuracy", "worst-case accuracy (any test)", ".4f"),
)

#: Text longer than this (characters) is shown collapsed in ``<details>``.
LONG_TEXT = 240

_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 1em auto; color: #222;
       line-height: 1.35; }
h1 { font-size: 1.45em; margin: 0.2em 0; }
table { border-collapse: collapse; font-size: 0.88em; width: 100%; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.id { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.why { width: 45%; }
tr.match td.status { background: #c8f0c8; }
tr.within-mc-error td.status { background: #e6f5c0; }
tr.differs td.status { background: #f7c6c6; }
tr.holds td.status { background: #c8f0c8; }
tr.does-not-hold td.status { background: #f7c6c6; }
figure { margin: 1em 0 2em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #333; max-width: 60em; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.counts span { display: inline-block; margin-right: 1.2em; padding: 1px 6px; }
.counts .match { background: #c8f0c8; } .counts .within-mc-error { background: #e6f5c0; }
.counts .differs { background: #f7c6c6; }
.counts .holds { background: #c8f0c8; } .counts .does-not-hold { background: #f7c6c6; }
#summary { border: 1px solid #bbb; padding: 0.3em 1em; background: #fafafa; }
#summary li { margin: 0.25em 0; }
.note { font-size: 0.88em; margin: 0.3em 0 0.3em 1em; }
nav { font-size: 0.9em; }
#decision_summary h2 { margin: 0.3em 0; font-size: 1.2em; }
#decision_summary .lead { display: flex; gap: 1.2em; align-items: flex-start; }
#decision_summary .lead > div { flex: 1 1 55%; }
#decision_summary figure { flex: 0 0 44%; margin: 0; }
#decision_summary p { margin: 0.35em 0; font-size: 0.92em; }
table.decision td, table.decision th { padding: 4px 6px; }
"""


def _fmt_number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return html.escape(str(value))


def _collapsible(text: str, *, summary: str | None = None) -> str:
    """Escaped ``text``; inside ``<details>`` (first sentence as summary) when long."""
    esc = html.escape
    if len(text) <= LONG_TEXT:
        return esc(text)
    if summary is None:  # the first sentence is the summary, the rest the body
        summary, *rest = _sentences(text)
        text = " ".join(rest)
    return f"<details><summary>{esc(summary)}</summary>{esc(text)}</details>"


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;])\s+(?=[A-Z'(])", text.strip()) if s]


def _template(text: str) -> str:
    """The wording of an explanation with its numbers replaced (records that share it)."""
    return re.sub(r"[-+]?\d[\d.,e+-]*", "#", text.strip())


def _group_key(record: dict) -> tuple[str, str]:
    """A record's group: its id family and the printed table or figure it is from.

    The ``table2`` family holds Table 5 and the Census allocation (Table 2): two groups.
    """
    return record["id"].split("/", 1)[0], printed_name(record["source"])


def explanation_notes(records: list[dict]) -> tuple[list[str], dict[str, tuple[int, str]]]:
    """Write each explanation once: a wording shared by several records becomes a note.

    Returns
    -------
    notes : list of str
        Note ``k + 1`` is ``notes[k]``: the explanation of the first record with a wording
        (the text up to its numbers) that two or more records share.
    per_record : dict
        Record id to ``(note number, the record's own sentences not in the note)``; note
        number 0 for a record whose wording is its own (its whole explanation is shown inline).
    """
    by_wording: dict[str, list[tuple[str, str]]] = {}
    for record in records:
        text = (record["explanation"] or "").strip()
        if text:
            by_wording.setdefault(_template(text), []).append((record["id"], text))
    notes: list[str] = []
    per_record: dict[str, tuple[int, str]] = {}
    for members in by_wording.values():
        if len(members) == 1:
            per_record[members[0][0]] = (0, members[0][1])
            continue
        notes.append(members[0][1])
        shared = set(_sentences(notes[-1]))
        for record_id, text in members:
            own = " ".join(s for s in _sentences(text) if s not in shared)
            per_record[record_id] = (len(notes), own)
    return notes, per_record


def _status_class(status: str) -> str:
    """A status as a CSS class name (``does not hold`` -> ``does-not-hold``)."""
    return status.replace(" ", "-")


def _counts(counts: Counter, statuses) -> str:
    return "".join(f"<span class='{_status_class(s)}'><b>{s}</b> {counts.get(s, 0)}</span>"
                   for s in statuses)


def row_anchor(record_id: str) -> str:
    """The HTML id of a record's row in the full table (``rec-`` + the id, URL-safe)."""
    return "rec-" + re.sub(r"[^A-Za-z0-9_.-]", "_", record_id)


def _records_table(records: list[dict], per_record: dict[str, tuple[int, str]]) -> str:
    esc = html.escape
    rows = ["<table><tr><th>id</th><th>published</th><th>computed (measured)</th><th>MCSE</th>"
            "<th>status</th><th>why</th></tr>"]
    for r in records:
        why = ""
        if r["id"] in per_record:
            number, own = per_record[r["id"]]
            if number:
                why = f"<a href='#note-{number}'>note {number}</a>"
                if own:
                    why += " " + _collapsible(own, summary="this row's numbers")
            else:
                why = _collapsible(own)
        claim = r.get("claim")
        if claim:  # a qualitative statement: the measured quantity, the relation checked
            published = f"claim: {esc(claim['relation'])}"
            why = (f"<i>{esc(claim['statement'])}</i>. Measured: {esc(claim['measured'])}. "
                   + why)
        else:
            published = _fmt_number(r["published"])
        # The id cell stays the first, plain <td>: validation.screenshot.check_report reads it.
        rows.append(
            f"<tr class='{_status_class(r['status'])}'><td>{esc(r['id'])}</td>"
            f"<td class='num'>{published}</td>"
            f"<td class='num'>{_fmt_number(r['computed'])}</td>"
            f"<td class='num'>{_fmt_number(r['mcse'])}</td>"
            f"<td class='status'>{esc(r['status'])}</td>"
            f"<td class='why' id='{row_anchor(r['id'])}'>{why}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _all_records(records: list[dict]) -> list[str]:
    """The full table, one section per table or figure of the paper, notes after each."""
    esc = html.escape
    groups: dict[str, list[dict]] = {}
    for record in records:
        groups.setdefault(_group_key(record), []).append(record)
    # Numbered in the order the rows are shown (group by group), so the notes read 1, 2, ...
    notes, per_record = explanation_notes([r for group in groups.values() for r in group])
    parts = ["<h2 id='all-records'>All published numbers and claims: published vs computed</h2>",
             "<p>Grouped by table or figure of the paper. Each explanation is written once: "
             "shown in its row, or, when several rows share its wording, as a numbered note "
             "after the first group that uses it, the rows linking to it and showing only the "
             "numbers that are their own.</p>"]
    written: set[int] = set()
    first_note: dict[str, int] = {}  # sentence -> the first note that has it
    for (family, name), group in groups.items():
        counts = Counter(r["status"] for r in group)
        sources = list(dict.fromkeys(r["source"] for r in group))
        anchor = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{family}-{name}")
        parts.append(
            f"<h3 id='group-{esc(anchor)}'>{esc(name)} "
            f"<small>(records {esc(family)}/…)</small></h3>"
            + "<p class='counts'>source: " + esc("; ".join(sources)) + " · " + "".join(
                f"<span class='{_status_class(s)}'>{s} {counts[s]}</span>" for s in STATUSES
                if counts[s])
            + "</p>"
        )
        parts.append(_records_table(group, per_record))
        new = sorted({per_record[r["id"]][0] for r in group if r["id"] in per_record}
                     - written - {0})
        for number in new:
            parts.append(f"<div class='note' id='note-{number}'><b>Note {number}.</b> "
                         f"{_note_text(notes, number, first_note)}</div>")
        written.update(new)
    return parts


def _note_text(notes: list[str], number: int, first_note: dict[str, int]) -> str:
    """Note ``number``; a sentence an earlier note already has is replaced by a link to it."""
    kept = []
    for sentence in _sentences(notes[number - 1]):
        earlier = first_note.setdefault(sentence, number)
        if earlier != number and len(sentence) >= 60:
            kept.append(f"<a href='#note-{earlier}'>(as in note {earlier})</a>")
        else:
            kept.append(html.escape(sentence))
    body = " ".join(kept)
    if len(body) <= LONG_TEXT:
        return body
    return f"<details><summary>{kept[0]}</summary>{' '.join(kept[1:])}</details>"


def _summary(records: list[dict], *, seconds: float, paper_scale: bool) -> list[str]:
    esc = html.escape
    counts = Counter(r["status"] for r in records)
    items = []
    for item in findings(records):
        target = f"#{row_anchor(item.evidence_id)}"
        sentence = item.text[:1].upper() + item.text[1:]
        items.append(f"<li><b>{esc(item.title)}.</b> {esc(sentence)} "
                     f"<a href='{esc(target)}'>evidence</a></li>")
    n_claims = sum(counts.get(s, 0) for s in CLAIM_STATUSES)
    checks = Counter(r["status"] for r in records if is_check(r))
    n_checks = sum(checks.values())
    parts = [
        "<section id='summary'><h2>Summary of the reproduction</h2>",
        f"<p class='counts'>{len(records) - n_claims - n_checks} published numbers "
        "recomputed: " + _counts(counts - checks, NUMBER_STATUSES)
        + (f" · {n_checks} checks of the suite (no published number; match: it passes): "
           + _counts(checks, NUMBER_STATUSES) if n_checks else "")
        + (f" · {n_claims} claims of the paper checked: " + _counts(counts, CLAIM_STATUSES)
           if n_claims else "")
        + f" · budget: {'paper scale' if paper_scale else 'default'}"
        + f" · time: {seconds:.1f} s</p>",
    ]
    if items:
        parts.append("<p><b>Where the paper's numbers differ</b> (computed values from the "
                     "records below):</p><ul>" + "".join(items) + "</ul>")
    parts.append("</section>")
    return parts


def _figure_html(study: StudyResult, stem: str) -> str:
    esc = html.escape
    fig = study.figures[stem]
    return (f"<figure id='figure-{esc(stem)}'><img src='figures/{esc(stem)}.png' "
            f"alt='{esc(alt_text(fig, stem), quote=True)}'>"
            f"<figcaption>{esc(caption(fig, stem))}</figcaption></figure>")


def _decision_summary(study: StudyResult) -> list[str]:
    """The decision summary: the table of its ``table`` dataset beside its figures."""
    esc = html.escape
    table = study.datasets["table"]
    attrs = table.attrs
    rows = ["<table class='decision'><tr><th>adversary's prior p</th>"
            + "".join(f"<th>{esc(header)}</th>" for _, header, _ in DECISION_COLUMNS) + "</tr>"]
    for k, label in enumerate(table["p_label"].values):
        cells = "".join(f"<td class='num'>{format(float(table[name][k]), fmt)}</td>"
                        for name, _, fmt in DECISION_COLUMNS)
        rows.append(f"<tr><td class='num'>{esc(str(label))}</td>{cells}</tr>")
    rows.append("</table>")
    where = "the 2020 Census allocation" if attrs.get("census") else "this allocation"
    rho2 = attrs.get("rho2", float("nan"))
    lead = [
        f"<p>At {where} (block ρ1 = {attrs['rho1']:.4g}"
        + (f", block group ρ2 = {rho2:.4g}" if rho2 == rho2 else "")
        + f", global ρ = {attrs['rho_total']:.4g}), for a target unique in its block and "
        "block group, by the adversary's prior that the target has the characteristic. "
        "Posteriors and R are averaged over the releases; accuracy is p·P[correct | has it] + "
        "(1 − p)·P[correct | has not]; the worst case bounds every test on the same two "
        "queries.</p>",
        *rows,
        f"<p><b>ε at δ = {attrs['delta']:g}</b>: {attrs['epsilon_bun_steinke']:.2f} (the "
        f"paper's Theorem 1, Bun–Steinke) · {attrs['epsilon_cks']:.2f} "
        f"(Canonne–Kamath–Steinke, the conversion the Census uses, at this ρ = "
        f"{attrs['rho_total']:.4g}, not the Census's production ρ) · "
        f"[{attrs['epsilon_pld_lower']:.4f}, "
        f"{attrs['epsilon_pld_upper']:.4f}] (privacy-loss distributions, bracket; add or "
        "remove one person).</p>",
    ]
    everything = attrs.get("worst_case_accuracy_all", float("nan"))
    if everything == everything:
        lead.append(f"<p><b>The whole release</b> (all 65 queries of the 2020 persons "
                    f"strategy move with the target): no test is more accurate than "
                    f"{everything:.4f} at p = 1/2.</p>")
    if "das_noise" in study.datasets:
        lead.extend(_das_noise(study.datasets["das_noise"]))
    figures = "".join(_figure_html(study, stem) for stem in study.figures)
    parts = [f"<section id='{esc(study.name)}'><h2>{esc(study.title)}</h2>",
             "<div class='lead'><div>" + "\n".join(lead) + f"</div>{figures}</div>"]
    parts.extend(f"<p>{_collapsible(note)}</p>" for note in study.notes)
    parts.append("</section>")
    return parts


#: Columns of the table at the DAS's noise: (measure, question) of the ``das_noise`` dataset,
#: header, format.
DAS_NOISE_COLUMNS = (
    ("marginal_posterior", "paper", "posterior, paper's convention", ".4f"),
    ("marginal_posterior", "two_cell", "posterior, two cells (which one)", ".4f"),
    ("marginal_posterior", "one_cell", "posterior, one cell (did respond)", ".4f"),
    ("p_correct", "paper", "P[correct], paper's convention", ".4g"),
    ("p_correct", "two_cell", "P[correct], two cells", ".4g"),
    ("p_correct", "one_cell", "P[correct], one cell", ".4g"),
)


def _das_noise(das) -> list[str]:
    """The block's answers at the noise the DAS drew (the ``das_noise`` dataset), as a table."""
    esc = html.escape
    rows = ["<table class='decision'><tr><th>adversary's prior p</th>"
            + "".join(f"<th>{esc(header)}</th>" for _, _, header, _ in DAS_NOISE_COLUMNS)
            + "</tr>"]
    floor = 2 * DEFAULT_TAIL_MASS  # the two-cell sums are exact to this, absolute

    def cell(measure, question, fmt, k):
        value = float(das[measure].sel(question=question)[k])
        if question == "two_cell" and value < floor:
            return f"&lt;{floor:.0e}"
        return format(value, fmt)

    for k, label in enumerate(das["p_label"].values):
        cells = "".join(f"<td class='num'>{cell(measure, question, fmt, k)}</td>"
                        for measure, question, _, fmt in DAS_NOISE_COLUMNS)
        rows.append(f"<tr><td class='num'>{esc(str(label))}</td>{cells}</tr>")
    rows.append("</table>")
    attrs = das.attrs
    return [
        f"<p><b>At the noise the 2020 DAS drew</b> (pmf ∝ exp(−x²/(2σ²)), σ² = "
        f"{attrs['sigma_sq']:.4g} a block cell: 1/ρ under its replace-one neighbours; the rows "
        f"above use the paper's DG(0, 1/(2ρ1)), variance {1 / (2 * attrs['rho_paper']):.4g}). "
        "Which of two cells holds the target sees two cells of σ²; whether the target "
        "responded sees one.</p>",
        *rows,
        *(f"<p>{esc(line)}</p>" for line in str(attrs.get("agreement", "")).splitlines()),
    ]


def _study_section(study: StudyResult) -> list[str]:
    esc = html.escape
    parts = [f"<h2 id='{esc(study.name)}'>{esc(study.title)}</h2>"]
    parts.extend(f"<p>{_collapsible(note)}</p>" for note in study.notes)
    parts.extend(_figure_html(study, stem) for stem in study.figures)
    for block in study.diagnostics:
        lines = block.strip().splitlines()
        if len(lines) == 1:  # a sentence: shown once, not again under its own summary
            parts.append(f"<p>{esc(lines[0])}</p>")
            continue
        first = lines[0] if lines else "diagnostics"
        parts.append(f"<details><summary>{esc(first)}</summary><pre>{esc(block)}</pre></details>")
    return parts


def _software(results: list[StudyResult], versions: dict) -> list[str]:
    esc = html.escape
    parts = ["<h2 id='software'>Software and seeds</h2><table>"]
    parts.extend(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in versions.items())
    parts.append("</table><h3>Random seeds (random_seed of each run)</h3>"
                 "<table><tr><th>study</th><th>run</th><th>random_seed</th></tr>")
    for study in results:
        for purpose, seed in study.seeds.items():
            run = purpose.removeprefix(f"{study.name}/")
            parts.append(f"<tr><td>{esc(study.name)}</td><td>{esc(run)}</td>"
                         f"<td class='num'>{esc(str(seed))}</td></tr>")
    parts.append("</table>")
    return parts


def render_html(results: list[StudyResult], versions: dict, seconds: float,
                paper_scale: bool) -> str:
    """The report page as one HTML string.

    The decision summary (when a study is named :data:`DECISION_SUMMARY`), the summary of the
    reproduction, the studies, all records, software and seeds.

    Parameters
    ----------
    results : list of StudyResult
        The studies, in page order.
    versions : dict
        Package name to version, shown with the seeds.
    seconds : float
        Wall time of the run up to writing the page.
    paper_scale : bool
        Whether the paper's Monte Carlo budgets were used.
    """
    esc = html.escape
    records = [annotate(r) for study in results for r in study.records]
    lead = [s for s in results if s.name == DECISION_SUMMARY and "table" in s.datasets]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>Disclosure risk of DP census counts: paper reproduction</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Bayesian disclosure risk for discrete-Gaussian census releases</h1>",
        *(line for study in lead for line in _decision_summary(study)),
        "<p>Reproduction of Kazan &amp; Reiter, <em>Assessing statistical disclosure risk "
        "for differentially private, hierarchical count data</em>: every published number "
        "recomputed, every qualitative claim checked. <b>match</b>: agrees to the published "
        "rounding; <b>within-mc-error</b>: a published Monte Carlo estimate within Monte Carlo "
        "error of the exact answer; <b>differs</b>: otherwise, with the evidence. A claim "
        "(a bound, 'approximately one') <b>holds</b> or <b>does not hold</b> for the measured "
        "quantity shown beside it.</p>",
        *_summary(records, seconds=seconds, paper_scale=paper_scale),
        "<nav>Contents: "
        + " · ".join(f"<a href='#{esc(s.name)}'>{esc(s.title)}</a>" for s in results)
        + " · <a href='#all-records'>all published numbers and claims</a>"
        + " · <a href='#software'>software and seeds</a></nav>",
    ]
    for study in results:
        if not any(study is top for top in lead):  # the decision summary is already on top
            parts.extend(_study_section(study))
    parts.extend(_all_records(records))
    parts.extend(_software(results, versions))
    parts.append("</body></html>")
    return "\n".join(parts)
