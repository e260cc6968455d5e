"""Service types the gateway lacks, built once from a server's description (typebuild.py).

A service of a type the gateway lacks builds its package: every service of that package whose
server publishes `<service>/_service_event` is described by that node, the sources are
checked and built by a subprocess into `<state_dir>/types/<key>/` (reused when it holds
`BUILT`), and the prefix is served through `interface_paths.serve()`. The build starts when
the graph shows such a service (`prefetch()`, setting `ros.type_build.on_discovery`; niced,
after the graph settled) or at the first call. A package is served once per process: a
service type of it that appears later answers 501 with the reason until a restart.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import shutil
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...process.storage import StorageHealth
from ..interfaces import interface_paths, typecache
from ..interfaces.described import ask_description
from ..interfaces.msgtypes import UnknownTypeError, import_type
from ..interfaces.typebuild import (
    MAX_TYPES,
    BuildError,
    check_hash,
    description_types,
    service_spec,
    split_type,
)

if TYPE_CHECKING:
    from ..graph.snapshot import GraphSnapshot

log = logging.getLogger(__name__)
STORE = "type-builds"  # the build cache's name in storage health

BUILD_TIMEOUT_S = 300.0
FETCH_TIMEOUT_S = 3.0
READY_WAIT_S = 2.0
RETRY_FAILED_AFTER_S = 30.0
MAX_BUILDS = 32
MAX_OUTPUT_BYTES = 64 << 20
EVENT_SUFFIX = "/_service_event"
# A build started by discovery runs at this niceness (a call's build runs at the gateway's).
PREFETCH_NICE = 10
# Discovery builds start once no new candidate appeared for this long: a robot starting up
# shows its services over a few seconds, and one build then serves all of a package's.
PREFETCH_SETTLE_S = 3.0


class ServiceTypeBuilds:
    """Builds of service types by name: state, background tasks, failures with reasons."""

    def __init__(self, bridge: Any, state_dir: str) -> None:
        self.bridge = bridge
        self.root = Path(state_dir) / "types"
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._failed: dict[str, tuple[float, str]] = {}
        self._built: set[str] = set()
        self._workers: set[int] = set()  # process groups of running builds
        self._lock = asyncio.Lock()
        self.builds = 0
        self.attempts = 0  # compiles started (MAX_BUILDS per run, failed ones too)
        self._considered: set[str] = set()  # service types prefetch() looked at
        self._candidates: dict[str, str] = {}  # type -> service, waiting for the graph to settle
        self._settle: asyncio.Task[None] | None = None
        self._last_candidate = 0.0
        self._niced: dict[int, bool] = {}  # pgid of a running build -> still niced
        self.storage: StorageHealth | None = None  # the gateway's: a full disk degrades /health

    def prune_cache(self, max_bytes: int, max_age_s: float) -> list[str]:
        """Prune `<state_dir>/types/` by size and age (typecache.py); never a build in use."""
        in_use = {Path(p).name for p in interface_paths.active().prefixes
                  if Path(p).parent == self.root}
        return typecache.prune(self.root, max_bytes, max_age_s, time.time(), in_use)

    def prefetch(self, graph: GraphSnapshot) -> list[str]:
        """Queue the builds of the service types on `graph` that the gateway lacks and whose
        servers publish service events; they start (one at a time, niced) once the graph
        settled. The types queued."""
        queued = []
        for node in graph.nodes:
            for service, type_name in node.user_services():
                if type_name in self._considered or service + EVENT_SUFFIX not in graph.topics:
                    continue
                self._considered.add(type_name)
                try:
                    if split_type(type_name)[1] != "srv":
                        continue
                    import_type(type_name)
                    continue  # the gateway has it, or a ros.interface_paths prefix serves it
                except BuildError:
                    continue
                except UnknownTypeError:
                    pass
                if self.state(type_name)[0] == "unknown":
                    self._candidates[type_name] = service
                    queued.append(type_name)
        if queued:
            self._last_candidate = time.monotonic()
            if self._settle is None:
                self._settle = asyncio.get_running_loop().create_task(
                    self._start_candidates(), name="type-build-prefetch")
        return queued

    async def _start_candidates(self) -> None:
        try:
            while (wait := self._last_candidate + PREFETCH_SETTLE_S - time.monotonic()) > 0:
                await asyncio.sleep(wait)
        finally:
            self._settle = None
        candidates, self._candidates = self._candidates, {}
        for type_name, service in sorted(candidates.items()):
            if self.state(type_name)[0] != "unknown" or self.attempts >= MAX_BUILDS:
                continue
            log.info("service type %s (%s): the gateway lacks it; building it from its "
                     "server's description in the background", type_name, service)
            self._tasks[type_name] = asyncio.get_running_loop().create_task(
                self._run(type_name, service, PREFETCH_NICE))

    def close(self) -> None:
        """Stop the running builds (their workers and compilers) and their tasks."""
        for pgid in list(self._workers):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for task in list(self._tasks.values()):
            task.cancel()
        if self._settle is not None:
            self._settle.cancel()

    def state(self, type_name: str) -> tuple[str, str]:
        """("built" | "building" | "failed" | "unknown", reason)."""
        if type_name in self._built:
            return "built", ""
        if type_name in self._tasks:
            return "building", ""
        failed = self._failed.get(type_name)
        if failed is not None and time.monotonic() - failed[0] < RETRY_FAILED_AFTER_S:
            return "failed", failed[1]
        return "unknown", ""

    async def ensure(self, type_name: str, service: str, timeout: float) -> tuple[str, str]:
        """Start the build if needed and wait up to `timeout` for it; state() after."""
        if self.state(type_name)[0] == "unknown":
            if self.attempts >= MAX_BUILDS:
                return "failed", f"{MAX_BUILDS} builds ran already this run"
            task = asyncio.get_running_loop().create_task(self._run(type_name, service))
            self._tasks[type_name] = task
        task_now = self._tasks.get(type_name)
        if task_now is not None:
            self._unnice()  # a call waits for it now
            await asyncio.wait([task_now], timeout=timeout)
        return self.state(type_name)

    def _unnice(self) -> None:
        """Back to the gateway's priority for the running discovery builds (when allowed)."""
        for pgid, niced in list(self._niced.items()):
            if niced:
                self._niced[pgid] = False
                try:
                    os.setpriority(os.PRIO_PGRP, pgid, os.getpriority(os.PRIO_PROCESS, 0))
                except OSError:  # lowering a niceness needs CAP_SYS_NICE: it stays niced
                    pass

    async def _run(self, type_name: str, service: str, nice: int = 0) -> None:
        try:
            async with self._lock:  # one build at a time: a package's build serves many types
                if type_name not in self._built:
                    await self._build(type_name, service, nice)
            self._built.add(type_name)
            self._failed.pop(type_name, None)
        except Exception as exc:  # every failure is answered as 501 with its reason
            reason = str(exc) or type(exc).__name__
            self._failed[type_name] = (time.monotonic(), reason)
            log.warning("service type %s: not built (%s)", type_name, reason)
        finally:
            self._tasks.pop(type_name, None)

    async def _build(self, type_name: str, service: str, nice: int = 0) -> None:
        pkg, kind, name = split_type(type_name)
        if kind != "srv":
            raise BuildError(f"{type_name} is not a service type")
        events = await self._package_events(pkg)
        if service not in events:
            raise LookupError(
                f"the server of {service} publishes no {service + EVENT_SUFFIX} (service "
                "introspection is off): a node describes a service type only by its hash, "
                "which the ROS graph does not carry")
        if pkg in interface_paths.active().packages:
            raise BuildError(f"package {pkg} is served already this run without {name}: "
                             "a restart of the gateway builds it")
        types: dict[str, list[Any]] = {}
        expect: dict[str, str] = {}
        for svc, (event_type, node_fqn, event_hash) in sorted(events.items()):
            try:
                described = await self._describe(node_fqn, event_type, event_hash)
                hashes = await self._message_hashes(svc)
            except Exception as exc:
                if svc == service:
                    raise
                log.info("service %s: not described (%s); built without it", svc, exc)
                continue
            types.update(described)
            expect[event_type] = event_hash
            expect.update(hashes)
        for msg_type, (node_fqn, msg_hash) in sorted((await self._package_topics(pkg)).items()):
            try:  # the package's topic types come along: typed reads and writes, schemas
                types.update(await self._describe(node_fqn, msg_type, msg_hash))
                expect[msg_type] = msg_hash
            except Exception as exc:
                log.info("topic type %s: not described (%s); built without it", msg_type, exc)
        event_types = sorted({e for e, _, _ in events.values() if e in expect})
        spec = service_spec(event_types, types, _gateway_has_package, expect)
        prefix = self.root / spec.key()
        started = time.monotonic()
        if not (prefix / "BUILT").is_file():
            await self._compile(spec.as_json(), prefix, nice)
            self.builds += 1
            if self.storage is not None:
                self.storage.ok(STORE)
            log.info("service types %s (and %d message types): built in %.1f s into %s",
                     ", ".join(e[: -len("_Event")] for e in event_types),
                     sum(len(p["sources"]["msg"]) for p in spec.packages.values()),
                     time.monotonic() - started, prefix)
        else:
            typecache.touch(prefix)  # its age for pruning counts from its last use
            log.info("service types %s: served from the build in %s",
                     ", ".join(e[: -len("_Event")] for e in event_types), prefix)
        served = await self.bridge.run(interface_paths.serve, str(prefix))
        if pkg not in served:
            raise BuildError(f"the build of {type_name} served no package {pkg}")
        self._built.update(e[: -len("_Event")] for e in event_types)

    async def _package_events(self, pkg: str) -> dict[str, tuple[str, str, str]]:
        """Service name -> (event type, publishing node, event type hash) of every service of
        the package whose server publishes its service events."""
        node = self.bridge.node
        topics = await self.bridge.run(node.get_topic_names_and_types)
        found: dict[str, tuple[str, str, str]] = {}
        for topic, kinds in topics:
            if not topic.endswith(EVENT_SUFFIX) or len(found) >= MAX_TYPES:
                continue
            event_type = next((k for k in kinds if k.startswith(f"{pkg}/srv/")
                               and k.endswith("_Event")), None)
            if event_type is None:
                continue
            infos = await self.bridge.run(node.get_publishers_info_by_topic, topic)
            infos = [i for i in infos if i.topic_type == event_type]
            if infos:
                info = infos[0]
                fqn = info.node_namespace.rstrip("/") + "/" + info.node_name
                found[topic[: -len(EVENT_SUFFIX)]] = (event_type, fqn, str(info.topic_type_hash))
        return found

    async def _package_topics(self, pkg: str) -> dict[str, tuple[str, str]]:
        """Message type -> (node, type hash) of the package's types on topics of the graph."""
        node = self.bridge.node
        topics = await self.bridge.run(node.get_topic_names_and_types)
        found: dict[str, tuple[str, str]] = {}
        for topic, kinds in topics:
            wanted = [k for k in kinds if k.startswith(f"{pkg}/msg/") and k not in found]
            if not wanted or len(found) >= MAX_TYPES:
                continue
            infos = await self.bridge.run(node.get_publishers_info_by_topic, topic)
            infos += await self.bridge.run(node.get_subscriptions_info_by_topic, topic)
            for info in infos:
                if info.topic_type in wanted and info.node_name != node.get_name() \
                        and not info.node_name.startswith("_NODE_NAME_UNKNOWN_"):
                    fqn = info.node_namespace.rstrip("/") + "/" + info.node_name
                    found.setdefault(info.topic_type, (fqn, str(info.topic_type_hash)))
        return found

    async def _message_hashes(self, service: str) -> dict[str, str]:
        """The request and response hashes the server announces (the build must match)."""
        node = self.bridge.node
        out: dict[str, str] = {}
        name = service.lstrip("/")
        for topic, get in ((f"rq/{name}Request", node.get_subscriptions_info_by_topic),
                           (f"rr/{name}Reply", node.get_publishers_info_by_topic)):
            infos = await self.bridge.run(get, topic, True)
            for info in infos:
                dds = info.topic_type  # pkg::srv::dds_::X_Request_
                parts = dds.split("::")
                if len(parts) == 4 and parts[2] == "dds_":
                    out[f"{parts[0]}/{parts[1]}/{parts[3].rstrip('_')}"] = \
                        str(info.topic_type_hash)
        return out

    async def _describe(self, node_fqn: str, type_name: str, type_hash: str
                        ) -> dict[str, list[Any]]:
        from type_description_interfaces.srv import (  # noqa: PLC0415 - ROS types load on first use
            GetTypeDescription,
        )

        node = self.bridge.node
        client = await self.bridge.run(node.create_client, GetTypeDescription,
                                       node_fqn + "/get_type_description")
        try:
            deadline = time.monotonic() + READY_WAIT_S
            while not client.service_is_ready():
                if time.monotonic() > deadline:  # e.g. a node started without the service
                    raise LookupError(f"{node_fqn} serves no get_type_description")
                await asyncio.sleep(0.05)
            request = GetTypeDescription.Request(type_name=type_name, type_hash=type_hash,
                                                 include_type_sources=False)
            response = await ask_description(self.bridge, client, request, node_fqn,
                                             FETCH_TIMEOUT_S)
        finally:
            await self.bridge.run(node.destroy_client, client)
        check_hash(response.type_description, type_hash)  # the graph's hash, or refused
        return description_types(response.type_description)

    async def _compile(self, spec: dict[str, Any], prefix: Path, nice: int = 0) -> None:
        """Run the worker into a fresh directory, then move it to `prefix`."""
        self.attempts += 1
        tmp = prefix.with_name(f"{prefix.name}.tmp{os.getpid()}-{self.attempts}")
        spec_path = tmp / "spec.json"
        with self.storage.writing(STORE, self.root) if self.storage else nullcontext():
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(mode=0o700)
            try:
                spec_path.write_text(json.dumps(spec))
            except OSError:  # a full disk leaves no half build directory behind
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        # Nothing written outside the build directory: no bytecode, the compilers' temp files
        env.update(AMENT_PREFIX_PATH=sys.prefix, PYTHONDONTWRITEBYTECODE="1", TMPDIR=str(tmp))
        root = str(Path(__file__).resolve().parents[3])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.ros.interfaces._typebuild_worker", str(spec_path),
            str(tmp), str(nice), cwd=root, env=env, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
        self._workers.add(proc.pid)
        self._niced[proc.pid] = nice > 0
        try:
            _, err = await asyncio.wait_for(proc.communicate(), BUILD_TIMEOUT_S)
        except asyncio.TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker and the compilers it runs
            await proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)
            raise TimeoutError(f"the build ran past {BUILD_TIMEOUT_S:g} s") from None
        finally:
            self._workers.discard(proc.pid)
            self._niced.pop(proc.pid, None)
        if proc.returncode != 0 or not (tmp / "BUILT").is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            if self.storage is not None:  # the disk ran full during the build: /health says so
                await asyncio.to_thread(self.storage.check, STORE, self.root)
            reason = err.decode(errors="replace").strip().splitlines()
            raise BuildError(f"the build failed: {reason[-1] if reason else proc.returncode}")
        size = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        if size > MAX_OUTPUT_BYTES:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BuildError(f"the build wrote {size} bytes (more than {MAX_OUTPUT_BYTES})")
        shutil.rmtree(prefix, ignore_errors=True)
        tmp.rename(prefix)


def _gateway_has_package(pkg: str) -> bool:
    try:
        return importlib.util.find_spec(pkg) is not None
    except (ImportError, ValueError):
        return False
