"""Servers on real loopback sockets: uvicorn in a thread for the app under test, real processes for upstreams."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve an ASGI app on 127.0.0.1 (a real socket) for the block; yields the base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def wait_http(url: str, timeout: float = 30.0) -> None:
    import httpx2

    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(scope="module")
def scripted_upstream() -> Iterator[str]:
    """The scripted OpenAI-compatible upstream as its own process; yields its base URL (…/v1)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "nexus.serve.scripted", "--port", str(port)])
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
