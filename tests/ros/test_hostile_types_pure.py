"""Hostile type descriptions: refused by both converter twins, the encoder and the type build
before they allocate, recurse or stall (each case in a child under a memory and time limit)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway._fast import typegraph
from gateway._fast.typegraph import Member, TypeLimitError, check_types
from gateway.ros.interfaces.described import SECTION, definition_of
from gateway.ros.interfaces.typebuild import (
    BuildError,
    Field,
    check_hash,
    check_limits,
    description_hash,
    field_line,
    split_type,
)
from gateway.ros.settings import RosSettings
from gateway.settings.config import ConfigError, load

ROOT = Path(__file__).resolve().parents[2]
SHARE = Path(sys.prefix) / "share"
MEMORY_LIMIT = 1 << 30  # the child's address space: a default message of 10^9 elements fails
CHILD_TIMEOUT_S = 120.0  # generous: a refusal takes milliseconds


def definition(root: str, types: dict[str, str]) -> str:
    """rosbag2-style definition text: the root's .msg text, then the others."""
    return types[root] + "".join(SECTION.format(name=n) + t for n, t in types.items()
                                 if n != root)


def chain(depth: int) -> dict[str, str]:
    """p/msg/T0 -> T1 -> ... nested `depth` levels deep."""
    types = {f"p/msg/T{i}": f"p/T{i + 1} next\n" for i in range(depth - 1)}
    types[f"p/msg/T{depth - 1}"] = "int32 v\n"
    return types


# name -> (root, .msg texts, what the refusal says)
CORPUS: dict[str, tuple[str, dict[str, str], str]] = {
    "self": ("p/msg/A", {"p/msg/A": "int32 x\np/A a\n"}, "recursive"),
    "self-in-sequence": ("p/msg/A", {"p/msg/A": "p/A[] children\n"}, "recursive"),
    "self-in-fixed-array": ("p/msg/A", {"p/msg/A": "p/A[3] children\n"}, "recursive"),
    "cycle-a-b-c-a": ("p/msg/A", {"p/msg/A": "p/B b\n", "p/msg/B": "p/C[<=2] c\n",
                                  "p/msg/C": "string s\np/A a\n"}, "recursive"),
    "depth-1000": ("p/msg/T0", chain(1000), "nests deeper"),
    "fixed-10e9": ("p/msg/A", {"p/msg/A": "int64[1000000000] x\n"}, "fixed-array elements"),
    "fixed-nested-product": ("p/msg/A", {"p/msg/A": "p/B[1001] b\n",
                                         "p/msg/B": "float64[1000] x\n"},
                             "fixed-array elements"),
    "four-16M-fields": ("p/msg/A", {"p/msg/A": "".join(f"int32[16777216] f{i}\n"
                                                       for i in range(4))},
                        "fixed-array elements"),
}

CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
root, text = json.loads(sys.stdin.read())
out = {}
def attempt(label, fn):
    try:
        fn()
        out[label] = "accepted"
    except Exception as exc:
        out[label] = f"{type(exc).__name__}: {exc}"
from gateway._fast import msgconv_py
attempt("pure", lambda: msgconv_py.converter_for_definition(root, text))
try:
    from gateway._fast import msgconv_c
except ImportError:
    out["compiled"] = "not built"
else:
    attempt("compiled", lambda: msgconv_c.converter_for_definition(root, text))
from gateway.ros.interfaces.described_encode import Encoder
attempt("encoder", lambda: Encoder(root, text).encode({}))
print(json.dumps(out))
"""


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_limited(root: str, text: str) -> dict[str, str]:
    """Each consumer's outcome for one definition, run in a child with 1 GiB of address space."""
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps([root, text]),
                          capture_output=True, text=True, cwd=ROOT, timeout=CHILD_TIMEOUT_S,
                          preexec_fn=_limit_child)
    assert done.returncode == 0, f"child died ({done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def fields_from_text(types: dict[str, str]) -> dict[str, list[Field]]:
    """typebuild Fields (type ids of type_description_interfaces) for the corpus's .msg text."""
    ids = {"int32": 6, "int64": 8, "float64": 11, "string": 17}
    out: dict[str, list[Field]] = {}
    for name, text in types.items():
        fields = []
        for line in text.splitlines():
            kind, field_name = line.split()
            base, _, rest = kind.partition("[")
            nested = "" if base in ids else f"p/msg/{base.split('/')[-1]}"
            tid, cap = (1 if nested else ids[base]), 0
            if rest:
                bound = rest.rstrip("]")
                if not bound:
                    tid += 144
                elif bound.startswith("<="):
                    tid, cap = tid + 96, int(bound[2:])
                else:
                    tid, cap = tid + 48, int(bound)
            fields.append(Field(field_name, tid, cap, 0, nested, ""))
        out[name] = fields
    return out


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_hostile_definitions_are_refused_by_every_consumer(case: str) -> None:
    root, types, reason = CORPUS[case]
    started = time.monotonic()
    outcome = run_limited(root, definition(root, types))
    for label in ("pure", "compiled", "encoder"):
        if outcome[label] == "not built":
            continue
        assert outcome[label].startswith("TypeLimitError") and reason in outcome[label], \
            (label, outcome[label])
    with pytest.raises(BuildError, match=reason):
        check_limits(fields_from_text(types))
    assert time.monotonic() - started < CHILD_TIMEOUT_S


def test_the_caps_accept_real_sized_types_and_read_them() -> None:
    root, types = "p/msg/T0", chain(typegraph.LIMITS.max_depth)
    outcome = run_limited(root, definition(root, types))
    assert set(outcome.values()) <= {"accepted", "not built"}, outcome
    check_limits(fields_from_text(types))
    odometry = {"p/msg/A": "p/B[1000] b\n", "p/msg/B": "float64[36] covariance\n"}
    assert set(run_limited("p/msg/A", definition("p/msg/A", odometry)).values()) <= {
        "accepted", "not built"}


def test_refusals_name_the_cycle_and_the_setting() -> None:
    types = {"p/msg/A": [Member("b", "p/msg/B", 0, 0)], "p/msg/B": [Member("a", "p/msg/A", 0, 0)]}
    with pytest.raises(TypeLimitError, match=r"p/msg/A -> p/msg/B -> p/msg/A"):
        check_types("p/msg/A", types)
    deep = {f"T{i}": [Member("n", f"T{i + 1}", 0, 0)] for i in range(10)}
    with pytest.raises(TypeLimitError, match="ros.type_limits.max_depth"):
        check_types("T0", deep, limits=typegraph.TypeLimits(max_depth=5))
    big = {"A": [Member("x", None, 8, 1000)]}
    with pytest.raises(TypeLimitError, match="ros.type_limits.max_fixed_elements"):
        check_types("A", big, limits=typegraph.TypeLimits(max_fixed_elements=999))
    with pytest.raises(TypeLimitError, match="8000 bytes"):
        check_types("A", big, max_bytes=7999)
    check_types("A", big, max_bytes=8000)


def test_names_are_checked_whole() -> None:
    for bad in ("p/msg/A\n", "p\n/msg/A", "p/msg/A\r", "p/msg/Ä", "pkg/msg/名前", "p/msg/A B"):
        with pytest.raises(BuildError):
            split_type(bad)
    for bad in ("x\n", "ñame", "a b", "x\x00"):
        with pytest.raises(BuildError, match="invalid field name"):
            field_line(Field(bad, 6, 0, 0, "", ""))
    # a default with a newline or unicode digits is left out, never written into the .msg
    assert field_line(Field("x", 6, 0, 0, "", "1\n")) == "int32 x 1"  # the value is stripped
    assert field_line(Field("x", 6, 0, 0, "", "1\nint32 y")) == "int32 x"
    assert field_line(Field("x", 6, 0, 0, "", "١٢")) == "int32 x"
    assert field_line(Field("s", 17, 0, 0, "", "a\nb")) == "string s"
    assert field_line(Field("s", 17, 0, 0, "", "ab")) == 'string s "ab"'
    assert field_line(Field("x", 6, 0, 0, "", "12")) == "int32 x 12"
    from gateway._fast import msgconv_py

    for bad in ("p/msg/A\nint32 y", "p/msg/Ä"):
        with pytest.raises(ValueError):
            msgconv_py.converter_for_definition(bad, "int32 x\n")
    with pytest.raises(ValueError, match="cannot parse"):
        msgconv_py.converter_for_definition("p/msg/A", "int32 ñame\n")
    with pytest.raises(ValueError, match="above 0"):
        msgconv_py.converter_for_definition("p/msg/A", "int32[0] x\n")


def _description(type_name: str) -> Any:
    """An installed type's TypeDescription (its share/<pkg>/msg/<T>.json) and its hash."""
    pkg, _, short = type_name.split("/")
    data = json.loads((SHARE / pkg / "msg" / f"{short}.json").read_text())

    def individual(d: dict[str, Any]) -> Any:
        return SimpleNamespace(type_name=d["type_name"], fields=[
            SimpleNamespace(name=f["name"], default_value=f["default_value"],
                            type=SimpleNamespace(**f["type"])) for f in d["fields"]])

    msg = data["type_description_msg"]
    td = SimpleNamespace(type_description=individual(msg["type_description"]),
                         referenced_type_descriptions=[
                             individual(r) for r in msg["referenced_type_descriptions"]])
    return td, data["type_hashes"][0]["hash_string"]


def test_a_description_must_hash_to_the_announced_type_hash() -> None:
    td, announced = _description("geometry_msgs/msg/PoseWithCovarianceStamped")
    assert description_hash(td) == announced
    check_hash(td, announced)
    text = definition_of(td, "geometry_msgs/msg/PoseWithCovarianceStamped", announced)
    assert "float64[36] covariance" in text and "MSG: std_msgs/msg/Header" in text
    wrong = "RIHS01_" + "0" * 64
    with pytest.raises(BuildError) as refused:
        definition_of(td, "geometry_msgs/msg/PoseWithCovarianceStamped", wrong)
    message = str(refused.value)
    assert "PoseWithCovarianceStamped" in message and wrong in message and announced in message
    # a field changed by the node (a larger array) no longer hashes to the announced value
    td.type_description.fields[0].type.capacity = 7
    with pytest.raises(BuildError, match="does not match its type hash"):
        check_hash(td, announced)


def test_a_description_of_a_recursive_type_is_refused_even_with_its_own_hash() -> None:
    field = SimpleNamespace(name="a", default_value="", type=SimpleNamespace(
        type_id=1, capacity=0, string_capacity=0, nested_type_name="p/msg/A"))
    td = SimpleNamespace(type_description=SimpleNamespace(type_name="p/msg/A", fields=[field]),
                         referenced_type_descriptions=[])
    text = definition_of(td, "p/msg/A", description_hash(td))  # the hash alone is no defence
    from gateway._fast import msgconv_py

    with pytest.raises(TypeLimitError, match="recursive"):
        msgconv_py.converter_for_definition("p/msg/A", text)


def test_encoding_stops_at_its_byte_and_time_budget() -> None:
    from gateway.ros.interfaces.described_encode import EncodeLimitError, Encoder

    enc = Encoder("p/msg/A", "int64[100000] x\n")
    assert len(enc.encode({})) == 4 + 800000
    with pytest.raises(EncodeLimitError, match="ros.type_limits.max_encode_bytes"):
        enc.encode({}, max_bytes=100000)
    with pytest.raises(EncodeLimitError, match="ros.type_limits.encode_timeout_sec"):
        enc.encode({}, timeout_s=0.0)
    seq = Encoder("p/msg/A", "float64[] x\n")
    with pytest.raises(EncodeLimitError, match="max_encode_bytes"):
        seq.encode({"x": [1.0] * 20000}, max_bytes=1000)


def test_the_caps_are_settings_and_a_bad_value_names_its_setting() -> None:
    settings = load(overrides=["ros.type_limits.max_depth=12",
                               "ros.type_limits.encode_timeout_sec=2.5"])
    saved = typegraph.LIMITS
    try:
        limits = typegraph.configure(settings.typed(RosSettings.from_settings))
        assert limits.max_depth == 12 and limits.encode_timeout_s == 2.5
        assert limits.max_fixed_elements == 1_000_000
        with pytest.raises(TypeLimitError, match="deeper than 12"):
            check_types("T0", {f"T{i}": [Member("n", f"T{i + 1}", 0, 0)] for i in range(20)})
    finally:
        typegraph.LIMITS = saved
    for bad in ("ros.type_limits.max_depth=0", "ros.type_limits.max_read_bytes=-5",
                "ros.type_limits.max_fixed_elements=many"):
        with pytest.raises(ConfigError, match=bad.split("=")[0].replace(".", r"\.")):
            load(overrides=[bad])


def test_each_twin_refuses_a_cycle_while_it_builds_a_plan() -> None:
    """The twins' own guard, behind the shared check: a cycle or too deep a nesting."""
    from gateway._fast import msgconv_py

    twins = [msgconv_py]
    try:
        from gateway._fast import msgconv_c
    except ImportError:
        pass
    else:
        twins.append(msgconv_c)
    k_msg = 15  # _K_MSG
    loop = {"p/msg/A": [("b", k_msg, 0, 0, "p/msg/B")], "p/msg/B": [("a", k_msg, 0, 0, "p/msg/A")]}
    deep = {f"T{i}": [("n", k_msg, 0, 0, f"T{i + 1}")] for i in range(200)}
    deep["T200"] = []
    for twin in twins:
        with pytest.raises(ValueError, match="contains itself"):
            twin._plan_from_msg("p/msg/A", loop, {}, 0)
        with pytest.raises(ValueError, match="nests deeper"):
            twin._plan_from_msg("T0", deep, {}, 0)
