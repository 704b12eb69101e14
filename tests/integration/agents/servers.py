"""Scripted model servers on 127.0.0.1 for the real agent CLIs (labelled test doubles of a
model provider, not of the agents): the Responses API that Codex speaks and the Chat
Completions API that aider speaks. Each answers from a script, one turn per request, and
records what it received so a test can check that feedback reached the agent."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedServer:
    def __init__(self, answer: Callable[[int, dict[str, Any]], bytes | None]) -> None:
        self.requests: list[dict[str, Any]] = []
        self._answer = answer
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def texts(self) -> list[str]:
        """Every request body as text (for checking what the agent sent)."""
        return [json.dumps(r) for r in self.requests]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with server._lock:
                    index = len(server.requests)
                    server.requests.append(body)
                data = server._answer(index, body)
                if data is None:
                    self.send_response(500)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                sse = data.startswith(b"event:")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream" if sse else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


# -- the Responses API (Codex) -----------------------------------------------------------


_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}


def _event(kind: str, **data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def responses_turn(*, commands: list[str] = (), text: str = "") -> bytes:  # type: ignore[assignment]
    """One streamed response: ``exec_command`` calls for ``commands``, else a message."""
    events = [_event("response.created", response={"id": "resp", "status": "in_progress"})]
    for n, command in enumerate(commands):
        item = {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command}),
        }
        events += [
            _event("response.output_item.added", output_index=n, item=item),
            _event("response.output_item.done", output_index=n, item=item),
        ]
    if not commands:
        message = {"type": "message", "id": "m", "role": "assistant", "content": []}
        done = {**message, "content": [{"type": "output_text", "text": text or "Done."}]}
        events += [
            _event("response.output_item.added", output_index=0, item=message),
            _event(
                "response.output_text.delta",
                output_index=0,
                content_index=0,
                item_id="m",
                delta=text or "Done.",
            ),
            _event("response.output_item.done", output_index=0, item=done),
        ]
    events.append(
        _event(
            "response.completed", response={"id": "resp", "status": "completed", "usage": _USAGE}
        )
    )
    return b"".join(events)


def responses_mcp_call(namespace: str, tool: str, arguments: dict[str, Any], n: int = 0) -> bytes:
    """One streamed response calling an MCP tool as Codex offers it: a function in the
    ``namespace`` tool (``mcp__<server>``), named by the tool's own name."""
    item = {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "namespace": namespace,
        "name": tool,
        "arguments": json.dumps(arguments),
    }
    return b"".join(
        [
            _event("response.created", response={"id": "resp", "status": "in_progress"}),
            _event("response.output_item.added", output_index=0, item=item),
            _event("response.output_item.done", output_index=0, item=item),
            _event(
                "response.completed",
                response={"id": "resp", "status": "completed", "usage": _USAGE},
            ),
        ]
    )


def codex_script(turns: list[bytes]) -> Callable[[int, dict[str, Any]], bytes | None]:
    """Answer request N with ``turns[N]`` and anything after the script with a message."""
    return lambda index, body: turns[index] if index < len(turns) else responses_turn(text="Done.")


# -- Chat Completions (aider) ------------------------------------------------------------


def chat_completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


def search_replace(path: str, old: str, new: str) -> str:
    return f"{path}\n```python\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```\n"
