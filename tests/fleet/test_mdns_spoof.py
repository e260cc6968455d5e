"""mDNS without credentials: spoofed announcements and goodbyes cannot move or remove a peer
that answers, and fake names are capped per announced address. With a fleet secret, a flood
of names that never prove cannot keep a robot that proves out. Real zeroconf and gateways on
127.0.0.1, no ROS nodes."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from tests.conftest import free_port
from tests.domains import next_domain
from tests.fleet.conftest import wait_until
from tests.harness import Gateway

pytestmark = pytest.mark.integration

SERVICE = f"_ds{os.getpid() % 100000:05d}._tcp.local."
PROVED_SERVICE = f"_dp{os.getpid() % 100000:05d}._tcp.local."  # the fleet-secret test's own
PER_ADDRESS = 3
FAKES = 5
FLOOD = 12
FLEET_SECRET = "mdns-spoof-fleet-secret-" + str(os.getpid())


def mdns(name: str, service: str = SERVICE, **flags: bool) -> list[str]:
    return [f"aggregation.mdns_service={service}", f"aggregation.mdns_name={name}",
            "aggregation.mdns_interfaces=[127.0.0.1]",
            *(f"aggregation.{k}={str(v).lower()}" for k, v in flags.items())]


def peers(gw: Gateway) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in gw.get("/health").json()["peers"]}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Gateway, Path]]:
    logs = tmp_path_factory.mktemp("spoof")
    with Gateway(free_port(), next_domain(),
                 ["aggregation.enabled=true", f"state_dir={logs / 'primary-state'}",
                  f"aggregation.max_discovered_per_address={PER_ADDRESS}",
                  *mdns("primary", discover=True)], logs / "primary.log") as primary, \
            Gateway(free_port(), next_domain(),
                    [f"state_dir={logs / 'robot-state'}", *mdns("robot-a", announce=True)],
                    logs / "robot-a.log") as robot:
        wait_until(lambda: peers(primary).get("robot-a", {}).get("status") == "online", 30,
                   "robot-a to join")
        yield primary, robot, logs / "primary.log"


def info(name: str, port: int, service: str = SERVICE) -> AsyncServiceInfo:
    return AsyncServiceInfo(service, f"{name}.{service}", port=port,
                            addresses=[socket.inet_aton("127.0.0.1")],
                            properties={"name": name, "api": "/api/v1"},
                            server=f"spoofer-{name}.local.")


def holds_still(primary: Gateway, url: str, log: Path, line: str, timeout: float) -> None:
    """robot-a stays online at url until the primary logs `line` (and 2 s more)."""
    seen: float | None = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        robot_a = peers(primary).get("robot-a")
        assert robot_a is not None and robot_a["url"] == url, robot_a
        if seen is None and line in log.read_text():
            seen = time.monotonic()
        if seen is not None and time.monotonic() - seen > 2.0:
            assert robot_a["status"] == "online"
            return
        time.sleep(0.1)
    raise AssertionError(f"the primary never logged {line!r}")


def test_spoofed_announcement_and_goodbye_leave_an_answering_peer(
        fleet: tuple[Gateway, Gateway, Path]) -> None:
    primary, robot, log = fleet
    url = f"http://127.0.0.1:{robot.port}"
    assert peers(primary)["robot-a"]["url"] == url

    async def spoof() -> None:
        azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        fake = info("robot-a", free_port())
        try:
            await (await azc.async_register_service(fake, cooperating_responders=True))
            await asyncio.to_thread(holds_still, primary, url, log,
                                    "mDNS: robot-a announced at", 30)
            await (await azc.async_unregister_service(fake))  # a goodbye for robot-a
            await asyncio.to_thread(holds_still, primary, url, log,
                                    "mDNS: goodbye from robot-a while it answers", 30)
        finally:
            await azc.async_close()
    asyncio.run(spoof())


def test_fake_names_are_capped_per_address(fleet: tuple[Gateway, Gateway, Path]) -> None:
    primary, _, log = fleet

    async def flood() -> None:
        azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        try:
            for i in range(FAKES):
                await (await azc.async_register_service(info(f"fake-{i}", free_port())))
            await asyncio.to_thread(wait_until, lambda: "max_discovered_per_address" in
                                    log.read_text(), 30, "a refusal by address")
            await asyncio.to_thread(wait_until, lambda: len(peers(primary)) == PER_ADDRESS,
                                    30, "the address's cap of peers")
            names = set(peers(primary))
            assert "robot-a" in names and len(names) == PER_ADDRESS, names
        finally:
            await azc.async_close()
    asyncio.run(flood())


@pytest.fixture(scope="module")
def proving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Path]]:
    logs = tmp_path_factory.mktemp("spoof-proved")
    with Gateway(free_port(), next_domain(),
                 ["aggregation.enabled=true", f"state_dir={logs / 'primary-state'}",
                  f"aggregation.max_discovered_per_address={PER_ADDRESS}",
                  f"aggregation.fleet_secret={FLEET_SECRET}",
                  *mdns("proving", PROVED_SERVICE, discover=True)],
                 logs / "proving.log") as primary:
        yield primary, logs


def test_a_flood_of_unproved_names_cannot_keep_a_proving_robot_out(
        proving: tuple[Gateway, Path]) -> None:
    primary, logs = proving
    log = logs / "proving.log"

    async def flood() -> None:
        azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        try:  # every fake at 127.0.0.1, the real robot's address: its places are taken
            await asyncio.gather(*[await azc.async_register_service(
                info(f"flood-{i}", free_port(), PROVED_SERVICE)) for i in range(FLOOD)])
            await asyncio.to_thread(wait_until, lambda: log.read_text().count(
                "not added: no proof") >= PER_ADDRESS, 30, "the flood's names to be asked")
            robot = Gateway(free_port(), next_domain(),
                            [f"state_dir={logs / 'robot-state'}",
                             f"aggregation.fleet_secret={FLEET_SECRET}",
                             *mdns("robot-b", PROVED_SERVICE, announce=True)],
                            logs / "robot-b.log")
            await asyncio.to_thread(robot.start)  # zeroconf's loop keeps answering meanwhile
            try:
                await asyncio.to_thread(
                    wait_until, lambda: peers(primary).get("robot-b", {}).get("status")
                    == "online", 60, "robot-b to join during the flood")
                assert set(peers(primary)) == {"robot-b"}, peers(primary)
            finally:
                await asyncio.to_thread(robot.stop)
            assert "robot-b at http://127.0.0.1" in log.read_text()
        finally:
            await azc.async_close()
    asyncio.run(flood())
