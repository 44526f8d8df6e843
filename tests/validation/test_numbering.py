"""One numbering: tables and figures are named as printed in the paper wherever a person reads.

The compiled paper numbers tables and figures in caption order, the supplement continuing the
main text (Figures 7-12). The LaTeX labels (``tab:tab1`` is printed Table 4) appear only in the
``latex_label`` field of ``results.json``. Scanned: the report page (rendered from the single-level
and supplement studies, a few seconds), the README, the notebooks, the docs, every published
value's and claim's text, the records' sources and explanations, and the text of the package's
modules (notes, titles and docstrings of the studies that are too slow to run here).
"""

import re
from pathlib import Path

import pytest

from dprisk.validation.figures.captions import DESCRIPTIONS, caption
from dprisk.validation.paper import claims
from dprisk.validation.paper import published as pub
from dprisk.validation.paper.record_annotations import annotate

ROOT = Path(__file__).resolve().parents[2]
#: The paper's text, where the working copy has it (the LaTeX source of the compiled paper).
PAPER = Path("/work/shared/paper/000_7580653a54597011.txt")
#: A LaTeX label of the paper's tables and figures (not matplotlib's "tab:blue" colours).
LATEX_LABEL = re.compile(r"\b(?:tab:(?:tab\d|takb\d|cen_\w+|28-21)|fig:plot\d+[ab]?)")
#: Names no printed table or figure has, or that the suite never reproduces (printed Table 1
#: is the list of PL 94-171 tables): the LaTeX numbers of the suite's tables would read so.
WRONG_NAME = re.compile(r"\bTables? 1\b(?![\d.])|\bFigures? 9[ab]\b|\bFigures? 1[3-9]\b")
#: Record id family -> the table or figure its source must name first, as printed.
FAMILIES = {
    "table1/": "Table 4", "table2/p=": "Table 5", "table2/census_rho/": "Table 2",
    "table2/geolevel_share/": "Table 2", "table2/query_share/": "Table 2",
    "table3/": "Table 3", "table3_release/": "Table 6", "table4/": "Table 7",
    "table5/": "Table 8", "s2/figure8/": "Figure 9", "s6/fig10": "Figure 12",
    "fig4/": "Figure 4", "fig5/": "Figure 5", "fig6/": "Figure 6", "s1.3/": "Figure 7",
}
#: Report figure file stem (a key, like a record id) -> the paper's figure it mirrors.
STEMS = {
    **{f"figure{k}": f"Figure {k}" for k in range(1, 7)}, "figure4_variant": "Figure 4",
    "figure11": "Figure 7", "figure7": "Figure 8", "figure8": "Figure 9",
    "figure9a": "Figure 10", "figure9b": "Figure 11", "figure10": "Figure 12",
    "table4_table5": "Tables 7–8",
}


def _paper_numbering(text: str) -> dict[str, str]:
    """LaTeX label -> printed name: each caption takes the next number of its kind (one table
    environment may hold two captions), and the label after it names it."""
    counts = {"table": 0, "figure": 0}
    names = {}
    for match in re.finditer(r"\\begin\{(table|figure)\}(.*?)\\end\{\1\}", text, re.S):
        kind = match.group(1)
        for after_caption in match.group(2).split("\\caption")[1:]:
            counts[kind] += 1
            label = re.search(r"\\label\{([^}]+)\}", after_caption).group(1)
            names[label] = f"{kind.title()} {counts[kind]}"
    return names


def test_printed_names_are_one_sequence_per_kind():
    tables = sorted(int(n.split()[1]) for n in pub.PRINTED_NAMES.values() if n[0] == "T")
    figures = sorted(int(n.split()[1]) for n in pub.PRINTED_NAMES.values() if n[0] == "F")
    assert tables == list(range(1, 9)) and figures == list(range(1, 13))
    assert pub.latex_label("Table 4") == "tab:tab1" and pub.latex_label("Figure 7") == "fig:plot11"
    assert pub.latex_label("Section 4.2") is None


@pytest.mark.skipif(not PAPER.exists(), reason="the paper's text is not in this working copy")
def test_printed_names_follow_the_paper():
    assert _paper_numbering(PAPER.read_text()) == pub.PRINTED_NAMES


@pytest.fixture(scope="module")
def fast_studies(single_level_study_result, supplement_study_result):
    """The single-level and supplement studies (exact, a few seconds) as the report runs them."""
    return [single_level_study_result, supplement_study_result]


@pytest.fixture(scope="module")
def page(fast_studies):
    from dprisk.validation.report.page import render_html

    html = render_html(fast_studies, {"python": "3"}, 1.0, False)
    # the text a person reads, each element (cell, paragraph, caption) a paragraph of its own;
    # alt text sits in attributes and is built from the captions' figure titles
    return re.sub(r"<[^>]+>", "\n\n", html)


def _human_texts(fast_studies, page) -> dict[str, str]:
    texts = {"report page": page}
    for path in [ROOT / "README.md", *sorted((ROOT / "notebooks").glob("*.py")),
                 ROOT / "notebooks" / "README.md",
                 *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)]:
        texts[str(path.relative_to(ROOT))] = path.read_text()
    for value in pub.PUBLISHED:
        texts[f"published {value.id}"] = f"{value.source}. {value.quantity}"
    for claim in claims.CLAIMS.values():
        texts[f"claim {claim.id}"] = f"{claim.statement}. {claim.measured}. {claim.relation}"
    for study in fast_studies:
        texts[f"study {study.name}"] = " ".join([study.title, *study.notes])
        for record in study.records:
            texts[f"record {record['id']}"] = f"{record['source']}. {record['explanation']}"
    return texts


def _module_texts() -> dict[str, str]:
    """The package's modules (notes, titles, docstrings); published.py and
    record_annotations.py document the LaTeX labels of the ids and are left out."""
    skip = {"published.py", "record_annotations.py"}
    return {str(path.relative_to(ROOT)): path.read_text()
            for folder in ("validation", "inference", "models", "dprisk", "benchmarks")
            for path in sorted((ROOT / folder).rglob("*.py")) if path.name not in skip}


def test_no_latex_label_outside_latex_label(fast_studies, page):
    texts = {**_human_texts(fast_studies, page), **_module_texts()}
    found = {name: LATEX_LABEL.findall(text) for name, text in texts.items()}
    assert {name: labels for name, labels in found.items() if labels} == {}


def test_no_table_or_figure_named_with_a_latex_number(fast_studies, page):
    texts = {**_human_texts(fast_studies, page), **_module_texts()}
    found = {name: WRONG_NAME.findall(text) for name, text in texts.items()}
    assert {name: names for name, names in found.items() if names} == {}


def _first_named(source: str) -> str | None:
    named = re.search(r"\b(Table|Figure)s? (\d+)", source)
    return f"{named.group(1)} {named.group(2)}" if named else None


def test_record_sources_name_the_printed_table_or_figure(fast_studies):
    rows = [(v.id, v.source) for v in pub.PUBLISHED]
    rows += [(r["id"], r["source"]) for study in fast_studies for r in study.records]
    checked = 0
    for rid, source in rows:
        family = next((f for f in FAMILIES if rid.startswith(f)), None)
        if family is None:
            continue
        named = _first_named(source)
        if FAMILIES[family].startswith("Table"):
            assert named == FAMILIES[family], (rid, source)
            record = {"id": rid, "source": source, "status": "match"}
            assert annotate(record)["latex_label"] == pub.latex_label(FAMILIES[family])
            checked += 1
        elif named is not None:
            assert named == FAMILIES[family], (rid, source)
            checked += 1
    assert checked > 100


def test_figures_name_the_paper_figure_they_mirror(fast_studies):
    for stem, (mirrors, _) in DESCRIPTIONS.items():
        if stem in STEMS:
            assert STEMS[stem] in mirrors, stem
            numbers = set(re.findall(r"Figures? (\d+)", mirrors))
            assert numbers <= set(re.findall(r"\d+", STEMS[stem])), (stem, mirrors)
    for study in fast_studies:
        for stem, fig in study.figures.items():
            assert caption(fig, stem).startswith(STEMS[stem] + ":"), (stem, caption(fig, stem))


def _table_numbers(sentence: str) -> set[int]:
    """Table numbers a sentence names: "Table 5", "Tables 7–8", "Tables 2, 4–5"."""
    numbers: set[int] = set()
    for match in re.finditer(r"\bTables? (\d+(?:\s*(?:[–-]|,|and)\s*\d+)*)", sentence):
        for a, b in re.findall(r"(\d+)(?:\s*[–-]\s*(\d+))?", match.group(1)):
            numbers.update(range(int(a), int(b or a) + 1))
    return numbers


def _distinctive_values() -> dict[str, str]:
    """Printed table entries (e.g. "57.0%", "0.161") that only one printed table has."""
    tables: dict[str, set[str]] = {}
    for value in pub.PUBLISHED:
        named = _first_named(value.source)
        if named and named.startswith("Table") and len(value.printed) >= 4:
            tables.setdefault(value.printed, set()).add(named)
    return {printed: names.pop() for printed, names in tables.items() if len(names) == 1}


def test_quoted_table_values_name_their_printed_table(fast_studies, page):
    values = _distinctive_values()
    assert values["57.0%"] == "Table 7" and values["0.161"] == "Table 4"
    texts = {**_human_texts(fast_studies, page), **_module_texts()}
    wrong = []
    for name, text in texts.items():
        for sentence in re.split(r"(?<=[.;:])\s+|\n\s*\n", text):
            tables = _table_numbers(sentence)
            if not tables:
                continue
            for printed, table in values.items():
                token = re.escape(printed).replace("%", r"\s?%")
                if re.search(rf"(?<![\d.]){token}(?![\d])", sentence) \
                        and int(table.split()[1]) not in tables:
                    wrong.append((name, printed, table, sentence.strip()[:120]))
    assert wrong == []


def test_the_checks_catch_the_old_numbering():
    """The LaTeX numbers the suite used before are caught by the checks above."""
    assert LATEX_LABEL.search("Table 1 (tab:tab1; printed as Table 4)")
    assert WRONG_NAME.search("single level (paper §4.2, Tables 1–2, Figures 1–3)")
    assert WRONG_NAME.search("S4 Figures 9a–9b")
    assert not WRONG_NAME.search("Table 10, Figure 12, Tables 2, 4–5")
    assert _table_numbers("the published 57.0 % (Table 4)") == {4}
    assert _table_numbers("Tables 7–8 and Table 2, 4–5") == {2, 4, 5, 7, 8}
    assert not LATEX_LABEL.search("colors='tab:red'")
