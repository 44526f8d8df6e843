"""``dprisk explore``: bad options exit 2 with one stderr line naming the option.

The served app itself is tested in a real browser (tests/explore/test_browser.py).
"""

import socket

import pytest
from cli_helpers import run_cli


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--port", "abc"], "--port"),
        (["--port", "0"], "--port"),
        (["--port", "70000"], "--port"),
        (["--host", " "], "--host"),
        (["--bogus"], "--bogus"),
    ],
)
def test_bad_options_exit_2(argv, option, capsys):
    status, out, err = run_cli(["explore", "--no-browser", *argv], capsys)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert option in err


def test_port_in_use_exits_2(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status, _, err = run_cli(["explore", "--no-browser", "--port", str(port)], capsys)
    assert status == 2
    assert f"--port {port}" in err and "cannot listen" in err


def test_listed_in_help(capsys):
    status, out, _ = run_cli(["--help"], capsys)
    assert status == 0
    assert "explore" in out
