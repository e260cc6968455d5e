"""Instructions per hot read on the wire, gateway vs the floor, in process (repeatable under load).

A wall-clock or CPU-time ratio swings on a busy machine; an instruction count does not. This
runs the gateway's connection handler (server._Handler, the wire path of hotwire.py and the
hot answers of hot.py) with a fake transport, answering the same request chunk N times, for
each of the three hot reads of bench/request_path_floor.py with its real probe over in-memory
state (a data read: the replay of data/reads.py over a SamplePool entry;
GET /faults: the fault service's body cache; GET /apps: the entity cache), and the floor's
data_received
(bench/_floor.py) likewise. Under callgrind, the difference between a run of N and one of 0
answers, divided by N, is the user-space instructions per request (no kernel: the transport
writes nowhere).

    .venv/bin/python bench/request_path_instr.py            # runs callgrind itself
    .venv/bin/python bench/request_path_instr.py --inner WHAT N   # one side, N answers
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import types
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._floor import floor_protocol  # noqa: E402

GET = "GET /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
PATHS = {"data": "/apps/talker/data/chatter", "faults": "/faults", "apps": "/apps"}
BODY = (b'{"id":"/chatter","data":{"data":"Hello World: 1234"},"x-vendor":{"entity_id":'
        b'"talker","ros2":{"topic":"/chatter","type":"std_msgs/msg/String"}}}')


class Transport:
    """What the wire path and aiohttp ask of a transport; writes go nowhere. The per-request
    calls (write, get_write_buffer_size) are C callables, as uvloop's are, so that the
    count is of the protocol's own work."""

    def __init__(self) -> None:
        self.out: deque[bytes] = deque(maxlen=1)
        self.write = self.out.append
        self.get_write_buffer_size = int  # int() == 0: nothing buffered

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def set_write_buffer_limits(self, *args: Any, **kwargs: Any) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


async def gateway_side(what: str, n: int) -> int:
    """Answer the hot read `what` n times on one connection; the number of answers written."""
    from aiohttp import web  # noqa: PLC0415 - the floor side loads no aiohttp

    from gateway.discovery.cache import (  # noqa: PLC0415 - the floor side loads no gateway code
        EntityCache,
    )
    from gateway.discovery.runtime import (  # noqa: PLC0415 - the floor side loads no gateway code
        HostInfo,
    )
    from gateway.faults.bodies import (  # noqa: PLC0415 - the floor side loads no gateway code
        BodyCache,
    )
    from gateway.http.routes import Registry  # noqa: PLC0415 - the floor side loads no gateway code
    from gateway.http.server import (  # noqa: PLC0415 - the floor side loads no gateway code
        GatewayRunner,
    )
    from gateway.http.state import (  # noqa: PLC0415 - the floor side loads no gateway code
        STATE,
        GatewayState,
    )
    from gateway.ros.topics.pool import (  # noqa: PLC0415 - the floor side loads no gateway code
        SamplePool,
    )
    from gateway.settings.config import load  # noqa: PLC0415 - the floor side loads no gateway code

    @web.middleware
    async def own(request: Any, handler: Any) -> Any:
        return await handler(request)

    state = GatewayState(settings=load(None, []), registry=Registry())
    app = web.Application(middlewares=[own])
    app[STATE] = state
    runner = GatewayRunner(app, "vendor", access_log=None)
    await runner.setup()
    hot = state.hot_answers
    assert hot is not None
    raw = "/api/v1" + PATHS[what]
    state.cache = EntityCache(64, HostInfo("h", "h"))
    if what == "data":
        bridge = types.SimpleNamespace()
        state.pool = SamplePool(bridge, 16)  # type: ignore[arg-type]
        entity = types.SimpleNamespace(kind="apps", id="talker")
        topic, type_name = "/chatter", "std_msgs/msg/String"
        state.cache._bodies[("topics", "apps", "talker")] = {topic: None}
        hot.store(raw, data_probe(state, entity, topic, type_name))
    elif what == "faults":
        from gateway.faults import (  # noqa: PLC0415 - the floor side loads no gateway code
            handlers as faults,
        )

        svc = types.SimpleNamespace(bodies=BodyCache(), generation=(1, 2))
        svc.bodies.put(("faults", "all"), svc.generation, BODY)
        hot.store(raw, faults._hot_all(state, svc, ("faults", "all")))  # type: ignore[arg-type]
    else:
        cache = state.cache
        key = ("apps-list", "apps", "")
        cache._bodies[key] = BODY
        hot.store(raw, lambda: cache.cached(key))
    server = runner.server
    assert server is not None
    handler = server()
    transport = Transport()
    handler.connection_made(transport)  # type: ignore[arg-type]
    await asyncio.sleep(0)  # aiohttp's start() waits for a message now
    await asyncio.sleep(0)
    chunk = GET.format(path=PATHS[what]).encode()
    handler.data_received(chunk)  # the first answer: verdict, join
    receive = handler.data_received
    for _ in range(n):
        receive(chunk)
    hits = hot.stats()["on_wire"]
    assert hits == n + 1 and transport.out[0].startswith(b"HTTP/1.1 200 OK"), \
        (what, hits, transport.out[0][:80] if transport.out else None)
    handler.connection_lost(None)
    await runner.cleanup()
    return hits


def data_probe(state: Any, entity: Any, topic: str, type_name: str) -> Any:
    """The data read's hot probe over a pool entry holding one sample and its cached body."""
    from gateway.data import (  # noqa: PLC0415 - the floor side loads no gateway code
        handlers as data,
    )
    from gateway.ros.topics.pool import (  # noqa: PLC0415 - the floor side loads no gateway code
        Sample,
        _Entry,
    )

    pool = state.pool
    entry = _Entry(topic, type_name)
    entry.seq = 1
    entry.sample = Sample(b"\0\1\0\0", 0, 1, 1)
    pool._entries[topic] = entry
    try:
        from gateway.data.reads import reads_of  # noqa: PLC0415 - absent in older trees
    except ImportError:  # before: the body cache in the pool's entries
        entry.json_seq, entry.json = 1, b"{}"  # type: ignore[attr-defined]
        view = (entity.kind, entity.id, state.cache.generation)
        entry.bodies[view] = (1, BODY)  # type: ignore[attr-defined]
        return data._hot_read(state, entity, topic, type_name, view)  # type: ignore[attr-defined]
    reads = reads_of(state)  # one owner of the body cache (data/reads.py)
    view = (entity.kind, entity.id, topic)
    reads.put(view, entry, entry.sample, state.cache.generation, BODY)
    return reads.replay(state.cache, view)


def floor_side(n: int) -> int:
    """bench/_floor.py's protocol answering n requests."""
    chunk = GET.format(path=PATHS["data"]).encode()
    response = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY
    transport = Transport()

    proto = floor_protocol(response)()  # bench/_floor.py's protocol itself
    proto.connection_made(transport)
    receive = proto.data_received
    for _ in range(n):
        receive(chunk)
    return n


def inner(what: str, n: int) -> None:
    if what == "floor":
        floor_side(n)
    else:
        uvloop.run(gateway_side(what, n))


def callgrind_ir(what: str, n: int, tmp: str) -> int:
    # Run from this (bootstrapped) interpreter's environment: the venv's ROS bootstrap
    # re-executes a fresh interpreter once, which would leave valgrind behind.
    out = Path(tmp) / f"cg.{what}.{n}"
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                           sys.executable, __file__, "--inner", what, str(n)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{what} x {n} failed:\n{done.stderr[-2000:]}")
    text = out.read_text(errors="replace")
    match = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    assert match, "no totals in the callgrind output"
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inner", nargs=2, metavar=("WHAT", "N"))
    parser.add_argument("-n", type=int, default=20000)
    parser.add_argument("--only", nargs="+", default=["floor", "data", "faults", "apps"],
                        choices=["floor", "data", "faults", "apps"])
    args = parser.parse_args()
    if args.inner:
        inner(args.inner[0], int(args.inner[1]))
        return
    os.environ.setdefault("PYTHONHASHSEED", "0")
    with tempfile.TemporaryDirectory() as tmp:
        sides = tuple(args.only)
        runs = [(what, n) for what in sides for n in (0, args.n)]
        with ThreadPoolExecutor(2) as pool:  # counts do not depend on what runs beside
            irs = dict(zip(runs, pool.map(lambda r: callgrind_ir(r[0], r[1], tmp), runs), strict=True))
        rows = {what: (irs[what, args.n] - irs[what, 0]) / args.n for what in sides}
    floor = rows.get("floor", float("nan"))
    print(f"instructions per hot read in process (callgrind, {args.n} answers on one "
          f"connection, user space only):")
    for what, ir in rows.items():
        label = "floor" if what == "floor" else f"GET {PATHS[what]}"
        print(f"  {label:<30} {ir:8.0f}" + ("" if what == "floor"
                                           else f"   floor/gateway {floor / ir:.2f}"))


if __name__ == "__main__":
    main()
