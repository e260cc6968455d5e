"""A validation worker process: JSON requests on stdin, problems on stdout (schema_worker.py).

Each input line is `{"schema": ..., "instance": ...}`; each answer line `{"problems": [...]}`,
with `"retire": true` when the worker leaves after it (out of memory, an unexpected error, or
holding much memory after a large validation).
The first line out is `{"ready": true}`, once the imports are done. End of input ends it.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the gateway ends, however it ends; leave now if it already has. Like the
    gateway, not inspectable by processes of its user (scripts)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(0)


def _limit_memory(limit: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file


def _status_bytes(field: bytes) -> int:
    """A size of /proc/self/status (VmPeak: the most address space held, VmRSS: the memory
    held now), 0 when unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for row in f:
                if row.startswith(field + b":"):
                    return int(row.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _answer(line: bytes, limit: int) -> dict[str, object]:
    from . import safeschema  # noqa: PLC0415 - after the memory limit (re2, jsonschema)

    try:
        request = json.loads(line)
        return {"problems": safeschema.validation_problems(request["schema"],
                                                           request["instance"])}
    except Exception as exc:  # the gateway gets a problem naming it, never a stuck worker
        # Out of memory surfaces as MemoryError, or as a SystemError from C code
        if isinstance(exc, MemoryError) or _status_bytes(b"VmPeak") > limit * 0.9:
            problem = (f"(schema): validation needed more than {limit >> 20} MiB (the "
                       "validation worker's memory limit) and was stopped; simplify the schema "
                       "(nested $ref, allOf/anyOf/oneOf) or the parameters")
        else:
            problem = f"(schema): validation failed: {type(exc).__name__}: {exc}"[:1000]
        return {"problems": [problem], "retire": True}


def main(argv: list[str]) -> None:
    """Serve validation requests until end of input; argv: gateway pid, memory limit (bytes)."""
    parent, limit = int(argv[0]), int(argv[1])
    _die_with_parent(parent)
    # The gateway ends its workers (at the budget, at its stop): a stop signal sent to its
    # whole group (systemd, a terminal's ^C) must not cut the validation in flight short
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _limit_memory(limit)
    from . import safeschema  # noqa: PLC0415 - after the memory limit (re2, jsonschema)

    safeschema.validator({})  # jsonschema, referencing and RE2 imported before the first request
    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        answer = _answer(line, limit)
        if _status_bytes(b"VmRSS") > limit // 4:
            answer["retire"] = True  # a large validation's memory goes back with the process
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()
        if answer.get("retire"):
            return
