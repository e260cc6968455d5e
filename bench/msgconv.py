"""CDR -> JSON per message: compiled converter, pure twin, stock rclpy path, orjson of a dict.

The stock path is what the gateway would do without msgconv: ``deserialize_message``, a plain
generic walk of ``get_fields_and_field_types()`` into a dict (no per-float NaN mapping),
``json.dumps``. The second baseline is ``orjson.dumps`` of that dict, prebuilt. Both paths
must give equal JSON values (float32 fields compared at float32 precision). Rounds of the
compiled, stock and orjson paths alternate; the figures are medians of per-round ratios with
their spread. Targets: compiled >= 30x faster than the stock path and no slower
than orjson on the prebuilt dict (ratio <= 1.0), on every message.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import struct
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import gateway._fast as fast
    from gateway._fast import msgconv_py

ROUNDS = 15
ROUND_S = 0.04


_kinds: dict[str, str] = {}
TARGET_VS_STOCK = 30.0
TARGET_VS_ORJSON = 1.0


def _kind_of(ros_type: str) -> str:
    """'byte', 'msg' or 'plain' for a get_fields_and_field_types() type string."""
    kind = _kinds.get(ros_type)
    if kind is None:
        base = ros_type.removeprefix("sequence<").split(",")[0].split("[")[0].rstrip(">")
        base = base.split("<=")[0]
        kind = "byte" if base == "octet" else "msg" if "/" in base else "plain"
        _kinds[ros_type] = kind
    return kind


def stock_dict(msg: Any) -> dict[str, Any]:
    """Generic walk of a message into JSON-ready values (the stock path's middle step)."""
    out: dict[str, Any] = {}
    for name, ros_type in msg.get_fields_and_field_types().items():
        value = getattr(msg, name)
        kind = _kind_of(ros_type)
        many = ros_type.endswith("]") or ros_type.startswith("sequence<")
        if many and hasattr(value, "tolist"):  # array.array sequences, numpy fixed arrays
            value = value.tolist()
        if kind == "byte":
            value = [v[0] for v in value] if many else value[0]
        elif kind == "msg":
            value = [stock_dict(v) for v in value] if many else stock_dict(value)
        elif many:
            value = list(value)
        out[name] = value
    return out


def stock(data: bytes, cls: type) -> bytes:
    """The stock path: rclpy deserialization, generic walk, json.dumps."""
    msg = deserialize_message(data, cls)
    return json.dumps(stock_dict(msg), separators=(",", ":"), ensure_ascii=False).encode()


def messages() -> list[tuple[str, Any]]:
    """The benchmark messages, with realistic values from a fixed seed."""
    from diagnostic_msgs.msg import (  # noqa: PLC0415 - ROS types load on first use
        DiagnosticArray,
        DiagnosticStatus,
        KeyValue,
    )
    from sensor_msgs.msg import (  # noqa: PLC0415 - ROS types load on first use
        Imu,
        JointState,
        LaserScan,
        PointCloud2,
        PointField,
    )

    rnd = random.Random(7)
    stamp = {"sec": 1_700_000_000, "nanosec": 123_456_789}

    joints = JointState()
    joints.header.stamp.sec, joints.header.stamp.nanosec = stamp["sec"], stamp["nanosec"]
    joints.header.frame_id = "base_link"
    joints.name = [f"arm_joint_{i}" for i in range(20)]
    joints.position = [rnd.uniform(-3.14, 3.14) for _ in range(20)]
    joints.velocity = [rnd.uniform(-1.0, 1.0) for _ in range(20)]
    joints.effort = [rnd.uniform(-50.0, 50.0) for _ in range(20)]

    scan = LaserScan()
    scan.header.frame_id = "laser"
    scan.angle_min, scan.angle_max = -math.pi, math.pi
    scan.angle_increment = 2 * math.pi / 1080
    scan.time_increment, scan.scan_time = 1 / 43200, 0.025
    scan.range_min, scan.range_max = 0.1, 30.0
    scan.ranges = [rnd.uniform(0.1, 30.0) for _ in range(1080)]

    imu = Imu()
    imu.header.frame_id = "imu_link"
    imu.orientation.x, imu.orientation.y = rnd.uniform(-0.1, 0.1), rnd.uniform(-0.1, 0.1)
    imu.orientation.z, imu.orientation.w = rnd.uniform(-1, 1), rnd.uniform(0.5, 1)
    imu.angular_velocity.x, imu.angular_velocity.y = rnd.gauss(0, 0.01), rnd.gauss(0, 0.01)
    imu.angular_velocity.z = rnd.gauss(0, 0.3)
    imu.linear_acceleration.x, imu.linear_acceleration.y = rnd.gauss(0, 0.2), rnd.gauss(0, 0.2)
    imu.linear_acceleration.z = 9.81 + rnd.gauss(0, 0.05)
    for cov, var in (
        (imu.orientation_covariance, 0.0025),
        (imu.angular_velocity_covariance, 0.0004),
        (imu.linear_acceleration_covariance, 0.01),
    ):
        cov[0] = cov[4] = cov[8] = var

    cloud = PointCloud2()
    cloud.header.frame_id = "lidar"
    cloud.height, cloud.width = 1, 2048
    cloud.fields = [
        PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
        for i, n in enumerate(("x", "y", "z", "intensity"))
    ]
    cloud.point_step, cloud.row_step = 16, 16 * 2048
    cloud.data = rnd.randbytes(32 * 1024)
    cloud.is_dense = True

    diag = DiagnosticArray()
    diag.header.frame_id = ""
    diag.status = [
        DiagnosticStatus(
            level=bytes([i % 3]),
            name=f"/robot/subsystem_{i}",
            message="OK" if i % 3 == 0 else "degraded: check wiring",
            hardware_id=f"hw-{i:04d}",
            values=[
                KeyValue(key=f"metric_{j}", value=f"{rnd.uniform(0, 100):.3f}") for j in range(5)
            ],
        )
        for i in range(10)
    ]
    return [
        ("sensor_msgs/msg/JointState", joints),
        ("sensor_msgs/msg/LaserScan", scan),
        ("sensor_msgs/msg/Imu", imu),
        ("sensor_msgs/msg/PointCloud2", cloud),
        ("diagnostic_msgs/msg/DiagnosticArray", diag),
    ]


def same_values(a: Any, b: Any) -> bool:
    """Equal JSON values; floats equal when they are the same float32 (float32 fields)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        if a == b:
            return True
        try:
            return struct.pack("<f", a) == struct.pack("<f", b)
        except (OverflowError, struct.error):
            return False
    return bool(a == b) and type(a) is type(b)


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    """CPU time of one call in microseconds over `number` calls (thread time: robust to load)."""
    clock = time.thread_time
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number * 1e6


def calls_per_round(fn: Callable[[], Any]) -> int:
    """How many calls fill ROUND_S of CPU."""
    clock = time.thread_time
    fn()
    start, number = clock(), 0
    while clock() - start < ROUND_S / 5:
        fn()
        number += 1
    return max(1, int(number * ROUND_S / max(clock() - start, 1e-9)))


def rounds(paths: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Per-round CPU time per call (us) of each path, the paths alternating within a round."""
    numbers = {k: calls_per_round(fn) for k, fn in paths.items()}
    out: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(ROUNDS):
        for k, fn in paths.items():
            out[k].append(per_call_us(fn, numbers[k]))
    return out


def main() -> None:
    """Measure every message with every path and print the table and the ratios."""
    compiled = fast.msgconv if fast.MSGCONV_IMPL == "compiled" else None
    print(f"msgconv: dispatcher loads the {fast.MSGCONV_IMPL} twin; CPU time per message in us "
          f"(medians of {ROUNDS} alternating rounds); ratios: median of per-round ratios "
          "[spread]")
    header = (f"{'message':<38}{'bytes':>7}{'compiled':>10}{'pure':>9}{'stock':>9}"
              f"{'orjson':>8}  {'stock/comp':>20}{'comp/orjson':>22}")
    print(header)
    print("-" * len(header))
    misses = []
    for name, msg in messages():
        data = serialize_message(msg)
        cls = type(msg)
        prebuilt = stock_dict(deserialize_message(data, cls))
        pure_conv = msgconv_py.converter_for(name)
        stock_json = json.loads(stock(data, cls))
        if not same_values(orjson.loads(pure_conv.to_json(data)), stock_json):
            raise SystemExit(f"{name}: the pure twin and the stock path disagree")
        paths: dict[str, Callable[[], Any]] = {
            "stock": lambda: stock(data, cls),  # noqa: B023
            "orjson": lambda: orjson.dumps(prebuilt),  # noqa: B023
        }
        if compiled is not None:
            comp_conv = compiled.converter_for(name)
            if not same_values(orjson.loads(comp_conv.to_json(data)), stock_json):
                raise SystemExit(f"{name}: the compiled twin and the stock path disagree")
            paths["compiled"] = lambda: comp_conv.to_json(data)  # noqa: B023
        t = rounds(paths)
        t_pure = per_call_us(lambda: pure_conv.to_json(data), 3)  # noqa: B023
        med = {k: statistics.median(v) for k, v in t.items()}
        label = f"{name.split('/')[-1]} ({len(data)} B CDR)"
        if compiled is None:
            print(f"{name:<38}{len(data):>7}{'-':>10}{t_pure:>9.1f}{med['stock']:>9.1f}"
                  f"{med['orjson']:>8.2f}")
            continue
        vs_stock = [s_ / c for s_, c in zip(t["stock"], t["compiled"], strict=True)]
        vs_orjson = [c / o for c, o in zip(t["compiled"], t["orjson"], strict=True)]
        m_stock, m_orjson = statistics.median(vs_stock), statistics.median(vs_orjson)
        if m_stock < TARGET_VS_STOCK or m_orjson > TARGET_VS_ORJSON:
            misses.append(f"{label}: {m_stock:.0f}x stock, {m_orjson:.2f}x orjson")
        print(f"{name:<38}{len(data):>7}{med['compiled']:>10.2f}{t_pure:>9.1f}"
              f"{med['stock']:>9.1f}{med['orjson']:>8.2f}  "
              f"{m_stock:>6.1f}x [{min(vs_stock):.0f}-{max(vs_stock):.0f}]"
              f"{m_orjson:>12.2f}x [{min(vs_orjson):.2f}-{max(vs_orjson):.2f}]")
    print(f"targets: stock/comp >= {TARGET_VS_STOCK:g}x and comp/orjson <= "
          f"{TARGET_VS_ORJSON:g}x on every message; JSON values checked equal")
    if compiled is None:
        print("targets not measured: the compiled twin is not built")
    elif misses:
        print("targets NOT met: " + "; ".join(misses))
    else:
        print("targets met on every message")


if __name__ == "__main__":
    main()
