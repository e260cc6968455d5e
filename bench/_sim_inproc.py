"""A simulated robot behind its emulated link without a socket between them.

The link emulator (tests/fleet/linkemu.py) relays a peer's connection to the robot's own
port, as on a robot of the namespaced lab. In the simulator, robot and link live in one
process: that inner connection was a loopback socket pair per connection, a read and a
write more per chunk in each direction, which no real robot's link has. Here the link's
inner end hands the bytes to the robot's protocol directly; what the primary sees on its
connection (its bytes, their times, a close) is the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.fleet.linkemu import _Client, _Pipe


class _Inner:
    """The robot's transport: what it writes goes down the link."""

    def __init__(self, protocol: asyncio.Protocol, down: _Pipe) -> None:
        self.protocol, self.down = protocol, down
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closed and data:
            self.down.put(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        """Either side closed: the robot's protocol hears it, the primary's side closes once
        what went down before has left."""
        if self.closed:
            return
        self.closed = True
        self.down.put(None)
        asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def pause_reading(self) -> None:  # the down pipe's source: a robot writes whole answers
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, _name: str, default: Any = None) -> Any:
        return default

    def deliver(self, data: bytes) -> None:
        """Bytes the link delivered, to the robot."""
        if not self.closed:
            self.protocol.data_received(data)


class _UpSink:
    """The up pipe's sink: `write` hands the bytes to the robot."""

    def __init__(self, inner: _Inner) -> None:
        self.inner = inner

    def write(self, data: bytes) -> None:
        self.inner.deliver(data)

    def is_closing(self) -> bool:
        return self.inner.closed

    def close(self) -> None:
        self.inner.close()

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:  # the robot's server closes on a peer's EOF
        self.inner.close()


class InProcClient(_Client):
    """A peer's connection to the link whose inner end is the robot's protocol itself."""

    def __init__(self, link: Any, direction: str,
                 protocol_factory: Callable[[], asyncio.Protocol]) -> None:
        super().__init__(link, direction)
        self.protocol_factory = protocol_factory

    async def _open(self) -> None:
        assert self.transport is not None and self.out is not None
        if self.transport.is_closing():
            return
        protocol = self.protocol_factory()
        inner = _Inner(protocol, None)  # type: ignore[arg-type]
        down = _Pipe(self.link, "down", inner)  # type: ignore[arg-type]
        inner.down = down
        self.link.pipes.add(down)
        self.into = down  # the primary's socket full: the down pipe waits
        self.out.connect(_UpSink(inner))  # type: ignore[arg-type]
        down.connect(self.transport)
        protocol.connection_made(inner)  # type: ignore[arg-type]
        self.out.paused = True
        self.out._flow()
