"""Fleet proof (gateway/federation/fleet_proof.py) and the primary's gate on mDNS announcements
(ProofGate in gateway/federation/mdns_trust.py)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from gateway.errors import ApiError
from gateway.federation.fleet_proof import NONCE_BYTES, new_nonce, proof, proves, valid_nonce
from gateway.federation.mdns_trust import (
    BUSY,
    CHECK,
    MAX_WARNED,
    PASS,
    PROOF_RETRY_MAX_S,
    PROOF_WARN_S,
    ProofGate,
)
from gateway.federation.routes import fleet_proof, register
from gateway.federation.settings import FederationSettings
from gateway.http.routes import Registry
from gateway.http.state import STATE, GatewayState
from gateway.model.roles import Role
from gateway.settings import config
from gateway.settings.config import Settings

SECRET = "correct horse battery staple"
NONCE = "00112233445566778899aabbccddeeff"
A, B = "http://192.168.1.10:8080", "http://192.168.1.66:8080"


def test_the_proof_is_an_hmac_of_label_nonce_and_name() -> None:
    expected = hmac.new(SECRET.encode(), b"fleet-proof\x00" + bytes.fromhex(NONCE) + b"robot-a",
                        hashlib.sha256).hexdigest()
    assert proof(SECRET, NONCE, "robot-a") == expected
    assert proves(SECRET, NONCE, "robot-a", {"proof": expected})


def test_a_proof_is_bound_to_the_secret_the_nonce_and_the_name() -> None:
    answer = {"proof": proof(SECRET, NONCE, "robot-a")}
    assert not proves(SECRET, NONCE, "robot-b", answer)  # relayed from robot-a for robot-b
    assert not proves(SECRET, "ff" * NONCE_BYTES, "robot-a", answer)  # replayed
    assert not proves("another secret", NONCE, "robot-a", answer)
    # nor is it a connect token made with the same secret (HMAC(secret, name))
    token = hmac.new(SECRET.encode(), b"robot-a", hashlib.sha256).hexdigest()
    assert not proves(SECRET, NONCE, "robot-a", {"proof": token})


def test_malformed_answers_prove_nothing() -> None:
    answers: tuple[Any, ...] = (None, [], {}, {"proof": 1}, {"proof": ""}, {"proof": "é" * 64},
                                "x")
    for answer in answers:
        assert not proves(SECRET, NONCE, "robot-a", answer)


def test_nonces_are_fresh_and_of_a_fixed_size() -> None:
    nonces = {new_nonce() for _ in range(100)}
    assert len(nonces) == 100
    assert all(valid_nonce(n) and len(n) == 2 * NONCE_BYTES for n in nonces)
    for bad in ("", "00", NONCE + "00", "zz" * NONCE_BYTES, NONCE[:-1], " 0" * NONCE_BYTES):
        assert not valid_nonce(bad)


def test_the_secret_setting_is_off_by_default_and_read_from_its_file(tmp_path: Path) -> None:
    fs = FederationSettings.from_settings(config.load())
    assert fs.mdns.fleet_secret == ""
    path = tmp_path / "fleet"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    s = config.load(overrides=[f"aggregation.fleet_secret_file={path}"])
    fs = FederationSettings.from_settings(s)
    assert fs.mdns.fleet_secret == SECRET and fs.warnings == ()
    assert SECRET not in repr(fs)
    short = FederationSettings.from_settings(config.load(overrides=[
        "aggregation.fleet_secret=short"]))
    assert any("aggregation.fleet_secret" in w for w in short.warnings)


def test_an_announcement_is_used_only_once_proved_at_its_address() -> None:
    gate = ProofGate(50, 16)
    assert gate.announced("r1", A, 0.0) == CHECK  # asked
    assert gate.announced("r1", A, 0.0) == BUSY  # asked once, not per announcement
    gate.passed("r1", A)
    assert gate.announced("r1", A, 0.0) == PASS
    assert gate.announced("r1", B, 0.0) == CHECK  # a new address proves there first
    assert gate.failed("r1", B, 1.0) is not None
    assert gate.announced("r1", A, 1.0) == PASS  # the proved address still passes


def test_unproved_candidates_back_off_and_warn_rarely() -> None:
    gate = ProofGate(50, 16)
    assert gate.announced("r1", A, 0.0) == CHECK
    delays: list[float] = []
    for _ in range(8):
        delay = gate.failed("r1", A, 1.0)
        assert delay is not None
        delays.append(delay)
    assert delays == sorted(delays) and delays[0] < delays[-1] == PROOF_RETRY_MAX_S
    assert gate.warn("r1", now=0.0)
    assert not gate.warn("r1", now=PROOF_WARN_S - 1.0)
    assert gate.warn("r2", now=1.0)  # per name
    assert gate.warn("r1", now=PROOF_WARN_S)


def test_unproved_names_from_one_address_are_capped() -> None:
    gate = ProofGate(max_pending=10, max_per_address=3)
    fakes = [f"http://10.0.0.66:{9000 + i}" for i in range(5)]
    assert [gate.announced(f"f{i}", u, 0.0) for i, u in enumerate(fakes[:3])] == [CHECK] * 3
    gate.failed("f1", fakes[1], 1.0)
    assert gate.announced("f3", fakes[3], 2.0) == CHECK  # in the place of the failing f1
    assert gate.take_dropped() == [("f1", fakes[1])]
    assert gate.announced("r1", A, 2.0) == CHECK  # another address keeps its own places
    assert gate.take_dropped() == []
    gate.passed("f0", fakes[0])  # a proved one no longer counts
    assert gate.announced("f4", fakes[4], 3.0) == CHECK and gate.take_dropped() == []
    assert sum(1 for _, u in gate.pending if u.startswith("http://10.0.0.66:")) == 3


def test_a_goodbye_drops_the_proof_and_the_candidates() -> None:
    gate = ProofGate(50, 16)
    gate.announced("r1", A, 0.0)
    gate.passed("r1", A)
    gate.announced("r1", B, 0.0)
    assert gate.left("r1") == [B]
    assert gate.announced("r1", A, 0.0) == CHECK  # announced again: proves again


def answer_of(settings: Settings, query: str) -> tuple[int, dict[str, object]]:
    """Status and body of the proof route for a gateway with these settings."""
    app = web.Application()
    app[STATE] = cast(GatewayState, SimpleNamespace(settings=settings))
    request = make_mocked_request("GET", f"/api/v1/x-vendor-fleet-proof{query}", app=app)
    try:
        response = asyncio.run(fleet_proof(request))
    except ApiError as err:
        return err.status, err.body("vendor")
    assert isinstance(response, web.Response) and isinstance(response.body, bytes)
    return response.status, json.loads(response.body)


def test_the_route_answers_the_proof_of_its_own_name() -> None:
    settings = config.load(None, [f"aggregation.fleet_secret={SECRET}",
                                  "aggregation.mdns_name=robot-a"])
    status, body = answer_of(settings, f"?nonce={NONCE}")
    assert status == 200 and proves(SECRET, NONCE, "robot-a", body)
    assert answer_of(settings, "?nonce=00")[0] == 400
    assert answer_of(settings, "")[0] == 400


def test_the_route_is_404_without_a_secret() -> None:
    settings = config.load(None, ["aggregation.mdns_name=robot-a"])
    assert answer_of(settings, f"?nonce={NONCE}")[0] == 404


def test_the_route_is_a_viewer_get_named_with_the_vendor_word() -> None:
    reg = Registry("acme")
    register(reg)
    route = next(r for r in reg if r.path == "/x-acme-fleet-proof")
    assert route.method == "GET" and route.role is Role.VIEWER and route.feature is None


def test_a_flood_of_names_is_not_remembered_without_bound() -> None:
    gate = ProofGate(50, 16)
    assert all(gate.warn(f"f{i}", now=0.0) for i in range(MAX_WARNED))
    assert not gate.warn("one-more", now=1.0)  # the flood's warnings stop
    assert gate.warn("later", now=PROOF_WARN_S)  # stale names forgotten
    assert len(gate.warned) == 1
