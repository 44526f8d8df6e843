"""docs/architecture.md stays true, both ways.

* Every module under ``dprisk/``, ``models/``, ``inference/`` and ``validation/`` is named in
  the page's table "Every module, room by room" (its room's row lists it, or the room's rule
  covers it: :data:`RULES`), and every row names only modules that exist.
* Every file, folder and ``dprisk.…`` module the page names exists.
* No page of the documentation and no source file cites a file outside the repository (the
  team's design notes, ``DESIGN.md``, are not in it).
"""

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
    assert "DESIGN" not in text and "shared/" not in text and "design card" not in text
    citing = [str(path.relative_to(REPO)) for folder in CITING
              for path in sorted((REPO / folder).rglob("*"))
              if path.suffix in (".md", ".rst", ".py", ".txt") and path.is_file()
              and "_build" not in path.parts and path != Path(__file__).resolve()
              and "DESIGN.md" in path.read_text(errors="replace")]
    assert not citing, f"these cite DESIGN.md, which is not in the repository: {citing}"


#: The source trees whose every module the table covers.
TREES = ("dprisk", "models", "inference", "validation")
#: What may not cite files outside the repository: the documentation and every source.
CITING = ("docs", "dprisk", "models", "inference", "validation", "notebooks", "tests",
          "benchmarks")


def _subcommand_modules() -> set[str]:
    """The modules the registry names: one per subcommand, ``population_NAME`` for each of
    ``dprisk population NAME``."""
    from dprisk.cli.commands import SUBCOMMAND_HELP
    from dprisk.cli.commands.population import COMMANDS

    return set(SUBCOMMAND_HELP) | {f"population_{name}" for name in COMMANDS}


#: Rooms whose modules a checked rule covers instead of a list: room -> (rule, the modules the
#: rule says the room holds, computed from the code).
RULES: dict = {"dprisk/cli/commands/": ("one module per subcommand of the registry",
                                        _subcommand_modules)}


def _table() -> dict[str, set[str] | str]:
    """The rows of "Every module, room by room": room -> module names (or the rule's text)."""
    text = DOC.read_text()
    section = text.split("## Every module, room by room", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        room = re.fullmatch(r"`([\w/]+/)`", cells[0])
        assert room, f"a row's room is one folder in backticks: {cells[0]!r}"
        names = re.findall(r"`([^`]+)`", cells[2])
        rows[room.group(1)] = set(names) if names else cells[2]
    return rows


def _modules() -> dict[str, set[str]]:
    """Every module of the source trees by room (folder), ``__init__.py`` left out."""
    rooms: dict[str, set[str]] = {}
    for tree in TREES:
        for path in sorted((REPO / tree).rglob("*.py")):
            relative = path.relative_to(REPO)
            if "__pycache__" in relative.parts or path.name == "__init__.py":
                continue
            if tree == "dprisk" and relative.parts[1] in ("models", "inference", "validation"):
                continue  # the links to the other trees
            rooms.setdefault(f"{relative.parent.as_posix()}/", set()).add(path.stem)
    return rooms


def test_every_module_is_named_or_covered_by_its_rooms_rule():
    table, modules = _table(), _modules()
    assert table, "docs/architecture.md has no table of rooms"
    missing_rooms = sorted(set(modules) - set(table))
    assert not missing_rooms, f"rooms without a row in docs/architecture.md: {missing_rooms}"
    unnamed = {}
    for room, found in modules.items():
        listed = table[room]
        if isinstance(listed, str):  # a rule instead of a list
            assert room in RULES, f"{room}: {listed!r} is not a checked rule"
            listed = RULES[room][1]()
        if found - listed:
            unnamed[room] = sorted(found - listed)
    assert not unnamed, f"modules docs/architecture.md does not name: {unnamed}"


def test_the_table_names_nothing_that_does_not_exist():
    table, modules = _table(), _modules()
    ghosts = {}
    for room, listed in table.items():
        assert (REPO / room).is_dir(), f"docs/architecture.md names a room that is not: {room}"
        if isinstance(listed, str):
            listed = RULES[room][1]()
        absent = listed - modules.get(room, set())
        if absent:
            ghosts[room] = sorted(absent)
    assert not ghosts, f"docs/architecture.md names modules that do not exist: {ghosts}"
