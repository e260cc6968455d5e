"""Script runs in process (the scripts handlers over the real runner, which starts the scripts
as processes): the concurrency cap answers 429, a run past its sidecar's timeout is
terminated."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bulk_data.test_inproc_bulk_scripts import finished
from tests.inproc.inproc_gateway import Gw, Runner

APP = "/api/v1/apps/actuator"
SCRIPTS = {"hello.sh": "echo hello\n", "slow.sh": "echo slow\nsleep 60\n",
           "nap.bash": "sleep 60\n"}
SIDECARS = {"nap.json": {"timeout_sec": 1}}
CAP_CODE = {"spec": "script-concurrency-limit", "medkit": "x-medkit-concurrency-limit"}


def catalog(tmp: Path) -> tuple[str, ...]:
    """A managed scripts directory; at most two runs at once."""
    scripts_dir = tmp / "scripts"
    scripts_dir.mkdir()
    for name, text in SCRIPTS.items():
        (scripts_dir / name).write_text(text)
    for name, meta in SIDECARS.items():
        (scripts_dir / name).write_text(json.dumps(meta))
    return (f"scripts.scripts_dir={scripts_dir}", "scripts.allow_root=true",
            "scripts.allow_anonymous=true", "scripts.max_concurrent_executions=2")


async def started(gw: Gw, script: str) -> str:
    """Start a run; its execution path."""
    async with gw.client.post(f"{APP}/scripts/{script}/executions",
                              json={"execution_type": "now"}) as resp:
        assert resp.status == 202, await resp.text()
        return str(resp.headers["Location"])




def test_concurrency_cap(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        paths = [await started(gw, "slow"), await started(gw, "slow")]
        async with gw.client.post(f"{APP}/scripts/hello/executions",
                                  json={"execution_type": "now"}) as resp:
            assert resp.status == 429, await resp.text()
            assert "retry-after" not in resp.headers
            assert "x-ratelimit-limit" not in resp.headers
            body = await resp.json()
        assert body["error_code"] == "vendor-error"
        assert body["vendor_code"] == CAP_CODE[gw.profile], body
        assert body["parameters"]["max_concurrent_executions"] == 2
        for path in paths:
            status, _ = await gw.json("PUT", path, json={"action": "forced_termination"})
            assert status == 202
        for path in paths:
            assert (await finished(gw, path))["status"] == "terminated"
        status, body = await gw.json("GET", f"{APP}/scripts/slow/executions")
        assert {i["status"] for i in body["items"]} == {"terminated"}
        # a slot is free again
        assert (await finished(gw, await started(gw, "hello")))["status"] == "completed"

    gateway(scenario, settings=catalog(tmp_path))


def test_timeout_terminates(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        body = await finished(gw, await started(gw, "nap"))
        assert body["status"] == "terminated", body
        assert body["error"]["error_code"] == "script-timeout"

    gateway(scenario, settings=catalog(tmp_path))
