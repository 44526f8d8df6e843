"""docs/architecture.md stays true: every file, folder and module it names exists."""

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
#: Names of things made at run time (cache folders, a report's file), not repository files.
RUN_TIME_NAMES = {"accounting/", "numba/", "results.json"}


def _code_spans() -> list[str]:
    return re.findall(r"`([^`\n]+)`", DOC.read_text())


def test_every_named_file_exists():
    missing = []
    for span in _code_spans():
        for word in span.split():
            if word in RUN_TIME_NAMES or "NAME" in word:  # run-time names, placeholders
                continue
            if re.fullmatch(r"[\w./-]+\.(py|pyi|toml|md|json)", word) or word.endswith("/"):
                candidates = [REPO / word, *(REPO / folder / word for folder in
                              ("models", "inference", "validation", "dprisk", "tests"))]
                if "/" in word.rstrip("/") or word.endswith(".toml") or word.endswith(".md"):
                    candidates = [REPO / word]
                if not any(p.exists() for p in candidates):
                    missing.append(word)
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_every_named_module_exists():
    missing = []
    for span in _code_spans():
        for name in re.findall(r"\bdprisk(?:\.\w+)+", span):
            parts, found = name.split("."), False
            for end in range(len(parts), 1, -1):  # the longest prefix that is a module
                module = ".".join(parts[:end])
                try:
                    spec = importlib.util.find_spec(module)
                except ModuleNotFoundError:  # a parent is a module, not a package
                    continue
                if spec is not None:
                    found = end >= len(parts) - 1  # at most one name inside the module
                    break
            if not found:
                missing.append(name)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_cites_nothing_outside_the_repository():
    text = DOC.read_text()
    assert "DESIGN" not in text and "shared/" not in text
