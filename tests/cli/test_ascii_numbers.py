"""Numbers on the command line are read in ASCII digits only.

Python's ``int`` and ``float`` also read other scripts' digits (``int("\u0663")`` is 3), so
``--seed \u0663`` used to run with seed 3. Every number parser of the command line refuses them
with the usual contract (exit 2, one line naming the option, nothing written).
"""

import pytest
from cli_helpers import assert_refused

ARABIC_INDIC_THREE = "\u0663"


@pytest.mark.parametrize(("argv", "parameter"), [
    # common.integer (an integer option)
    (["population", "synth", "--persons", "5", "--seed", ARABIC_INDIC_THREE], "--seed"),
    # common.number (a number option, fractions allowed)
    (["budget", "--max-ratio", ARABIC_INDIC_THREE], "--max-ratio"),
    # grids: an item of a grid option
    (["sweep", "--x2", ARABIC_INDIC_THREE, "--rho1", "1", "--rho2", "1", "--d", "3"], "--x2"),
    # census allocation's parse_rho (a rho option, census:LEVEL allowed)
    (["posterior", "--x1-star", "1", "--x2-star", "2", "--y1-star", "3", "--rho1", "1",
      "--rho2", ARABIC_INDIC_THREE, "--d", "3"], "--rho2"),
    # product's --others list
    (["product", "--rho1", "1", "--rho2", "1", "--others", f"1,{ARABIC_INDIC_THREE}"],
     "--others"),
    # levels: an entry of a nested-levels list
    (["posterior", "--rhos", "1,1", "--siblings", ARABIC_INDIC_THREE, "--stars", "1,2,3"],
     "--siblings"),
])
def test_digits_of_other_scripts_are_refused(argv, parameter, capsys, tmp_path):
    out = tmp_path / "out"
    if argv[:2] == ["population", "synth"] or argv[0] == "sweep":
        argv = [*argv, "--out", str(out / ("x.nc" if argv[0] == "sweep" else ""))]
    line = assert_refused(argv, parameter, capsys, root=tmp_path)
    assert ARABIC_INDIC_THREE in line  # the refusal quotes what was typed
    assert not out.exists()


def test_the_same_numbers_in_ascii_are_accepted(capsys, tmp_path):
    from cli_helpers import run_json

    payload = run_json(["population", "synth", "--persons", "5", "--seed", "3",
                        "--out", str(tmp_path / "p")], capsys)
    assert payload["seed"] == 3
