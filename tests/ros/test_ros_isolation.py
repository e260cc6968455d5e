"""The gateway's own ROS whatever the shell (gateway/ros/dds/isolation.py): the pure plan."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys

from gateway.ros.dds.isolation import GUARD, USER_ENV_VAR, OwnRos, own_ros, plan, user_values

OWN = OwnRos(prefix="/gw", lib_dirs=("/gw/lib", "/gw/site/ros_a.libs", "/gw/site/ros_b.libs"),
             python_dirs=("/gw/site",), distro="kilted")
JAZZY = ["/opt/ros/jazzy/lib", "/opt/ros/jazzy/lib/x86_64-linux-gnu"]
ROSLIKE = {"/robot/ws/install/lib"}  # a directory holding ROS libraries outside any prefix


def looks(path: str) -> bool:
    """Stands for the directory listing: ROS libraries in /opt/ros and the workspace."""
    return path in ROSLIKE or path.startswith("/opt/ros/")


def sourced(**extra: str) -> dict[str, str]:
    """A shell with Jazzy sourced, after the gateway's bootstrap re-exec'd it (scrambled)."""
    ld = ["/gw/site/ros_b.libs", JAZZY[1], "/usr/local/cuda/lib64", "/gw/lib", JAZZY[0],
          "/gw/site/ros_a.libs"]
    env = {"HOME": "/home/u", "ROS_DISTRO": "jazzy", "AMENT_PREFIX_PATH": "/opt/ros/jazzy",
           "LD_LIBRARY_PATH": os.pathsep.join(ld),
           "PYTHONPATH": "/opt/ros/jazzy/lib/python3.12/site-packages:/home/u/tools",
           GUARD: "1"}
    env.update(extra)
    return env


def test_a_sourced_shell_is_set_aside_and_the_order_is_fixed() -> None:
    p = plan(sourced(), OWN, looks, pid=10)
    assert p.reexec
    assert p.env["LD_LIBRARY_PATH"] == "/gw/lib:/gw/site/ros_a.libs:/gw/site/ros_b.libs:" \
                                      "/usr/local/cuda/lib64"
    assert p.env["PYTHONPATH"] == "/home/u/tools"
    assert "ROS_DISTRO" not in p.env and "AMENT_PREFIX_PATH" not in p.env
    assert p.env[GUARD] == "1" and p.env["HOME"] == "/home/u"
    assert p.set_aside == {"ROS_DISTRO": ["jazzy"], "AMENT_PREFIX_PATH": ["/opt/ros/jazzy"],
                           "LD_LIBRARY_PATH": [JAZZY[1], JAZZY[0]],
                           "PYTHONPATH": ["/opt/ros/jazzy/lib/python3.12/site-packages"]}


def test_the_plan_is_a_fixed_point_and_never_loops() -> None:
    first = plan(sourced(), OWN, looks, pid=10)
    again = plan(first.env, OWN, looks, pid=10)  # the re-exec'd process
    assert not again.reexec and not again.changed
    assert again.env == first.env
    # A process re-exec'd once that still differs runs on (and says so) rather than loop.
    broken = dict(first.env, LD_LIBRARY_PATH=JAZZY[0])
    stuck = plan(broken, OWN, looks, pid=10)
    assert stuck.changed and not stuck.reexec


def test_the_users_environment_travels_across_the_reexec() -> None:
    p = plan(sourced(), OWN, looks, pid=10)
    user = user_values(p.env, OWN)
    assert user["ROS_DISTRO"] == "jazzy" and user["AMENT_PREFIX_PATH"] == "/opt/ros/jazzy"
    assert user["PYTHONPATH"] == "/opt/ros/jazzy/lib/python3.12/site-packages:/home/u/tools"
    assert user[GUARD] is None  # the gateway's bootstrap set it, not the user
    # The bootstrap's set scrambled the user's entries: a prefix's own go first, in its order.
    assert user["LD_LIBRARY_PATH"] is not None
    assert set(user["LD_LIBRARY_PATH"].split(":")) == {*JAZZY, "/usr/local/cuda/lib64"}
    assert not any(d in user["LD_LIBRARY_PATH"] for d in OWN.lib_dirs)
    assert json.loads(p.env[USER_ENV_VAR])["pid"] == 10


def test_an_inherited_guard_is_foreign_and_the_users() -> None:
    env = {"LD_LIBRARY_PATH": ":".join(JAZZY), GUARD: "1", "ROS_DISTRO": "jazzy"}
    p = plan(env, OWN, looks, pid=3)
    assert p.reexec and GUARD in p.set_aside
    assert p.user[GUARD] == "1" and p.user["LD_LIBRARY_PATH"] == ":".join(JAZZY)
    assert p.env["LD_LIBRARY_PATH"] == ":".join(OWN.lib_dirs)


def test_ros_directories_outside_any_prefix_are_found_by_their_libraries() -> None:
    env = {"LD_LIBRARY_PATH": ":".join([*OWN.lib_dirs, "/robot/ws/install/lib"]), GUARD: "1"}
    p = plan(env, OWN, looks, pid=3)
    assert p.set_aside == {"LD_LIBRARY_PATH": ["/robot/ws/install/lib"]}


def test_a_clean_shell_in_the_fixed_order_runs_as_is() -> None:
    env = {"LD_LIBRARY_PATH": ":".join(OWN.lib_dirs), GUARD: "1", "ROS_DISTRO": "kilted",
           "AMENT_PREFIX_PATH": "/gw"}
    p = plan(env, OWN, looks, pid=3)
    assert not p.reexec and not p.changed and p.set_aside == {} and p.env == env
    assert user_values(env, OWN)[GUARD] is None


def test_user_environment_of_this_process_has_no_loader_environment() -> None:
    """The test process itself ran through the wheels' bootstrap: its user had neither."""
    code = ("import json; from gateway.ros.dds.isolation import user_environment as u; "
            "print(json.dumps(u()))")
    env = {k: v for k, v in os.environ.items() if k not in (GUARD, "LD_LIBRARY_PATH")}
    env["MARK"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    user = json.loads(out)
    assert GUARD not in user and "LD_LIBRARY_PATH" not in user and user["MARK"] == "1"


def test_only_the_bootstraps_order_of_the_own_directories_is_fixed_in_place() -> None:
    scrambled = {"LD_LIBRARY_PATH": ":".join(reversed(OWN.lib_dirs)), GUARD: "1"}
    p = plan(scrambled, OWN, looks, pid=3)
    assert not p.reexec and p.inplace and p.env["LD_LIBRARY_PATH"] == ":".join(OWN.lib_dirs)
    # A user's entry among them must go after the gateway's own: that takes the re-exec.
    mixed = {"LD_LIBRARY_PATH": ":".join(["/usr/local/lib", *OWN.lib_dirs]), GUARD: "1"}
    p = plan(mixed, OWN, looks, pid=3)
    assert p.reexec and p.env["LD_LIBRARY_PATH"].endswith(":/usr/local/lib")


def test_the_own_directories_share_no_library_name_with_other_content() -> None:
    """Why their order does not matter (the in-place fix above relies on it)."""
    seen: dict[str, str] = {}
    for d in own_ros(with_distro=False).lib_dirs:
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.isfile(path):
                continue
            if name in seen:
                assert filecmp.cmp(seen[name], path, shallow=False), (seen[name], path)
            seen[name] = path
    assert any(n.startswith("librcl.so") for n in seen)


def test_deciding_imports_no_rclpy() -> None:
    """The decision runs before any ROS library is loaded (gateway.ros's package import too)."""
    code = ("import sys; from gateway.ros.dds import isolation; isolation.plan(dict(), "
            "isolation.own_ros(), isolation.looks_like_ros, 1); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('rclpy', 'rpyutils', 'rosidl_runtime_py', 'std_msgs')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "[]"


def test_an_rmw_of_another_vendor_is_set_aside_and_named_in_one_line() -> None:
    from gateway.ros.dds.isolation import rmw_line

    p = plan(sourced(RMW_IMPLEMENTATION="rmw_cyclonedds_cpp"), OWN, looks, pid=10)
    assert p.reexec and "RMW_IMPLEMENTATION" not in p.env
    assert p.set_aside["RMW_IMPLEMENTATION"] == ["rmw_cyclonedds_cpp"]
    assert p.user["RMW_IMPLEMENTATION"] == "rmw_cyclonedds_cpp"  # scripts still get it
    line = rmw_line(p.env)  # the re-exec'd process reads the user's value from the carrier
    assert line is not None and "rmw_cyclonedds_cpp set aside" in line and "Cyclone" in line
    again = plan(p.env, OWN, looks, pid=10)
    assert not again.changed  # a fixed point with the variable removed
    # The gateway's own rmw stays, and nothing is said about it.
    own = plan(sourced(RMW_IMPLEMENTATION="rmw_fastrtps_cpp"), OWN, looks, pid=11)
    assert own.env["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"
    assert "RMW_IMPLEMENTATION" not in own.set_aside
    assert rmw_line({"RMW_IMPLEMENTATION": "rmw_fastrtps_cpp"}) is None
    assert rmw_line({}) is None
