"""A node in an rclpy context of its own (a DDS participant apart from the test's others),
spun by an executor on a daemon thread until close()."""

from __future__ import annotations

import threading

import rclpy
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions


class OwnNode:
    """`self.node` named `name` in a new context; subclasses make its entities, then start()."""

    def __init__(self, domain: int, name: str) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context)
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def start(self, threads: int = 1) -> None:
        """Spin the node on `threads` executor threads (a multi-threaded executor above 1)."""
        self.executor = (MultiThreadedExecutor(num_threads=threads, context=self.context)
                         if threads > 1 else SingleThreadedExecutor(context=self.context))
        self.executor.add_node(self.node)
        self.thread.start()

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception:  # shutdown while spinning
                return

    def close(self) -> None:
        """Shut the context down."""
        rclpy.shutdown(context=self.context)
        self.thread.join(5)
