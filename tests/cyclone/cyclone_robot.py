"""A Cyclone DDS robot for the suite: speaks ROS 2 on the wire as rmw_cyclonedds_cpp does.

Runs under `.cyclone/bin/python` (the `cyclonedds` PyPI binding, no ROS at all) and imports
nothing of the gateway. One participant, as an rmw_cyclonedds process with one node (`--name`, default `cy_robot`; its
topics and service below `/<name>/`):

- `/<name>/temperature` (sensor_msgs/Temperature, reliable, 5 Hz), `/<name>/status`
  (std_msgs/String, reliable, transient local, once);
- `/<name>/command` (std_msgs/String) read and echoed to `/<name>/command_echo` (latched);
- `/diagnostics` (diagnostic_msgs/DiagnosticArray, 1 Hz) with `<name> motor` at ERROR;
- `/rosout` (rcl_interfaces/Log, as rcl's logger): `<name> alive <n>` at INFO every second;
- service `/<name>/trigger` (std_srvs/Trigger): reader `rq/<name>/triggerRequest`, writer
  `rr/<name>/triggerReply`, each sample led by rmw_cyclonedds's request header (client id
  `uint64`, sequence number `int64`); the answer's message counts the calls;
- `ros_discovery_info` (rmw_dds_common ParticipantEntitiesInfo, reliable, transient local,
  depth 1) naming the node and its endpoints, with `--gid-bytes 16` (since Iron) or
  `24` (Humble), or none with `--no-discovery-info` (a DDS participant the rmw cannot name).

DDS topic and type names follow rmw_cyclonedds: `rt/<topic>`, `pkg::msg::dds_::Type_`. Prints
`READY` once every entity exists. SIGINT or SIGTERM ends it.
"""

# No `from __future__ import annotations`: the binding evaluates the field annotations.
import argparse
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, make_idl_struct
from cyclonedds.idl import types as t
from cyclonedds.internal import InvalidSample
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: t.int32 = 0
    nanosec: t.uint32 = 0


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_ = field(default_factory=Time_)
    frame_id: str = ""


@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str = ""


@dataclass
class Temperature_(IdlStruct, typename="sensor_msgs::msg::dds_::Temperature_"):
    header: Header_ = field(default_factory=Header_)
    temperature: t.float64 = 0.0
    variance: t.float64 = 0.0


@dataclass
class KeyValue_(IdlStruct, typename="diagnostic_msgs::msg::dds_::KeyValue_"):
    key: str = ""
    value: str = ""


@dataclass
class DiagnosticStatus_(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticStatus_"):
    level: t.uint8 = 0
    name: str = ""
    message: str = ""
    hardware_id: str = ""
    values: t.sequence[KeyValue_] = field(default_factory=list)


@dataclass
class DiagnosticArray_(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticArray_"):
    header: Header_ = field(default_factory=Header_)
    status: t.sequence[DiagnosticStatus_] = field(default_factory=list)


@dataclass
class Log_(IdlStruct, typename="rcl_interfaces::msg::dds_::Log_"):
    stamp: Time_ = field(default_factory=Time_)
    level: t.uint8 = 20
    name: str = ""
    msg: str = ""
    file: str = ""
    function: str = ""
    line: t.uint32 = 0


# rmw_cyclonedds serializes a request or reply as its header, then the message's fields.
@dataclass
class TriggerRequest_(IdlStruct, typename="std_srvs::srv::dds_::Trigger_Request_"):
    client_guid: t.uint64 = 0
    sequence_number: t.int64 = 0
    structure_needs_at_least_one_member: t.uint8 = 0


@dataclass
class TriggerReply_(IdlStruct, typename="std_srvs::srv::dds_::Trigger_Response_"):
    client_guid: t.uint64 = 0
    sequence_number: t.int64 = 0
    success: bool = False
    message: str = ""


def discovery_types(gid_bytes: int) -> tuple[type, type, type]:
    """Gid_, NodeEntitiesInfo_, ParticipantEntitiesInfo_ with `gid_bytes`-byte gids."""
    gid_t = make_idl_struct("Gid_", "rmw_dds_common::msg::dds_::Gid_",
                            {"data": t.array[t.uint8, gid_bytes]})
    node_t = make_idl_struct("NodeEntitiesInfo_", "rmw_dds_common::msg::dds_::NodeEntitiesInfo_",
                             {"node_namespace": str, "node_name": str,
                              "reader_gid_seq": t.sequence[gid_t],
                              "writer_gid_seq": t.sequence[gid_t]})
    info_t = make_idl_struct("ParticipantEntitiesInfo_",
                             "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_",
                             {"gid": gid_t, "node_entities_info_seq": t.sequence[node_t]})
    return gid_t, node_t, info_t


# rmw_cyclonedds writes and reads XCDR1 (plain CDR) only.
XCDR1 = Policy.DataRepresentation(use_cdrv0_representation=True)
RELIABLE = Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
               Policy.History.KeepLast(10), XCDR1)
LATCHED = Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
              Policy.Durability.TransientLocal, Policy.History.KeepLast(1), XCDR1)
ROSOUT = Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
             Policy.Durability.TransientLocal, Policy.History.KeepLast(1000), XCDR1)
SERVICE = Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
              Policy.History.KeepAll, XCDR1)


def valid(samples: list[object]) -> list[object]:
    """The samples with data (a writer leaving hands the reader an InvalidSample)."""
    return [s for s in samples if not isinstance(s, InvalidSample)]


class Robot:
    """The participant and its endpoints."""

    def __init__(self, domain: int, name: str) -> None:
        self.dp = DomainParticipant(domain)
        self.node_name = name
        dp = self.dp
        self.readers: list[object] = []
        self.writers: list[object] = []
        self.temp = self._writer(Topic(dp, f"rt/{name}/temperature", Temperature_), RELIABLE)
        self.status = self._writer(Topic(dp, f"rt/{name}/status", String_), LATCHED)
        self.echo = self._writer(Topic(dp, f"rt/{name}/command_echo", String_), LATCHED)
        self.diag = self._writer(Topic(dp, "rt/diagnostics", DiagnosticArray_), RELIABLE)
        self.rosout = self._writer(Topic(dp, "rt/rosout", Log_), ROSOUT)
        self.command = self._reader(Topic(dp, f"rt/{name}/command", String_), RELIABLE)
        self.requests = self._reader(Topic(dp, f"rq/{name}/triggerRequest", TriggerRequest_), SERVICE)
        self.replies = self._writer(Topic(dp, f"rr/{name}/triggerReply", TriggerReply_), SERVICE)
        self.calls = 0
        self.stop = threading.Event()

    def _writer(self, topic: Topic, qos: Qos) -> DataWriter:
        w = DataWriter(self.dp, topic, qos=qos)
        self.writers.append(w)
        return w

    def _reader(self, topic: Topic, qos: Qos) -> DataReader:
        r = DataReader(self.dp, topic, qos=qos)
        self.readers.append(r)
        return r

    def announce(self, gid_bytes: int) -> None:
        """Write the participant's ros_discovery_info sample (its one node)."""
        gid_t, node_t, info_t = discovery_types(gid_bytes)

        def gid(entity: object) -> object:
            raw = entity.get_guid().bytes  # type: ignore[attr-defined]
            return gid_t(data=list(raw) + [0] * (gid_bytes - len(raw)))

        topic = Topic(self.dp, "ros_discovery_info", info_t)
        writer = DataWriter(self.dp, topic, qos=LATCHED)
        node = node_t(node_namespace="/", node_name=self.node_name,
                      reader_gid_seq=[gid(r) for r in self.readers],
                      writer_gid_seq=[gid(w) for w in self.writers])
        writer.write(info_t(gid=gid(self.dp), node_entities_info_seq=[node]))
        self.info_writer = writer

    def run(self) -> None:
        self.status.write(String_(data="cyclone robot up"))
        n = 0
        next_diag = 0.0
        while not self.stop.is_set():
            now = time.time()
            stamp = Time_(sec=int(now), nanosec=int((now % 1) * 1e9))
            if n % 4 == 0:  # 5 Hz
                self.temp.write(Temperature_(header=Header_(stamp=stamp, frame_id=self.node_name),
                                             temperature=20.0 + (n % 10), variance=0.5))
            if now >= next_diag:
                next_diag = now + 1.0
                self.diag.write(DiagnosticArray_(header=Header_(stamp=stamp), status=[
                    DiagnosticStatus_(level=2, name=f"{self.node_name} motor",
                                      message=f"{self.node_name} motor overheated",
                                      hardware_id=self.node_name)]))
                self.rosout.write(Log_(stamp=stamp, level=20, name=self.node_name,
                                       msg=f"{self.node_name} alive {n}", file="cyclone_robot.py",
                                       function="run", line=1))
            for cmd in valid(self.command.take(N=10)):
                self.echo.write(String_(data=f"echo: {cmd.data}"))
            for req in valid(self.requests.take(N=10)):
                self.calls += 1
                self.replies.write(TriggerReply_(
                    client_guid=req.client_guid, sequence_number=req.sequence_number,
                    success=True, message=f"cyclone call {self.calls}"))
            n += 1
            self.stop.wait(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", type=int, required=True)
    parser.add_argument("--name", default="cy_robot")
    parser.add_argument("--gid-bytes", type=int, choices=(16, 24), default=16)
    parser.add_argument("--no-discovery-info", action="store_true")
    args = parser.parse_args()
    robot = Robot(args.domain, args.name)
    if not args.no_discovery_info:
        robot.announce(args.gid_bytes)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: robot.stop.set())
    print("READY", flush=True)
    robot.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
