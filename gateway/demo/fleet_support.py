"""Pure helpers of the fleet demo (deploy/fleet_demo.py): its mDNS service type, its waits
and the report of a process that did not come up."""

from __future__ import annotations

import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

DEFAULT_WAIT_S = 180.0  # for the primary to answer: a loaded machine starts slowly
DEFAULT_JOIN_WAIT_S = 60.0  # for each robot to show in the primary's /health
TAIL_LINES = 25


def run_service(token: str | None = None) -> str:
    """An mDNS service type of this run only (`_dg-<6 hex>._tcp.local.`), so two fleet demos
    on one host do not see each other's gateways (a label is at most 15 characters)."""
    return f"_dg-{token or secrets.token_hex(3)}._tcp.local."


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of a log, or a line saying it is missing or empty."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"  ({path} cannot be read: {exc.strerror})"
    if not text.strip():
        return f"  ({path} is empty: the process wrote nothing yet)"
    return "\n".join("  | " + line for line in text.splitlines()[-lines:])


def failure_report(what: str, log: Path, waited_s: float, exit_code: int | None,
                   wait_option: str) -> str:
    """What did not come up, why as far as known, the tail of its log and the next step."""
    if exit_code is not None:
        cause = f"{what} exited with code {exit_code} after {waited_s:.0f} s"
        step = "fix the cause its log names and run again"
    else:
        cause = f"{what} did not answer within {waited_s:.0f} s"
        step = (f"it may only be slow: give it longer with {wait_option} "
                "(make fleet-demo FLEET_WAIT=SEC)")
    return f"{cause}; last lines of {log}:\n{log_tail(log)}\n{step}"


def wait_http(url: str, timeout: float, check: str = "",
              alive: Callable[[], bool] = lambda: True,
              sleep: Callable[[float], None] = time.sleep,
              clock: Callable[[], float] = time.monotonic) -> bool:
    """True once url answers (any status: a degraded 503 is an answer) with `check` in its
    body; False at the timeout or as soon as `alive()` says the process is gone."""
    deadline = clock() + timeout
    while clock() < deadline:
        if not alive():
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                body = resp.read().decode()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
        except OSError:
            body = None
        if body is not None and check in body:
            return True
        sleep(0.3)
    return False
