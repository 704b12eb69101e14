"""``tidegate export otel`` on real runs: a model-driven ``tidegate run`` (the shipped
scripted model) recorded in a real store, read back with the store's record readers and
emitted as OpenTelemetry spans -- through the SDK's in-memory exporter, as OTLP JSON on
stdout, and over OTLP/HTTP to a collector written here (``http.server`` on 127.0.0.1
decoding the protobuf the SDK's exporter POSTs). The spans follow the GenAI conventions
(``invoke_agent`` > attempt > phase > ``chat`` / ``execute_tool`` / ``execute_command``),
carry tidegate's attributes, and never a secret the model put in a tool call's arguments
or the user in the verify command."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import CALC, Repo, tidegate_cli
from tidegate.export import read_run
from tidegate.export.otel import sdk_spans
from tidegate.export.spans import run_spans
from tidegate.store.state_root import read_run_store
from tidegate.workspace.repo import discover

SECRET = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
"""A GitHub token's shape: the model searches for it, the verify command sets it."""
CHECK = (
    f"GITHUB_TOKEN={SECRET} {sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
)
SCRIPT = {
    "model": "e2e-model",
    "turns": [
        {
            "text": "Looking for add() and any token.",
            "tool_calls": [
                {"id": "g1", "name": "workspace_grep", "arguments": {"pattern": "def add"}},
                {"id": "g2", "name": "workspace_grep", "arguments": {"pattern": SECRET}},
            ],
            "usage": {"input_tokens": 500, "output_tokens": 20},
        },
        {
            "text": "Plan: change the operator in add() in calc.py.",
            "usage": {"input_tokens": 800, "output_tokens": 12},
        },
        {
            "text": "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
            ">>>>>>> REPLACE\n",
            "usage": {"input_tokens": 900, "output_tokens": 40},
        },
    ],
}


@pytest.fixture
def model_run(committed_repo: Repo, tmp_path: Path) -> str:
    """A real, succeeded model-driven run; its id."""
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))
    res = tidegate_cli(
        "run", "--repo", str(committed_repo.root), "--json",
        "--objective", "Fix add() so that the check passes.",
        "--model", f"scripted:{script}", "--verify", CHECK, "--max-steps", "10",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["status"] == "succeeded"
    assert committed_repo.read("calc.py") == CALC.replace("a - b", "a + b")
    return str(report["run_id"])


def _attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_the_sdk_spans_of_a_real_run(committed_repo: Repo, model_run: str) -> None:
    store = read_run_store(discover(committed_repo.root), None)
    assert store is not None
    try:
        records = read_run(store, model_run)
    finally:
        store.close()
    memory = InMemorySpanExporter()
    sdk_spans(model_run, run_spans(records), exporter=memory)
    spans = list(memory.get_finished_spans())
    by_id = {s.context.span_id: s for s in spans}

    def parent(span: Any) -> str | None:
        return None if span.parent is None else by_id[span.parent.span_id].name

    assert len({s.context.trace_id for s in spans}) == 1
    root = next(s for s in spans if s.parent is None)
    assert root.name == "invoke_agent tidegate"
    attrs = _attrs(root)
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["tidegate.run_id"] == model_run and attrs["tidegate.run.status"] == "succeeded"
    assert attrs["gen_ai.request.model"] == "e2e-model"
    assert attrs["gen_ai.provider.name"] == "scripted"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (
        2200,
        72,
    )
    assert attrs["tidegate.changed.paths"] == ("calc.py",)
    assert len(attrs["tidegate.changed.after_sha256"][0]) == 64
    assert attrs["tidegate.checkpoints.head_sha256"].startswith("sha256:")
    assert root.status.is_ok

    names = [(s.name, parent(s)) for s in spans]
    assert ("attempt 1", "invoke_agent tidegate") in names
    assert ("phase PLAN", "attempt 1") in names and ("phase APPLY_BACK", "attempt 1") in names
    chats = [s for s in spans if s.name == "chat e2e-model"]
    assert [parent(s) for s in chats] == ["phase PLAN", "phase PLAN", "phase PATCH"]
    assert [
        (_attrs(s)["gen_ai.usage.input_tokens"], _attrs(s)["gen_ai.usage.output_tokens"])
        for s in chats
    ] == [(500, 20), (800, 12), (900, 40)]
    assert all(_attrs(s)["gen_ai.operation.name"] == "chat" for s in chats)

    tools = [s for s in spans if s.name == "execute_tool workspace.grep"]
    assert [parent(s) for s in tools] == ["phase PLAN", "phase PLAN"]
    first = _attrs(tools[0])
    assert first["gen_ai.operation.name"] == "execute_tool"
    assert first["gen_ai.tool.name"] == "workspace.grep"
    assert first["gen_ai.tool.call.id"] == "a1.plan.g1"
    assert first["tidegate.tool.status"] == "succeeded"
    assert first["tidegate.tool.input_sha256"].startswith("sha256:")
    assert first["tidegate.attempt"] == 1 and first["tidegate.phase"] == "PLAN"
    assert json.loads(first["tidegate.effects"])["inspect"][0]["paths"] == ["calc.py"]

    command = next(s for s in spans if s.name == "execute_command")
    assert parent(command) == "phase VERIFY"
    assert _attrs(command)["process.exit.code"] == 0
    assert "assert add(2, 3) == 5" in _attrs(command)["process.command_line"]

    exported = json.dumps([json.loads(s.to_json()) for s in spans])
    assert SECRET not in exported
    assert "[REDACTED]" in _attrs(tools[1])["tidegate.effects"]  # the model's grep for it
    assert "GITHUB_TOKEN=[REDACTED]" in _attrs(command)["process.command_line"]

    again = sdk_spans(model_run, run_spans(records))
    assert sorted(s.context.span_id for s in again) == sorted(by_id)  # stable ids


def test_the_cli_prints_otlp_json(committed_repo: Repo, model_run: str) -> None:
    res = tidegate_cli("export", "otel", "latest", "--repo", str(committed_repo.root))
    assert res.returncode == 0, res.stderr
    assert SECRET not in res.stdout
    data = json.loads(res.stdout)
    (resource,) = data["resourceSpans"]
    service = {a["key"]: a["value"] for a in resource["resource"]["attributes"]}
    assert service["service.name"] == {"stringValue": "tidegate"}
    spans = resource["scopeSpans"][0]["spans"]
    root = next(s for s in spans if "parentSpanId" not in s)
    assert root["name"] == "invoke_agent tidegate"
    assert len(root["traceId"]) == 32 and len(root["spanId"]) == 16  # hex, as OTLP/JSON has it
    assert {s["traceId"] for s in spans} == {root["traceId"]}
    run_id = next(a for a in root["attributes"] if a["key"] == "tidegate.run_id")
    assert run_id["value"] == {"stringValue": model_run}


class Collector:
    """An OTLP/HTTP trace receiver on 127.0.0.1: keeps each POST's path, type and body."""

    def __init__(self, status: int = 200) -> None:
        self.posts: list[tuple[str, str, bytes]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                collector.posts.append((self.path, self.headers.get("Content-Type", ""), body))
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    with Collector() as running:
        yield running


def test_otlp_http_reaches_a_loopback_collector(
    committed_repo: Repo, model_run: str, collector: Collector
) -> None:
    res = tidegate_cli(
        "export", "otel", model_run, "--repo", str(committed_repo.root), "--otlp", collector.url
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and "sent" in res.stderr
    ((path, content_type, body),) = collector.posts
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    assert SECRET.encode() not in body
    request = ExportTraceServiceRequest.FromString(body)
    spans = [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    by_id = {s.span_id: s for s in spans}

    def attr(span: Any, key: str) -> Any:
        value = next(a.value for a in span.attributes if a.key == key)
        return getattr(value, value.WhichOneof("value"))

    def parent(span: Any) -> str | None:
        return by_id[span.parent_span_id].name if span.parent_span_id else None

    root = next(s for s in spans if not s.parent_span_id)
    assert root.name == "invoke_agent tidegate"
    assert attr(root, "tidegate.run_id") == model_run
    assert attr(root, "gen_ai.usage.output_tokens") == 72
    grep = [s for s in spans if s.name == "execute_tool workspace.grep"]
    assert [parent(s) for s in grep] == ["phase PLAN", "phase PLAN"]
    assert attr(grep[0], "gen_ai.tool.call.id") == "a1.plan.g1"
    assert "[REDACTED]" in attr(grep[1], "tidegate.effects")
    chat = next(s for s in spans if s.name == "chat e2e-model")
    assert attr(chat, "gen_ai.operation.name") == "chat"
    assert attr(chat, "gen_ai.usage.input_tokens") == 500
    assert parent(next(s for s in spans if s.name == "execute_command")) == "phase VERIFY"
    assert {s.trace_id for s in spans} == {root.trace_id}


def test_a_refusing_collector_is_one_error_line(committed_repo: Repo, model_run: str) -> None:
    with Collector(status=400) as refusing:
        res = tidegate_cli(
            "export", "otel", model_run, "--repo", str(committed_repo.root),
            "--otlp", refusing.url + "/custom/traces",
        )  # fmt: skip
    assert res.returncode == 1
    assert [p for p, _t, _b in refusing.posts] == ["/custom/traces"]  # a path is kept as given
    (line,) = res.stderr.splitlines()
    assert line.startswith("tidegate: error: the OTLP endpoint") and "400" in line


def test_usage_errors_are_one_line(committed_repo: Repo) -> None:
    no_run = tidegate_cli("export", "otel", "nope", "--repo", str(committed_repo.root))
    bad_url = tidegate_cli(
        "export", "otel", "latest", "--repo", str(committed_repo.root), "--otlp", "ftp://x"
    )
    run_bad_url = tidegate_cli(
        "run", "--repo", str(committed_repo.root), "--objective", "x", "--otlp", "ftp://x"
    )
    for res in (no_run, bad_url, run_bad_url):
        assert res.returncode == 2 and res.stdout == ""
        assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("tidegate: error: ")
    assert "--otlp wants an http(s) URL" in run_bad_url.stderr
    assert committed_repo.status() == ""  # refused before the run


def test_without_the_extra_one_line_names_it(committed_repo: Repo) -> None:
    """The SDK made unimportable, as on an install without ``tidegate[otel]``."""
    code = (
        "import sys\n"
        "sys.modules['opentelemetry.sdk'] = None\n"
        "from tidegate.cli.app import main\n"
        f"sys.exit(main(['export', 'otel', 'latest', '--repo', {str(committed_repo.root)!r}]))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 2 and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert "'otel' extra" in line and "pip install 'tidegate[otel]'" in line


def test_run_otlp_sends_the_spans_while_the_run_goes_on(
    committed_repo: Repo, tmp_path: Path, collector: Collector
) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))
    res = tidegate_cli(
        "run", "--repo", str(committed_repo.root), "--json",
        "--objective", "Fix add() so that the check passes.",
        "--model", f"scripted:{script}", "--verify", f"sleep 2.5 && {CHECK}",
        "--max-steps", "10", "--otlp", collector.url,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    run_id = json.loads(res.stdout)["run_id"]
    batches = [
        [s for r in ExportTraceServiceRequest.FromString(body).resource_spans
         for ss in r.scope_spans for s in ss.spans]
        for _path, _type, body in collector.posts
    ]  # fmt: skip
    # VERIFY sleeps 2.5 s and the run is read once a second: what ended before it went out
    # while it ran, the run itself last
    assert len(batches) >= 2, "the phases before VERIFY went out while it ran"
    early = {s.name for batch in batches[:-1] for s in batch}
    assert {"phase PLAN", "phase PATCH", "chat e2e-model"} <= early
    assert "invoke_agent tidegate" not in early
    assert "invoke_agent tidegate" in {s.name for s in batches[-1]}
    live = {s.span_id: (s.name, s.parent_span_id) for batch in batches for s in batch}
    assert sum(len(b) for b in batches) == len(live), "each span is sent once"
    assert all(parent in live for _name, parent in live.values() if parent)
    assert all(SECRET.encode() not in body for _p, _t, body in collector.posts)

    # the same trace, span for span, as the export after the run
    after = tidegate_cli("export", "otel", run_id, "--repo", str(committed_repo.root))
    spans = json.loads(after.stdout)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert {bytes.fromhex(s["spanId"]): s["name"] for s in spans} == {
        span_id: name for span_id, (name, _parent) in live.items()
    }


def test_a_failed_run_has_error_spans_where_it_failed(committed_repo: Repo, tmp_path: Path) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))
    res = tidegate_cli(
        "run", "--repo", str(committed_repo.root), "--json", "--objective", "Fix add().",
        "--model", f"scripted:{script}", "--verify", "exit 3", "--max-attempts", "1",
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    run_id = json.loads(res.stdout)["run_id"]
    store = read_run_store(discover(committed_repo.root), None)
    assert store is not None
    try:
        spans = sdk_spans(run_id, run_spans(read_run(store, run_id)))
    finally:
        store.close()
    by_name = {s.name: s for s in spans}
    failed = [
        name for name, s in by_name.items() if not s.status.is_ok and s.status.is_unset is False
    ]
    assert set(failed) == {"invoke_agent tidegate", "attempt 1", "phase VERIFY", "execute_command"}
    assert by_name["execute_command"].attributes["process.exit.code"] == 3
    assert by_name["phase PLAN"].status.is_ok


def test_a_refusing_collector_never_stops_the_run(committed_repo: Repo, tmp_path: Path) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))
    with Collector(status=400) as refusing:
        res = tidegate_cli(
            "run", "--repo", str(committed_repo.root), "--json",
            "--objective", "Fix add() so that the check passes.",
            "--model", f"scripted:{script}", "--verify", CHECK, "--otlp", refusing.url,
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["status"] == "succeeded"
    warnings = [line for line in res.stderr.splitlines() if "live export" in line]
    assert len(warnings) == 1 and warnings[0].startswith("tidegate: warning: live export stopped")
    assert len(refusing.posts) == 1  # the first refusal ends the live export
    assert committed_repo.read("calc.py") == CALC.replace("a - b", "a + b")
