"""Real HTTP servers on 127.0.0.1 that speak the OpenAI and Anthropic wire protocols.

Each test scripts the replies (one per request, in order) and then inspects what the
server received. The server checks the credential itself the way a provider does — a
wrong or missing key gets a 401 — and records every request so a test can prove the key
travelled only in its header.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP answer.

    ``sse`` events are written and flushed one at a time (chunked encoding); after
    ``stall_after`` of them the server holds the connection open until the client goes
    away. ``stall_before_headers`` holds before anything is sent. ``reset`` drops the
    connection without an answer (TCP RST). ``drop_after`` closes the body mid-stream.
    """

    status: int = 200
    body: object | None = None
    sse: list[str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    stall_after: int | None = None
    stall_before_headers: bool = False
    reset: bool = False
    drop_after: int | None = None


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


class LoopbackServer:
    """A threaded server on 127.0.0.1 replaying ``replies`` in order.

    ``key_header`` is ``authorization`` (expects ``Bearer KEY``) or ``x-api-key``.
    """

    def __init__(self, replies: Iterable[Reply], *, key: str, key_header: str) -> None:
        self.replies = list(replies)
        self.key = key
        self.key_header = key_header
        self.received: list[Received] = []
        self.client_gone = threading.Event()
        self.client_gone_at: float | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def credential_problems(self) -> list[str]:
        """Every way a request carried the key other than in its one header."""
        problems = []
        expected = f"Bearer {self.key}" if self.key_header == "authorization" else self.key
        for n, req in enumerate(self.received):
            if req.headers.get(self.key_header) != expected:
                problems.append(f"request {n}: {self.key_header} header missing or wrong")
            if self.key in req.path:
                problems.append(f"request {n}: key in the URL")
            if self.key.encode() in req.body:
                problems.append(f"request {n}: key in the body")
            others = {k: v for k, v in req.headers.items() if k != self.key_header}
            if any(self.key in v for v in others.values()):
                problems.append(f"request {n}: key in another header")
        return problems

    def _next(self, request: Received) -> Reply:
        with self._lock:
            self.received.append(request)
            if not self.replies:
                return Reply(500, {"error": {"type": "test_error", "message": "no reply left"}})
            return self.replies.pop(0)

    def _authorised(self, headers: dict[str, str]) -> bool:
        expected = f"Bearer {self.key}" if self.key_header == "authorization" else self.key
        return headers.get(self.key_header) == expected

    def _wait_for_client_to_leave(self, sock: socket.socket) -> None:
        while not self._stopping.is_set():
            readable, _, _ = select.select([sock], [], [], 0.02)
            if readable:
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    self.client_gone_at = time.monotonic()
                    self.client_gone.set()
                    return

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._next(Received("POST", self.path, headers, body, time.monotonic()))
                self.close_connection = True
                if not server._authorised(headers):
                    reply = Reply(
                        401,
                        {
                            "type": "error",
                            "error": {
                                "type": "authentication_error",
                                "message": f"invalid key {headers.get(server.key_header)}",
                            },
                        },
                    )
                if reply.stall_before_headers:
                    server._wait_for_client_to_leave(self.connection)
                    return
                if reply.reset:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.connection.close()
                    return
                if reply.sse is not None:
                    self._stream(reply)
                else:
                    self._whole(reply)

            def _whole(self, reply: Reply) -> None:
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: Reply) -> None:
                assert reply.sse is not None
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    for n, event in enumerate(reply.sse):
                        if reply.stall_after is not None and n == reply.stall_after:
                            server._wait_for_client_to_leave(self.connection)
                            return
                        if reply.drop_after is not None and n == reply.drop_after:
                            return  # no terminating chunk: the body ends early
                        self._chunk(event.encode())
                    if reply.stall_after is not None and reply.stall_after >= len(reply.sse):
                        server._wait_for_client_to_leave(self.connection)
                        return
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    server.client_gone_at = time.monotonic()
                    server.client_gone.set()

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

        return Handler


# -- OpenAI chat completions ---------------------------------------------------------------


def oa_chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    *,
    no_choices: bool = False,
) -> str:
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage is not None:
        payload["usage"] = usage
    return f"data: {json.dumps(payload)}\n\n"


OA_DONE = "data: [DONE]\n\n"


def oa_usage(prompt: int = 11, completion: int = 7, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def oa_text_stream(
    *pieces: str, finish: str = "stop", usage: dict[str, Any] | None = None
) -> list[str]:
    events = [oa_chunk({"role": "assistant", "content": ""})]
    events += [oa_chunk({"content": p}) for p in pieces]
    events.append(oa_chunk({}, finish))
    events.append(oa_chunk(usage=usage or oa_usage(), no_choices=True))
    return [*events, OA_DONE]


def oa_tool_stream(
    calls: list[tuple[str, str, list[str]]], text: str = "", interleave: bool = False
) -> list[str]:
    """Tool calls (id, wire name, argument fragments), each fragment its own chunk."""
    events = [oa_chunk({"role": "assistant", "content": text or None})]
    heads = [
        oa_chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        for i, (cid, name, _) in enumerate(calls)
    ]
    tails = [
        [
            oa_chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
            for frag in frags
        ]
        for i, (_, _, frags) in enumerate(calls)
    ]
    if interleave:
        events += heads
        longest = max(len(t) for t in tails)
        for k in range(longest):
            events += [t[k] for t in tails if k < len(t)]
    else:
        for head, tail in zip(heads, tails, strict=True):
            events += [head, *tail]
    events.append(oa_chunk({}, "tool_calls"))
    events.append(oa_chunk(usage=oa_usage(), no_choices=True))
    return [*events, OA_DONE]


def oa_completion(
    text: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage or oa_usage(),
    }


def oa_error(
    status: int,
    message: str,
    type_: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    return Reply(
        status,
        {"error": {"message": message, "type": type_, "param": None, "code": code}},
        headers=headers or {},
    )


# -- Anthropic messages ----------------------------------------------------------------------


def an_event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def an_usage(inp: int = 20, out: int = 9, read: int = 0, write: int = 0) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


def an_stream(
    text: list[str] | None = None,
    tools: list[tuple[str, str, list[str]]] | None = None,
    stop: str = "end_turn",
    usage: dict[str, int] | None = None,
) -> list[str]:
    usage = usage or an_usage()
    start_usage = {**usage, "output_tokens": 1}
    events = [
        an_event(
            "message_start",
            message={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        ),
        an_event("ping"),
    ]
    index = 0
    if text:
        events.append(
            an_event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        )
        events += [
            an_event("content_block_delta", index=index, delta={"type": "text_delta", "text": t})
            for t in text
        ]
        events.append(an_event("content_block_stop", index=index))
        index += 1
    for tid, name, frags in tools or []:
        events.append(
            an_event(
                "content_block_start",
                index=index,
                content_block={"type": "tool_use", "id": tid, "name": name, "input": {}},
            )
        )
        events += [
            an_event(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": f},
            )
            for f in frags
        ]
        events.append(an_event("content_block_stop", index=index))
        index += 1
    events.append(
        an_event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": usage["output_tokens"]},
        )
    )
    events.append(an_event("message_stop"))
    return events


def an_message(
    text: str | None = None,
    tools: list[tuple[str, str, dict[str, Any]]] | None = None,
    stop: str = "end_turn",
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tools or []]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or an_usage(),
    }


def an_error(status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status,
        {"type": "error", "error": {"type": type_, "message": message}},
        headers=headers or {},
    )
