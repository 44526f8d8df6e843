"""The ``host:port`` names a served explorer answers to (its Host and Origin checks).

Apart from :mod:`dprisk.explore.access` (which imports Bokeh and Tornado), so that ``dprisk
explore`` refuses a bad ``--allow-origin`` before importing them.
"""

from __future__ import annotations

import socket

from dprisk.runtime.ascii_numbers import ascii_digits

__all__ = ["WILDCARDS", "allowed_names", "bokeh_origins", "interface_addresses"]

#: The listening addresses that mean every interface.
WILDCARDS = ("0.0.0.0", "::", "")


def _name_port(entry: str, port: int) -> list[str]:
    """``entry`` (``HOST``, ``HOST:PORT``, ``[V6]:PORT``) as ``host:port`` names.

    A name without a port stands for the server's port and the default ports 80 and 443 (a
    reverse proxy's address). Refused (ValueError naming ``--allow-origin``): an empty host
    (``""``, ``":5006"``, ``"[]"``), and a port that is not 1..65535 in ASCII digits (``"h:"``,
    ``"h:0"``, ``"h:٥٠٠٦"``, which ``int`` would read as 5006).
    """
    given_entry = entry
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, tail = entry[1:].partition("]")
        empty = not host
        host, given, has_port = f"[{host}]", tail.removeprefix(":"), bool(tail)
    elif entry.count(":") == 1:
        host, given = entry.split(":")
        empty, has_port = not host, True
    else:
        empty, given, has_port = not entry, "", False
        host = f"[{entry}]" if ":" in entry else entry
    if empty:
        raise ValueError(f"--allow-origin {given_entry!r}: the host is empty (give HOST or "
                         "HOST:PORT, the port in 1..65535)")
    if has_port:
        if not (ascii_digits(given) and len(given) <= 5) or not 1 <= int(given) <= 65535:
            raise ValueError(f"--allow-origin {given_entry!r}: the port must be in 1..65535 "
                             "(ASCII digits)")
        return [f"{host}:{int(given)}"]
    return [f"{host}:{port}", f"{host}:80", f"{host}:443"]


def interface_addresses() -> set[str]:
    """The machine's own IP addresses, on every interface (a LAN visitor types one of them).

    The host name often resolves to a loopback address only (``127.0.1.1``), so the addresses
    are read from the interfaces (psutil, when installed) and from the route out (the local
    address of a UDP socket "connected" to a documentation address: nothing is sent).
    Link-local IPv6 addresses (``fe80::...%eth0``) are left out: a browser's Host never
    carries their zone.
    """
    found = set()
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        for addresses in psutil.net_if_addrs().values():
            found |= {a.address for a in addresses
                      if a.family in (socket.AF_INET, socket.AF_INET6)}
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))
                found.add(udp.getsockname()[0])
        except OSError:
            pass
    return {a for a in found if "%" not in a and not a.lower().startswith("fe80")}


def allowed_names(host: str, port: int, extra=()) -> list[str]:
    """The ``host:port`` names the server answers on (Host and Origin are checked against it).

    The listening address; ``localhost`` and ``127.0.0.1`` when it is a loopback or wildcard
    address; the machine's host name, full name and addresses (those the names resolve to,
    and its interfaces': :func:`interface_addresses`) when it is a wildcard (``0.0.0.0``,
    ``::``); and each ``extra`` name (``HOST`` means ports PORT, 80, 443).
    """
    from dprisk.explore.inputs import is_loopback

    names = [host]
    if is_loopback(host) or host in WILDCARDS:
        names += ["localhost", "127.0.0.1", "[::1]"]
    if host in WILDCARDS:
        names.remove(host)
        machine = {socket.gethostname(), socket.getfqdn()}
        for name in list(machine):
            try:
                machine |= {info[4][0] for info in socket.getaddrinfo(name, None)}
            except OSError:
                pass
        names += sorted(machine | interface_addresses())
    allowed = []
    for name in names:
        allowed.append(f"[{name}]:{port}" if ":" in name and "[" not in name
                       else f"{name}:{port}")
    for entry in extra:
        allowed += _name_port(entry, port)
    return list(dict.fromkeys(a.lower() for a in allowed))


def bokeh_origins(names) -> list[str]:
    """``names`` as Bokeh's websocket allow-list takes them.

    Bokeh cannot parse ``[v6]:port``; :class:`Access` checks every Origin itself, IPv6
    names included.
    """
    return [name for name in names if not name.startswith("[")]
