"""Token counting: exact where an offline tokenizer exists, otherwise a labelled estimate.

tiktoken is used only when its encoding file is already in tiktoken's cache and matches the
published checksum. tidegate never lets tiktoken download: when the file is missing the
counter falls back to an estimate and says so in ``method``. Anthropic publishes no offline
tokenizer, and OpenAI-compatible servers run models tiktoken does not know, so both
estimate.

The estimate (UTF-8 bytes / 3, rounded up) deliberately over-counts ordinary English and
code a little: budget checks that run on it err towards compacting early, not overflowing.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tidegate.models.messages import canonical_json, message_json

if TYPE_CHECKING:
    import tiktoken

    from tidegate.models.envelope import ModelRequest

ESTIMATE_METHOD = "estimate:utf8-bytes/3"
_BYTES_PER_TOKEN = 3
_PER_ITEM_OVERHEAD = 4  # role and separator tokens each message or section costs

# Where tiktoken fetches each encoding and the checksum it insists on (tiktoken_ext.openai_public).
TIKTOKEN_FILES: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


class TokenCount(msgspec.Struct, frozen=True):
    value: int
    exact: bool
    method: str


def cached_encoding_file(url: str, sha256: str, env: Mapping[str, str]) -> Path | None:
    """The file tiktoken would read for ``url`` from its cache, if present and intact.

    Mirrors tiktoken's cache location (TIKTOKEN_CACHE_DIR, DATA_GYM_CACHE_DIR, else
    ``<tmp>/data-gym-cache``; file named by the SHA-1 of the URL). Never touches the file
    beyond reading it, never touches the network.
    """
    cache_dir = env.get("TIKTOKEN_CACHE_DIR", env.get("DATA_GYM_CACHE_DIR"))
    if cache_dir is None:
        import tempfile

        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache_dir == "":
        return None  # caching disabled: tiktoken would download every time
    path = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == sha256 else None


def offline_encoding(name: str) -> tiktoken.Encoding | None:
    """tiktoken's ``name`` encoding if it can be loaded without a download, else None."""
    known = TIKTOKEN_FILES.get(name)
    if known is None or cached_encoding_file(*known, os.environ) is None:
        return None
    import tiktoken

    # The checked file is what tiktoken's loader reads first, so this does not download.
    return tiktoken.get_encoding(name)


def encoding_name_for(model: str) -> str | None:
    import tiktoken.model

    try:
        return tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return None


class TokenCounter:
    """Counts tokens of text and whole requests for one model."""

    def __init__(self, encoding: tiktoken.Encoding | None = None) -> None:
        self._encoding = encoding
        self.exact = encoding is not None
        self.method = f"tiktoken:{encoding.name}" if encoding is not None else ESTIMATE_METHOD

    @classmethod
    def for_openai_model(cls, model: str) -> TokenCounter:
        """Exact for OpenAI models whose encoding file is cached offline; else an estimate."""
        name = encoding_name_for(model)
        return cls(offline_encoding(name) if name else None)

    def count(self, text: str) -> TokenCount:
        if self._encoding is not None:
            return TokenCount(
                len(self._encoding.encode(text, disallowed_special=())), True, self.method
            )
        return TokenCount(
            math.ceil(len(text.encode("utf-8")) / _BYTES_PER_TOKEN), False, self.method
        )

    def count_request(self, request: ModelRequest) -> TokenCount:
        return count_request(self.count, request)


def count_request(count: Callable[[str], TokenCount], request: ModelRequest) -> TokenCount:
    """Tokens the whole request will take as input, counted with ``count``.

    Always labelled an estimate: even with an exact tokenizer, providers add framing
    tokens around messages and render tool schemas in ways they do not publish.
    """
    parts = [*request.cache_safe_blocks(), *(a.render() for a in request.late_attachments())]
    parts += [canonical_json(message_json(m)) for m in request.messages]
    parts += [
        canonical_json({"name": t.name, "d": t.description, "s": dict(t.input_schema)})
        for t in request.tools
    ]
    counts = [count(p) for p in parts]
    total = sum(c.value for c in counts) + _PER_ITEM_OVERHEAD * (len(parts) + 1)
    method = counts[0].method if counts else ESTIMATE_METHOD
    return TokenCount(total, False, f"{method}+framing-estimate")


class ContextFit(msgspec.Struct, frozen=True):
    """Whether a request, plus the output it reserves, fits the model's context window."""

    input_tokens: TokenCount
    reserved_output: int
    context_window: int

    @property
    def needed(self) -> int:
        return self.input_tokens.value + self.reserved_output

    @property
    def fits(self) -> bool:
        return self.needed <= self.context_window

    @property
    def excess(self) -> int:
        """Tokens to remove (by compaction) before the request fits; 0 when it does."""
        return max(0, self.needed - self.context_window)
