"""The command lines the pages show with their output give that output (``$ dprisk ...``).

Every ``console`` block of the README and of ``docs/`` is read as a terminal transcript: a
line ``$ dprisk ARGS`` (a ``# comment`` after it dropped) is a command, the lines after it up
to the next ``$`` line are what it prints. Each command runs in-process (``cli_helpers``) in
an empty directory and must succeed. A JSON line must be the command's whole output: the same
keys, strings and integers equal, floats within a relative 1e-9 (the numbers are exact sums
and searches printed with 17 digits; their last bits differ between CPUs and NumPy's kernels,
by far less than that) or an absolute 1e-15 (a probability left out of an exact sum,
``neglected_mass``, is a difference of sums near 1: exact to about 1e-16, not relatively; the
page's 2.5010728e-14 and this machine's 2.5010784e-14 differ by 6e-20). Other text must be
the output's first lines, character for character, and all of it unless the shown output
ends with a line ``…`` (the rest left out). A page whose example drifted from the program
fails here, not in a reader's terminal. The pages' ``bash`` blocks show commands without
output: each line there starting ``dprisk`` (continuation lines joined) must succeed too (the
README's ``.venv/bin/dprisk`` lines, a national synthetic state and the explorer's server among
them, are left to the tests of their commands).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import pytest
from cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
#: The pages read: the README and every page of the site's sources.
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md")
                                     if "_build" not in p.parts)]
#: A shown output's last line when the rest of the output is left out.
MORE = "…"
#: Relative and absolute tolerances of a float in a shown JSON output (the module's docstring).
FLOAT_RTOL, FLOAT_ATOL = 1e-9, 1e-15


def transcripts(pages=PAGES) -> list[tuple[str, list[str], list[str]]]:
    """(where, argv after ``dprisk``, shown output lines) of every ``$ dprisk`` line."""
    found = []
    for page in pages:
        text = page.read_text()
        for block in re.finditer(r"```console\n(.*?)```", text, re.S):
            line_number = text[:block.start()].count("\n") + 2
            current = None
            for offset, line in enumerate(block.group(1).splitlines()):
                if line.startswith("$ "):
                    command = shlex.split(line[2:], comments=True)
                    assert command[0] == "dprisk", f"{page.name}: {line}"
                    where = f"{page.relative_to(ROOT)}:{line_number + offset}"
                    current = (where, command[1:], [])
                    found.append(current)
                elif current is not None:
                    current[2].append(line)
        for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
            line_number = text[:block.start()].count("\n") + 2
            command, start = "", 0
            for offset, line in enumerate(block.group(1).splitlines()):
                command, start = (command + " " + line, start) if command else (line, offset)
                if command.endswith("\\"):
                    command = command[:-1]
                    continue
                if command.startswith("dprisk "):
                    where = f"{page.relative_to(ROOT)}:{line_number + start}"
                    found.append((where, shlex.split(command, comments=True)[1:], []))
                command = ""
    return found


TRANSCRIPTS = transcripts()


def test_the_pages_show_commands_with_outputs():
    """The reader finds at least the pages' known examples (a parser that found none would
    make the test below vacuous)."""
    pages = {where.split(":")[0] for where, _, _ in TRANSCRIPTS}
    assert {"docs/guide/accounting.md", "docs/guide/product.md", "docs/guide/worst-case.md",
            "docs/guide/unknown-others.md"} <= pages
    assert sum(1 for _, _, shown in TRANSCRIPTS if shown) >= 6
    assert {"docs/guide/one-level.md", "docs/guide/two-levels.md",
            "docs/guide/nested-levels.md"} <= pages  # their bash blocks


def _same(shown, actual, path: str) -> list[str]:
    """Where ``actual`` differs from ``shown`` (JSON values), as messages."""
    if isinstance(shown, float) or isinstance(actual, float):
        ok = (isinstance(shown, (int, float)) and isinstance(actual, (int, float))
              and math.isclose(shown, actual, rel_tol=FLOAT_RTOL, abs_tol=FLOAT_ATOL))
        return [] if ok else [f"{path}: shown {shown!r}, printed {actual!r}"]
    if isinstance(shown, dict) and isinstance(actual, dict):
        if set(shown) != set(actual):
            return [f"{path}: keys shown {sorted(shown)}, printed {sorted(actual)}"]
        return [m for key in shown for m in _same(shown[key], actual[key], f"{path}.{key}")]
    if isinstance(shown, list) and isinstance(actual, list) and len(shown) == len(actual):
        return [m for i, (s, a) in enumerate(zip(shown, actual, strict=True))
                for m in _same(s, a, f"{path}[{i}]")]
    return [] if shown == actual else [f"{path}: shown {shown!r}, printed {actual!r}"]


@pytest.mark.parametrize("where, argv, shown", TRANSCRIPTS, ids=[t[0] for t in TRANSCRIPTS])
def test_a_shown_command_prints_what_the_page_shows(where, argv, shown, capsys, monkeypatch,
                                                    tmp_path):
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(argv, capsys)
    assert status == 0, f"{where}: exit {status}: {err}"
    if not shown:
        return
    if len(shown) == 1 and shown[0].startswith("{"):
        problems = _same(json.loads(shown[0]), json.loads(out), "payload")
        assert not problems, f"{where}:\n" + "\n".join(problems)
        return
    printed = out.splitlines()
    if shown[-1] == MORE:
        shown = shown[:-1]
        assert len(printed) > len(shown), f"{where}: the page says more follows"
    else:
        assert len(printed) == len(shown), f"{where}: {len(printed)} lines printed:\n{out}"
    for number, (page_line, line) in enumerate(zip(shown, printed, strict=False), 1):
        assert page_line == line, f"{where}, output line {number}:\n{page_line}\n{line}"
