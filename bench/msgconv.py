"""CDR -> JSON per message: compiled converter, pure twin, stock rclpy path, orjson of a dict.

The stock path is what the gateway would do without msgconv: ``deserialize_message``, a
generic walk of ``get_fields_and_field_types()`` into a dict (NaN -> None), ``json.dumps``.
The baseline is ``orjson.dumps`` of that dict, prebuilt. Goals for the compiled converter:
>= 30x faster than the stock path, <= 1.5x the time of orjson on the prebuilt dict.
"""

from __future__ import annotations

import json
import math
import random
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
    import gateway._fast as fast  # noqa: E402
    from gateway._fast import msgconv_py  # noqa: E402

ROUNDS = 15
ROUND_S = 0.04


_FLOAT_TYPES = ("float", "double")
_kinds: dict[str, str] = {}


def _kind_of(ros_type: str) -> str:
    """'float', 'byte', 'msg' or 'plain' for a get_fields_and_field_types() type string."""
    kind = _kinds.get(ros_type)
    if kind is None:
        base = ros_type.removeprefix("sequence<").split(",")[0].split("[")[0].rstrip(">")
        base = base.split("<=")[0]
        kind = (
            "float"
            if base in _FLOAT_TYPES
            else "byte"
            if base == "octet"
            else "msg"
            if "/" in base
            else "plain"
        )
        _kinds[ros_type] = kind
    return kind


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def stock_dict(msg: Any) -> dict[str, Any]:
    """Generic walk of a message into JSON-ready values (the stock path's middle step)."""
    out: dict[str, Any] = {}
    for name, ros_type in msg.get_fields_and_field_types().items():
        value = getattr(msg, name)
        kind = _kind_of(ros_type)
        many = ros_type.endswith("]") or ros_type.startswith("sequence<")
        if many and hasattr(value, "tolist"):  # array.array sequences, numpy fixed arrays
            value = value.tolist()
        if kind == "float":
            value = [_finite(v) for v in value] if many else _finite(value)
        elif kind == "byte":
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
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from sensor_msgs.msg import Imu, JointState, LaserScan, PointCloud2, PointField

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


def per_call_us(fn: Callable[[], Any]) -> float:
    """Best-of-rounds CPU time of one call in microseconds (thread time: robust to load)."""
    clock = time.thread_time
    fn()
    start, number = clock(), 0
    while clock() - start < ROUND_S / 5:
        fn()
        number += 1
    number = max(1, int(number * ROUND_S / max(clock() - start, 1e-9)))
    best = math.inf
    for _ in range(ROUNDS):
        start = clock()
        for _ in range(number):
            fn()
        best = min(best, (clock() - start) / number)
    return best * 1e6


def main() -> None:
    """Measure every message with every path and print the table and the ratios."""
    compiled = fast.msgconv if fast.MSGCONV_IMPL == "compiled" else None
    print(
        f"msgconv: dispatcher loads the {fast.MSGCONV_IMPL} twin; "
        f"CPU time per message in us, best of {ROUNDS} rounds"
    )
    header = (
        f"{'message':<38}{'bytes':>7}{'compiled':>10}{'pure':>10}{'stock':>10}"
        f"{'orjson':>9}  {'stock/comp':>10}{'comp/orjson':>12}{'stock/pure':>11}"
    )
    print(header)
    print("-" * len(header))
    misses = []
    for name, msg in messages():
        data = serialize_message(msg)
        cls = type(msg)
        prebuilt = stock_dict(deserialize_message(data, cls))
        pure_conv = msgconv_py.converter_for(name)
        t_pure = per_call_us(lambda: pure_conv.to_json(data))  # noqa: B023
        t_stock = per_call_us(lambda: stock(data, cls))  # noqa: B023
        t_orjson = per_call_us(lambda: orjson.dumps(prebuilt))  # noqa: B023
        label = f"{name.split('/')[-1]} ({len(data)} B CDR)"
        if compiled is not None:
            comp_conv = compiled.converter_for(name)
            t_comp = per_call_us(lambda: comp_conv.to_json(data))  # noqa: B023
            speedup, vs_orjson = t_stock / t_comp, t_comp / t_orjson
            if speedup < 30 or vs_orjson > 1.5:
                misses.append(f"{label}: {speedup:.0f}x stock, {vs_orjson:.2f}x orjson")
            print(
                f"{name:<38}{len(data):>7}{t_comp:>10.2f}{t_pure:>10.1f}{t_stock:>10.1f}"
                f"{t_orjson:>9.2f}  {speedup:>9.0f}x{vs_orjson:>11.2f}x"
                f"{t_stock / t_pure:>10.1f}x"
            )
        else:
            print(
                f"{name:<38}{len(data):>7}{'-':>10}{t_pure:>10.1f}{t_stock:>10.1f}"
                f"{t_orjson:>9.2f}  {'-':>10}{'-':>12}{t_stock / t_pure:>10.1f}x"
            )
    print("goals: stock/comp >= 30x and comp/orjson <= 1.5x on every message")
    if compiled is None:
        print("goals not measured: the compiled twin is not built")
    elif misses:
        print("goals missed: " + "; ".join(misses))
    else:
        print("goals met on every message")


if __name__ == "__main__":
    main()
