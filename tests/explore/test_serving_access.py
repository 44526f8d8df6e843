"""Who may connect (issue 33, findings "no way to ask who is there" and the origins).

One small Panel server on 127.0.0.1 per protection (a token; hashed passwords), in this
process, with :class:`dprisk.explore.access.Access` as the explorer installs it: requests are
made over HTTP and the websocket, with the Host and Origin a browser or an attacker sends.
A foreign Host or Origin (DNS rebinding) is refused with 403 on loopback too; a token is
required once, then a signed cookie is kept; a password is checked against its hash.
"""

import asyncio
import http.client
import re
import socket
import time
from urllib.parse import urlencode

import panel as pn
import pytest

from dprisk.explore.access import (
    COOKIE,
    Access,
    allowed_names,
    bokeh_origins,
    check_password,
    hash_password,
    read_password_file,
)

TOKEN = "t0ken-for-the-test"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(access, port):
    return pn.serve({"/": lambda: pn.pane.HTML("<p id='hello'>hello</p>")}, port=port,
                    address="127.0.0.1", show=False, threaded=True, start=True,
                    allow_websocket_origin=bokeh_origins(access.names), auth_provider=access,
                    cookie_secret="x" * 32, title="test")


def _wait(port):
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the test server did not listen")


@pytest.fixture(scope="module")
def servers():
    token_port, basic_port = _free_port(), _free_port()
    users = {"ana": hash_password("correct horse", iterations=1000)}
    token = Access(allowed_names("127.0.0.1", token_port, ["proxy.example:443"]), token=TOKEN)
    basic = Access(allowed_names("127.0.0.1", basic_port), users=users)
    threads = [_serve(token, token_port), _serve(basic, basic_port)]
    _wait(token_port)
    _wait(basic_port)
    yield token_port, basic_port
    for thread in threads:
        thread.stop()


def _get(port, path, host=None, headers=None, method="GET", body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    heads = {"Host": host or f"127.0.0.1:{port}", **(headers or {})}
    conn.request(method, path, body=body, headers=heads)
    try:
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def _cookie(response) -> str:
    found = re.search(rf"{COOKIE}=([^;]+)", response.getheader("Set-Cookie") or "")
    return f"{COOKIE}={found.group(1)}" if found else ""


def test_token_required_once_then_cookie(servers):
    port, _ = servers
    response, _ = _get(port, "/")
    assert response.status == 302 and "/login" in response.getheader("Location")
    response, _ = _get(port, "/?token=wrong")
    assert response.status == 302
    response, body = _get(port, f"/?token={TOKEN}")
    assert response.status == 200 and b"bokeh" in body.lower()
    cookie = _cookie(response)
    assert cookie
    response, _ = _get(port, "/", headers={"Cookie": cookie})
    assert response.status == 200
    # the sign-in form takes the token too
    form = urlencode({"token": TOKEN})
    response, _ = _get(port, "/login", method="POST", body=form,
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status == 302 and _cookie(response)


def test_foreign_host_or_origin_is_refused(servers):
    port, _ = servers
    response, _ = _get(port, f"/?token={TOKEN}", host=f"attacker.example:{port}")
    assert response.status == 403
    response, _ = _get(port, f"/?token={TOKEN}", headers={"Origin": "http://attacker.example"})
    assert response.status == 403
    response, _ = _get(port, "/login", host="attacker.example")
    assert response.status == 403
    # a name given with --allow-origin (a proxy) is accepted, as Host and as Origin
    response, _ = _get(port, f"/?token={TOKEN}", host="proxy.example:443",
                       headers={"Origin": "https://proxy.example"})
    assert response.status == 200


def _websocket(port, origin, cookie):
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def connect():
        request = HTTPRequest(f"ws://127.0.0.1:{port}/ws",
                              headers={"Origin": origin, "Cookie": cookie})
        try:
            conn = await websocket_connect(request)
        except Exception as err:  # refused: tornado raises on the 403
            return getattr(err, "code", str(err))
        conn.close()
        return 101

    return asyncio.run(connect())


def test_websocket_needs_sign_in_and_a_known_origin(servers):
    port, _ = servers
    response, _ = _get(port, f"/?token={TOKEN}")
    cookie = _cookie(response)
    assert _websocket(port, f"http://127.0.0.1:{port}", "") != 101
    assert _websocket(port, "http://attacker.example", cookie) == 403
    assert _websocket(port, f"http://0.0.0.0:{port}", cookie) == 403


def test_basic_auth_checks_the_hash(servers):
    _, port = servers
    response, _ = _get(port, "/")
    assert response.status == 302
    wrong = urlencode({"username": "ana", "password": "wrong"})
    kind = {"Content-Type": "application/x-www-form-urlencoded"}
    response, _ = _get(port, "/login", method="POST", body=wrong, headers=kind)
    assert response.status == 403 and not _cookie(response)
    right = urlencode({"username": "ana", "password": "correct horse"})
    response, _ = _get(port, "/login", method="POST", body=right, headers=kind)
    assert response.status == 302 and _cookie(response)
    response, _ = _get(port, "/", headers={"Cookie": _cookie(response)})
    assert response.status == 200


def test_password_file_holds_hashes_only(tmp_path):
    stored = hash_password("s3cret", iterations=1000)
    assert "s3cret" not in stored and check_password("s3cret", stored)
    assert not check_password("s3cret!", stored)
    good = tmp_path / "users"
    good.write_text(f"# users\nana:{stored}\n")
    assert read_password_file(good) == {"ana": stored}
    plain = tmp_path / "plain"
    plain.write_text("ana:s3cret\n")
    with pytest.raises(ValueError, match="--basic-auth"):
        read_password_file(plain)


def test_default_names_are_the_ones_answered_on():
    names = allowed_names("0.0.0.0", 5006)
    assert "0.0.0.0:5006" not in names
    assert {"localhost:5006", "127.0.0.1:5006", f"{socket.gethostname().lower()}:5006"} <= set(
        names)
