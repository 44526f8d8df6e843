"""Report studies register themselves (``@report_study``), their cost hint beside them."""

import importlib
import pickle
import sys
import textwrap

import pytest

from dprisk.validation.registry import (
    RegisteredStudy,
    check_part,
    chosen_budget,
    joined_parts,
    registered,
    report_study,
)
from dprisk.validation.report import runner
from dprisk.validation.report.build import STUDIES

#: The report's sections in page order, as the hand-kept list of build.py had them: the
#: registry must give the same titles, order and study functions (the report unchanged).
SECTIONS = [
    ("dprisk.validation.beyond.decision_summary", "study",
     "decision summary (what an adversary learns at the 2020 allocation)"),
    ("dprisk.validation.paper.single_level", "report_section",
     "single level (paper §4.2, Tables 2, 4–5, Figures 1–3)"),
    ("dprisk.validation.paper.two_level", "study", "two levels (§4.3, Tables 6–8, cross-check)"),
    ("dprisk.validation.paper.studies", "study",
     "risk studies (§4.3 Figures 4–6, S4 Figures 10–11)"),
    ("dprisk.validation.paper.supplement", "study",
     "supplement (S1.3, S2, S5, S6; Figures 7–9, 12)"),
    ("dprisk.validation.sbc.study", "study", "simulation-based calibration (Talts et al. 2018)"),
    ("dprisk.validation.beyond.decisions", "study",
     "privacy accounting and budgets (ε of the release; ρ for a risk target)"),
    ("dprisk.validation.beyond.whole_record", "study", "beyond the paper: the whole record"),
    ("dprisk.validation.beyond.unknown_others", "study",
     "beyond the paper: adversaries who do not know everyone"),
    ("dprisk.validation.beyond.product", "study", "beyond the paper: the post-processed product"),
    ("dprisk.validation.beyond.population", "study",
     "beyond the paper: every person of a population"),
]


def test_the_report_runs_every_registered_study_in_page_order():
    assert [(s.module, s.function, title) for title, s in STUDIES] == SECTIONS
    assert all(title == s.title and s.cost_hint > 0 for title, s in STUDIES)
    # the pool takes the longest first: the cost hints order them as measured (since the
    # fused PyMC steps, the supplement's exact sums, 12.5 s, outlast the two-level study's 7.0)
    order = runner._by_cost([s for _, s in STUDIES])
    assert STUDIES[order[0]][1].module.endswith("supplement")


def test_what_the_registry_reads_is_what_the_decorator_records():
    """The source is read without importing it; importing gives the same entry (one module
    here: importing all eleven costs seconds, and the fake package below checks the rule)."""
    _, entry = STUDIES[-1]
    func = getattr(importlib.import_module(entry.module), entry.function)
    assert func.report_study == entry


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A throw-away package ``fakestudies`` on sys.path; ``write(name, source)`` adds a module."""
    root = tmp_path / "fakestudies"
    root.mkdir()
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name, source):
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    yield write
    for name in [m for m in sys.modules if m.split(".")[0] == "fakestudies"]:
        del sys.modules[name]


SECTION = """
    from dprisk.validation.registry import report_study

    @report_study(order={order}, title="{title}", cost={cost})
    def study(*, paper_scale=False):
        return ("{title}", paper_scale)
"""


def test_a_new_module_with_the_decorator_is_a_study_without_any_other_edit(package):
    package("late", SECTION.format(order=20, title="late", cost=1.5))
    package("early", SECTION.format(order=10, title="early", cost=0.5))
    package("helper", '"""Mentions @report_study( in its text only."""\n')
    studies = registered("fakestudies")
    assert [(s.title, s.order, s.cost_hint) for s in studies] == [("early", 10, 0.5),
                                                                   ("late", 20, 1.5)]
    # a reference: pickled to a worker by name, it imports its module when called
    late = pickle.loads(pickle.dumps(studies[1]))
    assert "fakestudies.late" not in sys.modules
    assert late(paper_scale=True) == ("late", True)
    assert sys.modules["fakestudies.late"].study.report_study == late


def test_a_study_in_parts_registers_its_parts_and_their_costs(package):
    package("split", SECTION.replace("cost={cost})", 'cost={cost}, parts={{"a": 1, "b": 2.5}})')
            .format(order=5, title="split", cost=4) + """
    def study_part(name, *, paper_scale):
        return (name, paper_scale)
    """)
    (entry,) = registered("fakestudies")
    assert entry.parts == (("a", 1.0), ("b", 2.5))
    part = pickle.loads(pickle.dumps(entry.part("b")))  # a worker gets it by name
    assert (part.cost_hint, part(paper_scale=True)) == (2.5, ("b", True))
    assert entry.joined({}).cost_hint == 0.5
    assert sys.modules["fakestudies.split"].study.report_study == entry


@pytest.mark.parametrize(("source", "message"), [
    (SECTION.format(order=10, title="a", cost=1) + SECTION.format(order=10, title="b", cost=1)
     .replace("def study", "def other"), r"share an order: \[10\]"),
    (SECTION.replace("cost={cost}", "cost=COST").format(order=1, title="a"), "literals"),
    (SECTION.replace(", cost={cost}", "").format(order=1, title="a"), "exactly the keywords"),
    (SECTION.format(order=1, title="a", cost=-1), "cost must be a number >= 0"),
    (SECTION.replace("cost={cost})", "cost={cost}, parts={{'a': -1}})").format(
        order=1, title="a", cost=1), "parts must be a dict of part name to cost"),
    (SECTION.replace("cost={cost})", "cost={cost}, speed=1)").format(
        order=1, title="a", cost=1), "exactly the keywords"),
    (SECTION.format(order="'1'", title="a", cost=1), "order must be an int"),
])
def test_a_malformed_registration_is_refused_naming_the_study(package, source, message):
    package("bad", source)
    with pytest.raises((TypeError, ValueError), match=message):
        registered("fakestudies")


def test_the_decorator_checks_its_arguments_when_the_module_is_imported():
    with pytest.raises(TypeError, match="title must be a non-empty str"):
        report_study(order=1, title="", cost=1.0)(lambda **_: None)

    def section(*, paper_scale):
        return paper_scale

    assert report_study(order=1, title="t", cost=2)(section) is section  # unchanged
    assert section.report_study == RegisteredStudy(__name__, section.__qualname__, 1, "t", 2.0)


def test_the_split_studies_refuse_an_unknown_part_naming_their_parts():
    # one helper for both split studies: the same one-line ValueError (the two-level study
    # used to raise a bare KeyError), raised before any budget or computation
    from dprisk.validation.paper import two_level
    from dprisk.validation.sbc import study as sbc

    for module in (two_level, sbc):
        names = ", ".join(module.STUDY_PARTS)
        with pytest.raises(ValueError, match=f"^part must be one of {names}; got 'tabels'$"):
            module.study_part("tabels")


def test_joined_parts_computes_each_part_in_turn_or_checks_the_given_ones():
    calls = []

    def part(name, *, scale):
        calls.append((name, scale))
        return name * scale

    assert joined_parts(part, ("a", "b"), None, scale=2) == {"a": "aa", "b": "bb"}
    assert calls == [("a", 2), ("b", 2)]
    given = {"a": 1, "b": 2}
    assert joined_parts(part, ("a", "b"), given, scale=2) is given  # computed elsewhere
    assert len(calls) == 2
    with pytest.raises(ValueError, match=r"missing b$"):
        joined_parts(part, ("a", "b"), {"a": 1}, scale=2)
    assert check_part("b", ("a", "b")) == "b"


def test_chosen_budget_prefers_the_given_budget_then_the_scale():
    assert chosen_budget("mine", True, default="small", paper_scale_budget="paper") == "mine"
    assert chosen_budget(None, True, default="small", paper_scale_budget="paper") == "paper"
    assert chosen_budget(None, False, default="small", paper_scale_budget="paper") == "small"
