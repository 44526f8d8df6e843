"""Every route of the served explorer behind the Host check; Panel's ``/components/`` guarded.

Bokeh and Panel add routes that never ask the auth provider (:class:`dprisk.explore.access.
Access`): the static files (``/static/...``), ``/favicon.ico`` and Panel's component resources
(``/components/MODULE/CLASS/ATTRIBUTE/PATH``). :func:`guard` puts the tornado application of a
server behind two rules:

- every request, to any route (and to none: a 404), is refused with 403 unless its ``Host``
  (and ``Origin``, if sent) is a name the server answers on (:meth:`Access.host_allowed`),
  and with 400 if a query argument is not UTF-8 text (:func:`query_is_utf8`);
- ``/components/`` is served by :class:`Components` instead of Panel's handler, which imports
  the module named in the URL path (``importlib.import_module``) before any check: a visitor
  could import any module on the server's path (``this``, ``dprisk.cli.__main__``, which
  ran the command line and stopped the server, a model file). :class:`Components` asks the
  auth provider first (as ``/`` does), then serves only a resource of a class already defined
  in an already imported module of :data:`COMPONENT_MODULES`; it never imports anything.
  The explorer's pages load nothing from ``/components/`` (Panel 1.10: the page, its tabs
  and the sampling check fetch ``/static/`` only); the route stays for Panel's own classes.
"""

from __future__ import annotations

import logging
import re
import sys
from types import SimpleNamespace
from urllib.parse import unquote_plus

from tornado.routing import ReversibleRouter
from tornado.web import HTTPError, RequestHandler

__all__ = ["CLIENT_MESSAGE_ERRORS", "COMPONENT_MODULES", "MAX_BODY_BYTES", "HostCheck",
           "ShortLines", "component_module_allowed", "guard", "query_is_utf8", "server_options",
           "shorten_log_lines"]

#: The module families whose (already imported) classes' resources ``/components/`` serves.
COMPONENT_MODULES = ("panel",)
#: The one message of a request with a foreign Host or Origin (as the pages' own refusal).
REFUSED = "unknown host or origin"
#: The one message of a request with a query argument that is not UTF-8 text.
NOT_UTF8 = "query arguments must be UTF-8 text"
#: Bytes of an HTTP request body the server reads: the sign-in form's two fields need well
#: under 1 KiB (the pages talk over the websocket, whose messages Bokeh limits apart).
#: Tornado's default, 100 MB, was read into memory before any route looked at the request:
#: five unsigned 99 MB POSTs to ``/login`` raised the server's peak memory by 1.06 GB.
MAX_BODY_BYTES = 64 * 1024


def server_options() -> dict:
    """``pn.serve``'s options for the explorer's server (Tornado's HTTP server's).

    A request body beyond :data:`MAX_BODY_BYTES` (its ``Content-Length``, or its chunks as
    they arrive) is refused with status 400 and the connection closed, before it is read.
    """
    return {"http_server_kwargs": {"max_body_size": MAX_BODY_BYTES}}


class Refused(RequestHandler):
    """403 to any method: a request whose Host or Origin is not one the server answers on."""

    def prepare(self) -> None:
        raise HTTPError(403, REFUSED)


class NotUtf8(RequestHandler):
    """400 to any method: a query argument that is not UTF-8 text."""

    def prepare(self) -> None:
        raise HTTPError(400, NOT_UTF8)


def query_is_utf8(request) -> bool:
    """Whether every query argument of ``request`` decodes as UTF-8.

    Bokeh decodes ``bokeh-session-id`` without catching the error: ``/?bokeh-session-id=%ff``
    (and ``/autoload.js?...``) was an uncaught UnicodeDecodeError, status 500 and a traceback
    in the server's log.
    """
    try:
        for values in request.query_arguments.values():
            for value in values:
                value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class HostCheck(ReversibleRouter):
    """The application's router behind the Host check (``inner``: the router it replaces)."""

    def __init__(self, application, access, inner) -> None:
        self.application, self.access, self.inner = application, access, inner

    def find_handler(self, request, **kwargs):
        """403 for a foreign Host or Origin, 400 for a non-UTF-8 query; else ``inner``'s."""
        if not self.access.host_allowed(SimpleNamespace(request=request)):
            return self.application.get_handler_delegate(request, Refused, {})
        if not query_is_utf8(request):
            return self.application.get_handler_delegate(request, NotUtf8, {})
        return self.inner.find_handler(request, **kwargs)

    def reverse_url(self, name: str, *args):
        """``inner``'s URL of the route ``name``."""
        return self.inner.reverse_url(name, *args)


def component_module_allowed(name: str) -> bool:
    """Whether ``/components/`` may serve a class of module ``name``.

    Only a module of :data:`COMPONENT_MODULES` that is already imported: nothing is imported
    for a request.
    """
    return (name in sys.modules
            and any(name == family or name.startswith(f"{family}.")
                    for family in COMPONENT_MODULES))


def _components_handler():
    """:class:`Components` (Panel's handler imported only when a server is guarded)."""
    from panel.io.server import ComponentResourceHandler

    class Components(ComponentResourceHandler):
        """Panel's component resources, for signed-in visitors, of known classes only."""

        def initialize(self, access=None, **kwargs) -> None:
            self.access = access
            super().initialize(**kwargs)

        def prepare(self) -> None:
            # as for the page: Host and Origin, the page-load limit, then the sign-in
            user = self.access.get_user(self) if self.access is not None else "visitor"
            if user is None:
                raise HTTPError(403, "sign in first")
            self.current_user = user

        def parse_url_path(self, path: str) -> str:
            module, _, rest = path.partition("/")
            name = rest.partition("/")[0]
            if not component_module_allowed(module):
                raise HTTPError(404, "Module not found")
            # a class defined in the module itself (no module __getattr__, no lazy import)
            if not isinstance(vars(sys.modules[module]).get(name), type):
                raise HTTPError(404, "Component not found")
            return super().parse_url_path(path)  # the module is imported: no import here

    return Components


_LOG = logging.getLogger(__name__)
#: Characters of a server log line kept (the rest cut, its length said).
LOG_LINE_CHARS = 2000
#: The loggers that quote what a visitor sent (Bokeh quotes a whole websocket message that
#: fails to parse: 200 kB of ``[[[[`` in one line; Tornado the URL of a refused request,
#: ``?token=...`` with it).
VISITOR_QUOTING_LOGGERS = ("bokeh.server.views.ws", "bokeh.server.protocol_handler",
                           "bokeh.server.session", "bokeh.server.connection", "panel.reactive",
                           "tornado.access", "tornado.application", "tornado.general",
                           "dprisk.explore.views")
#: What Bokeh raises applying a websocket message that only a hand-written client sends (a
#: value of the wrong type, ``TextInput.value = 5``: ValueError; an unknown model id:
#: UnknownReferenceError; an unknown event kind: RuntimeError; a client-only event:
#: NotImplementedError; fields missing: KeyError, TypeError). Bokeh answers it with an error
#: reply and logged it with its traceback, about 50 lines a message.
CLIENT_MESSAGE_ERRORS = (ValueError, KeyError, TypeError, RuntimeError, NotImplementedError)
#: A query argument ``name=value`` in a logged URL (``name`` as sent: percent-encoded or not).
_QUERY_ARGUMENT = re.compile(r"(?<=[?&;])([^=&;#\s'\"]*)=([^&;#\s'\"]*)")
#: The query arguments whose values are secrets, by their decoded names.
SECRET_ARGUMENTS = frozenset({"token"})


def _hide_secret(argument: re.Match) -> str:
    """``name=value`` of a query argument, ``name=[hidden]`` when it is a secret's."""
    name = argument.group(1)
    return f"{name}=[hidden]" if unquote_plus(name).lower() in SECRET_ARGUMENTS \
        else argument.group(0)


class ShortLines(logging.Filter):
    """Cut a record's message to :data:`LOG_LINE_CHARS` characters and hide tokens in it.

    Tornado logs a refused request's URL (``403 GET /?token=... (address): unknown host or
    origin``): the value of every :data:`SECRET_ARGUMENTS` query argument is shown as
    ``[hidden]`` (as Jupyter's server does), so the log shows no token to whoever reads it.
    The record's traceback is kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record, its message cut when too long and its tokens hidden.

        A websocket message Bokeh could not apply (:data:`CLIENT_MESSAGE_ERRORS`) is one
        warning line without the traceback.
        """
        error = record.exc_info[1] if record.exc_info else None
        if record.name == "bokeh.server.protocol_handler" \
                and isinstance(error, CLIENT_MESSAGE_ERRORS):
            record.msg = "dprisk explore: websocket message refused: %s: %s"
            record.args = (type(error).__name__, error)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        message = record.getMessage()
        shown = _QUERY_ARGUMENT.sub(_hide_secret, message) if "=" in message else message
        if len(shown) > LOG_LINE_CHARS:
            shown = f"{shown[:LOG_LINE_CHARS]}... ({len(shown)} characters)"
        if shown != message:
            record.msg, record.args = shown, ()
        return True


def shorten_log_lines() -> None:
    """Install :class:`ShortLines` on :data:`VISITOR_QUOTING_LOGGERS` (once)."""
    for name in VISITOR_QUOTING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ShortLines) for f in logger.filters):
            logger.addFilter(ShortLines())


def _signed_in_only(handler_class):
    """``handler_class`` refusing a visitor who is not signed in with 403 before it runs.

    Panel's ``/autoload.js`` awaits Bokeh's ``get_session``, whose sign-in check returns None
    (a redirect) for such a visitor: a TypeError, status 500 and a traceback in the log.
    """

    class SignedInOnly(handler_class):
        async def prepare(self) -> None:
            result = super().prepare()
            if result is not None:
                await result
            if not self.current_user:  # the auth provider's answer, cached by tornado
                raise HTTPError(403, "sign in first")

    SignedInOnly.__name__ = SignedInOnly.__qualname__ = f"SignedIn{handler_class.__name__}"
    return SignedInOnly


def _sockets_limited(handler_class, access):
    """``handler_class`` (the websocket's) refusing a client's connection beyond its limit.

    At most ``access.page_loads.loads`` websocket connections of one client address
    (:func:`~dprisk.explore.access.client_address`) are open at once, the same number as its
    page loads a minute (``--page-loads``; 0: no limit): each open connection holds a session
    (its five views, about 5 MB), which the rate alone let a client keep adding (30 a minute,
    1,800 an hour). Beyond it the handshake gets status 429 and one line. A connection
    whose Bokeh session token cannot be read is closed with one log line (Bokeh raised, and
    Tornado logged an uncaught exception with its traceback).
    """
    from collections import Counter

    from tornado.web import Finish

    from dprisk.explore.access import TOO_MANY_OPEN, client_address

    open_now: Counter = Counter()

    class SocketsLimited(handler_class):
        async def prepare(self) -> None:
            limit = access.page_loads.loads if access.page_loads is not None else None
            if limit is not None and open_now[client_address(self)] >= limit:
                self.set_status(429)
                self.set_header("Content-Type", "text/plain; charset=utf-8")
                raise Finish(TOO_MANY_OPEN)
            result = super().prepare()
            if result is not None:
                await result

        def open(self, *args, **kwargs):
            self._dprisk_client = client_address(self)
            open_now[self._dprisk_client] += 1
            try:
                return super().open(*args, **kwargs)
            except Exception as err:  # open() only reads the token and schedules the rest
                # a session token Bokeh cannot read (no "bokeh" subprotocol: ProtocolError;
                # not base64 JSON: UnicodeDecodeError; without its fields: KeyError), which
                # only a hand-written client sends: closed with one log line, not an uncaught
                # exception's traceback
                _LOG.warning("dprisk explore: websocket closed: %s: %s",
                             type(err).__name__, err)
                self.close()
                return None

        def on_close(self) -> None:
            client, self._dprisk_client = getattr(self, "_dprisk_client", None), None
            if client is not None:
                open_now[client] -= 1
                if open_now[client] <= 0:
                    del open_now[client]
            super().on_close()

    SocketsLimited.__name__ = SocketsLimited.__qualname__ = f"Limited{handler_class.__name__}"
    return SocketsLimited


def guard(application, access) -> None:
    """Put ``application`` (a Bokeh server's tornado app) behind ``access``'s Host check.

    Every route is checked, and ``/components/`` is served by :class:`Components` only
    (Panel's handler, which imports the module a URL names, is never reached);
    ``/autoload.js`` refuses a visitor who is not signed in with 403 (Panel's raised a
    TypeError, logged with its traceback); ``/ws`` refuses a client's connection beyond as
    many open at once as its page loads a minute (:func:`_sockets_limited`).
    """
    from panel.io.server import AutoloadJsHandler, ComponentResourceHandler, WSHandler

    components = _components_handler()
    replaced = 0
    for rule in application.wildcard_router.rules:
        target = rule.target
        if isinstance(target, type) and issubclass(target, ComponentResourceHandler):
            rule.target, rule.target_kwargs = components, {"access": access}
            replaced += 1
        elif isinstance(target, type) and issubclass(target, AutoloadJsHandler):
            rule.target = _signed_in_only(target)
        elif isinstance(target, type) and issubclass(target, WSHandler):
            rule.target = _sockets_limited(target, access)
    if not replaced:  # a Panel without the route: add the guarded one all the same
        application.wildcard_router.add_rules([(r"/components/(.*)", components,
                                                {"access": access})])
    shorten_log_lines()
    if not isinstance(application.default_router, HostCheck):
        application.default_router = HostCheck(application, access,
                                               application.default_router)
