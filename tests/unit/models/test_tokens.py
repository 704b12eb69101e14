"""Token counting: exact only with a tokenizer already on disk, a labelled estimate
otherwise, and never a download."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import tiktoken

from tidegate.models import ModelRequest, TokenCounter, ToolSpec, UserMessage
from tidegate.models.tokens import (
    ESTIMATE_METHOD,
    TIKTOKEN_FILES,
    cached_encoding_file,
    offline_encoding,
)

URL = "https://example.invalid/encodings/tiny.tiktoken"


def byte_encoding() -> tiktoken.Encoding:
    """A real tiktoken Encoding whose tokens are single bytes: one token per UTF-8 byte."""
    ranks = {bytes([i]): i for i in range(256)}
    return tiktoken.Encoding(
        name="bytes", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )


def test_the_estimate_says_it_is_one() -> None:
    count = TokenCounter().count("def add(a, b):\n    return a + b\n")
    assert (count.exact, count.method) == (False, ESTIMATE_METHOD)
    assert count.value == 11  # 33 UTF-8 bytes / 3, rounded up
    assert TokenCounter().count("é").value == 1


def test_an_exact_tokenizer_is_labelled_exact() -> None:
    counter = TokenCounter(byte_encoding())
    count = counter.count("héllo")
    assert (count.value, count.exact, count.method) == (6, True, "tiktoken:bytes")
    assert counter.count("<|endoftext|>").value == len("<|endoftext|>")  # special text is just text


def test_request_counts_are_always_labelled_estimates() -> None:
    request = ModelRequest(
        system=("rules",),
        messages=(UserMessage("fix the parser"),),
        tools=(ToolSpec("workspace.read", "Read a file."),),
    )
    exact = TokenCounter(byte_encoding()).count_request(request)
    assert exact.exact is False and exact.method == "tiktoken:bytes+framing-estimate"
    assert exact.value > len("rules") + len("fix the parser")
    bigger = ModelRequest(system=("rules",) * 3, messages=request.messages, tools=request.tools)
    assert TokenCounter().count_request(bigger).value > TokenCounter().count_request(request).value


def cache_name(url: str) -> str:
    return hashlib.sha1(url.encode()).hexdigest()


def test_a_cached_file_with_the_right_checksum_is_found(tmp_path: Path) -> None:
    data = b"dGVzdA== 0\n"
    (tmp_path / cache_name(URL)).write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    found = cached_encoding_file(URL, digest, {"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert found == tmp_path / cache_name(URL)
    assert cached_encoding_file(URL, digest, {"DATA_GYM_CACHE_DIR": str(tmp_path)}) == found


def test_a_missing_or_corrupt_file_is_not_used_and_left_alone(tmp_path: Path) -> None:
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path)}
    assert cached_encoding_file(URL, "0" * 64, env) is None
    corrupt = tmp_path / cache_name(URL)
    corrupt.write_bytes(b"not the real file")
    assert cached_encoding_file(URL, "0" * 64, env) is None
    assert corrupt.read_bytes() == b"not the real file"  # tiktoken itself would delete it
    assert cached_encoding_file(URL, "0" * 64, {"TIKTOKEN_CACHE_DIR": ""}) is None


def test_without_the_file_openai_counting_falls_back_without_downloading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url, _ = TIKTOKEN_FILES["o200k_base"]
    (tmp_path / cache_name(url)).write_bytes(b"truncated download")
    assert offline_encoding("o200k_base") is None
    counter = TokenCounter.for_openai_model("gpt-4o-mini")
    assert counter.exact is False and counter.method == ESTIMATE_METHOD
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache_name(url)]  # nothing fetched
    assert TokenCounter.for_openai_model("llama-3-8b").method == ESTIMATE_METHOD


def test_context_fit_reserves_the_output_and_reports_the_excess() -> None:
    from tidegate.models import ScriptedModel, context_fit
    from tidegate.models.scripted import Script

    model = ScriptedModel(
        Script.model_validate({"context_window": 1000, "max_output_tokens": 200, "turns": [{}]})
    )
    small = ModelRequest(system=("rules",), messages=(UserMessage("hi"),), max_output_tokens=500)
    fit = context_fit(model, small)
    assert fit.reserved_output == 200  # capped by the model's own limit
    assert fit.fits and fit.excess == 0 and fit.input_tokens.exact is False
    big = ModelRequest(system=("x" * 3000,), messages=(UserMessage("hi"),), max_output_tokens=100)
    over = context_fit(model, big)
    assert not over.fits and over.excess == over.needed - 1000 > 0
