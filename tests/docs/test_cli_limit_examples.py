"""The refusals ``docs/cli.md`` quotes as examples of the memory and work limits print the
estimates it quotes.

The page shows each example as ```` `COMMAND`: ESTIMATE ```` with the release's options elided
(``…``); :data:`EXAMPLES` gives each shown command's full arguments. The estimates are
deterministic functions of the arguments (``dprisk.runtime.memory_limit``, ``work_limit``),
printed to 3 digits, so the page's figures must be in the refusal's line exactly. The page
said ``2e12 steps, about 2.5 h`` for the Monte Carlo study after its count gained the noise
sums of the ``d - 1`` other blocks; the command prints 2.31e12 steps, roughly 2.9 h.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import run_cli

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
TWO_LEVELS = ["--rho1", "census:block", "--rho2", "census:block-group", "--d", "27"]
#: Each example as the page shows it, and the full arguments it stands for.
EXAMPLES = {
    "marginal --rhos 1e-9,1e-9": ["marginal", "--rhos", "1e-9,1e-9"],
    "posterior … --method gibbs --draws 1000000000": [
        "posterior", *TWO_LEVELS, "--x1-star", "2", "--x2-star", "1", "--y1-star", "-1",
        "--method", "gibbs", "--draws", "1000000000"],
    "marginal … --method mc --datasets 1000000000": [
        "marginal", *TWO_LEVELS, "--x2", "1", "--method", "mc", "--datasets", "1000000000"],
}
#: ```` `COMMAND`: ESTIMATE```` on the page: a size, or steps and a rough time.
SHOWN = re.compile(r"`([^`]+)`:\s+(\S+ [GT]iB|\S+ steps,\s+(?:about|roughly) \S+ h)")


def shown_estimates() -> dict[str, list[str]]:
    """The page's examples: shown command -> the figures it quotes (number with its unit)."""
    text = " ".join(PAGE.read_text().split())
    found = {}
    for command, estimate in SHOWN.findall(text):
        found[command] = re.findall(r"[\d.e]+ (?:[GT]iB|steps|h)", estimate)
    return found


def test_the_page_shows_the_examples():
    assert set(shown_estimates()) == set(EXAMPLES)


@pytest.mark.parametrize("shown", list(EXAMPLES))
def test_a_shown_refusal_prints_the_shown_estimate(shown, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(EXAMPLES[shown], capsys)
    assert status == 2 and out == "", (status, out)
    line = err.strip()
    for figure in shown_estimates()[shown]:
        number, unit = figure.split()
        assert re.search(rf"\b{re.escape(number)} {unit}\b", line), (figure, line)
