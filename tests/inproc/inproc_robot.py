"""A fake robot for in-process gateway tests: the ROS bridge, graph, sample pool, service
caller and action manager the handlers read, in pure Python (the fakes use no rclpy).

The graph is a real `GraphSnapshot`, turned into entities by the real `EntityCache` (the
runtime discovery heuristics); parameters go through the real `ParameterStore` over a fake
service caller that answers the parameter services of the fake nodes with rcl_interfaces
messages (and a managed node's lifecycle_msgs GetState/ChangeState); /rosout is the real
`RosoutLog` over the fake bridge (a node logs through `FakeBridge.rosout`); the fault
manager is the real `FaultService` (its reports arrive through `FaultService.submit`);
action goals are the gateway's own `Execution` records, accepted or rejected by the fake
action manager.

The gateway modules imported here (ros.graph, ros.services, ros.parameters) import rclpy and
the ROS message packages installed from PyPI; no ROS context or node is ever created.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.events import DATA, Event, EventBus
from gateway.ros.calls.services import CallFailed, InFlightLimiter, NotAvailable
from gateway.ros.graph.snapshot import PARAM_SERVICE_SUFFIXES, GraphSnapshot, NodeInfo, TopicInfo
from gateway.ros.topics.pool import DataSample, TopicStats

HOST = "testhost"  # the host component's id (discovery.runtime.HostInfo)
FLOAT32 = "std_msgs/msg/Float32"
STRING = "std_msgs/msg/String"
TRIGGER = "std_srvs/srv/Trigger"
FIBONACCI = "test_msgs/action/Fibonacci"

# The robot: (namespace, name) -> what the node offers.
ACTUATOR = "/chassis/brakes/actuator"
MONITOR = "/chassis/brakes/monitor"
SCANNER = "/sensors/lidar/scanner"
PRESSURE = "/chassis/brakes/pressure"
COMMAND = "/chassis/brakes/command"
LIDAR_STATUS = "/sensors/lidar/status"
CALIBRATE = f"{ACTUATOR}/calibrate"
FAIL_SERVICE = f"{ACTUATOR}/self_test"  # its calls fail (CallFailed)
BRAKE_TEST = f"{ACTUATOR}/brake_test"

# rcl_interfaces ParameterType codes
BOOL, INTEGER, DOUBLE, STRING_T = 1, 2, 3, 4


def param_services(fqn: str) -> tuple[tuple[str, str], ...]:
    """The parameter services every rclpy node serves."""
    return tuple((f"{fqn}{suffix}", "rcl_interfaces/srv/" + "".join(
        p.capitalize() for p in suffix[1:].split("_"))) for suffix in PARAM_SERVICE_SUFFIXES)


def cdr_float32(value: float) -> bytes:
    """A std_msgs/msg/Float32 as the DDS wire carries it (CDR little endian)."""
    return b"\x00\x01\x00\x00" + struct.pack("<f", value)


def cdr_string(text: str) -> bytes:
    """A std_msgs/msg/String in CDR little endian."""
    raw = text.encode() + b"\x00"
    return b"\x00\x01\x00\x00" + struct.pack("<I", len(raw)) + raw


@dataclass
class FakeParam:
    """One parameter a fake node holds."""

    type_code: int
    value: Any
    read_only: bool = False
    description: str = ""
    refuse: Callable[[Any], str] | None = None  # the node's own check: a reason refuses a value


@dataclass
class FakeNode:
    """A fake ROS node: what it offers on the graph and its parameters."""

    name: str
    namespace: str
    publishers: list[tuple[str, str]] = field(default_factory=list)
    subscribers: list[tuple[str, str]] = field(default_factory=list)
    services: list[tuple[str, str]] = field(default_factory=list)
    actions: list[tuple[str, str]] = field(default_factory=list)
    params: dict[str, FakeParam] | None = None  # None: no parameter services
    online: bool = True  # False: on the graph, but its services do not answer
    lifecycle: int | None = None  # a managed node's primary state id; None: a plain node

    @property
    def fqn(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.name}"

    def info(self) -> NodeInfo:
        services = list(self.services)
        if self.params is not None:
            services += param_services(self.fqn)
        if self.lifecycle is not None:
            services += [(f"{self.fqn}/get_state", GET_STATE),
                         (f"{self.fqn}/change_state", CHANGE_STATE)]
        return NodeInfo(self.name, self.namespace, tuple(sorted(self.publishers)),
                        tuple(sorted(self.subscribers)), tuple(sorted(services)),
                        tuple(sorted(self.actions)))


def default_nodes() -> list[FakeNode]:
    """Three apps in two namespaces: a brake actuator with a service, an action and
    parameters, its monitor, and a lidar without parameter services."""
    return [
        FakeNode("actuator", "/chassis/brakes",
                 publishers=[(PRESSURE, FLOAT32)], subscribers=[(COMMAND, FLOAT32)],
                 services=[(CALIBRATE, TRIGGER), (FAIL_SERVICE, TRIGGER)],
                 actions=[(BRAKE_TEST, FIBONACCI)],
                 params={"max_pressure": FakeParam(DOUBLE, 80.0, description="bar"),
                         "mode": FakeParam(STRING_T, "auto"),
                         "serial": FakeParam(STRING_T, "BX-7", read_only=True)}),
        FakeNode("monitor", "/chassis/brakes", subscribers=[(PRESSURE, FLOAT32)],
                 params={"threshold": FakeParam(INTEGER, 5)}),
        FakeNode("scanner", "/sensors/lidar", publishers=[(LIDAR_STATUS, STRING)]),
    ]


def snapshot(nodes: list[FakeNode]) -> GraphSnapshot:
    """The graph snapshot of the fake nodes, with topic counts."""
    topics: dict[str, list[Any]] = {}
    for n in nodes:
        for name, typ in n.publishers:
            topics.setdefault(name, [typ, 0, 0])[1] += 1
        for name, typ in n.subscribers:
            topics.setdefault(name, [typ, 0, 0])[2] += 1
    return GraphSnapshot(tuple(n.info() for n in nodes),
                         {k: TopicInfo(k, t, p, s) for k, (t, p, s) in topics.items()})


class FakeRosNode:
    """The rclpy node the gateway's services subscribe on: records what they create."""

    def __init__(self, fqn: str) -> None:
        self.fqn = fqn
        self.subscriptions: list[tuple[str, Any]] = []
        self.publishers: list[str] = []

    def get_fully_qualified_name(self) -> str:
        return self.fqn

    def create_subscription(self, msg_type: Any, topic: str, callback: Any, qos: Any,
                            **kw: Any) -> Any:
        self.subscriptions.append((topic, callback))
        return (topic, callback)

    def create_publisher(self, msg_type: Any, topic: str, qos: Any, **kw: Any) -> Any:
        self.publishers.append(topic)
        return _Publisher(topic)

    def destroy_subscription(self, sub: Any) -> None:
        if sub in self.subscriptions:
            self.subscriptions.remove(sub)

    def destroy_publisher(self, pub: Any) -> None:
        pass

    def get_publishers_info_by_topic(self, topic: str) -> list[Any]:
        return []


class _Publisher:
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.sent: list[Any] = []

    def publish(self, msg: Any) -> None:
        self.sent.append(msg)


class FakeBridge:
    """The RosBridge surface the services use: run a function 'on the ROS thread' (here, at
    once), the nodes, health."""

    domain_id = 0

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.node = FakeRosNode("/diag_gateway")
        self.call_node = self.node
        self.closers: list[Callable[[], Any]] = []
        self.hearing = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    async def run(self, fn: Callable[..., Any], *args: Any, what: str = "",
                  timeout: float | None = None) -> Any:
        return fn(*args)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(fn, *args)

    async def drop_subscription(self, sub: Any, topic: str) -> None:
        self.node.destroy_subscription(sub)

    def on_rejoin(self, fn: Callable[[], Any]) -> None:
        pass

    def rosout(self, logger: str, level: int, text: str, stamp_ns: int, *, file: str = "",
               function: str = "", line: int = 0) -> None:
        """A node logs: its rcl_interfaces Log reaches the gateway's /rosout subscription."""
        from rcl_interfaces.msg import Log

        msg = Log(level=level, name=logger, msg=text, file=file, function=function, line=line)
        msg.stamp.sec, msg.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        callbacks = [cb for topic, cb in self.call_node.subscriptions if topic == "/rosout"]
        assert callbacks, "the gateway has no /rosout subscription"
        for callback in callbacks:
            callback(msg)

    def health(self) -> dict[str, Any]:
        return {"worker_alive": True}

    def close(self) -> None:
        for close in self.closers:
            close()


@dataclass
class FakeSample:
    """What SamplePool keeps of a received message."""

    data: bytes
    source_ns: int
    received_ns: int
    seq: int


class FakeEntry:
    """A pooled topic: its newest sample (the bodies built from it live in
    data/reads.py, which checks `held`)."""

    def __init__(self, topic: str, type_name: str) -> None:
        self.topic, self.type_name = topic, type_name
        self.sample: FakeSample | None = None
        self.held = True  # in the pool (SamplePool clears it on eviction)


class FakePool:
    """The sample pool: samples are put in by the test (`put`), writes recorded."""

    def __init__(self) -> None:
        self.evented: dict[str, EventBus] = {}  # topics whose samples go on the bus
        self.entries: dict[str, FakeEntry] = {}
        self.published: list[tuple[str, str, Any]] = []
        self.subscribers: dict[str, int] = {}  # topic -> readers a publish reaches
        self.watched: dict[str, str] = {}  # topics push delivery pinned
        self._seq = 0
        self.hits = 0  # reads that found a sample (SamplePool.touch, the fast path)
        self.refreshed: list[str] = []  # LRU refreshes asked for (SamplePool.refresh)

    def refresh(self, topic: str) -> None:
        self.refreshed.append(topic)

    def put(self, topic: str, type_name: str, data: bytes, stamp_ns: int) -> None:
        entry = self.entries.setdefault(topic, FakeEntry(topic, type_name))
        self._seq += 1
        entry.sample = FakeSample(data, stamp_ns, stamp_ns, self._seq)
        events = self.evented.get(topic)
        if events is not None and events.has_listeners(DATA):  # as SamplePool, on the loop
            events.publish(Event(DATA, None, topic, "sample",
                                 DataSample(type_name, entry.sample), stamp_ns))

    def find(self, topic: str, type_name: str) -> FakeEntry | None:
        entry = self.entries.get(topic)
        if entry is None or entry.sample is None or entry.type_name != type_name:
            return None
        return entry

    def peek(self, topic: str, type_name: str) -> FakeEntry | None:
        """find() counting a hit, as SamplePool.peek."""
        entry = self.find(topic, type_name)
        if entry is not None:
            self.touch(entry)
        return entry

    def touch(self, entry: FakeEntry) -> None:
        self.hits += 1
        self.refresh(entry.topic)

    async def watch(self, topic: str, type_name: str) -> None:
        """Pin a topic (push delivery observes it)."""
        self.watched[topic] = type_name
        self.entries.setdefault(topic, FakeEntry(topic, type_name))

    def unwatch(self, topic: str) -> None:
        self.watched.pop(topic, None)
        self.evented.pop(topic, None)

    def publish_samples(self, topic: str, events: EventBus | None) -> None:
        """Publish a pinned topic's samples on the bus (None: stop), as SamplePool does."""
        if events is None or topic not in self.watched:
            self.evented.pop(topic, None)
        else:
            self.evented[topic] = events

    async def latest(self, topic: str, type_name: str, timeout: float
                     ) -> tuple[FakeSample | None, FakeEntry]:
        entry = self.entries.get(topic)
        if entry is not None:  # a pooled topic: a hit, as SamplePool._entry counts it
            self.touch(entry)
        else:
            entry = self.entries[topic] = FakeEntry(topic, type_name)
        return entry.sample, entry

    async def publish(self, topic: str, type_name: str, msg: Any) -> int:
        self.published.append((topic, type_name, msg))
        return self.subscribers.get(topic, 1)

    def stats(self, events: Any) -> dict[str, Any]:
        return {"pooled_topics": len(self.entries)}

    def topic_stats(self, topic: str) -> TopicStats | None:
        """Receive statistics of a pooled topic (its newest sample's), as SamplePool."""
        entry = self.entries.get(topic)
        if entry is None:
            return None
        sample = entry.sample
        if sample is None:
            return TopicStats(0, 0, 0, (), None)
        return TopicStats(sample.seq, 0, sample.received_ns, (sample.received_ns,), None)


class FakePoller:
    """The graph poller: ready, with a count of graph events."""

    def __init__(self) -> None:
        self.events = 0
        self.ready = asyncio.Event()
        self.ready.set()
        self.first = self.ready

    def health(self) -> dict[str, Any]:
        return {"ready": True}


class FakeCaller:
    """The service caller: answers the fake nodes' parameter services and the user services
    registered in `handlers`; a node that is offline or a service nobody serves is
    NotAvailable."""

    def __init__(self, nodes: list[FakeNode]) -> None:
        self.nodes = {n.fqn: n for n in nodes}
        self.limiter = InFlightLimiter(4)
        self.calls: list[tuple[str, str, Any]] = []
        self.handlers: dict[str, Callable[[Any], Any]] = {CALIBRATE: _calibrate,
                                                          FAIL_SERVICE: _fail}
        self.health = lambda: {"calls": len(self.calls)}

    async def call(self, name: str, type_name: str, request: Any, timeout: float) -> Any:
        self.calls.append((name, type_name, request))
        node_fqn, _, service = name.rpartition("/")
        node = self.nodes.get(node_fqn)
        if node is not None and not node.online:
            raise NotAvailable(f"no server for {name}")
        if node is not None and node.params is not None and f"/{service}" in \
                PARAM_SERVICE_SUFFIXES:
            return _param_service(node, service, request)
        if node is not None and node.lifecycle is not None and service in ("get_state",
                                                                           "change_state"):
            return _lifecycle_service(node, service, request)
        handler = self.handlers.get(name)
        if handler is None:
            raise NotAvailable(f"no server for {name}")
        return handler(request)

    def close(self) -> None:
        pass


# lifecycle_msgs: primary states, and the state each transition id leads to
UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED = 1, 2, 3, 4
GET_STATE, CHANGE_STATE = "lifecycle_msgs/srv/GetState", "lifecycle_msgs/srv/ChangeState"
_STATE_LABELS = {UNCONFIGURED: "unconfigured", INACTIVE: "inactive", ACTIVE: "active",
                 FINALIZED: "finalized"}
_TRANSITION_GOALS = {1: INACTIVE, 2: UNCONFIGURED, 3: ACTIVE, 4: INACTIVE, 5: FINALIZED,
                     6: FINALIZED, 7: FINALIZED}


def _lifecycle_service(node: FakeNode, service: str, request: Any) -> Any:
    from lifecycle_msgs.msg import State
    from lifecycle_msgs.srv import ChangeState, GetState

    state = node.lifecycle
    assert state is not None  # FakeCaller routes only managed nodes here
    if service == "get_state":
        return GetState.Response(current_state=State(id=state, label=_STATE_LABELS[state]))
    node.lifecycle = _TRANSITION_GOALS[request.transition.id]
    return ChangeState.Response(success=True)


def _calibrate(request: Any) -> Any:
    from std_srvs.srv import Trigger

    return Trigger.Response(success=True, message="calibrated")


def _fail(request: Any) -> Any:
    raise CallFailed("the server went away during the call")


def _param_service(node: FakeNode, service: str, request: Any) -> Any:
    from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
    from rcl_interfaces.srv import (
        DescribeParameters,
        GetParameters,
        ListParameters,
        SetParameters,
    )

    from gateway.ros.calls.parameters import to_msg, value_of

    params = node.params
    assert params is not None
    if service == "list_parameters":
        out = ListParameters.Response()
        out.result.names = sorted(params)
        return out
    if service == "get_parameters":
        if any(n not in params for n in request.names):
            return GetParameters.Response(values=[])  # rclpy: empty when any is unknown
        return GetParameters.Response(values=[
            to_msg(params[n].type_code, params[n].value) for n in request.names])
    if service == "describe_parameters":
        return DescribeParameters.Response(descriptors=[
            ParameterDescriptor(name=n, type=params[n].type_code, read_only=params[n].read_only,
                                description=params[n].description)
            for n in request.names if n in params])
    if service == "set_parameters":
        results = []
        for p in request.parameters:
            held = params.get(p.name)
            if held is None or held.read_only:
                results.append(SetParametersResult(successful=False,
                                                   reason=f"parameter '{p.name}' is read-only"))
                continue
            type_code, value = value_of(p.value)
            reason = held.refuse(value) if held.refuse is not None else ""
            if reason:
                results.append(SetParametersResult(successful=False, reason=reason))
                continue
            held.type_code, held.value = type_code, value
            results.append(SetParametersResult(successful=True))
        return SetParameters.Response(results=results)
    raise NotAvailable(f"{node.fqn}/{service} is not served by the fake node")


class FakeActions:
    """The action manager over a fake action server: a goal whose `order` is negative is
    rejected, any other is accepted and runs until the test finishes it (`finish`) or a
    client cancels it. Executions are the gateway's own `Execution` records."""

    def __init__(self) -> None:
        self.by_id: dict[str, Any] = {}
        self.goals: list[Any] = []

    async def send_goal(self, entity: tuple[str, str], op_id: str, action: str,
                        type_name: str, goal: Any, timeout: float) -> Any:
        from gateway.ros.calls.actions import Execution

        self.goals.append(goal)
        ex = Execution(f"goal{len(self.goals)}", entity, op_id, action, type_name)
        if getattr(goal, "order", 0) < 0:
            ex.rejected, ex.reason = True, "order must not be negative"
        else:
            ex.handle = _GoalHandle(EXECUTING)
        self.by_id[ex.id] = ex
        return ex

    def finish(self, exec_id: str, result: dict[str, Any]) -> None:
        """The server ends the goal with a result (SUCCEEDED)."""
        ex = self.by_id[exec_id]
        ex.final_status, ex.result = SUCCEEDED, result

    def get(self, entity: tuple[str, str], op_id: str, exec_id: str) -> Any:
        ex = self.by_id.get(exec_id)
        if ex is None or ex.entity != entity or ex.op_id != op_id:
            return None
        return ex

    def executions(self, entity: tuple[str, str], op_id: str) -> list[Any]:
        return [ex for ex in self.by_id.values() if ex.entity == entity and ex.op_id == op_id]

    async def cancel(self, ex: Any, timeout: float) -> None:
        if ex.finished or ex.handle is None:
            return
        ex.capability = "stop"
        ex.cancel_response, ex.final_status, ex.result = "accepted", CANCELED, {"sequence": []}

    async def remove(self, ex: Any, timeout: float) -> None:
        await self.cancel(ex, timeout)
        self.by_id.pop(ex.id, None)

    async def close(self) -> None:
        pass


# action_msgs/GoalStatus codes
EXECUTING, SUCCEEDED, CANCELED = 2, 4, 5


@dataclass
class _GoalHandle:
    status: int
