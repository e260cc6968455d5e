"""A browsing gateway finds a peer whose mDNS announcement it never received (a busy or lossy
LAN): it asks again every REQUERY_S. Real zeroconf on 127.0.0.1, no ROS."""

from __future__ import annotations

import asyncio
import os
import socket
import time

from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from gateway.federation import mdns
from gateway.federation.settings import MdnsOptions

SERVICE = f"_dq{os.getpid() % 100000:05d}._tcp.local."
# zeroconf's browser sends its startup queries about 0, 1, 5 and 14 s after it starts and
# then none for a service it has no record of: a peer appearing after this is seen only by
# its own announcement.
STARTUP_QUERIES_DONE_S = 16.0


async def _scenario() -> tuple[float | None, list[str]]:
    found: list[tuple[str, str]] = []

    async def lost(_name: str) -> None:
        return None

    browser = mdns.Mdns(MdnsOptions(discover=True, service=SERVICE, name="primary",
                                    interfaces=("127.0.0.1",)), "127.0.0.1", 1,
                        lambda name, url: found.append((name, url)), lost)
    await browser.start()
    silent = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    try:
        await asyncio.sleep(STARTUP_QUERIES_DONE_S)
        # The peer answers queries, but its announcement never reaches the browser.
        info = AsyncServiceInfo(SERVICE, f"robot-q.{SERVICE}",
                                addresses=[socket.inet_aton("127.0.0.1")], port=18080,
                                properties={"name": "robot-q", "api": "/api/v1"},
                                server="robot-q.local.")
        silent.zeroconf.registry.async_add(info)
        t0 = time.monotonic()
        deadline = t0 + mdns.REQUERY_S + 10.0
        while time.monotonic() < deadline and not found:
            await asyncio.sleep(0.1)
        return (time.monotonic() - t0 if found else None), [n for n, _ in found]
    finally:
        await browser.stop()
        await silent.async_close()


def test_a_peer_whose_announcement_was_lost_is_found_by_asking_again() -> None:
    took, names = asyncio.run(_scenario())
    assert names == ["robot-q"], names
    assert took is not None and took <= mdns.REQUERY_S + 5.0, took
