"""A process of simulated robots (bench/fleet_sim.py): each robot's emulated link
(tests/fleet/linkemu.py) in front of its server (bench/_sim_robot.py), how it joins its primary
(mDNS, connecting out, or listed statically), and a control socket.

Robot k listens at 127.77.x.y:8080 (its link; the address peers reach) and serves behind it at
:8081. A robot that connects out dials its own link at :8082, which leads to the primary, so
the WebSocket crosses the emulated link; the link's connection to the primary leaves from the
robot's address (the primary counts connect attempts per source address).

With --sites, the first process also carries the link in front of each site primary (spec
`sites`: name, address index, the site's own address; --site-rtt-ms, --site-rate-bps): the
fleet primary reaches site s at its own loopback address :8080, so a site can be partitioned
from the fleet primary as a robot from its primary.

Control (one line per connection on the unix socket): `raise NAME CODE`, `clear NAME CODE`
(answer `ok <event wall time>`), `partition on|off NAME...` (robots or sites), `stats`.

Usage (by fleet_sim.py): python bench/_sim_fleet.py SPEC.json
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import random
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench._sim_inproc import InProcClient  # noqa: E402
from bench._sim_robot import RobotHttp, SimRobot, Templates, robot_address  # noqa: E402
from gateway.federation.connect_auth import robot_token  # noqa: E402
from gateway.federation.tunnel import Mux  # noqa: E402
from tests.fleet.linkemu import Link, _Client, _loop_factory  # noqa: E402

PORT, INNER_PORT, OUT_PORT = 8080, 8081, 8082
RTO_MIN_S = 0.2  # Linux's minimum retransmission timeout
KEEPALIVE_S = 30.0  # sse.keepalive_sec of a robot gateway
CONNECT_BACKOFF_S = (0.5, 1.0, 2.0, 5.0)  # as gateway/federation/connect_out.py
HEARTBEAT_S = 10.0
MDNS_REGISTER_AT_ONCE = 250


class LossyLink(Link):
    """A link that also loses a share of its chunks: a lost one (and, order kept, what
    follows it) arrives one retransmission timeout late, as TCP resends it."""

    def __init__(self, rtt_s: float, rate_bps: float, loss: float,
                 target: tuple[str, int], source: str | None = None) -> None:
        super().__init__(rtt_s, 0.0, rate_bps, target)
        self.loss = loss
        self.source = source  # the address the link's inner connection leaves from

    def due(self, direction: str, size: int, now: float, last: float) -> float:
        at = super().due(direction, size, now, last)
        if self.loss and random.random() < self.loss:
            at += max(RTO_MIN_S, 2 * self.rtt_s)
        return at


class BeaconHttp(RobotHttp):
    """RobotHttp whose beacon streams write a line every requested interval."""

    def data_received(self, data: bytes) -> None:
        first = bytes(data[:200])
        super().data_received(data)
        if self.streaming and b"-beacon" in first.split(b"\r\n", 1)[0]:
            interval = 0.5
            line = first.split(b" ", 2)[1]
            if b"interval_ms=" in line:
                with contextlib.suppress(ValueError):
                    interval = min(10.0, max(0.1, int(line.split(b"interval_ms=")[1]
                                                      .split(b"&")[0]) / 1000))
            loop = asyncio.get_running_loop()
            loop.call_later(interval * random.random(), self._beacon, interval)

    def _beacon(self, interval: float) -> None:
        t = self.transport
        if t is None or t.is_closing():
            return
        t.write(self.robot.beacon_line)
        asyncio.get_running_loop().call_later(interval, self._beacon, interval)


class Worker:
    """Every robot of this process and its links."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        templates = Templates()
        self.robots = {r["name"]: SimRobot(r["name"], r["index"], templates, spec["rec_bytes"])
                       for r in spec["robots"]}
        self.spec_of = {r["name"]: r for r in spec["robots"]}
        self.links: dict[str, LossyLink] = {}
        self.servers: list[asyncio.AbstractServer] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.azc: Any = None

    def _link(self, robot: SimRobot, target: tuple[str, int], source: str | None = None
              ) -> LossyLink:
        s = self.spec
        return LossyLink(s["rtt_ms"] / 1000, s["rate_bps"], s["loss"], target, source)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        join = self.spec["join"]
        for robot in self.robots.values():
            addr = robot.address
            self.servers.append(await loop.create_server(
                functools.partial(BeaconHttp, robot), addr, INNER_PORT, reuse_address=True))
            if join == "connect":
                host, port = self.spec_of[robot.name]["primary"]
                link = self._link(robot, (host, port), source=addr)
                listen = OUT_PORT
                client: Any = functools.partial(_Client, link, "up")
            else:
                link = self._link(robot, (addr, INNER_PORT))
                listen = PORT
                client = functools.partial(InProcClient, link, "up",
                                           functools.partial(BeaconHttp, robot))
            self.links[robot.name] = link
            self.servers.append(await loop.create_server(client, addr, listen,
                                                         reuse_address=True))
        for site in self.spec.get("sites", []):
            # the WAN link between the fleet primary and a site primary
            host, port = site["target"]
            link = LossyLink(self.spec["site_rtt_ms"] / 1000, self.spec["site_rate_bps"], 0.0,
                             (str(host), int(port)))
            self.links[site["name"]] = link
            self.servers.append(await loop.create_server(
                functools.partial(_Client, link, "up"), robot_address(site["index"]), PORT,
                reuse_address=True))
        if join == "mdns":
            await self._announce()
        elif join == "connect":
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            self.tasks += [loop.create_task(self._dial(session, r))
                           for r in self.robots.values()]
        self.tasks.append(loop.create_task(self._keepalive()))

    async def _announce(self) -> None:
        from zeroconf import IPVersion  # noqa: PLC0415 - zeroconf only when announcing
        from zeroconf.asyncio import (  # noqa: PLC0415 - zeroconf only when announcing
            AsyncServiceInfo,
            AsyncZeroconf,
        )

        self.azc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        service = {name: r["service"] for name, r in self.spec_of.items()}
        infos = [AsyncServiceInfo(service[r.name], f"{r.name}.{service[r.name]}",
                                  addresses=[socket.inet_aton(r.address)], port=PORT,
                                  properties={"name": r.name, "api": "/api/v1"})
                 for r in self.robots.values()]
        for at in range(0, len(infos), MDNS_REGISTER_AT_ONCE):
            # each robot probes for its name then announces, all at once as robots that boot
            # together would (one after the other took a second each)
            announced = await asyncio.gather(*(self.azc.async_register_service(i)
                                               for i in infos[at:at + MDNS_REGISTER_AT_ONCE]))
            await asyncio.gather(*announced)

    async def _dial(self, session: aiohttp.ClientSession, robot: SimRobot) -> None:
        """Connect out as gateway/federation/connect_out.py does, through the robot's link."""
        await asyncio.sleep(random.random() * self.spec.get("dial_spread_s", 0.0))
        token = robot_token(self.spec["connect_key"], robot.name)
        url = (f"http://{robot.address}:{OUT_PORT}/api/v1/x-vendor-connect"
               f"?name={quote(robot.name, safe='')}")

        async def opener() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_connection(robot.address, INNER_PORT)
        failures = 0
        while True:
            try:
                async with session.ws_connect(
                        url, headers={"X-Vendor-Connect-Token": token}, heartbeat=HEARTBEAT_S,
                        max_msg_size=1 << 20,
                        timeout=aiohttp.ClientWSTimeout(ws_close=5.0)) as ws:
                    failures = 0
                    await Mux(ws, opener).run()
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
                failures += 1
            await asyncio.sleep(CONNECT_BACKOFF_S[min(failures, len(CONNECT_BACKOFF_S) - 1)])

    async def _keepalive(self) -> None:
        frame = b"c\r\n:keepalive\n\n\r\n"
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            for robot in self.robots.values():
                for t in list(robot.streams):
                    if not t.is_closing():
                        t.write(frame)

    def command(self, line: list[str]) -> str:
        if line[:1] in (["raise"], ["clear"]) and len(line) == 3:
            robot = self.robots.get(line[1])
            if robot is None:
                return f"no robot {line[1]}"
            if line[0] == "raise":
                return f"ok {robot.raise_fault(line[2]):.6f}"
            t = time.time()
            return f"ok {t:.6f}" if robot.clear_fault(line[2]) else "not active"
        if line[:1] == ["partition"] and len(line) >= 3:
            for name in line[2:]:
                link = self.links.get(name)
                if link is not None:
                    (link.down if line[1] == "on" else link.up)()
            return "ok"
        if line[:1] == ["stats"]:
            return json.dumps({"robots": len(self.robots),
                               "streams": sum(len(r.streams) for r in self.robots.values()),
                               "beacons": sum(len(r.beacons) for r in self.robots.values())})
        return f"unknown command {line!r}"

    async def serve_control(self, path: str) -> asyncio.AbstractServer:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while line := (await reader.readline()).decode().split():
                    writer.write(self.command(line).encode() + b"\n")
                    await writer.drain()
            writer.close()
        Path(path).unlink(missing_ok=True)
        return await asyncio.start_unix_server(serve, path)


async def run(spec: dict[str, Any]) -> None:
    worker = Worker(spec)
    control = await worker.serve_control(spec["control"])
    await worker.start()
    # As a robot gateway does once started (gateway/process/gcpolicy.py): what start made is
    # kept out of later collections. Else every full collection went through the robots of
    # the process (170-360 ms for 500): they all stalled at once, a stall no real robot has,
    # which showed as the primary's slow merged reads.
    gc.collect()
    gc.freeze()
    gc.set_threshold(10000, *gc.get_threshold()[1:])  # server.gc_young_threshold
    print(f"ready {len(worker.robots)}", flush=True)
    async with control:
        await control.serve_forever()


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    with contextlib.suppress(KeyboardInterrupt):
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(run(spec))


if __name__ == "__main__":
    main()
