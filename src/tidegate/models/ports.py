"""The model port: what the agent loop may ask of any model, and the model's identity.

A ``ModelPort`` has an immutable identity and capability snapshot, counts tokens (exactly
or with a labelled estimate), and streams the answer to one self-contained request as
ordered events (``tidegate.models.events``). It keeps no conversation state: every request
carries the whole history and its attachments again.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

import msgspec
from msgspec.structs import asdict, replace

from tidegate.models.events import ModelEvent, ModelResponse, final_response
from tidegate.models.messages import canonical_json
from tidegate.models.tokens import ContextFit, TokenCount, count_request

if TYPE_CHECKING:
    from tidegate.models.envelope import ModelRequest


class ModelIdentity(msgspec.Struct, frozen=True):
    """Who answers and what it can do. Contains no credential, by construction.

    ``endpoint`` is the base URL's host[:port] only (no scheme, user info, path or query).
    ``capability_source`` says where context window and output limit came from: the
    built-in ``catalog``, the operator's ``settings``, a conservative ``default``, or the
    ``script`` of the scripted double. ``contract_double`` marks shipped test doubles.

    ``identity_hash`` covers every field except ``probed_at``: a fresh probe of the same
    deployment must not invalidate a checkpoint taken under the previous probe.
    """

    provider: str
    model: str
    endpoint: str
    context_window: int
    max_output_tokens: int
    tool_calling: bool
    streaming: bool
    prompt_caching: bool
    token_counting: str
    capability_source: str
    revision: str = ""
    contract_double: bool = False
    probed_at: str | None = None

    def semantic_fields(self) -> dict[str, object]:
        fields = asdict(self)
        del fields["probed_at"]
        return fields

    @property
    def identity_hash(self) -> str:
        digest = hashlib.sha256(canonical_json(self.semantic_fields()).encode()).hexdigest()
        return f"sha256:{digest}"

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "identity_hash": self.identity_hash}

    def probed(self, at: str) -> ModelIdentity:
        return replace(self, probed_at=at)

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


class ModelPort(Protocol):
    """Any model tidegate can drive: the OpenAI-compatible and Anthropic adapters and the
    scripted contract double."""

    @property
    def identity(self) -> ModelIdentity: ...

    def count_tokens(self, text: str) -> TokenCount:
        """Tokens ``text`` takes for this model; ``exact`` says whether it is an estimate."""
        ...

    def stream(
        self, request: ModelRequest, cancel: threading.Event | None = None
    ) -> Iterator[ModelEvent]:
        """Send ``request`` and yield its events in protocol order, ``Finished`` last.

        Setting ``cancel`` cuts the request in flight and raises ``ModelCancelled``.
        Raises only ``ModelError`` subclasses.
        """
        ...

    def close(self) -> None:
        """Release connections. The port is unusable afterwards."""
        ...


def complete(
    model: ModelPort, request: ModelRequest, cancel: threading.Event | None = None
) -> ModelResponse:
    """Run one request to the end and return the response (the ``Finished`` event's)."""
    return final_response(model.stream(request, cancel))


def context_fit(model: ModelPort, request: ModelRequest) -> ContextFit:
    """Check a request against ``model`` before sending it, so an oversized context can be
    checkpointed and compacted without spending a provider round trip on the refusal."""
    identity = model.identity
    return ContextFit(
        count_request(model.count_tokens, request),
        min(request.max_output_tokens, identity.max_output_tokens),
        identity.context_window,
    )
