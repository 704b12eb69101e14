"""user.ask: a question to the user through the context's UserPort.

The answer is correlated by a question ID derived from the call ID. No answer is a
failure, never an assumed "yes"; an answer never waives an acceptance criterion.
"""

from __future__ import annotations

import msgspec

from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.schemas.user import AskInput, AskOutput


class UserAsk(msgspec.Struct):
    tool_id: str = "user.ask"
    label: str | None = None

    def run(self, args: AskInput, call: Dispatch) -> AdapterResult:
        user = call.context.user
        if user is None:
            raise ToolFailure("unavailable", "no user can be asked here", retryable=False)
        question_id = f"q_{call.call_id}"
        answer = user.ask(question_id, args.question, args.choices)
        if answer is None:
            raise ToolFailure("no_answer", "the user did not answer", retryable=False)
        choice = args.choices.index(answer) if answer in args.choices else None
        return AdapterResult(
            self.tool_id, AskOutput(question_id=question_id, answer=answer, choice=choice)
        )
