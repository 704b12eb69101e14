"""The inspector's HTTP server: the standard library's threading server on 127.0.0.1 only.

Every request is judged in this order, before anything is read:

1. its ``Host`` must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (a page of another site
   that had its name re-pointed at 127.0.0.1 -- DNS rebinding -- sends its own name): 403;
2. its method must be GET: anything else is 405, for every path (there is no write
   endpoint, and no HEAD, OPTIONS or TRACE either);
3. its path must begin with the random token printed at start (compared in constant
   time, case-sensitive): otherwise 404, the same answer as for a page that does not exist.

A run id in a path is percent-decoded and looked up in the store as a parameter: a run the
store does not hold is 404, and nothing is ever opened by a name taken from a request.
Every response carries a strict Content-Security-Policy (no script at all, styles from the
page's own origin, no framing), ``nosniff``, ``no-referrer`` (the token never leaves in a
Referer) and ``no-store``. Requests are not logged (their paths hold the token). The
store is opened read-only afresh for each page, so a running run's page shows its
progress on the next refresh.
"""

from __future__ import annotations

import hmac
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from tidegate.errors import TidegateError, UsageError
from tidegate.inspector.proposals import read_proposals
from tidegate.inspector.run import run_page
from tidegate.inspector.runs import LIMIT, runs_page
from tidegate.inspector.style import CSS
from tidegate.store.locate import repository, repository_store
from tidegate.store.views import listing, run_view, trace_events
from tidegate.text.sanitize import sanitize

HOST = "127.0.0.1"
"""The one address served: loopback, never any other interface."""
MAX_RUN_ID = 256
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'none'; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
"""What every response carries, error responses included."""


class Inspector:
    """A repository's recorded runs served on 127.0.0.1:``port`` (0: a free port) behind a
    fresh random token; ``url`` is the address to open."""

    def __init__(self, repo: str, state_root: str | None = None, port: int = 0) -> None:
        self.root, self.common = repository(repo)
        self.state_root = state_root
        self.token = secrets.token_urlsafe(32)
        self.httpd = _Server((HOST, port), _Handler)
        self.httpd.inspector = self
        self.port = int(self.httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{self.token}/"

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def start(self) -> Inspector:
        """Serve in a daemon thread (tests, the screenshot script)."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    # -- pages --------------------------------------------------------------------------

    def answer(self, rest: str) -> tuple[int, str, str]:
        """(status, content type, body) for the path after the token."""
        base = f"/{self.token}/"
        if rest == "style.css":
            return 200, "text/css; charset=utf-8", CSS
        if rest == "":
            store = repository_store(self.state_root, self.root, self.common)
            try:
                listed = [] if store is None else listing(store, LIMIT)
            finally:
                if store is not None:
                    store.db.close()
            return 200, _HTML, runs_page(base, self.root, listed)
        if rest.startswith("run/"):
            try:
                run_id = unquote(rest[4:], errors="strict")
            except UnicodeDecodeError:
                return _not_found()
            if not run_id or len(run_id) > MAX_RUN_ID:
                return _not_found()
            return self._run(base, run_id)
        return _not_found()

    def _run(self, base: str, run_id: str) -> tuple[int, str, str]:
        store = repository_store(self.state_root, self.root, self.common)
        if store is None:
            return _not_found()
        try:
            try:
                view = run_view(store, run_id)
            except UsageError:
                return _not_found()
            if view["run"]["run_id"] != run_id:  # ``latest`` and the like: ids only
                return _not_found()
            events = trace_events(store, run_id)
        finally:
            store.db.close()
        counted = view["run"].get("attempts")
        # and the attempt after the last recorded one: a running run's current attempt
        attempts = max(counted if type(counted) is int else 0, len(view["attempts"])) + 1
        proposals = read_proposals(self.root, run_id, attempts)
        return 200, _HTML, run_page(base, view, events, proposals)


_HTML = "text/html; charset=utf-8"


def _not_found() -> tuple[int, str, str]:
    return 404, "text/plain; charset=utf-8", "not found\n"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    inspector: Inspector


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 15
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s\n"

    def do_GET(self) -> None:
        inspector = self.server.inspector
        if not self._host_ok(inspector.port):
            self._send(403, "text/plain; charset=utf-8", "forbidden\n")
            return
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        token, _, rest = path[1:].partition("/") if path.startswith("/") else ("", "", "")
        if not hmac.compare_digest(token.encode(), inspector.token.encode()):
            self._send(*_not_found())
            return
        try:
            self._send(*inspector.answer(rest))
        except TidegateError as exc:  # a store the read path refuses: its one line
            self._send(500, "text/plain; charset=utf-8", sanitize(f"{exc}\n"))
        except Exception as exc:  # said on the server's terminal, not to the browser
            sys.stderr.write(sanitize(f"tidegate inspect: {type(exc).__name__}: {exc}") + "\n")
            self._send(500, "text/plain; charset=utf-8", "internal error\n")

    def _refuse(self) -> None:
        """Every method but GET: 405, whatever the path (there is nothing to write)."""
        if not self._host_ok(self.server.inspector.port):
            self._send(403, "text/plain; charset=utf-8", "forbidden\n")
            return
        self._send(405, "text/plain; charset=utf-8", "method not allowed\n", allow=True)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return self._refuse
        raise AttributeError(name)

    def _host_ok(self, port: int) -> bool:
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1:
            return False
        return hosts[0].strip().lower() in (f"{HOST}:{port}", f"localhost:{port}")

    def _send(self, code: int, kind: str, body: str, *, allow: bool = False) -> None:
        data = body.encode("utf-8", "backslashreplace")
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        if allow:
            self.send_header("Allow", "GET")
        self.end_headers()
        self.wfile.write(data)

    def version_string(self) -> str:
        return "tidegate-inspect"

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing is logged: a request's path holds the token."""
