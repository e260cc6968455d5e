"""aggregation.fleet_secret: a primary uses a peer found by mDNS only once it proved the
secret at its announced address; spoofed names are not added. Real zeroconf and gateways on
127.0.0.1, no ROS nodes."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from gateway.federation.fleet_proof import new_nonce, proves
from tests.conftest import free_port
from tests.domains import next_domain
from tests.fleet.conftest import wait_until
from tests.harness import Gateway

pytestmark = pytest.mark.integration

SERVICE = f"_dk{os.getpid() % 100000:05d}._tcp.local."
SECRET = "a fleet secret of the loopback test"


def mdns(name: str, secret_file: Path, **flags: bool) -> list[str]:
    return [f"aggregation.mdns_service={SERVICE}", f"aggregation.mdns_name={name}",
            "aggregation.mdns_interfaces=[127.0.0.1]",
            f"aggregation.fleet_secret_file={secret_file}",
            *(f"aggregation.{k}={str(v).lower()}" for k, v in flags.items())]


def peers(gw: Gateway) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in gw.get("/health").json()["peers"]}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Gateway, Path]]:
    logs = tmp_path_factory.mktemp("fleet-secret")
    secret = logs / "fleet-secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    with Gateway(free_port(), next_domain(),
                 ["aggregation.enabled=true", f"state_dir={logs / 'primary-state'}",
                  *mdns("primary", secret, discover=True)], logs / "primary.log") as primary, \
            Gateway(free_port(), next_domain(),
                    [f"state_dir={logs / 'robot-state'}",
                     *mdns("robot-a", secret, announce=True)], logs / "robot-a.log") as robot:
        wait_until(lambda: peers(primary).get("robot-a", {}).get("status") == "online", 60,
                   "robot-a to join")
        yield primary, robot, logs / "primary.log"


def test_the_robot_is_added_once_it_proved_the_secret(
        fleet: tuple[Gateway, Gateway, Path]) -> None:
    primary, robot, log = fleet
    url = f"http://127.0.0.1:{robot.port}"
    assert peers(primary)["robot-a"]["url"] == url
    assert f"mDNS: robot-a at {url} proved the fleet secret" in log.read_text()
    nonce = new_nonce()
    answer = robot.get(f"/x-vendor-fleet-proof?nonce={nonce}")
    assert answer.status == 200 and proves(SECRET, nonce, "robot-a", answer.json())
    assert robot.get("/x-vendor-fleet-proof?nonce=00").status == 400


def test_spoofed_names_are_not_added(fleet: tuple[Gateway, Gateway, Path]) -> None:
    primary, robot, log = fleet
    nobody = free_port()

    def info(name: str, port: int) -> AsyncServiceInfo:
        return AsyncServiceInfo(SERVICE, f"{name}.{SERVICE}", port=port,
                                addresses=[socket.inet_aton("127.0.0.1")],
                                properties={"name": name, "api": "/api/v1"},
                                server=f"spoofer-{name}.local.")

    async def spoof() -> None:
        azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        try:
            # fake-1: nothing answers there; fake-2: the real robot's address, whose proof
            # is bound to the name robot-a and so does not pass for fake-2
            await (await azc.async_register_service(info("fake-1", nobody)))
            await (await azc.async_register_service(info("fake-2", robot.port)))
            for line in (f"mDNS: fake-1 at http://127.0.0.1:{nobody} not added: no proof",
                         f"mDNS: fake-2 at http://127.0.0.1:{robot.port} not added: "
                         "wrong proof"):
                await asyncio.to_thread(wait_until, lambda line=line: line in log.read_text(),
                                        30, line)
            assert set(peers(primary)) == {"robot-a"}
            assert peers(primary)["robot-a"]["status"] == "online"
        finally:
            await azc.async_close()
    asyncio.run(spoof())
