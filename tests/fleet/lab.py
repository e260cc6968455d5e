"""A fleet lab: robots as hosts in network namespaces on one LAN bridge (root only).

The bridge lives in a namespace of its own; each host gets a namespace with a veth `eth0`
into it, an address on one private /24 and a multicast route for mDNS, and every process of a
host runs under `unshare -m -u` with its own /dev/shm and host name, so every robot can use
ROS domain 0 like a real robot. The test process reaches the LAN through one more veth (the
"workstation", `.1`). Everything is deleted on exit, also after a failure.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_SHELL = 'mount -t tmpfs tmpfs /dev/shm && hostname "$0" && exec "$@"'
SYSCTL = Path("/proc/sys/net")
_NEIGH = "ipv4/neigh/default/gc_thresh"
_BACKLOG = "core/netdev_max_backlog"
_LIMITS = (f"{_NEIGH}3", f"{_NEIGH}2", f"{_NEIGH}1", _BACKLOG)  # raised in this order


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run the ip tool (raises with its message on failure when check)."""
    done = subprocess.run(["ip", *args], capture_output=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.decode().strip()}")
    return done


def lab_unusable() -> str | None:
    """Why this machine cannot run the lab (None when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "the ip and unshare tools are needed"
    probe = f"dglp{os.getpid() % 100000}"
    if ip("netns", "add", probe, check=False).returncode != 0:
        return "ip netns add is not permitted here"
    ip("netns", "del", probe, check=False)
    return None


def raise_kernel_limits(hosts: int) -> dict[str, int] | None:
    """Raise the kernel's network limits for a lab of `hosts` hosts; the old values, or None
    when they were high enough. Each limit is one for every namespace of the kernel, where a
    LAN of separate machines has one per machine:

    - the ARP table: each host learns every other host's address (mDNS answers a new robot's
      probe by unicast), about hosts² entries; past gc_thresh3 (1024 by default, reached at
      33 hosts) the kernel refuses new entries ("neighbor table overflow") and with them the
      host's multicast sends: the robot's mDNS announcements never left it;
    - the input backlog (netdev_max_backlog, per CPU): a fan-out read to every robot queues
      its segments and every robot's loopback answer in it at once; at 100 hosts the default
      1000 dropped some 200 packets per 40 reads, each a TCP retransmission later.
    """
    need = {f"{_NEIGH}1": hosts * hosts, f"{_NEIGH}2": 2 * hosts * hosts,
            f"{_NEIGH}3": 4 * hosts * hosts, _BACKLOG: 100 * hosts}
    try:
        old = {k: int((SYSCTL / k).read_text()) for k in _LIMITS}
    except (OSError, ValueError):
        return None
    if all(old[k] >= v for k, v in need.items()):
        return None
    for k in _LIMITS:
        (SYSCTL / k).write_text(str(max(old[k], need[k])))
    return old


def restore_kernel_limits(old: dict[str, int]) -> None:
    for k in reversed(_LIMITS):
        with contextlib.suppress(OSError):
            (SYSCTL / k).write_text(str(old[k]))


@dataclass
class Host:
    """One namespaced host on the lab's LAN."""

    name: str
    ns: str
    address: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    holder: subprocess.Popen[bytes] | None = None

    def _holder_pid(self) -> int:
        """The process holding this host's mount and UTS namespaces (started on first use):
        every process of the host shares its /dev/shm, as Fast DDS's shared memory needs."""
        if self.holder is None or self.holder.poll() is not None:
            self.holder = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, "unshare", "-m", "-u", "sh", "-c", _SHELL,
                 self.name, "sleep", "infinity"], start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_until(lambda: Path(f"/proc/{self.holder.pid}/cmdline").read_bytes()  # type: ignore[union-attr]
                       .startswith(b"sleep"), 20, f"{self.name}'s namespaces", every=0.02)
        return self.holder.pid

    def run(self, argv: Sequence[str], log: Path, env: dict[str, str] | None = None
            ) -> subprocess.Popen[bytes]:
        """Start a process on this host (own session; the host's /dev/shm and host name)."""
        full = ["nsenter", "-t", str(self._holder_pid()), "-m", "-u", "-n", *argv]
        with open(log, "ab") as out:
            proc = subprocess.Popen(full, cwd=ROOT, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def ip(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """The ip tool inside this host's namespace."""
        return ip("-n", self.ns, *args, check=check)

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 8.0) -> None:
        """SIGINT, then SIGKILL of the process group this host started."""
        if proc.poll() is None:
            with _quiet():
                os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with _quiet():
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        with _quiet():  # children that outlived their leader (same session, own group)
            os.killpg(proc.pid, signal.SIGKILL)

    def stop_all(self) -> None:
        """Stop every process started on this host, newest first."""
        for proc in reversed(self.procs):
            self.stop(proc)
        self.procs.clear()
        if self.holder is not None:
            self.stop(self.holder, timeout=2.0)
            self.holder = None


def stop_hosts(hosts: Sequence[Host], timeout: float = 8.0) -> None:
    """Stop every process of these hosts at once: SIGINT to all, SIGKILL to what is left
    after timeout (a lab of 100 robots stops in seconds, not one process after the other)."""
    procs = [p for h in hosts for p in reversed(h.procs)]
    for proc in procs:
        if proc.poll() is None:
            with _quiet():
                os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs + [h.holder for h in hosts if h.holder is not None]:
        with _quiet():  # leaders that lingered and children that outlived them
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in procs + [h.holder for h in hosts if h.holder is not None]:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
    for host in hosts:
        host.procs.clear()
        host.holder = None


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, *_: object) -> bool:
        return kind is not None and issubclass(kind, ProcessLookupError | PermissionError)


class Lab:
    """A LAN of namespaced hosts; `with Lab(["primary", "r1", ...]) as lab:`."""

    def __init__(self, names: Sequence[str], tag: int | None = None) -> None:
        tag = os.getpid() % 100000 if tag is None else tag
        self.tag = tag
        self.prefix = f"dgl{tag}"
        self.subnet = f"10.{150 + tag % 100}.{tag // 100 % 250}"
        self.switch = f"{self.prefix}sw"
        self.uplink = f"{self.prefix}c"  # the workstation's veth in the root namespace
        self.client_address = f"{self.subnet}.1"
        self.hosts = {name: Host(name, f"{self.prefix}-{name}", f"{self.subnet}.{k + 10}")
                      for k, name in enumerate(names)}
        if len(self.hosts) > 200:
            raise ValueError("at most 200 hosts on the lab's /24")
        self.kernel_limits: dict[str, int] | None = None  # the kernel's, while raised
        self.hubs: list[subprocess.Popen[bytes]] = []  # link hubs: each serves many links
        self.hub_controls: list[Path] = []

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def __enter__(self) -> Lab:
        try:
            self.kernel_limits = raise_kernel_limits(len(self.hosts) + 1)
            ip("netns", "add", self.switch)
            ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            ip("-n", self.switch, "link", "set", "br0", "up")
            ip("link", "add", self.uplink, "type", "veth", "peer", "name", "up0",
               "netns", self.switch)
            ip("-n", self.switch, "link", "set", "up0", "master", "br0", "up")
            ip("addr", "add", f"{self.client_address}/24", "dev", self.uplink)
            ip("link", "set", self.uplink, "up")
            for k, host in enumerate(self.hosts.values()):
                self._add_host(k, host)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _add_host(self, k: int, host: Host) -> None:
        ip("netns", "add", host.ns)
        ip("-n", self.switch, "link", "add", f"h{k}", "type", "veth", "peer", "name", "eth0",
           "netns", host.ns)
        ip("-n", self.switch, "link", "set", f"h{k}", "master", "br0", "up")
        host.ip("addr", "add", f"{host.address}/24", "dev", "eth0")
        host.ip("link", "set", "eth0", "up")
        host.ip("link", "set", "lo", "up")
        host.ip("route", "add", "224.0.0.0/4", "dev", "eth0")

    def start_link_hub(self, logs: Path) -> Path:
        """One link emulator process for every robot's link (`LabRobot.start(hub=...)`): its
        control socket. A fan-out to 100 robots wakes one process, not 100."""
        return self.start_link_hubs(logs, 1)[0]

    def start_link_hubs(self, logs: Path, count: int) -> list[Path]:
        """`count` link hubs (robots spread over them: `hub_for`), so the links' work can run
        on as many cores; their control sockets."""
        while len(self.hubs) < count:
            k = len(self.hubs)
            control = logs / f"link-hub{k or ''}.sock"
            control.unlink(missing_ok=True)
            with open(logs / f"link-hub{k or ''}.log", "ab") as out:
                hub = subprocess.Popen(python_argv("-m", "tests.fleet.linkemu", "--hub",
                                                   str(control)), cwd=ROOT, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            self.hubs.append(hub)
            wait_until(lambda c=control, h=hub: c.exists() or h.poll() is not None,
                       30, "the link hub's control socket", every=0.05)
            if hub.poll() is not None:
                raise RuntimeError(f"the link hub exited with {hub.returncode}")
            self.hub_controls.append(control)
        return self.hub_controls[:count]

    def hub_for(self, k: int) -> Path | None:
        """The control socket of the link hub serving the k-th robot (None: no hub)."""
        return self.hub_controls[k % len(self.hub_controls)] if self.hub_controls else None

    def __exit__(self, *exc: object) -> None:
        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:  # a second Ctrl-C does not leave namespaces and processes behind
            for hub in self.hubs:  # it holds every host's namespace open
                with _quiet():
                    os.killpg(hub.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    hub.wait(10)
            self.hubs, self.hub_controls = [], []
            stop_hosts(list(self.hosts.values()))
            for host in self.hosts.values():
                ip("netns", "del", host.ns, check=False)
            ip("link", "del", self.uplink, check=False)
            ip("netns", "del", self.switch, check=False)
            if self.kernel_limits is not None:
                restore_kernel_limits(self.kernel_limits)
                self.kernel_limits = None
        finally:
            if main:
                signal.signal(signal.SIGINT, old)

    def move(self, host: Host, address: str) -> None:
        """Give a host a new address on the LAN (the old one goes)."""
        old = host.address  # deleting a primary address deletes its secondaries: old first
        host.ip("addr", "del", f"{old}/24", "dev", "eth0")
        host.ip("addr", "add", f"{address}/24", "dev", "eth0")
        host.ip("route", "replace", "224.0.0.0/4", "dev", "eth0")
        host.address = address

    def free_address(self) -> str:
        """An address on the LAN no host uses."""
        used = {h.address for h in self.hosts.values()}
        return next(f"{self.subnet}.{k}" for k in range(250, 10, -1)
                    if f"{self.subnet}.{k}" not in used)


def python_argv(*args: str) -> list[str]:
    """This interpreter running args."""
    return [sys.executable, *args]


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    """Poll check() until it returns a true value; AssertionError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, ValueError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


GATEWAY_PORT = 8081  # each robot's gateway, on its own loopback
LAN_PORT = 8080  # the robot's link emulator on the LAN (what peers connect to)
DEMO_NODES = ("temp_sensor", "status_sensor")


def host_env(domain: int = 0) -> dict[str, str]:
    """The environment of a lab host's ROS processes (domain 0, like every real robot)."""
    from gateway.demo.robot import ros_env

    env = ros_env(domain)
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def gateway_argv(host: str, port: int, settings: Sequence[str]) -> list[str]:
    """A gateway process on domain 0 bound to host:port."""
    argv = python_argv("-m", "gateway", "run", "--host", host, "--port", str(port),
                       "--domain", "0")
    for s in settings:
        argv += ["--set", s]
    return argv


@dataclass
class LabRobot:
    """A robot host: demo nodes, its gateway on loopback, a link emulator on the LAN port."""

    host: Host
    logs: Path
    gateway: subprocess.Popen[bytes] | None = None
    link: subprocess.Popen[bytes] | None = None

    @property
    def control(self) -> Path:
        return self.logs / f"{self.host.name}.link.sock"

    @property
    def url(self) -> str:
        return f"http://{self.host.address}:{LAN_PORT}"

    def start(self, settings: Sequence[str] = (), nodes: Sequence[str] = DEMO_NODES,
              rtt_ms: float = 0.0, jitter_ms: float = 0.0, rate_bps: float = 0.0,
              link: bool = True, dds_profile: bool = True, light_nodes: bool = False,
              hub: Path | None = None) -> LabRobot:
        """Start nodes, link and gateway (returns at once). Without a link nothing listens
        on the LAN: the robot reaches out, nobody reaches in. dds_profile: the demo's Fast
        DDS profile (3 s lease), else Fast DDS's defaults. light_nodes: the demo nodes' light
        mode (gateway/demo/nodes.py LIGHT_ENV: fewer scans, one executor thread). hub: the
        link goes into this link hub (Lab.start_link_hub), not a process of its own."""
        from gateway.demo.nodes import LIGHT_ENV

        env = host_env()
        if not dds_profile:
            env.pop("FASTDDS_DEFAULT_PROFILES_FILE", None)
        node_env = {**env, LIGHT_ENV: "1"} if light_nodes else env
        for node in nodes:
            self.host.run(python_argv("-m", "gateway.demo.nodes", node),
                          self.logs / f"{self.host.name}.{node}.log", node_env)
        if link and hub is not None:
            from tests.fleet.linkemu import command

            answer = command(hub, f"add /run/netns/{self.host.ns} 0.0.0.0:{LAN_PORT} "
                                  f"127.0.0.1:{GATEWAY_PORT} {self.control} rtt_ms={rtt_ms} "
                                  f"jitter_ms={jitter_ms} rate_bps={rate_bps}", timeout=30)
            if answer != "ok":
                raise RuntimeError(f"{self.host.name}'s link: {answer}")
        elif link:
            self.link = self.host.run(python_argv(
                "-m", "tests.fleet.linkemu", "--listen", f"0.0.0.0:{LAN_PORT}",
                "--target", f"127.0.0.1:{GATEWAY_PORT}", "--control", str(self.control),
                "--rtt-ms", str(rtt_ms), "--jitter-ms", str(jitter_ms),
                "--rate-bps", str(rate_bps)), self.logs / f"{self.host.name}.link.log", env)
        self.gateway = self.host.run(gateway_argv("127.0.0.1", GATEWAY_PORT, [
            f"state_dir={self.logs / (self.host.name + '-state')}",
            f"aggregation.announce_port={LAN_PORT}", *settings]),
            self.logs / f"{self.host.name}.gateway.log", env)
        return self

    def link_command(self, line: str) -> str:
        """One control line to this robot's link emulator."""
        from tests.fleet.linkemu import command

        return command(self.control, line)


def request(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None,
         timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One HTTP exchange from the workstation: (status, lower-case headers, body)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port or 80, timeout=timeout)
    hdrs = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/json"
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), data,
                     hdrs)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def on_host(host: Host, method: str, port: int, path: str, body: Any = None,
            timeout: float = 20.0) -> tuple[int, Any]:
    """One HTTP exchange made on the host itself (its loopback): (status, JSON body)."""
    code = ("import sys, json, http.client\n"
            "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=15)\n"
            "b = sys.argv[4] or None\n"
            "c.request(sys.argv[2], sys.argv[3], b and b.encode(),"
            " {'Content-Type': 'application/json'} if b else {})\n"
            "r = c.getresponse(); print(r.status); print(r.read().decode())\n")
    done = subprocess.run(["ip", "netns", "exec", host.ns, sys.executable, "-c", code,
                           str(port), method, "/api/v1" + path,
                           "" if body is None else json.dumps(body)],
                          capture_output=True, timeout=timeout, check=True)
    status, _, text = done.stdout.decode().partition("\n")
    return int(status), json.loads(text) if text.strip() else None


class EventStream:
    """An SSE stream of a gateway in the lab (default: its /faults/stream) read in a thread;
    the data of each event kept."""

    def __init__(self, base: str, path: str = "/api/v1/faults/stream") -> None:
        host, port = base.split("//")[1].split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        self.conn.request("GET", path)
        resp = self.conn.getresponse()
        assert resp.status == 200, (path, resp.status, resp.read()[:300])
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, args=(resp,), daemon=True).start()

    def _read(self, resp: http.client.HTTPResponse) -> None:
        try:
            for raw in resp.fp:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    self.events.append(json.loads(line[6:]))
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """End the stream now (a plain close would wait for the reader's next line)."""
        if self.conn.sock is not None:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()
