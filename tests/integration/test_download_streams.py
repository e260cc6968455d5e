"""A download through a primary streams from its first byte (issue 45): the client has the
status, headers and first bytes while the robot's link has not yet carried the whole body; the
body is byte-identical; a robot dying mid-body leaves the client a short, broken answer.

One robot gateway (the demo's temp_sensor, a file uploaded as bulk-data to it) is a static
peer of `primary` through one link emulator (tests/fleet/linkemu.py) and dials out to `hub`
through another. A download is slowed by capping the link's rate; what the link carried is
its byte counter (`stats`), so the checks count bytes, not time.
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

import pytest

from gateway.federation.connect_auth import robot_token
from tests.conftest import free_port
from tests.domains import next_domain
from tests.fleet.linkemu import command, running
from tests.harness import Gateway
from tests.integration.test_bulk_data import multipart

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor",)
SECRET = "download-streams-secret-" + str(os.getpid())
APP = "temp_sensor"
SIZE = 900_000  # under the 1 MiB a JSON answer is read whole: a download of it used to be
RATE_BPS = 1_000_000  # ~7 s on the capped link
FIRST = 64 * 1024
BIG = 8_000_000


class Link(NamedTuple):
    port: int
    control: Path
    direction: str  # the direction robot -> primary in the link's `stats`


class Fleet(NamedTuple):
    robot: Gateway
    primary: Gateway
    hub: Gateway
    to_primary: Link
    to_hub: Link


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("download")


def start_link(stack: ExitStack, logs: Path, name: str, target: int, direction: str) -> Link:
    port = free_port()
    control = stack.enter_context(running(logs, name, port, target, "--rtt-ms", "20"))
    return Link(port, control, direction)


@pytest.fixture(scope="module")
def fleet(robot: object, domain: int, logs: Path) -> Iterator[Fleet]:
    robot_port, hub_port = free_port(), free_port()
    links = ExitStack()
    to_primary = start_link(links, logs, "to-primary", robot_port, "down")  # primary dials
    to_hub = start_link(links, logs, "to-hub", hub_port, "up")  # the robot dials the hub
    robot_gw = Gateway(robot_port, domain, [
        f"state_dir={logs / 'robot'}", "bulk_data.categories=[files]",
        "aggregation.mdns_name=robot1",
        f"aggregation.connect_to=http://127.0.0.1:{to_hub.port}",
        f"aggregation.connect_robot_token={robot_token(SECRET, 'robot1')}"], logs / "robot.log")
    primary = Gateway(free_port(), next_domain(), [
        f"state_dir={logs / 'primary'}", "aggregation.enabled=true",
        f"aggregation.peer_urls=[http://127.0.0.1:{to_primary.port}]",
        "aggregation.peer_names=[robot1]"], logs / "primary.log")
    hub = Gateway(hub_port, next_domain(), [
        f"state_dir={logs / 'hub'}", "aggregation.enabled=true",
        f"aggregation.connect_token={SECRET}"], logs / "hub.log")
    try:
        with hub, robot_gw, primary:
            for gw in (primary, hub):
                gw.wait_for("/apps", lambda b: any(a["id"] == APP for a in b["items"]),
                            timeout=90)
            yield Fleet(robot_gw, primary, hub, to_primary, to_hub)
    finally:
        links.close()


def put_file(robot: Gateway, size: int) -> tuple[str, bytes]:
    """(download path, its bytes) of a file of this size uploaded to the robot's app."""
    data = os.urandom(size)
    body, ctype = multipart(("file", "big.bin", "application/octet-stream", data))
    resp = robot.request("POST", f"/apps/{APP}/bulk-data/files", raw=body,
                         headers={"Content-Type": ctype})
    assert resp.status == 201, resp
    return f"/apps/{APP}/bulk-data/files/{resp.json()['id']}", data


@pytest.fixture(scope="module")
def upload(fleet: Fleet) -> tuple[str, bytes]:
    return put_file(fleet.robot, SIZE)


def carried(link: Link) -> int:
    """Bytes the link has carried from the robot toward its primary so far."""
    fields = dict(kv.split("=") for kv in command(link.control, "stats").split())
    return int(fields[link.direction])


def online(gw: Gateway) -> None:
    """Wait until gw lists the robot online (a capped link may have held its probes back)."""
    gw.wait_for("/health", lambda b: any(p["name"] == "robot1" and p["status"] == "online"
                                         for p in b["peers"]), timeout=60)


def open_download(gw: Gateway, path: str, headers: dict[str, str] | None = None
                  ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=60)
    conn.request("GET", "/api/v1" + path, headers=headers or {})
    return conn, conn.getresponse()


@pytest.fixture
def capped(fleet: Fleet) -> Iterator[None]:
    for link in (fleet.to_primary, fleet.to_hub):
        assert command(link.control, f"set rate_bps={RATE_BPS}") == "ok"
    try:
        yield
    finally:
        for link in (fleet.to_primary, fleet.to_hub):
            command(link.control, "set rate_bps=0")


@pytest.mark.parametrize("via", ["primary", "hub"], ids=["static-peer", "dial-in"])
def test_download_streams_from_the_first_byte(fleet: Fleet, upload: tuple[str, bytes],
                                              capped: None, via: str) -> None:
    path, data = upload
    gw, link = (fleet.primary, fleet.to_primary) if via == "primary" else \
        (fleet.hub, fleet.to_hub)
    online(gw)
    before = carried(link)
    conn, resp = open_download(gw, path)
    try:
        assert resp.status == 200
        assert resp.getheader("Content-Length") == str(SIZE)
        first = resp.read(FIRST)
        so_far = carried(link) - before
        # headers and first bytes out while most of the body has not crossed the link yet
        assert so_far < SIZE, f"the link had carried {so_far} of {SIZE} bytes"
        assert first + resp.read() == data
    finally:
        conn.close()


@pytest.mark.parametrize("via", ["primary", "hub"], ids=["static-peer", "dial-in"])
def test_a_range_through_the_primary_is_the_peer_s(fleet: Fleet, upload: tuple[str, bytes],
                                                   via: str) -> None:
    path, data = upload
    gw = fleet.primary if via == "primary" else fleet.hub
    online(gw)
    conn, resp = open_download(gw, path, {"Range": "bytes=1000-"})
    try:
        assert resp.status == 206
        assert resp.getheader("Content-Range") == f"bytes 1000-{SIZE - 1}/{SIZE}"
        assert resp.getheader("Content-Length") == str(SIZE - 1000)
        assert resp.read() == data[1000:]
    finally:
        conn.close()


def test_a_robot_dying_mid_body_breaks_both_downloads(fleet: Fleet, capped: None) -> None:
    """Last in the module: the robot gateway is killed. Its file is larger than what the
    sockets and the links hold, so the answers cannot complete from bytes already sent."""
    path, _ = put_file(fleet.robot, BIG)
    for gw in (fleet.primary, fleet.hub):
        online(gw)
    outcomes: dict[str, str] = {}
    started = threading.Barrier(3)

    def download(name: str, gw: Gateway) -> None:
        conn, resp = open_download(gw, path)
        try:
            assert resp.status == 200 and resp.getheader("Content-Length") == str(BIG)
            got = len(resp.read(FIRST))
            started.wait(60)
            try:
                got += len(resp.read())
                outcomes[name] = f"complete, {got} bytes"
            except http.client.IncompleteRead as exc:
                outcomes[name] = f"broken after {got + len(exc.partial)} bytes"
        except BaseException as exc:  # reported by the assertion below
            outcomes[name] = f"failed: {exc!r}"
            started.abort()
        finally:
            conn.close()

    threads = [threading.Thread(target=download, args=(name, gw))
               for name, gw in (("primary", fleet.primary), ("hub", fleet.hub))]
    for t in threads:
        t.start()
    started.wait(60)
    assert fleet.robot.proc is not None
    os.killpg(fleet.robot.proc.pid, signal.SIGKILL)
    for t in threads:
        t.join(90)
    assert set(outcomes) == {"primary", "hub"}, outcomes
    assert all(o.startswith("broken") for o in outcomes.values()), outcomes
