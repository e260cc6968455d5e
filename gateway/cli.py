"""Command line: `diag-gateway run | demo | robot | robot-token | settings | bag | mcp`."""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from recorder import pull

from . import __version__
from .bulk_data.settings import BulkDataSettings
from .demo import robot
from .demo.robot import NODES, Robot, demo_nodes, ros_env
from .discovery.settings import DiscoverySettings
from .federation.connect_auth import robot_entries, robot_token
from .federation.connect_key import key_path, robot_key
from .federation.settings import LOCAL, AggregationSettings, peer_name
from .http import client_tls
from .http.tls import server_context
from .process import eventloop, hardexit, mallocarenas, portcheck, statefiles
from .process.settings import ProcessSettings, ServerSettings
from .settings.config import SETTINGS, ConfigError, Settings, load
from .settings.secret_values import registered_secrets
from .settings.secretfiles import scrub_process
from .wire.settings import ApiSettings

log = logging.getLogger("gateway")

#: Seconds after the shutdown grace by which a stopping gateway leaves in any case.
STOP_DEADLINE_S = 13.0

EPILOG = """\
settings use the interface's names, e.g. --set server.port=8081 --set sse.max_clients=10;
values are read as YAML. See README.md for every setting and its default.
"""


# The demo loads the first-party plugins (docs/plugins.md).
DEMO_PLUGINS = (
    "plugins=[update_provider,graph_provider,graph_watchdog]",
    "plugins.graph_watchdog.lifecycle_expectation.require_active="
    "[managed_lifecycle,managed_lifecycle_active]",  # its name in the spec and medkit demos
)
# Update packages can be uploaded as bulk-data: added to the configured categories.
DEMO_CATEGORY = "packages"


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="YAML settings file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one setting (repeatable)")
    p.add_argument("--host", help="bind address (same as --set server.host=...)")
    p.add_argument("--port", type=int, help="TCP port (same as --set server.port=...)")
    p.add_argument("--domain", type=int, metavar="N",
                   help="ROS domain id (default: $ROS_DOMAIN_ID or 0)")
    p.add_argument("--log-level", default="info",
                   choices=("debug", "info", "warning", "error"), help="log verbosity")


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(
        prog="diag-gateway",
        description="SOVD-style HTTP/JSON diagnostic gateway for ROS 2 robots.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="serve the gateway for the ROS 2 nodes already running",
                         epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_config_args(run)
    demo = sub.add_parser("demo", help="start the simulated demo robot and a gateway for it",
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_config_args(demo)
    demo.add_argument("--manifest", nargs="?", const="shipped", default=None, metavar="FILE",
                      help="hybrid discovery with a manifest (default: deploy/demo_manifest.yaml "
                           "and deploy/demo_inventory.csv)")
    settings = sub.add_parser("settings", help="list every setting with its default and range")
    settings.add_argument("--config", metavar="FILE",
                          help="also show the values this YAML file gives")
    settings.add_argument("--set", dest="overrides", action="append", default=[],
                          metavar="KEY=VALUE", help="also show this override (repeatable)")
    token = sub.add_parser(
        "robot-token", help="print robots' own connect tokens as this primary issues them "
                            "(aggregation.connect_robot_token; run as the gateway's user)")
    token.add_argument("--config", metavar="FILE", help="the primary's YAML settings file")
    token.add_argument("--set", dest="overrides", action="append", default=[],
                       metavar="KEY=VALUE", help="override one setting (repeatable)")
    token.add_argument("names", nargs="+", metavar="NAME", help="robot names (mdns_name)")
    robot = sub.add_parser("robot", help="start only the simulated demo robot's nodes")
    robot.add_argument("--domain", type=int, default=None, metavar="N", help="ROS domain id")
    robot.add_argument("--only", default="", metavar="A,B", help="start only these nodes")
    robot.add_argument("--profile", default="spec", choices=("spec", "medkit"),
                       help="the api.profile of the gateway it is for: medkit runs the "
                            "reference's demo node names (default: spec)")
    bag = sub.add_parser("bag", help="rosbag recordings of faults (bulk-data)")
    bag_sub = bag.add_subparsers(dest="bag_command", required=True, metavar="BAG_COMMAND")
    bag_pull = bag_sub.add_parser(
        "pull", help="download a recording by URL (recording id or fault code), resuming an "
                     "interrupted download")
    bag_pull.add_argument("url", metavar="URL",
                          help="e.g. http://127.0.0.1:8080/api/v1/apps/lidar_sensor/bulk-data/"
                               "rosbags/LIDAR_RANGE_INVALID")
    bag_pull.add_argument("-o", "--output", default=".", metavar="DIR",
                          help="directory to write into (default: .)")
    bag_pull.add_argument("--token", default=None,
                          help="bearer token (default: $DIAG_GATEWAY_TOKEN)")
    mcp = sub.add_parser("mcp", help="an MCP server on stdio for a gateway (docs/mcp.md)")
    mcp.add_argument("--gateway", required=True, metavar="URL",
                     help="the gateway, e.g. http://127.0.0.1:8080")
    mcp.add_argument("--token-file", default=None, metavar="FILE",
                     help="file holding a bearer token (default: $DIAG_GATEWAY_TOKEN)")
    mcp.add_argument("--client-id", default="mcp", metavar="ID",
                     help="X-Client-Id of the writes and locks (default: mcp)")
    mcp.add_argument("--page-size", type=int, default=50, metavar="N",
                     help="most items one answer lists (default: 50)")
    mcp.add_argument("--timeout", type=float, default=60.0, metavar="SEC",
                     help="budget of one REST request (default: 60)")
    mcp.add_argument("--insecure", action="store_true",
                     help="do not verify the gateway's TLS certificate")
    return p


def _settings(args: argparse.Namespace) -> Settings:
    overrides = list(args.overrides)
    if args.host:
        overrides.append(f"server.host={args.host}")
    if args.port is not None:
        overrides.append(f"server.port={args.port}")
    if args.domain is not None:
        overrides.append(f"ros.domain_id={args.domain}")
    settings = load(args.config, overrides)
    # Secrets given by --set no longer show in /proc/<pid>/cmdline (nor environ) once read.
    scrub_process(registered_secrets())
    return settings


async def serve(settings: Settings, ready_message: str | None = None,
                on_force_exit: Callable[[], object] | None = None) -> None:
    """Serve until SIGINT or SIGTERM; stop within the grace period, at once on a second one."""
    client_tls.import_aiohttp()  # the CA store of its client contexts waits for a client
    from aiohttp import web  # noqa: PLC0415 - after client_tls.import_aiohttp()

    from .app import make_app  # noqa: PLC0415 - aiohttp after import_aiohttp()
    from .http.server import GatewayRunner  # noqa: PLC0415 - aiohttp after import_aiohttp()
    from .http.state import STATE  # noqa: PLC0415 - aiohttp after import_aiohttp()
    from .ros.dds.bridge import start_ros  # noqa: PLC0415 - rclpy only for the serving commands

    ssl_context = server_context(settings)  # ConfigError names a bad server.tls.* setting
    _check_port(settings)  # a taken port fails now, not after the ROS start-up
    srv = settings.typed(ServerSettings.from_settings)
    state_dir = settings.typed(ProcessSettings.from_settings).state_dir
    statefiles.private_by_default(state_dir)  # 0600 files, 0700 directories
    # DDS discovery runs while the app is built (a manifest is checked first: ROS starts
    # after). Not before the imports above: native DDS threads running while the interpreter
    # imports aiohttp saw a gateway die with SIGSEGV in an import (twice in some thousands of
    # starts, on a loaded machine); the sooner start was not worth that exposure.
    runtime_only = settings.typed(DiscoverySettings.from_settings).mode == "runtime_only"
    bridge = start_ros(settings) if runtime_only else None
    try:
        app = make_app(settings, bridge=bridge)
    except BaseException:
        if bridge is not None:
            bridge.close()
        raise
    # Calls in flight are abandoned (503) by the drain before the runner's cleanup, which
    # then only has answers to write: a short shutdown timeout is enough.
    runner = GatewayRunner(app, settings.vendor, access_log=None, shutdown_timeout=2.0,
                           client_log_per_minute=srv.client_error_log_per_minute)
    await runner.setup()
    host, port = srv.host, srv.port
    site = web.TCPSite(runner, host, port, reuse_address=True, ssl_context=ssl_context)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise ConfigError(portcheck.refusal(host, port, exc)) from None
    log.info("serving %s://%s:%d/api/v1", "https" if ssl_context else "http", host, port)
    if ready_message:
        print(ready_message, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():  # the second signal: no more waiting
            log.warning("second stop signal: exiting now")
            if on_force_exit is not None:
                on_force_exit()
            logging.shutdown()
            os._exit(130)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    await stop.wait()
    grace = srv.shutdown_grace_sec
    drain = app[STATE].drain
    # A stop is bounded even if a teardown step never returns (a DDS entity whose deletion
    # deadlocks inside the middleware, with or without the GIL): the process leaves anyway.
    hardexit.arm(grace + STOP_DEADLINE_S)
    log.info("stopping: %d calls in flight get up to %g s (the process leaves by %g s)",
             drain.in_flight, grace, grace + STOP_DEADLINE_S)
    abandoned = await drain.stop(grace)
    if abandoned:
        log.warning("stopping: %d calls still running after %g s answered 503", abandoned, grace)
    await runner.cleanup()
    log.info("stopped")


def _check_port(settings: Settings) -> None:
    """ConfigError naming the port and the setting when server.port cannot be bound now."""
    srv = settings.typed(ServerSettings.from_settings)
    problem = portcheck.check_bindable(srv.host, srv.port)
    if problem is not None:
        raise ConfigError(problem)


def _logging(level: str) -> None:
    """Log lines to stderr at `level`; a fatal signal (a segfault in native code, an abort)
    first writes every Python thread's stack there, so a crash's log says where it was."""
    logging.basicConfig(level=getattr(logging, level.upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    faulthandler.enable()


def _announce_isolation() -> None:
    from .ros.dds import isolation  # noqa: PLC0415 - gateway.ros (numpy): not for every command

    isolation.announce()  # one line naming what the shell's foreign ROS had and was set aside


def _cap_arenas(settings: Settings) -> None:
    mallocarenas.limit(settings.typed(ServerSettings.from_settings).malloc_arenas)


def cmd_run(args: argparse.Namespace) -> int:
    """Serve a gateway."""
    _logging(args.log_level)
    _announce_isolation()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    settings = _settings(args)
    _cap_arenas(settings)
    eventloop.run(serve(settings), settings.typed(ServerSettings.from_settings).event_loop)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Start the demo robot and a gateway in front of it."""
    from .dashboard.settings import DashboardSettings  # noqa: PLC0415 - aiohttp: serving only

    _logging(args.log_level)
    _announce_isolation()
    domain = args.domain if args.domain is not None else int(os.environ.get("ROS_DOMAIN_ID", 0))
    os.environ.update(ros_env(domain))
    args.domain = domain
    args.overrides = [*DEMO_PLUGINS, *args.overrides]  # the command line still wins
    if args.manifest:
        args.overrides = _manifest_overrides(args.manifest) + list(args.overrides)
    settings = _demo_settings(args)
    _cap_arenas(settings)  # before the robot's threads
    _check_port(settings)  # before the robot starts, too
    srv = settings.typed(ServerSettings.from_settings)
    scheme = "https" if srv.tls_enabled else "http"
    root = f"{scheme}://{srv.host}:{srv.port}"
    base = f"{root}/api/v1"
    dashboard = (f"  Dashboard: {root}/  (open in a browser)\n"
                 if settings.typed(DashboardSettings.from_settings).enabled else "")
    # the shipped manifest binds this project's node names; without one, the profile's names
    profile = settings.typed(ApiSettings.from_settings).profile
    nodes = NODES if args.manifest else demo_nodes(profile)
    with Robot.start(domain, nodes) as robot:
        message = (
            f"\nDemo robot running in ROS domain {domain}; gateway at {base}\n"
            + dashboard +
            f"  curl {base}/apps\n"
            f"  curl {base}/functions\n"
            + (f"  curl {base}/areas\n  curl {base}/manifest/status\n" if args.manifest else "")
            + f"  curl {base}/apps/temp_sensor/data/%2Fpowertrain%2Fengine%2Ftemperature\n"
            f"  curl {base}/health\n"
            f"  curl {base}/functions/powertrain/x-{settings.vendor}-graph\n"
            f"  curl {base}/x-{settings.vendor}-watchdog\n"
            f"  OpenAPI document: {base}/docs\n"
            "Ctrl-C stops the gateway and the robot.\n")
        eventloop.run(serve(settings, message, on_force_exit=lambda: robot.stop(timeout=0.5)),
                      srv.event_loop)
    return 0


def _demo_settings(args: argparse.Namespace) -> Settings:
    """The demo's settings: the configured bulk-data categories plus the demo's own."""
    settings = _settings(args)

    categories = list(settings.typed(BulkDataSettings.from_settings).categories)
    if DEMO_CATEGORY in categories:
        return settings
    args.overrides = [*args.overrides,
                      "bulk_data.categories=" + json.dumps([*categories, DEMO_CATEGORY])]
    return _settings(args)


def _manifest_overrides(manifest: str) -> list[str]:
    """Settings of `demo --manifest`: hybrid mode with the shipped (or given) manifest."""
    deploy = Path(__file__).resolve().parents[1] / "deploy"
    out = ["discovery.mode=hybrid"]
    if manifest == "shipped":
        out += [f"discovery.manifest_path={deploy / 'demo_manifest.yaml'}",
                f"discovery.inventory.csv_path={deploy / 'demo_inventory.csv'}"]
    else:
        out.append(f"discovery.manifest_path={manifest}")
    return out


def cmd_settings(args: argparse.Namespace) -> int:
    """Print the settings reference (and resolved values when a file or overrides are given)."""
    loaded = load(args.config, args.overrides) if (args.config or args.overrides) else None
    # Compare real values (a redacted secret always differs from its default), show redacted.
    actual = loaded.as_dict(redact=False) if loaded is not None else None
    resolved = loaded.as_dict() if loaded is not None else None
    lines: list[str] = []
    for s in SETTINGS:
        default = list(s.default) if isinstance(s.default, tuple) else s.default
        bounds = ""
        if s.choices:
            bounds = " one of " + "|".join(s.choices)
        elif s.minimum is not None or s.maximum is not None:
            bounds = f" range {s.minimum:g}..{s.maximum:g}"
        line = f"{s.key} = {default!r}  ({s.type.__name__}{bounds})  {s.help}"
        if actual is not None and resolved is not None and actual.get(s.key) != s.default:
            line += f"\n    now: {resolved[s.key]!r}"
        lines.append(line)
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:
        # `diag-gateway settings | head`: the reader left; stop quietly, and keep the
        # interpreter's own flush at exit from failing on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def cmd_robot_token(args: argparse.Namespace) -> int:
    """`robot-token NAME...`: print `NAME TOKEN` lines issued from the primary's robot key."""
    settings = load(args.config, args.overrides)
    aggregation = settings.typed(AggregationSettings.from_settings)
    listed = robot_entries(aggregation.connect_robots)
    path = key_path(settings.typed(ProcessSettings.from_settings).state_dir)
    made = not aggregation.connect_robot_secret and not os.path.lexists(path)
    key = robot_key(settings, create=True)
    if made:
        print(f"diag-gateway: made the robot key {path} (0600); a primary started before "
              "without robot connections accepts these tokens once restarted", file=sys.stderr)
    status = 0
    for name in args.names:
        if peer_name(name) != name or name == LOCAL or "__" in name:
            print(f"diag-gateway: {name!r} is not a robot name (letters, digits, '_' or '-', "
                  "not 'local', no '__')", file=sys.stderr)
            status = 2
        elif name in listed:
            print(f"diag-gateway: {name!r} is listed in aggregation.connect_robots: its token "
                  "is that entry", file=sys.stderr)
            status = 2
        else:
            print(f"{name} {robot_token(key, name)}")
    return status


def cmd_robot(args: argparse.Namespace) -> int:
    """Start the demo robot alone."""
    argv = []
    if args.domain is not None:
        argv += ["--domain", str(args.domain)]
    if args.only:
        argv += ["--only", args.only]
    argv += ["--profile", args.profile]
    return int(robot.main(argv, prog="diag-gateway robot") or 0)


def cmd_bag(args: argparse.Namespace) -> int:
    """`bag pull URL [-o DIR]`: download a fault's recording with a progress bar."""
    return pull.main(args.url, args.output, args.token)


def cmd_mcp(args: argparse.Namespace) -> int:
    """`mcp --gateway URL [--token-file F]`: the MCP server on stdio (docs/mcp.md)."""
    from .mcp import stdio  # noqa: PLC0415 - aiohttp and the MCP SDK only for `mcp`

    return stdio.main(args.gateway, args.token_file, args.client_id,
                      max(1, min(500, args.page_size)), args.timeout, args.insecure)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the diag-gateway console script."""
    if argv is None:  # the program itself (not a call from Python): on its own ROS first
        from .ros.dds import isolation  # noqa: PLC0415 - gateway.ros (numpy): not for every command

        isolation.isolate()
    args = parser().parse_args(argv)
    try:
        return {"run": cmd_run, "demo": cmd_demo, "robot": cmd_robot, "settings": cmd_settings,
                "bag": cmd_bag, "mcp": cmd_mcp, "robot-token": cmd_robot_token}[args.command](args)
    except ConfigError as exc:
        print(f"diag-gateway: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
