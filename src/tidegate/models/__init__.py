"""The model layer: one port, two SDK adapters, a scripted contract double.

The agent loop needs only these names::

    model = resolve_model("anthropic:claude-sonnet-4-5", settings, os.environ)
    request = ModelRequest(system=(...,), messages=(UserMessage("..."),), tools=(...))
    for event in model.stream(request, cancel):   # ordered events, Finished last
        ...
    response = complete(model, request, cancel)   # or just the final response
    if not context_fit(model, request).fits: ...  # compact before sending
    cost = resolve_pricing(model.identity, settings).cost(response.usage)

Provider adapters live in ``openai_compat`` and ``anthropic``; they are imported lazily
by ``resolve_model`` so that loading this package does not load either SDK.
"""

from tidegate.models.envelope import CacheMode, ModelRequest
from tidegate.models.errors import (
    ContextOverflow,
    InvalidModelRequest,
    MalformedModelOutput,
    ModelAuthError,
    ModelCancelled,
    ModelConfigError,
    ModelError,
    ModelNetworkForbidden,
    ModelRequestRejected,
    ModelUnavailable,
    ScriptMismatch,
)
from tidegate.models.events import (
    Finished,
    ModelEvent,
    ModelResponse,
    Stopped,
    StopReason,
    TextDelta,
    ToolCallCompleted,
    ToolCallDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
    check_order,
    final_response,
)
from tidegate.models.messages import (
    AssistantMessage,
    Attachment,
    Message,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from tidegate.models.network import FORBID_ENV
from tidegate.models.ports import ModelIdentity, ModelPort, complete, context_fit
from tidegate.models.pricing import ModelPricing, Price
from tidegate.models.retry import RetryPolicy
from tidegate.models.scripted import ScriptedModel
from tidegate.models.settings import resolve_model, resolve_pricing
from tidegate.models.tokens import ContextFit, TokenCount, TokenCounter

__all__ = [
    "FORBID_ENV",
    "AssistantMessage",
    "Attachment",
    "CacheMode",
    "ContextFit",
    "ContextOverflow",
    "Finished",
    "InvalidModelRequest",
    "MalformedModelOutput",
    "Message",
    "ModelAuthError",
    "ModelCancelled",
    "ModelConfigError",
    "ModelError",
    "ModelEvent",
    "ModelIdentity",
    "ModelNetworkForbidden",
    "ModelPort",
    "ModelPricing",
    "ModelRequest",
    "ModelRequestRejected",
    "ModelResponse",
    "ModelUnavailable",
    "Price",
    "RetryPolicy",
    "ScriptMismatch",
    "ScriptedModel",
    "StopReason",
    "Stopped",
    "TextDelta",
    "TokenCount",
    "TokenCounter",
    "ToolCall",
    "ToolCallCompleted",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UsageReported",
    "UserMessage",
    "check_order",
    "complete",
    "context_fit",
    "final_response",
    "resolve_model",
    "resolve_pricing",
]
