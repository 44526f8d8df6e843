"""One word per idea (issue 35): ``two_level`` for two levels, ``nested`` for h levels.

``hierarchical`` and ``multilevel`` appear in the tracked files only where they mean levels in
general (the paper's title, "hierarchical count data"), in the deprecated aliases, or in keys
that keep their names (a report study id, benchmark ids); and every deprecated module-level alias
warns ``FutureWarning`` naming the new name and returns the very object the new name holds.
"""

import importlib
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from dprisk.runtime import renamed

REPO = Path(__file__).resolve().parents[2]
WORDS = re.compile(r"hierarchical|multilevel", re.IGNORECASE)

#: Lines that may hold the words, each with why.
ALLOWED = [
    # levels in general: the paper's title
    re.compile(r"hierarchical count data"),
    # a deprecated alias: an entry ``"old_name": "new name"`` of dprisk.RENAMED or of a module's
    # renamed_attributes table
    re.compile(r'^\s*"\w*(?:[Hh]ierarchical|[Mm]ultilevel)\w*": "[\w.]+",$'),
    # key: the report study's name and the ``computed_by`` of the published values
    re.compile(r'"hierarchical"|``hierarchical``'),
    # keys: benchmark ids (benchmarks/results.json, records of bench_startup)
    re.compile(r"bench_hierarchical|bench_multilevel|\"marginal, hierarchical exact\""),
]
#: Files that may use the words freely: this test and the tables of the old names.
EXEMPT = {"tests/packaging/test_naming.py"}


def _tracked_text_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    return [name for name in out.stdout.decode().split("\0") if name]


def test_the_words_appear_only_where_allowed():
    offending = []
    for name in _tracked_text_files():
        path = REPO / name
        if name in EXEMPT or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if WORDS.search(line) and not any(p.search(line) for p in ALLOWED):
                offending.append(f"{name}:{number}: {line.strip()}")
    assert offending == [], "say two_level / nested:\n" + "\n".join(offending)


def test_the_rule_catches_a_new_use():
    """The scan is not vacuous: a line naming a builder the old way is not allowed."""
    line = "model = build_hierarchical_model(x1_star, x2_star, y1_star)"
    assert WORDS.search(line) and not any(p.search(line) for p in ALLOWED)


#: (module below dprisk, old name, new name): every module-level rename of issue 35.
ALIASES = [
    ("models.builders.two_level", "build_hierarchical_model", "build_two_level_model"),
    ("models.builders.two_level", "hierarchical_spec", "two_level_spec"),
    ("models.builders.two_level", "HierarchicalSpec", "TwoLevelSpec"),
    ("models.builders.nested", "build_multilevel_model", "build_nested_model"),
    ("models.builders.nested", "multilevel_params", "nested_params"),
    ("inference.studies.p_correct", "p_correct_hierarchical", "p_correct_two_level"),
    ("inference.studies.p_correct", "HierarchicalPCorrect", "TwoLevelPCorrect"),
    ("inference.two_level.exact", "HierarchicalPosterior", "TwoLevelPosterior"),
    ("inference.two_level.level_form", "MultilevelPosterior", "NestedPosterior"),
    ("inference.nested.gibbs", "MultilevelDraws", "NestedDraws"),
    ("inference.privacy.worst_case", "bayes_accuracy_hierarchical", "bayes_accuracy_two_level"),
    ("inference.privacy.two_level_marginal", "marginal_hierarchical", "marginal_two_level"),
    ("inference.privacy.two_level_marginal", "HierarchicalMarginal", "TwoLevelMarginal"),
]


@pytest.mark.parametrize(("module", "old", "new"), ALIASES, ids=[a[1] for a in ALIASES])
def test_old_name_warns_once_and_is_the_new_object(module, old, new, monkeypatch):
    monkeypatch.setattr(renamed, "_WARNED", set())
    mod = importlib.import_module(f"dprisk.{module}")
    assert new in mod.__all__ and old not in mod.__all__
    with pytest.warns(FutureWarning, match=rf"dprisk\.{re.escape(module)}\.{old} is deprecated; "
                                          rf"use dprisk\.{re.escape(module)}\.{new}$"):
        value = getattr(mod, old)
    assert value is getattr(mod, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(mod, old) is value  # once: the second use is silent


def test_the_docs_table_lists_every_alias():
    """docs/_ext/dprisk_api.py writes the renames table from ``renamed.MODULES``' tables."""
    for module in renamed.MODULES:
        importlib.import_module(f"dprisk.{module}")
    listed = {(m.removeprefix("dprisk."), old, new)
              for m, table in renamed.TABLES.items() for old, new in table.items()}
    assert listed == set(ALIASES)


def test_from_import_of_an_old_name_works(monkeypatch):
    monkeypatch.setattr(renamed, "_WARNED", set())
    with pytest.warns(FutureWarning, match="use dprisk.models.builders.nested.build_nested_model"):
        from dprisk.models.builders.nested import build_multilevel_model
    from dprisk.models.builders.nested import build_nested_model
    assert build_multilevel_model is build_nested_model


def test_an_unknown_name_is_still_an_attribute_error():
    mod = importlib.import_module("dprisk.models.builders.two_level")
    with pytest.raises(AttributeError, match="has no attribute 'build_flat_model'"):
        mod.build_flat_model
    assert not hasattr(mod, "hierarchical")
