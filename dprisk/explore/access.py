"""Who may connect to ``dprisk explore``: names, a token or passwords, checked per request.

:class:`Access` is a Bokeh auth provider (``bokeh.server.auth_provider.AuthProvider``) that
the server consults for every page and websocket request:

- the request's ``Host`` (and a websocket's ``Origin``) must be one of the names the server
  answers on (:func:`dprisk.explore.names.allowed_names`: the listening address, the
  machine's names when it listens on every interface, and each ``--allow-origin``), so a
  foreign name pointed at the server (DNS rebinding) is refused with 403, on loopback too;
- with a token (the default beyond loopback, as Jupyter does) the first visit carries
  ``?token=...`` (the URL printed at start); the server then keeps a signed cookie;
- with ``--basic-auth FILE`` a login form checks a user name and password against FILE,
  one ``user:pbkdf2_sha256$ITERATIONS$SALT$HASH`` line per user (:func:`hash_password`,
  ``python -m dprisk.explore.access USER`` prints one); passwords are never stored;
- with neither (loopback, or ``--no-auth``) everyone who reaches an allowed name is let in;
- page loads (and websocket connections, each of which can open a session) are limited per
  client address (:class:`PageLoads`, ``--page-loads N/SECONDS``): beyond the limit the
  request gets status 429 and one line of text, before any session is built. Behind a
  reverse proxy on this machine the client is the last address of ``X-Forwarded-For``;
- sign-in attempts (``POST /login``) are limited per client address as page loads are, and
  a password is checked (PBKDF2) in a thread, never on the event loop; an unknown user's
  attempt is checked against a made-up hash with the users' iteration count, so its time
  does not tell whether the user exists.

Panel's own ``basic_auth`` compares passwords in plain text and ignores the Host header,
hence this provider. Nothing here imports Panel.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import re
import secrets
import threading
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

from bokeh.server.auth_provider import AuthProvider
from tornado.web import Finish, HTTPError, RequestHandler

from dprisk.explore.names import allowed_names, bokeh_origins, interface_addresses

__all__ = ["STORED_PASSWORD", "Access", "PageLoads", "allowed_names", "bokeh_origins",
           "client_address", "hash_password", "interface_addresses", "read_password_file"]

#: PBKDF2-SHA256 iterations of a new password hash.
ITERATIONS = 200_000
#: The cookie that keeps a visitor signed in (signed with the server's random secret).
COOKIE = "dprisk_explore_user"
#: Days a sign-in lasts.
COOKIE_DAYS = 1
LOGIN_PATH = "/login"
#: Page loads per client address by default: ``(loads, seconds)``.
DEFAULT_PAGE_LOADS = (30, 60.0)
#: The one line a client over its page-load limit gets (status 429).
TOO_MANY = "dprisk explore: too many page loads from your address; wait a minute and reload\n"
#: The one line a client with too many pages open at once gets (status 429).
TOO_MANY_OPEN = ("dprisk explore: too many pages open from your address; close one and "
                 "reload\n")
#: The one line a client over its sign-in limit gets (status 429).
TOO_MANY_LOGINS = ("dprisk explore: too many sign-in attempts from your address; wait a minute "
                   "and try again\n")


def client_address(handler: RequestHandler) -> str:
    """The client's address: the peer, or behind a proxy on loopback its ``X-Forwarded-For``.

    Only a proxy on this machine is believed (a remote client could write any header); the
    last address of the header is the one the proxy itself appended.
    """
    peer = handler.request.remote_ip or ""
    forwarded = handler.request.headers.get("X-Forwarded-For", "")
    try:
        local = ipaddress.ip_address(peer).is_loopback
    except ValueError:
        local = False
    if local and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return peer


class PageLoads:
    """At most ``loads`` requests per client and kind in any ``seconds`` (a sliding window).

    Thread-safe. Only recent clients are remembered (at most ``max_clients``; the oldest go
    first), so the table cannot grow without bound.
    """

    def __init__(self, loads: int, seconds: float, *, max_clients: int = 10_000) -> None:
        self.loads, self.seconds, self.max_clients = int(loads), float(seconds), max_clients
        self._times: dict[tuple, deque] = {}
        self._lock = threading.Lock()

    def allow(self, key, now: float | None = None) -> bool:
        """Count one request of ``key``; False if it is over the limit (not counted then)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._times.pop(key, None) or deque()
            while times and times[0] <= now - self.seconds:
                times.popleft()
            allowed = len(times) < self.loads
            if allowed:
                times.append(now)
            self._times[key] = times  # most recent last
            while len(self._times) > self.max_clients:
                del self._times[next(iter(self._times))]
            return allowed


def hash_password(password: str, *, salt: bytes | None = None,
                  iterations: int = ITERATIONS) -> str:
    """``pbkdf2_sha256$ITERATIONS$SALT$HASH`` (hex) of ``password``."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"pbkdf2_sha256${iterations}${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches a :func:`hash_password` string (constant-time compare)."""
    try:
        kind, iterations, salt, digest = stored.split("$")
        if kind != "pbkdf2_sha256":
            return False
        again = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt),
                                    int(iterations))
    except ValueError:
        return False
    return hmac.compare_digest(again.hex(), digest)


#: A stored password as :func:`hash_password` writes it: an iteration count >= 1 in ASCII
#: digits, a hex salt, and the 32-byte SHA-256 digest in lower-case hex (as compared).
STORED_PASSWORD = re.compile(
    r"pbkdf2_sha256\$0*[1-9][0-9]*\$(?:[0-9a-fA-F]{2})+\$[0-9a-f]{64}")


def read_password_file(path) -> dict[str, str]:
    """``{user: hash}`` from FILE; ValueError (one line naming ``--basic-auth``) if malformed.

    Each hash must be as :func:`hash_password` writes it (:data:`STORED_PASSWORD`): one with
    an iteration count that is not a number (``6OOOOO``) or a salt that is not hex was
    accepted, and then no password matched it, and an unknown user's sign-in raised (status
    500, a traceback in the log) when that count was the file's most common.
    """
    users = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, stored = line.strip().partition(":")
        if not sep or not user or STORED_PASSWORD.fullmatch(stored) is None:
            raise ValueError(f"--basic-auth {path}: line {number} is not "
                             "USER:pbkdf2_sha256$ITERATIONS$SALT$HASH (make one with "
                             "python -m dprisk.explore.access USER)")
        users[user] = stored
    if not users:
        raise ValueError(f"--basic-auth {path}: no users in the file")
    return users


_FORM = """<!doctype html><html><head><meta charset="utf-8"><title>dprisk explore</title></head>
<body style="font-family: sans-serif; margin: 3em"><h2>dprisk explore: sign in</h2>
<p style="color: #842029">{error}</p><form method="post" action="{action}">{fields}
<button type="submit">Sign in</button></form></body></html>"""
_TOKEN_FIELDS = ('<p>This server needs its token (printed where it was started).</p>'
                 '<p><input name="token" type="password" size="50" placeholder="token"></p>')
_USER_FIELDS = ('<p><input name="username" placeholder="user"></p>'
                '<p><input name="password" type="password" placeholder="password"></p>')


class Access(AuthProvider):
    """The explorer's auth provider: allowed names, then a token, passwords or nobody.

    Parameters
    ----------
    names : list of str
        Allowed ``host:port`` names (:func:`allowed_names`).
    token : str, optional
        The token visitors must show once (``?token=`` or the sign-in form).
    users : dict of str to str, optional
        ``{user: hash}`` (:func:`read_password_file`) for a user name and password form.
    page_loads : (int, float), optional
        At most this many page loads, and as many websocket connections, per client address
        in this many seconds (default :data:`DEFAULT_PAGE_LOADS`); None: no limit.
    """

    def __init__(self, names, *, token: str | None = None, users: dict | None = None,
                 page_loads=DEFAULT_PAGE_LOADS) -> None:
        self.names = set(names)
        self.token = token
        self.users = users
        self.page_loads = PageLoads(*page_loads) if page_loads else None
        self._dummy: str | None = None
        super().__init__()

    @property
    def needs_sign_in(self) -> bool:
        """Whether a visitor must show a token or a password."""
        return self.token is not None or self.users is not None

    def host_allowed(self, handler: RequestHandler) -> bool:
        """Whether the request's Host (and Origin, if sent) are allowed names.

        An Origin that is not a URL (``http://h:abc``, a port beyond 65535, ``http://[::1``)
        is not allowed: urllib raises ValueError on it, which reached Tornado (no response,
        a traceback in the log).
        """
        request = handler.request
        hosts = [request.host or ""]
        origin = request.headers.get("Origin")
        if origin and origin != "null":
            try:
                parsed = urlparse(origin)
                port = parsed.port
            except ValueError:
                return False
            default = 443 if parsed.scheme == "https" else 80
            netloc = parsed.netloc.lower()
            hosts.append(netloc if port else f"{netloc}:{default}")
        for host in hosts:
            host = host.lower()
            if not (host.rsplit(":", 1)[-1].isdigit() and ":" in host.lstrip("[")):
                host = f"{host}:80"
            if host not in self.names:
                return False
        return True

    @property
    def dummy_hash(self) -> str:
        """What an unknown user's password is checked against.

        A made-up hash with the users' iteration count (the most common), so that checking
        it costs as much as checking a user's.
        """
        if self._dummy is None:
            counts = Counter(stored.split("$")[1] for stored in (self.users or {}).values())
            iterations = int(counts.most_common(1)[0][0]) if counts else ITERATIONS
            self._dummy = (f"pbkdf2_sha256${iterations}${secrets.token_hex(16)}$"
                           f"{secrets.token_hex(32)}")
        return self._dummy

    def count_login(self, handler: RequestHandler) -> None:
        """Refuse a sign-in attempt over the client's limit (as many as page loads): 429."""
        self._count_load(handler, kind="login")

    def _count_load(self, handler: RequestHandler, kind: str | None = None) -> None:
        """Refuse a page load or websocket over the client's limit: 429 and one line."""
        if self.page_loads is None:
            return
        socket_ = handler.request.headers.get("Upgrade", "").lower() == "websocket"
        kind = kind or ("socket" if socket_ else "page")
        key = (client_address(handler), kind)
        if not self.page_loads.allow(key):
            handler.set_status(429)
            handler.set_header("Content-Type", "text/plain; charset=utf-8")
            handler.set_header("Retry-After", str(int(self.page_loads.seconds)))
            raise Finish(TOO_MANY_LOGINS if kind == "login" else TOO_MANY)

    def _user(self, handler: RequestHandler):
        if not self.host_allowed(handler):
            raise HTTPError(403, "unknown host or origin")
        self._count_load(handler)
        if not self.needs_sign_in:
            return "visitor"
        user = handler.get_secure_cookie(COOKIE, max_age_days=COOKIE_DAYS)
        if user:
            return user.decode()
        offered = handler.get_query_argument("token", None)
        if self.token is not None and offered is not None \
                and hmac.compare_digest(offered.encode(), self.token.encode()):
            if handler.request.headers.get("Upgrade", "").lower() != "websocket":
                _sign_in(handler, "token")
            return "token"
        return None

    @property
    def get_user(self):
        """``get_user(handler)``: the visitor, None (sign in first), or 403 (unknown name)."""
        return self._user

    @property
    def login_url(self):
        """Where a visitor who is not signed in is sent."""
        return LOGIN_PATH

    @property
    def login_handler(self):
        """The sign-in form (a token, or a user name and password)."""
        access = self

        class Login(RequestHandler):
            def get(self) -> None:
                if not access.host_allowed(self):
                    raise HTTPError(403, "unknown host or origin")
                self._form("")

            def _form(self, error: str) -> None:
                fields = _USER_FIELDS if access.users is not None else _TOKEN_FIELDS
                self.write(_FORM.format(error=error, action=LOGIN_PATH, fields=fields))

            async def post(self) -> None:
                if not access.host_allowed(self):
                    raise HTTPError(403, "unknown host or origin")
                access.count_login(self)
                if access.users is not None:
                    user = self.get_body_argument("username", "")
                    stored = access.users.get(user)
                    # an unknown user is checked against a hash of the same cost (no timing
                    # tells who exists), off the event loop (PBKDF2 takes 0.2-0.4 s)
                    loop = asyncio.get_running_loop()
                    good = await loop.run_in_executor(
                        _hashing_pool(), check_password,
                        self.get_body_argument("password", ""), stored or access.dummy_hash)
                    good = good and stored is not None
                else:
                    user = "token"
                    good = hmac.compare_digest(self.get_body_argument("token", "").encode(),
                                               (access.token or "").encode())
                if not good:
                    self.set_status(403)
                    self._form("Not signed in: wrong user, password or token.")
                    return
                _sign_in(self, user)
                self.redirect("/")

        return Login


#: Threads that check passwords (PBKDF2), off the event loop; more attempts wait their turn.
HASHING_THREADS = 2
_HASHING: ThreadPoolExecutor | None = None
_HASHING_LOCK = threading.Lock()


def _hashing_pool() -> ThreadPoolExecutor:
    global _HASHING
    with _HASHING_LOCK:
        if _HASHING is None:
            _HASHING = ThreadPoolExecutor(HASHING_THREADS, thread_name_prefix="dprisk-login")
        return _HASHING


def _sign_in(handler: RequestHandler, user: str) -> None:
    handler.set_secure_cookie(COOKIE, user, expires_days=COOKIE_DAYS, httponly=True,
                              samesite="Strict")


def new_token() -> str:
    """A fresh random token (48 hex digits)."""
    return secrets.token_hex(24)


def main(argv=None) -> int:
    """``python -m dprisk.explore.access USER``: print a ``--basic-auth`` line for USER."""
    import getpass
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or ":" in args[0]:
        print("usage: python -m dprisk.explore.access USER  (USER without ':')",
              file=sys.stderr)
        return 2
    password = getpass.getpass(f"password for {args[0]}: ")
    print(f"{args[0]}:{hash_password(password)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
