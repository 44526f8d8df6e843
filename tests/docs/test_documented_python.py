"""The Python the pages show runs, and gives the values its comments state (``# ≈ 0.622``).

Every ``python`` block of the README and of ``docs/`` is one of two kinds:

- **a program**: it runs as written, in a fresh namespace, in an empty directory holding a small
  ``noisy.parquet`` (the file ``docs/population-files.md``'s example reads). A statement whose
  comment shows ``≈ NUMBER`` (``rho1, rho2 = ...  # ≈ 0.0992, 0.2465``) must give those
  numbers as printed: the value rounded to the shown digits, within half a unit of the last
  shown digit (the values are exact sums, or seeded Monte Carlo results whose seed the block
  passes; their last bits differ between CPUs, by far less than a shown digit). An expression
  statement's value is checked, an assignment's targets after it runs.
- **an excerpt** of a worked prior file: the text since the page's last heading names a file
  of ``models/examples/`` and the block imports nothing. Run among the file's own names, it
  must define the file's prior: the same support and log weights (the files themselves run
  through ``dprisk prior``, whose transcripts ``test_documented_outputs.py`` checks).

A page whose example drifted from the program fails here, not in a reader's session. Blocks
with the same text (the README's and ``docs/guide/python-api.md``'s) run once.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The pages read: the README and every page of the site's sources.
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md")
                                     if "_build" not in p.parts)]
#: A stated value in a statement's comment: ``≈`` then a number.
APPROX = re.compile(r"≈\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)((?:\s*,\s*-?\d+(?:\.\d+)?)*)")
#: A worked file named in a page's text.
WORKED_FILE = re.compile(r"`(models/examples/\w+\.py)`")
#: Blocks (page and first line) that run seconds of Monte Carlo: in ``make bench`` only.
SLOW_BLOCKS = {
    # dr.product.risk_mc over 12 other blocks and 20,000 data sets: 11 s of CPU. Its numbers and
    # MCSEs are checked by tests/inference/product (test_monte_carlo_risk.py) in the default run
    ("docs/guide/product.md", "import dprisk as dr"),
}


def python_blocks(pages=PAGES) -> list[tuple[str, str, str | None]]:
    """(where, source, worked file or None) of every ``python`` block, identical ones once."""
    found, seen = [], {}
    for page in pages:
        text = page.read_text()
        for block in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            source = block.group(1)
            where = f"{page.relative_to(ROOT)}:{text[:block.start()].count(chr(10)) + 2}"
            if source in seen:
                continue
            before = text[:block.start()]
            since_heading = before[before.rfind("\n#") + 1:] if "\n#" in before else before
            named = WORKED_FILE.findall(since_heading)
            imports = any(isinstance(node, (ast.Import, ast.ImportFrom))
                          for node in ast.parse(source).body)
            seen[source] = where
            found.append((where, source, named[-1] if named and not imports else None))
    return found


BLOCKS = python_blocks()


def shown_values(comment: str) -> list[Decimal]:
    """The numbers a comment states with ``≈`` (empty when it states none)."""
    match = APPROX.search(comment)
    if match is None:
        return []
    rest = [part.strip() for part in match.group(2).split(",") if part.strip()]
    return [Decimal(match.group(1)), *map(Decimal, rest)]


def rounds_to(value, shown: Decimal) -> bool:
    """Whether ``value`` printed to ``shown``'s digits is ``shown``: within half a unit of its
    last digit (and a relative 1e-12 for the value's own rounding)."""
    value = float(value)
    half_unit = 0.5 * 10.0 ** shown.as_tuple().exponent
    return abs(value - float(shown)) <= half_unit + 1e-12 * abs(value)


def _comment(lines: list[str], node: ast.stmt) -> str:
    tail = lines[node.end_lineno - 1][node.end_col_offset:]
    return tail.split("#", 1)[1] if "#" in tail else ""


def _targets(node: ast.stmt) -> list[str]:
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    target = node.targets[0]
    elements = target.elts if isinstance(target, ast.Tuple) else [target]
    return [ast.unparse(element) for element in elements]


def run_block(source: str, where: str) -> list[tuple[str, object, Decimal]]:
    """Run ``source`` statement by statement; (statement, value, shown) of each stated value."""
    lines, namespace, stated = source.splitlines(), {"__name__": "__docs__"}, []
    for node in ast.parse(source).body:
        shown = shown_values(_comment(lines, node))
        code = ast.unparse(node)
        with contextlib.redirect_stdout(io.StringIO()):
            if isinstance(node, ast.Expr):
                values = [eval(compile(ast.Expression(node.value), where, "eval"), namespace)]
            else:
                exec(compile(ast.Module([node], []), where, "exec"), namespace)
                values = [eval(target, namespace) for target in _targets(node)]
        if shown:
            assert len(values) == len(shown), f"{where}: {code} states {len(shown)} values"
            stated += [(code, value, number) for value, number in zip(values, shown)]
    return stated


@pytest.fixture
def in_empty_folder(tmp_path, monkeypatch):
    """An empty working folder but for a two-block ``noisy.parquet`` (table layout)."""
    from dprisk.inference.population.measurements import BlockMeasurements, write_noisy_table

    monkeypatch.chdir(tmp_path)
    noisy = np.random.default_rng(1).integers(-3, 4, size=(2, 2016))
    write_noisy_table(tmp_path / "noisy.parquet", BlockMeasurements(
        geoids=np.array(["260010001001001", "260010001001002"], dtype=object),
        noisy=noisy.astype(np.int64), variance=np.full(2, 10.09)))
    return tmp_path


def test_the_pages_show_programs_excerpts_and_stated_values():
    """The reader finds the pages' known examples (a reader that found none would make the
    tests below vacuous)."""
    programs = [where for where, _, worked in BLOCKS if worked is None]
    excerpts = {worked for _, _, worked in BLOCKS if worked is not None}
    assert len(programs) >= 9 and {p.split(":")[0] for p in programs} >= {
        "README.md", "docs/guide/one-level.md", "docs/guide/unknown-others.md",
        "docs/population-files.md", "docs/guide/product.md"}
    assert excerpts == {"models/examples/geometric_prior.py", "models/examples/table_prior.py",
                        "models/examples/mixture_prior.py"}
    stated = sum(bool(shown_values(line.split("#", 1)[1])) for _, source, worked in BLOCKS
                 if worked is None for line in source.splitlines() if "#" in line)
    assert stated >= 12


def test_a_stated_value_is_the_value_rounded_to_its_digits():
    assert shown_values(" P[X1 = 1 | x1* = 3] ≈ 0.622") == [Decimal("0.622")]
    assert shown_values(" ≈ 0.0992, 0.2465") == [Decimal("0.0992"), Decimal("0.2465")]
    assert shown_values(" R ≈ 1.026 (n=0: 1.047)") == [Decimal("1.026")]
    assert shown_values(" R'(3)") == []
    assert rounds_to(0.6215498533708959, Decimal("0.622"))
    assert rounds_to(0.0992264, Decimal("0.0992"))
    assert not rounds_to(0.6225000001, Decimal("0.622"))  # prints as 0.623
    assert not rounds_to(0.5, Decimal("0.622"))


@pytest.mark.parametrize("where, source", [
    pytest.param(where, source, id=where,
                 marks=[pytest.mark.slow] if (where.split(":")[0], source.splitlines()[0])
                 in SLOW_BLOCKS else [])
    for where, source, worked in BLOCKS if worked is None])
def test_a_shown_program_runs_and_gives_its_stated_values(where, source, in_empty_folder):
    for code, value, shown in run_block(source, where):
        assert rounds_to(value, shown), f"{where}: {code} gives {value!r}, the page shows ≈ {shown}"


@pytest.mark.parametrize("where, source, worked", [
    pytest.param(where, source, worked, id=where)
    for where, source, worked in BLOCKS if worked is not None])
def test_a_shown_excerpt_defines_the_worked_files_prior(where, source, worked):
    """The excerpt, run among the worked file's own names (its imports and constants; a
    ``NAME = ...`` line keeps the file's value), defines the same prior: the same support, the
    same label, and log weights equal to the file's on every ``k2`` of the support of ``k1 =
    0..14`` (up to 200 values each). The page leaves out the file's docstrings and wraps lines
    as it likes; what it defines must be the file's."""
    loader = importlib.util.spec_from_file_location(f"_worked_{Path(worked).stem}", ROOT / worked)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    shipped, namespace = module.prior, dict(vars(module))
    tree = ast.parse(source)
    kept = [node for node in tree.body
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and node.value.value is Ellipsis)]
    exec(compile(ast.Module(kept, []), where, "exec"), namespace)
    shown = namespace["prior"]
    assert shown.is_proper == shipped.is_proper
    for k1 in range(15):
        assert shown.branch_support(k1) == shipped.branch_support(k1), (where, k1)
        if shipped.branch_support(k1) is None:
            continue
        low, high = shipped.branch_support(k1)
        k2 = np.arange(low, min(low + 200, high + 1) if high is not None else low + 200)
        np.testing.assert_allclose(shown.log_weight(k2, np.full(k2.size, k1)),
                                   shipped.log_weight(k2, np.full(k2.size, k1)),
                                   rtol=1e-12, atol=0, err_msg=f"{where}: k1 = {k1}")
