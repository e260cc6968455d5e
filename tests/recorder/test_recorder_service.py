"""The recorder without ROS: buffer fed by the raw callbacks, windows, writer thread, index."""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rclpy.serialization import serialize_message
from std_msgs.msg import String

from recorder import schemas
from recorder.config import MIB, RecorderConfig
from recorder.flusher import BagWriterThread, WriteJob
from recorder.index import Recording
from recorder.selection import TopicChoice
from recorder.service import Recorder
from recorder.writer import TopicMeta

with warnings.catch_warnings():
    # rclpy loads type support through rosidl_generator_py, which imports lark, which imports
    # the deprecated sre_parse module; load it once here so filterwarnings=error stays on.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

MS = 1_000_000
LIDAR = "/perception/lidar/lidar_sensor"
TEMP = "/powertrain/engine/temp_sensor"
NODES = {LIDAR: [("/perception/lidar/scan", "std_msgs/msg/String")],
         TEMP: [("/powertrain/engine/temperature", "std_msgs/msg/String")],
         "/tf_pub": [("/tf", "std_msgs/msg/String")]}
TOPICS = ["/perception/lidar/scan", "/powertrain/engine/temperature", "/tf"]


@dataclass
class Fault:
    code: str
    status: str = "CONFIRMED"
    sources: list[str] = field(default_factory=lambda: [LIDAR])


def config(root: Path, **kw: Any) -> RecorderConfig:
    base = RecorderConfig(enabled=True, duration_ns=400 * MS, after_ns=200 * MS,
                          max_buffer_bytes=16 * MIB, root=root, choice=TopicChoice())
    return replace(base, **kw)


class Feed:
    """Feeds the recorder's raw callbacks like the executor would."""

    def __init__(self, rec: Recorder) -> None:
        self.callbacks = {}
        for i, topic in enumerate(TOPICS):
            rec.taps.metas.append(TopicMeta(topic, "std_msgs/msg/String",
                                            schemas.ros2msg_definition("std_msgs/msg/String"),
                                            schemas.type_hash("std_msgs/msg/String")))
            self.callbacks[topic] = rec.taps.callback(i)

    def send(self, topic: str, text: str, size: int = 0) -> int:
        now = time.time_ns()
        data = serialize_message(String(data=text + "#" * size))
        self.callbacks[topic](data, {"received_timestamp": now, "source_timestamp": now - 1000})
        return now


def run(coro_fn: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(coro_fn())  # type: ignore[arg-type]


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


def read_bag(path: Path) -> list[tuple[str, int, str]]:
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        return [(ch.topic, msg.log_time, ros.data) for _, ch, msg, ros in
                reader.iter_decoded_messages(log_time_order=False)]


def test_a_confirmation_records_before_and_after_for_the_faulting_node(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path), lambda: (1, NODES))
        assert await rec.start()
        feed = Feed(rec)
        for i in range(5):
            feed.send("/perception/lidar/scan", f"pre{i}")
            feed.send("/powertrain/engine/temperature", f"other{i}")
            feed.send("/tf", f"tf{i}")
            await asyncio.sleep(0.03)
        t0 = time.time_ns()
        rec.on_fault(Fault("LIDAR_BAD"), True)
        for i in range(3):
            await asyncio.sleep(0.03)
            feed.send("/perception/lidar/scan", f"post{i}")
        await until(lambda: rec.index.recordings)
        (r,) = rec.index.recordings.values()
        assert r.fault_codes == ["LIDAR_BAD"] and r.format == "mcap"
        assert r.topics == ["/perception/lidar/scan", "/tf"]  # not the other node's topic
        msgs = read_bag(rec.path(r))
        times = [t for _, t, _ in msgs]
        assert times == sorted(times)
        scans = [(t, d) for topic, t, d in msgs if topic == "/perception/lidar/scan"]
        assert [d for _, d in scans] == [f"pre{i}" for i in range(5)] + [f"post{i}"
                                                                           for i in range(3)]
        assert all(t < t0 for t, d in scans if d.startswith("pre"))
        assert all(t > t0 for t, d in scans if d.startswith("post"))
        await rec.stop()

    run(main)


def test_faults_confirming_in_the_window_share_the_recording(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path), lambda: (1, NODES))
        await rec.start()
        feed = Feed(rec)
        feed.send("/powertrain/engine/temperature", "t")
        rec.on_fault(Fault("A"), True)
        rec.on_fault(Fault("B", sources=[TEMP]), True)
        rec.on_fault(Fault("A", status="CONFIRMED"), False)  # an update: nothing new
        await until(lambda: rec.index.recordings)
        (r,) = rec.index.recordings.values()
        assert r.fault_codes == ["A", "B"] and r.sources == {"A": [LIDAR], "B": [TEMP]}
        assert "/powertrain/engine/temperature" in r.topics
        assert rec.health()["faults_attached"] == 1
        await rec.stop()

    run(main)


def test_max_bags_per_fault_and_auto_cleanup(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path, max_bags_per_fault=2, after_ns=50 * MS),
                       lambda: (1, NODES))
        await rec.start()
        for n in range(3):
            rec.on_fault(Fault("A"), True)
            await until(lambda n=n: rec.stats["recordings_written"] == n + 1)
        kept = rec.index.for_code("A")
        assert len(kept) == 2 and len(rec.index.recordings) == 2
        await until(lambda: len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2)
        rec.on_fault(Fault("B", sources=[TEMP]), True)
        await until(lambda: rec.stats["recordings_written"] == 4)
        rec.on_fault(Fault("A", status="CLEARED"), False)
        assert set(rec.index.recordings) == {rec.index.for_code("B")[0].id}
        await until(lambda: len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1)
        await rec.stop()

    run(main)


def test_without_auto_cleanup_a_clear_keeps_recordings(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path, auto_cleanup=False, after_ns=50 * MS),
                       lambda: (1, NODES))
        await rec.start()
        rec.on_fault(Fault("A"), True)
        await until(lambda: rec.index.recordings)
        rec.on_fault(Fault("A", status="CLEARED"), False)
        assert len(rec.index.for_code("A")) == 1
        await rec.stop()

    run(main)


def test_storage_quota_evicts_the_oldest_recordings(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path, max_total_bytes=250_000, max_bags_per_fault=100,
                              after_ns=50 * MS, duration_ns=10 * MS), lambda: (1, NODES))
        await rec.start()
        feed = Feed(rec)
        ids = []
        for n in range(4):
            rec.on_fault(Fault(f"F{n}"), True)
            feed.send("/perception/lidar/scan", f"big{n}", size=100_000)
            await until(lambda n=n: rec.stats["recordings_written"] == n + 1)
            ids.append(rec.index.for_code(f"F{n}")[0].id)
        assert rec.index.total_bytes() <= 250_000
        assert set(rec.index.recordings) == set(ids[-2:])
        assert rec.stats["evicted_quota"] == 2
        await until(lambda: not (tmp_path / ids[0]).exists() and not (tmp_path / ids[1]).exists())
        await rec.stop()

    run(main)


def test_a_recording_is_capped_at_max_bag_size_dropping_the_oldest(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path, max_bag_bytes=250_000), lambda: (1, NODES))
        await rec.start()
        feed = Feed(rec)
        for i in range(5):
            feed.send("/perception/lidar/scan", f"m{i}", size=100_000)
        rec.on_fault(Fault("A"), True)
        await until(lambda: rec.index.recordings)
        (r,) = rec.index.recordings.values()
        assert [d[:2] for _, _, d in read_bag(rec.path(r))] == ["m3", "m4"]
        assert rec.stats["truncated_messages"] == 3
        await rec.stop()

    run(main)


def test_stop_writes_open_windows_and_a_restart_recovers_them(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path, after_ns=60_000 * MS), lambda: (1, NODES))
        await rec.start()
        Feed(rec).send("/perception/lidar/scan", "x")
        rec.on_fault(Fault("A"), True)
        await rec.stop()  # the window is still open: written now, truncated
        assert len(rec.index.recordings) == 1
        again = Recorder(config(tmp_path), lambda: (1, NODES))
        assert await again.start()
        (r,) = again.index.recordings.values()
        assert r.fault_codes == ["A"] and again.resolve("A") == r and again.resolve(r.id) == r
        assert [d for _, _, d in read_bag(again.path(r))] == ["x"]
        await again.stop()

    run(main)


def test_a_second_recorder_on_the_same_directory_stays_off(tmp_path: Path) -> None:
    async def main() -> None:
        first = Recorder(config(tmp_path), lambda: (1, NODES))
        second = Recorder(config(tmp_path), lambda: (1, NODES))
        assert await first.start()
        assert not await second.start()
        second.on_fault(Fault("A"), True)  # ignored
        await first.stop()

    run(main)


def test_lazy_start_arms_the_nodes_of_pending_faults(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(config(tmp_path, lazy_start=True), lambda: (1, NODES))
        await rec.start()
        assert rec.cfg.choice.buffered(NODES, rec.armed) == {}
        rec.on_fault(Fault("A", status="PREFAILED", sources=[TEMP]), False)
        assert rec.armed == {TEMP}
        assert set(rec.cfg.choice.buffered(NODES, rec.armed)) == {
            "/powertrain/engine/temperature", "/tf"}
        await rec.stop()

    run(main)


def test_the_write_queue_refuses_rather_than_waits(tmp_path: Path) -> None:
    done: list[Any] = []
    writer = BagWriterThread(tmp_path, 1, lambda r, e, j: done.append((r, e)))
    job = WriteJob(Recording("rec_20260101T000000000Z_aaaaaa", "mcap", "", 1, 0, 2,
                             fault_codes=["A"]), [], [])
    assert writer.submit(job)
    assert not writer.submit(job)  # the thread is not running: the queue stays full
    assert writer.refused == 1
    writer.start()
    assert writer.stop(10)
    assert done and done[0][1] is None and (tmp_path / job.recording.id).is_dir()
