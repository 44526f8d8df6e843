import threading

import pytest

from dprisk.explore.inputs import (
    Sequencer,
    read_count,
    read_number,
    read_prior,
    read_probability,
    read_rho,
    read_scenario,
)
from dprisk.models.census.allocation import census_level


def test_read_values_as_the_cli_does():
    assert read_rho("census:block") == census_level("block").rho
    assert read_rho("1/4") == 0.25
    assert read_probability("1/864") == 1 / 864
    assert read_count("-2", "x1*") == -2
    assert read_count("3.0", "m", minimum=0) == 3
    assert read_number(" 0.5 ", "target") == 0.5


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: read_rho("abc", "rho1"), "rho1"),
        (lambda: read_rho("-1", "rho1"), "rho1"),
        (lambda: read_probability("abc"), "p"),
        (lambda: read_probability("1.5"), "p"),
        (lambda: read_count("2.5", "x1*"), "x1*"),
        (lambda: read_count("-1", "m", minimum=0), "m"),
        (lambda: read_prior("truncated:x"), "truncated"),
        (lambda: read_prior("/no/such/file.py:prior"), "/no/such/file.py"),
    ],
)
def test_bad_text_is_one_line_naming_the_control(call, name):
    with pytest.raises(ValueError) as err:
        call()
    message = str(err.value)
    assert name in message and "\n" not in message


def test_broken_prior_file_is_a_value_error(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def oops(:\n")
    with pytest.raises(ValueError, match=r"broken\.py"):
        read_prior(f"{broken}:prior")


def test_read_scenario():
    values = {"rho1": "census:block", "rho2": "1/4", "d": "27", "p": "1/2", "m": "0",
              "prior": "truncated:10"}
    scenario = read_scenario(values)
    assert scenario["rho2"] == 0.25 and scenario["d"] == 27 and scenario["m"] == 0


def test_sequencer_only_newest_ticket_is_current():
    seq = Sequencer()
    first = seq.next()
    assert seq.is_current(first)
    second = seq.next()
    assert not seq.is_current(first) and seq.is_current(second)
    tickets = []
    threads = [threading.Thread(target=lambda: tickets.append(seq.next())) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(tickets) == list(range(3, 23)) and seq.latest == 22


@pytest.mark.parametrize("text", ["9" * 400 + "/1", "1/" + "9" * 400, "\u0663", "1/0"])
def test_number_boxes_refuse_what_the_cli_refuses(text):
    """Finding "9...9/1 raised an uncaught OverflowError" (and 1/9...9 read as 0, Arabic-Indic
    digits read as numbers): one line naming the box, as the command line's parser refuses."""
    from argparse import ArgumentTypeError

    from dprisk.cli.common import number

    with pytest.raises(ArgumentTypeError):
        number(text)
    for read in (lambda: read_number(text, "target"), lambda: read_probability(text, "p"),
                 lambda: read_count(text, "m", minimum=0)):
        with pytest.raises(ValueError) as err:
            read()
        message = str(err.value)
        assert "\n" not in message and len(message) < 320  # the text quoted cut
    with pytest.raises(ValueError, match="rho1"):
        read_rho(text, "rho1")


def test_counts_are_read_exactly_as_the_cli_reads_them():
    """Finding "9007199254740993 silently became 2**53": a count is read as an integer."""
    from dprisk.cli.common import integer

    assert read_count("9007199254740992", "m") == integer("9007199254740992") == 2**53
    with pytest.raises(ValueError, match="2\\*\\*53"):
        read_count("9007199254740993", "m")
    with pytest.raises(ValueError, match="m"):
        read_count("9" * 400, "m")
    assert read_count("1_000", "m") == integer("1_000") == 1000  # as the command line


@pytest.mark.parametrize("text", ["truncated:" + "9" * 100_000, "point:" + "0" * 100_000 + "5",
                                  "improper" + "x" * 100_000])
def test_a_refused_prior_quotes_its_text_cut(text):
    """Finding "the prior box echoed all it was sent": the library's prior messages quote the
    whole specification, so 100,000 typed characters came back as a 100,000-character message
    (a websocket message may be 20 MB); the number boxes quote at most 200 characters. The
    prior box's refusal now quotes its text cut the same way, saying how long it was."""
    from dprisk.explore.inputs import QUOTE_CHARS, PriorPolicy

    for policy in (PriorPolicy(typed_files=False), PriorPolicy(typed_files=True)):
        with pytest.raises(ValueError) as refused:
            policy.read(text)
        message = str(refused.value)
        assert len(message) < QUOTE_CHARS + 600, len(message)
        assert message.startswith("prior")  # beyond loopback "improper..." is refused unquoted
        assert text[:50] not in message or f"({len(text)} characters)" in message


@pytest.mark.parametrize(("text", "known"), [("point:-1", 0), ("truncated:0", 0),
                                             ("truncated:" + "9" * 30, 0), ("point:2", 5)])
def test_a_server_without_typed_files_never_offers_them(text, known, tmp_path):
    """Finding "the prior box offered a form the server refuses": beyond loopback a refused
    built-in prior's message listed the library's forms, "... point:K (integer K), or
    PATH.py:NAME", and the PATH.py:NAME a visitor then typed got "prior: not allowed here".
    Such a server's messages now list what it reads (and, with --prior-dir, a NAME with a
    file from the list); on loopback, where typed files load, the library's list stays."""
    from dprisk.explore.inputs import PriorPolicy
    from dprisk.models.priors.base import PRIOR_FORMS

    for policy, offer in [(PriorPolicy(typed_files=False), "improper, truncated:U or point:K"),
                          (PriorPolicy(typed_files=False, prior_dir=tmp_path),
                           "NAME with a model file chosen from the list"),
                          (PriorPolicy(typed_files=True), PRIOR_FORMS)]:
        with pytest.raises(ValueError) as refused:
            policy.read(text, known)
        message = str(refused.value)
        assert offer in message
        assert ("PATH.py" in message) == policy.typed_files, message
