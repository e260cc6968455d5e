"""Is the HTTP port free? Checked before ROS starts, so a taken port fails in a moment
with a message naming the port and the setting (not after the whole start-up)."""

from __future__ import annotations

import errno
import socket


def refusal(host: str, port: int, exc: OSError) -> str:
    """Why the gateway cannot listen on host:port, and what to change."""
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (f"setting 'server.port': port {port} is already in use on {host} (another "
                f"gateway or program listens on {where}); stop it or choose a free port with "
                "--port N (or --set server.port=N)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (f"setting 'server.port': no permission to listen on {where} (ports below "
                "1024 need privileges); choose a port >= 1024 with --port N")
    if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(exc, socket.gaierror):
        return (f"setting 'server.host': cannot listen on {where}: {host!r} is not an address "
                f"of this machine ({exc.strerror or exc}); set --host (server.host) to one")
    return f"setting 'server.port': cannot listen on {where}: {exc.strerror or exc}"


def check_bindable(host: str, port: int) -> str | None:
    """None when every address of `host` can bind `port` now, else the refusal.

    Binds as the server will (SO_REUSEADDR, as aiohttp's reuse_address) and closes at once.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except OSError as exc:
        return refusal(host, port, exc)
    for family, kind, proto, _name, addr in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(addr)
        except OSError as exc:
            return refusal(host, port, exc)
    return None
