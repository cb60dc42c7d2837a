"""An ASGI app served by uvicorn on 127.0.0.1 in a background thread (the stand-ins' transport)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class ThreadedApp:
    """``start(app)`` binds a free port (or ``port``) and returns once uvicorn is serving."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, app: Any, port: int = 0) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.01)
        return self.port

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def wait(self) -> None:
        """Block until the server stops (a stand-in run as its own process)."""
        if self._thread is not None:
            self._thread.join()
