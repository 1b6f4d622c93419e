"""chronoq local's HTTP servers (the gateway, the embedded AWS's endpoint) stop at once.

socketserver's ``serve_forever`` looks at its shutdown flag once per ``poll_interval`` (half a
second by default), so each ``shutdown`` waited up to that long, one server after the other:
most of what stopping chronoq local took. Here ``shutdown`` wakes the loop through a socket
pair instead, and returns as soon as the loop has ended; the loop still wakes each
``poll_interval`` for socketserver's ``service_actions``."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from http.server import ThreadingHTTPServer
from typing import Any


class PromptServer(ThreadingHTTPServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._wake_out, self._wake_in = socket.socketpair()
        self._wake_out.setblocking(False)
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()  # (a server never served is stopped: shutdown returns at once)
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            self._close_wake()
            raise

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stopped.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake_out, selectors.EVENT_READ)
                while not self._stopping.is_set():
                    ready = {key.fileobj for key, _ in selector.select(poll_interval)}
                    if self._stopping.is_set():
                        break
                    if self._wake_out in ready:
                        with contextlib.suppress(BlockingIOError):
                            self._wake_out.recv(64)
                    if self in ready:
                        self._handle_request_noblock()  # type: ignore[attr-defined]
                    self.service_actions()
        finally:
            self._stopping.clear()
            self._stopped.set()

    def shutdown(self) -> None:
        """End ``serve_forever`` (running in another thread) and wait for it, without waiting
        for its poll interval."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_in.send(b"\0")
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._close_wake()

    def _close_wake(self) -> None:
        self._wake_out.close()
        self._wake_in.close()
