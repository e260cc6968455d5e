"""Sources written from type descriptions a robot sent (ros/interfaces/typebuild.py): every name
and type checked against the rosidl grammar before it reaches a file path or generated code;
and the worker refuses a build whose types do not hash to the robot's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.ros.interfaces.typebuild import (
    EMPTY_MEMBER,
    BuildError,
    Field,
    field_line,
    service_spec,
    split_type,
)

ROOT = Path(__file__).resolve().parents[2]


def f(name: str, type_id: int, nested: str = "", default: str = "", capacity: int = 0,
      string_capacity: int = 0) -> Field:
    return Field(name, type_id, capacity, string_capacity, nested, default)


def test_field_lines_of_each_kind() -> None:
    assert field_line(f("x", 11)) == "float64 x"
    assert field_line(f("w", 11, default="1")) == "float64 w 1"
    assert field_line(f("data", 2 + 144)) == "int8[] data"
    assert field_line(f("pts", 1 + 96, "geometry_msgs/msg/Point", capacity=4)) == \
        "geometry_msgs/Point[<=4] pts"
    assert field_line(f("name", 21, string_capacity=8)) == "string<=8 name"
    assert field_line(f("m", 3 + 48, capacity=3)) == "uint8[3] m"
    assert field_line(f("label", 17, default="Hello world!")) == 'string label "Hello world!"'
    assert field_line(f("ok", 15, default="True")) == "bool ok true"
    # array defaults come as Python tuples in a description
    assert field_line(f("v", 10 + 48, default="(1.125, 0.0, -1.125)", capacity=3)) == \
        "float32[3] v [1.125, 0.0, -1.125]"
    assert field_line(f("b", 15 + 144, default="(False, True)")) == "bool[] b [false, true]"


@pytest.mark.parametrize("field", [
    f("x", 11, default="1; import os"), f("x", 17, default='a" + os.system(1) + "'),
    f("x", 17, default="*/ evil /*"), f("x", 17, default="a\\nb"), f("x", 17, default="a#b"),
    f("x", 17, default="it's"), f("x", 15, default="maybe"),
    f("x", 2 + 144, default="(1, __import__('os'))"), f("x", 17 + 144, default="('a', 'b')"),
    f("x", 11, default="1e3)"), f("x", 2 + 144, default="1, 2"),
])
def test_a_default_outside_the_plain_forms_is_left_out(field: Field) -> None:
    # defaults are neither hashed nor sent: one left out only changes an absent field's value
    line = field_line(field)
    assert len(line.split()) == 2, line


@pytest.mark.parametrize("field", [
    f("bad name", 11), f("Upper", 11), f("a__b", 11), f("trailing_", 11), f("x;", 11),
    f("x", 1, "../../etc/msg/Passwd"), f("x", 1, "pkg/msg/T;rm"), f("x", 1, "pkg/srv/T"),
    f("x", 1, "Pkg/msg/T"), f("x", 999), f("x", 12), f("x", 0),
    f("x", 3 + 48, capacity=0), f("x", 21, string_capacity=0),
])
def test_anything_outside_the_grammar_is_refused(field: Field) -> None:
    with pytest.raises(BuildError):
        field_line(field)


@pytest.mark.parametrize("name", ["nav_msgs/srv", "../x/msg/T", "nav_msgs/msg/T/U",
                                  "nav-msgs/msg/T", "nav_msgs/foo/T", "nav_msgs/msg/t",
                                  "nav_msgs/msg/T.x", "_nav/msg/T", "nav_msgs/msg/_T", "nav_msgs/msg/T__U", 7])
def test_type_names_are_checked(name: object) -> None:
    with pytest.raises(BuildError):
        split_type(name)  # type: ignore[arg-type]


TYPES = {
    "demo_pkg/srv/Move_Request": [f("goal", 1, "demo_pkg/msg/Target")],
    "demo_pkg/srv/Move_Response": [f(EMPTY_MEMBER, 3)],
    "demo_pkg/srv/Move_Event": [f("info", 1, "service_msgs/msg/ServiceEventInfo")],
    "demo_pkg/msg/Target": [f("stamp", 1, "builtin_interfaces/msg/Time"), f("x", 11)],
    "builtin_interfaces/msg/Time": [f("sec", 6), f("nanosec", 7)],
    "service_msgs/msg/ServiceEventInfo": [f("event_type", 3)],
}


def have(pkg: str) -> bool:
    return pkg in ("builtin_interfaces", "service_msgs")


def test_a_service_spec_builds_the_missing_package_only() -> None:
    spec = service_spec(["demo_pkg/srv/Move_Event"], TYPES, have, {"demo_pkg/srv/Move": "h"})
    assert list(spec.packages) == ["demo_pkg"]
    pkg = spec.packages["demo_pkg"]
    assert pkg["sources"]["srv"] == {"Move": "demo_pkg/Target goal\n---\n"}
    assert pkg["sources"]["msg"] == {"Target": "builtin_interfaces/Time stamp\nfloat64 x\n"}
    assert pkg["deps"] == ["builtin_interfaces", "service_msgs"]
    assert spec.key() == service_spec(["demo_pkg/srv/Move_Event"], TYPES, have,
                                      {"demo_pkg/srv/Move": "h"}).key()
    assert spec.key() != service_spec(["demo_pkg/srv/Move_Event"], TYPES, have,
                                      {"demo_pkg/srv/Move": "other"}).key()


def test_a_service_spec_refuses_what_it_cannot_build() -> None:
    with pytest.raises(BuildError, match="not a service event"):
        service_spec(["demo_pkg/msg/Target"], TYPES, have, {})
    missing = {k: v for k, v in TYPES.items() if not k.endswith("_Response")}
    with pytest.raises(BuildError, match="lacks the request or response"):
        service_spec(["demo_pkg/srv/Move_Event"], missing, have, {})
    with pytest.raises(BuildError, match="gateway's own package"):
        service_spec(["demo_pkg/srv/Move_Event"], TYPES, lambda p: True, {})
    loop = dict(TYPES, **{"other_pkg/msg/A": [f("b", 1, "demo_pkg/msg/Target")],
                          "demo_pkg/msg/Target": [f("a", 1, "other_pkg/msg/A")]})
    with pytest.raises(BuildError, match="depend on each other"):
        service_spec(["demo_pkg/srv/Move_Event"], loop, have, {})


def test_the_worker_refuses_a_build_that_does_not_hash_to_the_robots(tmp_path: Path) -> None:
    spec = service_spec(["demo_pkg/srv/Move_Event"], TYPES, have,
                        {"demo_pkg/srv/Move_Request": "RIHS01_" + "0" * 64})
    (tmp_path / "spec.json").write_text(json.dumps(spec.as_json()))
    done = subprocess.run([sys.executable, "-m", "gateway.ros.interfaces._typebuild_worker",
                           str(tmp_path / "spec.json"), str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "demo_pkg/srv/Move_Request" in done.stderr and "RIHS01_0000" in done.stderr
    assert not (tmp_path / "out" / "BUILT").exists()
    assert not (tmp_path / "out" / "lib").exists()  # nothing compiled
