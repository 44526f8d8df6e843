"""``dprisk explore``: bad options exit 2 with one stderr line naming the option.

The served app itself is tested in a real browser (tests/explore/test_browser.py).
"""

import socket
import sys
import time

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
        (["--page-loads", "-1"], "--page-loads"),
        (["--allow-origin", ""], "--allow-origin"),
        (["--allow-origin", ":5006"], "--allow-origin"),
        (["--allow-origin", "[]:5006"], "--allow-origin"),
        (["--allow-origin", "example.com:"], "--allow-origin"),
        (["--allow-origin", "example.com:\u0665\u0660\u0660\u0666"], "--allow-origin"),
        (["--allow-origin", "example.com:" + "5" * 5000], "--allow-origin"),
    ],
)
def test_bad_options_exit_2(argv, option, capsys, monkeypatch):
    import dprisk.explore.app

    def never(**kwargs):  # refused before the server starts, or the test would serve
        raise AssertionError("explore started serving")

    monkeypatch.setattr(dprisk.explore.app, "serve", never)
    status, out, err = run_cli(["explore", "--no-browser", *argv], capsys)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert option in err


@pytest.mark.parametrize("argv", [["--allow-origin", ":5006"], ["--host", "127.0.0.1\0"]])
def test_bad_options_are_refused_before_the_server_is_imported(argv, capsys, monkeypatch):
    """The names a server answers to are checked without Bokeh and Tornado (``access``
    imports them, and ``app`` Panel: 0.4 s and more before a refusal): here neither can be
    imported, and the refusal is the same one line."""
    for name in ("dprisk.explore.access", "dprisk.explore.app"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it raises ImportError
    status, out, err = run_cli(["explore", "--no-browser", *argv], capsys)
    assert (status, out) == (2, "") and argv[0] in err and len(err.strip().splitlines()) == 1


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


def test_token_printed_at_start_beyond_loopback(capsys, monkeypatch):
    """As Jupyter does: ``--host 0.0.0.0`` prints a URL with a token, and that token (and
    only it) opens the page. ``pn.serve`` is made to serve in a thread so the command returns."""
    import http.client
    import re

    import panel as pn

    from dprisk.explore import app

    real_serve, started = pn.serve, {}

    def serve_in_thread(routes, **kwargs):
        """The server, started in a thread; what ``serve`` then starts does nothing."""
        from types import SimpleNamespace

        server_id = "dprisk-cli-test"
        started["thread"] = real_serve(routes, **{**kwargs, "threaded": True, "start": True,
                                                  "server_id": server_id})
        for _ in range(3000):  # Panel records the server once it listens
            if server_id in pn.state._servers:
                break
            time.sleep(0.01)
        server = pn.state._servers[server_id][0]
        return SimpleNamespace(_tornado=server._tornado, start=lambda: None,
                               io_loop=SimpleNamespace(start=lambda: None))

    monkeypatch.setattr(pn, "serve", serve_in_thread)
    monkeypatch.setattr(app, "_start_sampling_workers", lambda: None)  # not needed here
    monkeypatch.setattr(app, "build_app", lambda policy=None: pn.pane.HTML("page"))  # cheap
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    status, out, err = run_cli(["explore", "--host", "0.0.0.0", "--port", str(port),
                                "--no-browser"], capsys)
    try:
        assert status == 0, err
        found = re.search(rf"serving at http://localhost:{port}/\?token=([0-9a-f]{{48}}) ", out)
        assert found, out
        token = found.group(1)

        def status_of(path):
            for _ in range(100):  # the server thread starts listening
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                try:
                    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
                    return conn.getresponse().status
                except ConnectionRefusedError:
                    time.sleep(0.1)
                finally:
                    conn.close()
            raise AssertionError("the server did not listen")

        assert status_of("/") == 302  # to the sign-in form
        assert status_of(f"/?token={'0' * 48}") == 302
        assert status_of(f"/?token={token}") == 200
        assert status_of("/static/js/bokeh.min.js") == 200
        # every route checks the Host, and /components/ imports nothing
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", "/static/js/bokeh.min.js", headers={"Host": f"evil.example:{port}"})
            assert conn.getresponse().status == 403
        finally:
            conn.close()
        assert status_of("/components/this/x/y/z") in (403, 404)
        assert "this" not in sys.modules
    finally:
        if "thread" in started:
            started["thread"].stop()
