"""The wire under the SDKs: base URL checks, the no-real-models switch, and cancellation.

**The switch.** With ``TIDEGATE_FORBID_MODEL_NETWORK=1`` the adapters refuse every base URL
whose host is not a loopback address, both when they are built and before every request.
The test suite sets it, so no test can reach a real provider.

**Cancellation.** Each call has an ``InflightCall``. Its HTTP client opens a fresh
connection per request (no keep-alive) and reports the socket through httpx's ``trace``
extension as soon as it is connected; when the caller's cancel event fires, a watcher
thread shuts that socket down, which wakes the blocked read at once wherever it is —
waiting for headers, or between two stream chunks. A connection per request costs one
handshake per model call, small next to the generation itself, and is what makes a cut
always possible.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import os
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tidegate.models.errors import ModelCancelled, ModelConfigError, ModelNetworkForbidden

if TYPE_CHECKING:
    import httpx2  # the [models] extra: loaded by the provider adapters that use it

FORBID_ENV = "TIDEGATE_FORBID_MODEL_NETWORK"
_LOOPBACK_NAMES = {"localhost"}
_CANCEL_POLL_S = 0.02


def network_forbidden(env: Mapping[str, str]) -> bool:
    return env.get(FORBID_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def endpoint_of(base_url: str) -> str:
    """host[:port] of a base URL, after checking it carries no credentials.

    Raises ``ModelConfigError`` for a non-HTTP URL, or one with user info or a query
    string — credentials belong in the API key variable, never in a URL.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ModelConfigError(
            f"model base URL must be http(s)://host[:port][/path], got {parts.scheme or 'no'} scheme"
        )
    if parts.username is not None or parts.password is not None:
        raise ModelConfigError(
            "model base URL must not contain credentials; use the API key variable"
        )
    if parts.query or parts.fragment:
        raise ModelConfigError("model base URL must not have a query string or fragment")
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{parts.port}" if parts.port else shown


def is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_network_allowed(base_url: str, env: Mapping[str, str]) -> None:
    """Raise ``ModelNetworkForbidden`` when the switch is on (in ``env`` or the process
    environment) and ``base_url`` is not loopback."""
    if (network_forbidden(env) or network_forbidden(os.environ)) and not is_loopback(base_url):
        raise ModelNetworkForbidden(
            f"real model requests are switched off ({FORBID_ENV}=1): refusing "
            f"{endpoint_of(base_url)}; only 127.0.0.1, ::1 and localhost are allowed"
        )


_current: contextvars.ContextVar[InflightCall | None] = contextvars.ContextVar(
    "tidegate_model_inflight", default=None
)


def _install_trace(request: httpx2.Request) -> None:
    call = _current.get()
    if call is not None:
        request.extensions["trace"] = call.trace


def http_client(timeout_s: float, connect_timeout_s: float = 10.0) -> httpx2.Client:
    """The HTTP client every adapter hands its SDK.

    No keep-alive (see the module docstring), and no redirects: the credential header goes
    to the configured host and nowhere else.
    """
    import httpx2

    return httpx2.Client(
        timeout=httpx2.Timeout(timeout_s, connect=connect_timeout_s),
        limits=httpx2.Limits(max_keepalive_connections=0),
        follow_redirects=False,
        event_hooks={"request": [_install_trace]},
    )


class InflightCall:
    """One model call's link between the caller's cancel event and its socket."""

    def __init__(self, cancel: threading.Event | None) -> None:
        self._cancel = cancel
        self._lock = threading.Lock()
        self._streams: list[Any] = []
        self._cut = False
        self._done = threading.Event()
        self._watcher: threading.Thread | None = None

    def __enter__(self) -> InflightCall:
        if self._cancel is not None:
            self._watcher = threading.Thread(
                target=self._watch, name="tidegate-model-cancel", daemon=True
            )
            self._watcher.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._watcher is not None:
            self._watcher.join()

    @property
    def cancelled(self) -> bool:
        return self._cancel is not None and self._cancel.is_set()

    def check(self) -> None:
        if self.cancelled:
            raise ModelCancelled("the model request was cancelled")

    def sleep(self, seconds: float) -> None:
        """Back off for ``seconds``, or until cancelled (then raise ``ModelCancelled``)."""
        if self._cancel is None:
            self._done.wait(seconds)
        elif self._cancel.wait(seconds):
            raise ModelCancelled("the model request was cancelled while backing off")

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Mark the SDK call that opens the connection, so its socket is captured."""
        token = _current.set(self)
        try:
            yield
        finally:
            _current.reset(token)

    def trace(self, name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.complete":
            self.attach(info.get("return_value"))

    def attach(self, network_stream: Any) -> None:
        if network_stream is None:
            return
        with self._lock:
            self._streams.append(network_stream)
            cut = self._cut
        if cut:
            _shutdown(network_stream)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            streams = list(self._streams)
        for stream in streams:
            _shutdown(stream)

    def _watch(self) -> None:
        assert self._cancel is not None
        while not self._done.wait(_CANCEL_POLL_S):
            if self._cancel.is_set():
                self.cut()
                return


def _shutdown(network_stream: Any) -> None:
    sock = network_stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing left to cut
            sock.shutdown(socket.SHUT_RDWR)
