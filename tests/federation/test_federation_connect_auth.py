"""Robot identity over connect-out (gateway/federation/connect_auth.py): proofs, admission,
limits."""

import hashlib
import hmac
from pathlib import Path

import pytest

from gateway.federation.connect_auth import (
    ROBOT,
    SHARED,
    ConnectGate,
    Credentials,
    RateLimiter,
    Refused,
    admit,
    robot_entries,
    robot_token,
)
from gateway.settings.config import ConfigError

SECRET = "fleet-shared-secret-0123456789"
KEY = "the-primarys-robot-key-0123456789abcdef"


def test_a_robot_token_is_an_hmac_of_its_name() -> None:
    want = hmac.new(KEY.encode(), b"diag-gateway connect v1\x00robot1",
                    hashlib.sha256).hexdigest()
    assert robot_token(KEY, "robot1") == want
    assert robot_token(KEY, "robot2") != want
    assert robot_token("other-key", "robot1") != want


def test_a_robots_issued_token_proves_its_name_alone() -> None:
    creds = Credentials(SECRET, {}, accept_shared=False, robot_key=KEY)
    own = robot_token(KEY, "robot1")
    assert creds.proof("robot1", own) == ROBOT
    assert creds.proof("robot2", own) is None  # robot1's token names no other robot
    assert creds.proof("robot1", SECRET) is None  # the shared secret is refused when off
    assert creds.proof("robot1", "") is None


def test_a_token_computed_from_the_shared_secret_names_no_robot() -> None:
    computed = robot_token(SECRET, "robot1")  # what anyone holding the shared token computes
    assert Credentials(SECRET, {}, accept_shared=False, robot_key=KEY).proof(
        "robot1", computed) is None
    # while the shared token is accepted, its older derivation proves as much as it: no name
    assert Credentials(SECRET, {}, accept_shared=True, robot_key=KEY).proof(
        "robot1", computed) == SHARED
    assert Credentials(SECRET, {}, accept_shared=True).proof("robot1", computed) == SHARED


def test_the_robot_key_is_never_the_shared_secret() -> None:
    with pytest.raises(ConfigError, match="aggregation.connect_robot_secret"):
        Credentials(SECRET, {}, robot_key=SECRET)


def test_the_shared_token_is_accepted_only_as_a_nameless_proof() -> None:
    creds = Credentials(SECRET, {"robot9": "r9-own-token-abcdefgh"}, accept_shared=True,
                        robot_key=KEY)
    assert creds.proof("robot1", SECRET) == SHARED
    assert creds.proof("robot1", robot_token(KEY, "robot1")) == ROBOT
    # a robot listed in connect_robots must present its listed token
    assert creds.proof("robot9", SECRET) is None
    assert creds.proof("robot9", robot_token(KEY, "robot9")) is None
    assert creds.proof("robot9", robot_token(SECRET, "robot9")) is None
    assert creds.proof("robot9", "r9-own-token-abcdefgh") == ROBOT
    warning = creds.warnings()
    assert warning and "connect_accept_shared" in warning[0] and "free name" in warning[0]
    assert Credentials(SECRET, {}, accept_shared=False).warnings() == []


def test_listed_robots_need_no_shared_secret() -> None:
    creds = Credentials("", robot_entries(["robot1: r1-own-token-abcdefgh", "# comment", ""]))
    assert creds.enabled
    assert creds.proof("robot1", "r1-own-token-abcdefgh") == ROBOT
    assert creds.proof("robot2", "r1-own-token-abcdefgh") is None
    assert not Credentials("", {}).enabled


@pytest.mark.parametrize("entries", [["robot1"], ["robot1:short"], [":token-long-enough-xx"],
                                     ["a:token-long-enough-xx", "a:token-long-enough-yy"]])
def test_bad_robot_entries_name_the_setting(entries: list[str]) -> None:
    with pytest.raises(ConfigError, match="aggregation.connect_robots"):
        robot_entries(entries)


def test_a_live_robot_is_replaced_only_by_its_own_token() -> None:
    live = {"robot1": ROBOT}
    with pytest.raises(Refused) as refused:
        admit("robot1", SHARED, live, other_peer=False, cap=10)
    assert refused.value.status == 409 and "robot1" in refused.value.message
    admit("robot1", ROBOT, live, other_peer=False, cap=10)  # the robot reconnecting
    admit("robot1", ROBOT, {"robot1": SHARED}, other_peer=False, cap=10)  # proven beats shared
    admit("robot2", SHARED, live, other_peer=False, cap=10)  # a free name


def test_the_shared_token_cannot_take_a_live_or_held_robots_name() -> None:
    creds = Credentials(SECRET, {}, accept_shared=True, robot_key=KEY)
    for token in (SECRET, robot_token(SECRET, "robot1")):
        proof = creds.proof("robot1", token)
        assert proof == SHARED
        with pytest.raises(Refused) as live:
            admit("robot1", proof, {"robot1": ROBOT}, other_peer=False, cap=10)
        assert live.value.status == 409 and "connected already" in live.value.message
        with pytest.raises(Refused) as held:  # listed offline after proving its name
            admit("robot1", proof, {}, other_peer=False, cap=10, held=ROBOT)
        assert held.value.status == 409 and "listed offline" in held.value.message
    admit("robot1", ROBOT, {}, other_peer=False, cap=10, held=ROBOT)  # the robot itself
    admit("robot1", SHARED, {}, other_peer=False, cap=10, held=SHARED)  # never proved


def test_a_configured_peer_is_never_replaced() -> None:
    with pytest.raises(Refused) as refused:
        admit("lab", ROBOT, {}, other_peer=True, cap=10)
    assert refused.value.status == 409 and "'lab'" in refused.value.message


def test_connected_robots_are_capped_but_a_reconnect_is_not() -> None:
    live = {"a": ROBOT, "b": SHARED}
    with pytest.raises(Refused) as refused:
        admit("c", ROBOT, live, other_peer=False, cap=2)
    assert refused.value.status == 503
    assert "'c'" in refused.value.message and "max_connected_robots" in refused.value.message
    admit("a", ROBOT, live, other_peer=False, cap=2)


def test_attempts_are_limited_per_source_address() -> None:
    limiter = RateLimiter(per_minute=3)
    assert [limiter.take("10.0.0.1", 100.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.take("10.0.0.1", 100.0)
    assert wait == pytest.approx(20.0)
    assert limiter.take("10.0.0.2", 100.0) == 0.0  # another source has its own bucket
    assert limiter.take("10.0.0.1", 119.0) > 0.0
    assert limiter.take("10.0.0.1", 121.0) == 0.0  # refilled one attempt per 20 s


def test_the_oldest_source_is_forgotten_past_the_cap() -> None:
    limiter = RateLimiter(per_minute=1, max_sources=2)
    for source in ("a", "b", "c"):
        limiter.take(source, 0.0)
    assert list(limiter.buckets) == ["b", "c"]
    assert limiter.take("a", 0.0) == 0.0  # forgotten: a fresh bucket


def test_the_gate_tracks_who_holds_a_name() -> None:
    gate = ConnectGate(Credentials(SECRET), per_minute=60, cap=5)
    first, second = object(), object()
    gate.claim("robot1", ROBOT, first)
    gate.claim("robot1", ROBOT, second)  # the robot reconnected
    assert not gate.release("robot1", first)  # the old tunnel's end leaves the name alone
    assert gate.live == {"robot1": ROBOT}
    assert gate.holds("robot1", second) and gate.release("robot1", second)
    assert gate.live == {} and gate.owner == {}


def test_robot_tokens_come_from_a_file(tmp_path: Path) -> None:
    from gateway.settings import config

    f = tmp_path / "robots"
    f.write_text("robot1:r1-own-token-abcdefgh\nrobot2:r2-own-token-abcdefgh\n")
    f.chmod(0o600)
    settings = config.load(None, [f"aggregation.connect_robots_file={f}",
                                  f"state_dir={tmp_path / 'state'}",
                                  "aggregation.connect_accept_shared=false"])
    gate = ConnectGate.from_settings(settings)
    assert gate.credentials.proof("robot2", "r2-own-token-abcdefgh") == ROBOT
    assert gate.credentials.proof("robot1", "r2-own-token-abcdefgh") is None
    assert gate.cap == 1000 and gate.limiter.capacity == 60
