from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.sandbox import Sandbox


@pytest.fixture(scope="session")
def sandbox():
    with Sandbox(SandboxConfig(workers=4)) as sb:
        yield sb


class Listener:
    """A TCP server on the host's 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def reachable_from_host(self) -> bool:
        """Connect from this process, outside any sandbox: the probe's control."""
        before = self.accepted
        socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        for _ in range(100):
            if self.accepted > before:
                return True
            threading.Event().wait(0.01)
        return False


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.server.close()
