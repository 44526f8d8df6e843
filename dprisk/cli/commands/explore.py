"""``dprisk explore``: serve the live what-if app in the browser.

``dprisk explore [--port N] [--host H] [--no-browser]`` serves the Panel app of
:mod:`dprisk.explore.app` at ``http://H:N/`` (``127.0.0.1:5006`` by default) until stopped
with Ctrl+C, and opens it in the default browser unless ``--no-browser``. Bad options exit
with status 2 and one line naming the option: a port outside 1..65535, an empty host or one
that is not a host name or address, a port that cannot be listened on, or Panel missing
(install the ``explore`` extra).
"""

from __future__ import annotations

import errno
import importlib.util
import socket
from pathlib import Path

from dprisk.cli import common

__all__ = ["add_parser", "run"]

#: Bokeh's usual port.
DEFAULT_PORT = 5006


def add_parser(subs) -> None:
    """Register ``dprisk explore``."""
    sub = subs.add_parser(
        "explore", help=common.SUBCOMMAND_HELP["explore"],
        description="Serve the what-if explorer (single level, two levels with a sampling "
        "check, P[correct] against rho, the budget for a risk target, accounting) at "
        "http://HOST:PORT/ until Ctrl+C.")
    sub.add_argument("--port", type=common.integer, default=DEFAULT_PORT,
                     help=f"TCP port, 1..65535 (default {DEFAULT_PORT})")
    sub.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1: this machine only)")
    sub.add_argument("--prior-dir", metavar="DIR", default=None,
                     help="offer the .py model files under DIR (chosen from a list) for the "
                     "prior; without it, typed PATH.py:NAME priors load only when --host is "
                     "a loopback address, and no model file loads otherwise")
    sub.add_argument("--allow-origin", metavar="HOST[:PORT]", action="append", default=[],
                     help="also answer to this name (a reverse proxy's; repeatable); the Host "
                     "and Origin of every request must be one of the server's names")
    who = sub.add_mutually_exclusive_group()
    who.add_argument("--basic-auth", metavar="FILE", default=None,
                     help="sign in with a user name and password from FILE, one "
                     "USER:pbkdf2_sha256$... line per user (python -m dprisk.explore.access "
                     "USER prints one)")
    who.add_argument("--token", action="store_true",
                     help="require a token (printed in the URL at start) also on loopback, "
                     "e.g. on a machine shared with other users")
    who.add_argument("--no-auth", action="store_true",
                     help="serve beyond loopback without a token or password (default there: "
                     "a token, printed in the URL at start)")
    sub.add_argument("--max-jobs", type=common.integer, default=None, metavar="N",
                     help="slow computations running at once, server-wide, and as many "
                     "sampling workers (default: the number of cores); more wait their turn")
    sub.add_argument("--page-loads", type=common.integer, default=None, metavar="N",
                     help="page loads (and as many websocket connections) per client address "
                     "per minute, and websocket connections open at once, beyond which a "
                     "client gets status 429 (default 30; 0: no limit)")
    sub.add_argument("--no-browser", action="store_true",
                     help="do not open the page in a browser")
    sub.set_defaults(func=run)


def _check_listen(host: str, port: int) -> None:
    """Refuse a port we cannot listen on before starting the server (one line, exit 2)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except (UnicodeError, ValueError, TypeError) as err:  # not encodable (NUL, ...)
            raise ValueError(f"--host {host!r} is not a host name or address ({err})") from None
        except OSError as err:
            why = "in use" if err.errno == errno.EADDRINUSE else err.strerror or str(err)
            raise ValueError(f"--port {port} on --host {host}: cannot listen ({why})") from None


def run(args) -> int:
    """Check the options, then serve until interrupted."""
    if not 1 <= args.port <= 65535:
        raise ValueError(f"--port must be an integer in 1..65535, got {args.port}")
    if not args.host.strip():
        raise ValueError("--host must be a host name or address, got an empty string")
    if args.max_jobs is not None and args.max_jobs < 1:
        raise ValueError(f"--max-jobs must be an integer >= 1, got {args.max_jobs}")
    if args.page_loads is not None and args.page_loads < 0:
        raise ValueError(f"--page-loads must be an integer >= 0, got {args.page_loads}")
    prior_dir = None
    if args.prior_dir is not None:
        prior_dir = Path(args.prior_dir).expanduser()
        if not prior_dir.is_dir():
            raise ValueError(f"--prior-dir {args.prior_dir!r} is not a directory")
        prior_dir = prior_dir.resolve()
    if importlib.util.find_spec("panel") is None:
        raise ValueError("explore needs Panel, which is not installed; install it with "
                         "pip install 'dp-disclosure-risk[explore]'")
    from dprisk.explore.names import allowed_names  # imports neither Bokeh nor Tornado

    allowed_names(args.host, args.port, args.allow_origin)  # a bad --allow-origin: one line
    _check_listen(args.host, args.port)  # the options first, then whether the port is free
    users = None
    if args.basic_auth is not None:
        from dprisk.explore.access import read_password_file

        try:
            users = read_password_file(args.basic_auth)
        except (OSError, UnicodeError) as err:
            raise ValueError(f"--basic-auth {args.basic_auth}: cannot read "
                             f"({getattr(err, 'strerror', None) or err})") from None
    auth = ("basic" if users else "token" if args.token else "none" if args.no_auth
            else "auto")
    from dprisk.explore.app import serve

    serve(port=args.port, host=args.host, show=not args.no_browser, prior_dir=prior_dir,
          allow_origin=args.allow_origin, auth=auth, users=users, max_jobs=args.max_jobs,
          page_loads=args.page_loads)
    return common.EXIT_OK
