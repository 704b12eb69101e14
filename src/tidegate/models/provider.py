"""The skeleton both SDK-backed adapters share.

``ProviderModel`` owns what does not depend on the provider: the no-real-models switch,
the identity, token counting, per-request tool-name mapping, and running attempts under
the retry driver and the caller's cancel event. A subclass supplies three things: the
provider parameters for a request, one attempt (call the SDK, feed the assembler), and
the translation of its SDK's exceptions.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import msgspec

from tidegate.errors import CapabilityMismatch
from tidegate.models.calls import Scrubber, drive
from tidegate.models.catalog import Limits
from tidegate.models.envelope import ModelRequest
from tidegate.models.errors import ModelError
from tidegate.models.events import ModelEvent, StopReason, StreamAssembler, Usage
from tidegate.models.messages import ToolCall
from tidegate.models.network import InflightCall, check_network_allowed, endpoint_of, http_client
from tidegate.models.ports import ModelIdentity
from tidegate.models.retry import RetryPolicy
from tidegate.models.tokens import TokenCount, TokenCounter
from tidegate.models.tool_names import ToolNameMap


class ProviderConnection(msgspec.Struct, frozen=True):
    """Where and how to reach one deployment. The key is kept out of ``repr``."""

    model: str
    base_url: str
    api_key: str
    limits: Limits
    capability_source: str
    timeout_s: float = 600.0
    retry: RetryPolicy = msgspec.field(default_factory=RetryPolicy)
    streaming: bool = True
    prompt_caching: bool = True
    tool_calling: bool = True

    def __repr__(self) -> str:
        shown = (f"{n}={getattr(self, n)!r}" for n in self.__struct_fields__ if n != "api_key")
        return f"ProviderConnection({', '.join(shown)})"


class PreparedCall(msgspec.Struct, frozen=True):
    """One request in provider form, ready for any number of attempts."""

    request: ModelRequest
    names: ToolNameMap
    params: dict[str, Any]


class ProviderModel(ABC):
    provider: ClassVar[str]
    stop_reasons: ClassVar[dict[str, StopReason]]

    def __init__(
        self,
        connection: ProviderConnection,
        counter: TokenCounter,
        env: Mapping[str, str] | None = None,
    ) -> None:
        check_network_allowed(connection.base_url, os.environ if env is None else env)
        self._connection = connection
        self._counter = counter
        self._scrub = Scrubber(connection.api_key)
        self._http = http_client(connection.timeout_s)
        self._identity = ModelIdentity(
            provider=self.provider,
            model=connection.model,
            endpoint=endpoint_of(connection.base_url),
            context_window=connection.limits.context_window,
            max_output_tokens=connection.limits.max_output_tokens,
            tool_calling=connection.tool_calling,
            streaming=connection.streaming,
            prompt_caching=connection.prompt_caching,
            token_counting=counter.method,
            capability_source=connection.capability_source,
            probed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._identity.label} at {self._identity.endpoint}>"

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    def count_tokens(self, text: str) -> TokenCount:
        return self._counter.count(text)

    def close(self) -> None:
        self._http.close()

    def stream(
        self, request: ModelRequest, cancel: threading.Event | None = None
    ) -> Iterator[ModelEvent]:
        """See ``ModelPort.stream``. Checks the switch and the request before returning."""
        check_network_allowed(self._connection.base_url, {})
        if request.tools and not self._connection.tool_calling:
            raise CapabilityMismatch(
                f"{self._identity.label} is configured without tool calling but the request "
                "offers tools"
            )
        names = ToolNameMap(t.name for t in request.tools)
        return self._run(PreparedCall(request, names, self._params(request, names)), cancel)

    def _run(self, call: PreparedCall, cancel: threading.Event | None) -> Iterator[ModelEvent]:
        with InflightCall(cancel) as inflight:
            yield from drive(
                lambda remaining: self._attempt(call, inflight, remaining),
                inflight=inflight,
                policy=self._connection.retry,
                translate=self._translate,
            )

    def _assembler(self, call: PreparedCall) -> StreamAssembler:
        def estimate(text: str, calls: tuple[ToolCall, ...]) -> Usage:
            produced = text + "".join(c.name + c.arguments_json() for c in calls)
            return Usage(
                input_tokens=self._counter.count_request(call.request).value,
                output_tokens=self._counter.count(produced).value,
                exact=False,
            )

        return StreamAssembler(
            stop_reasons=self.stop_reasons,
            id_seed=call.request.fingerprint(),
            estimate_usage=estimate,
            map_tool_name=call.names.from_wire,
        )

    def _max_tokens(self, request: ModelRequest) -> int:
        return min(request.max_output_tokens, self._connection.limits.max_output_tokens)

    # -- provider specific ---------------------------------------------------------

    @abstractmethod
    def _params(self, request: ModelRequest, names: ToolNameMap) -> dict[str, Any]:
        """The provider's request parameters for ``request``."""

    @abstractmethod
    def _attempt(
        self, call: PreparedCall, inflight: InflightCall, remaining_s: float
    ) -> Generator[ModelEvent, None, None]:
        """One HTTP attempt, yielding the ordered events."""

    @abstractmethod
    def _translate(self, exc: Exception) -> ModelError:
        """A provider SDK exception as a typed, credential-free model error."""
