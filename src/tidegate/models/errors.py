"""What can go wrong when tidegate talks to a model, sorted by who handles it.

::

    ModelError (TidegateError)            every error a model port raises on purpose
    ├── ModelConfigError (UsageError)     bad --model spec or settings, missing key: exit 2
    │   └── ModelNetworkForbidden         TIDEGATE_FORBID_MODEL_NETWORK=1 and a non-loopback URL
    ├── InvalidModelRequest               the caller built an impossible request (a bug)
    ├── ContextOverflow                   the provider says the prompt is too long: the agent
    │                                     loop checkpoints, compacts, recounts and asks again
    ├── MalformedModelOutput              bad tool-call JSON, an unknown stop reason, garbage
    │                                     on the wire: the loop may show it to the model
    ├── ModelAuthError                    credentials refused: never retried
    ├── ModelRequestRejected              any other 4xx (unknown model, quota): never retried
    ├── ModelUnavailable                  429/5xx/connection failures that outlived the retry
    │                                     policy, or a stream cut after output had started
    ├── ModelCancelled                    the caller's cancel event fired
    └── ScriptMismatch                    the scripted double's expectations were not met

``error_class`` says how a run ends if nobody handles the error; ``retry_turn`` says whether
the agent loop may simply issue the (self-contained) request again.

Provider SDK exceptions are translated where the SDK is called and raised ``from None``:
the SDK exception holds the HTTP request, headers included, and its text can echo a
credential. The message of every error here has had the credential scrubbed.
"""

from __future__ import annotations

from tidegate.errors import ErrorClass, TidegateError, UsageError


class ModelError(TidegateError):
    error_class: ErrorClass = ErrorClass.UNKNOWN
    retry_turn: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ModelConfigError(ModelError, UsageError):
    """The model spec, settings or environment cannot make a working model port."""

    error_class = ErrorClass.CAPABILITY_MISMATCH


class ModelNetworkForbidden(ModelConfigError):
    """Real model requests are switched off and the base URL is not a loopback address."""


class InvalidModelRequest(ModelError):
    """The request breaks the port's contract (uncorrelated tool results, duplicate tool
    names, a history that does not end with a user turn). A caller bug, not a model fault."""


class ContextOverflow(ModelError):
    """The provider refused the request because the prompt does not fit its context window.

    The agent loop handles it: checkpoint, compact, recount, retry; if it persists, the run
    ends with CONTEXT_BUDGET and a resumable checkpoint.
    """

    error_class = ErrorClass.CONTEXT_BUDGET
    retry_turn = True


class MalformedModelOutput(ModelError):
    """The model or the wire produced something the protocol does not allow.

    ``raw`` keeps a bounded excerpt of the offending text (never a credential) so the loop
    can show the model what it got wrong.
    """

    retry_turn = True

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw[:2000]


class ModelAuthError(ModelError):
    """The provider refused the credentials (401/403). Retrying cannot help."""

    error_class = ErrorClass.CAPABILITY_MISMATCH


class ModelRequestRejected(ModelError):
    """The provider refused the request for a reason retrying cannot fix (unknown model,
    exhausted quota, an invalid parameter)."""

    error_class = ErrorClass.DEPENDENCY_ERROR

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ModelUnavailable(ModelError):
    """A transient failure (429, 5xx, reset connection, timeout).

    Raised to the caller once the retry policy is spent, or at once when the stream broke
    after events had already been delivered (``mid_stream``): a retry would repeat them, so
    the loop decides — the request is self-contained and can be sent again whole.
    """

    error_class = ErrorClass.DEPENDENCY_ERROR
    retry_turn = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        attempts: int = 1,
        mid_stream: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts
        self.mid_stream = mid_stream


class ModelCancelled(ModelError):
    """The caller's cancel event fired; the in-flight request was cut."""

    error_class = ErrorClass.CANCELLED


class ScriptMismatch(ModelError):
    """The scripted model's expectations about the request failed, or its script ran out."""
