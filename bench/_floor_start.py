"""Baseline for bench/startup.py: the least a Python ROS 2 HTTP gateway does to start.

aiohttp and rclpy imported, one rclpy context and node, an HTTP server whose /api/v1/health
says `ready: true` and /api/v1/apps lists the node names once every name given is in the
ROS graph (polled every 50 ms). Same interpreter, same ROS environment as the gateway.

    python bench/_floor_start.py PORT NODE [NODE ...]
"""

from __future__ import annotations

import asyncio
import sys

import orjson
import rclpy
from aiohttp import web
from rclpy.signals import SignalHandlerOptions


def main() -> None:
    """Serve until killed."""
    port, wanted = int(sys.argv[1]), set(sys.argv[2:])
    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("_floor_start", context=ctx, start_parameter_services=False)
    seen: set[str] = set()

    async def poll(app: web.Application) -> None:
        while True:
            seen.update(n for n in await asyncio.to_thread(node.get_node_names) if n in wanted)
            await asyncio.sleep(0.05)

    async def start(app: web.Application) -> None:
        app["poll"] = asyncio.get_running_loop().create_task(poll(app))

    async def health(request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps({"ready": seen >= wanted}),
                            content_type="application/json")

    async def apps(request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps({"items": [{"id": n} for n in sorted(seen)]}),
                            content_type="application/json")

    app = web.Application()
    app.on_startup.append(start)
    app.router.add_get("/api/v1/health", health)
    app.router.add_get("/api/v1/apps", apps)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
