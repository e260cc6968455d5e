"""The cost of authentication: an authenticated cached data read against the same read with auth
off, all gateways running side by side in one run over the same robot; a second auth-off
gateway is measured as a control, so its ratio shows the noise floor of the machine.

Prints requests/s and p50/p99 of each and the ratio auth-on / auth-off (HS256 and RS256, mode
`all`, one bearer token reused as a real client would: the verified-token cache is warm), then
the in-process cost of the auth check itself per request, with the token cache hit and missed.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import psutil
from aiohttp.test_utils import make_mocked_request

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._load import LoadResult, median, run_load  # noqa: E402
from gateway.auth import enforce  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from gateway.http.routes import Route  # noqa: E402
from gateway.model.roles import Role  # noqa: E402
from gateway.settings import config  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import enc  # noqa: E402
from tests.integration.test_security_helpers import (  # noqa: E402
    SecureGateway,
    auth_settings,
    bearer,
    write_rsa_keys,
)

DOMAIN = 96
SECONDS = 3.0
ROUNDS = 5
ITEM = "/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature")
PATH = "/api/v1" + ITEM


def _wait_for_data(gw: SecureGateway, headers: dict[str, str], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        resp = gw.request("GET", ITEM, headers=headers)
        if resp.status == 200 and resp.json()["x-vendor"]["status"] == "data":
            return
        time.sleep(0.1)
    raise RuntimeError(f"no data through the gateway on port {gw.port}")


def check_cost_us(algorithm: str, d: Path, miss: bool, n: int) -> float:
    """Microseconds per guard auth check (in-process, one GET route needing viewer)."""
    if algorithm == "RS256":
        private, _, _ = write_rsa_keys(d)
        keys = ["auth.jwt_algorithm=RS256", f"auth.jwt_secret={private}"]
    else:
        keys = ["auth.jwt_secret=" + "k" * 40]
    s = config.load(None, ["auth.enabled=true", "auth.require_auth_for=all",
                           f"state_dir={d}", *keys])
    rt = enforce.build_runtime(s)
    assert rt.tokens is not None
    token = rt.tokens.issue("bench", Role.VIEWER, "family", time.time())
    check = enforce.make_check(rt)

    async def handler(request: object) -> None:
        return None

    route = Route("GET", "/x", handler, Role.VIEWER, "")  # type: ignore[arg-type]
    request = make_mocked_request("GET", "/api/v1/x", headers={"Authorization": f"Bearer {token}"})

    async def run() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            if miss:
                rt.tokens._cache.clear()  # type: ignore[union-attr]
            await check(request, route)
        return (time.perf_counter() - t0) / n * 1e6

    try:
        return asyncio.run(run())
    finally:
        rt.grants.store.close()


def main() -> None:
    """Run the comparison and print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        private, public, _ = write_rsa_keys(d)
        rs256 = ["auth.enabled=true", "auth.jwt_algorithm=RS256", f"auth.jwt_secret={private}",
                 f"auth.jwt_public_key={public}", "auth.require_auth_for=all",
                 "auth.clients=[bench:bench-secret:viewer]", f"state_dir={d / 'rs'}"]
        with Robot.start(DOMAIN, nodes=("temp_sensor",)), \
                SecureGateway(free_port(), DOMAIN, [f"state_dir={d / 'off'}"], None) as off, \
                SecureGateway(free_port(), DOMAIN, [f"state_dir={d / 'ctl'}"], None) as ctl, \
                SecureGateway(free_port(), DOMAIN, auth_settings(d / "hs", "all"), None) as hs, \
                SecureGateway(free_port(), DOMAIN, rs256, None) as rs:
            for gw in (off, ctl):
                gw.wait_for(ITEM, lambda b: b["x-vendor"]["status"] == "data")
            tokens = {"hs": hs.token("viewer-client", "viewer-secret")["access_token"],
                      "rs": rs.token("bench", "bench-secret")["access_token"]}
            for gw, key in ((hs, "hs"), (rs, "rs")):
                _wait_for_data(gw, bearer(tokens[key]))
                assert gw.status("GET", ITEM) == 401  # auth really is enforced
            runs = {
                "off": (off, ""),
                "ctl": (ctl, ""),
                "hs": (hs, f"Authorization: Bearer {tokens['hs']}\r\n"),
                "rs": (rs, f"Authorization: Bearer {tokens['rs']}\r\n"),
            }
            for gw, headers in runs.values():  # warm-up
                asyncio.run(run_load("127.0.0.1", gw.port, PATH, 1.0, headers=headers))
            results: dict[str, list[LoadResult]] = {k: [] for k in runs}
            cpu_us: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(ROUNDS):  # interleaved, so drift hits every variant alike
                for name, (gw, headers) in runs.items():
                    assert gw.proc is not None
                    proc = psutil.Process(gw.proc.pid)
                    before = sum(proc.cpu_times()[:2])
                    res = asyncio.run(run_load("127.0.0.1", gw.port, PATH, SECONDS,
                                               headers=headers))
                    results[name].append(res)
                    cpu_us[name].append((sum(proc.cpu_times()[:2]) - before) / res.requests * 1e6)
    best = {k: max(v, key=lambda r: r.rps) for k, v in results.items()}
    for name, res in best.items():
        assert res.errors == 0, f"{name}: {res.errors} error answers"
    print(f"cached data read, 16 connections, best of {ROUNDS} x {SECONDS:g} s, "
          "interleaved")
    print(best["off"].line("auth off"))
    print(best["ctl"].line("auth off, second gateway (control)"))
    print(best["hs"].line("auth all, HS256 bearer token"))
    print(best["rs"].line("auth all, RS256 bearer token"))
    print(f"ratio of best HS256/off: {best['hs'].rps / best['off'].rps:.2f}   "
          f"RS256/off: {best['rs'].rps / best['off'].rps:.2f}   "
          f"control/off: {best['ctl'].rps / best['off'].rps:.2f} (noise floor)")
    paired = {k: median([on.rps / off.rps for on, off in zip(results[k], results["off"],
                                                              strict=True)])
              for k in ("hs", "rs", "ctl")}
    print(f"median of per-round ratios (round-paired) HS256/off: {paired['hs']:.2f}   "
          f"RS256/off: {paired['rs']:.2f}   control/off: {paired['ctl']:.2f}")
    cpu = {k: median(v) for k, v in cpu_us.items()}
    print("gateway CPU per request (median of rounds; robust to a busy machine): "
          + "   ".join(f"{k} {cpu[k]:.0f} us" for k in ("off", "ctl", "hs", "rs")))
    print(f"CPU ratio off/HS256: {cpu['off'] / cpu['hs']:.2f}   off/RS256: "
          f"{cpu['off'] / cpu['rs']:.2f}   off/control: {cpu['off'] / cpu['ctl']:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        costs = {(alg, miss): check_cost_us(alg, Path(tmp), miss, 2000 if miss else 200000)
                 for alg in ("HS256", "RS256") for miss in (False, True)}
    print("auth check per request, in-process: "
          + "   ".join(f"{alg} {costs[(alg, False)]:.1f} us (cache miss {costs[(alg, True)]:.0f} us)"
                       for alg in ("HS256", "RS256")))


if __name__ == "__main__":
    main()
