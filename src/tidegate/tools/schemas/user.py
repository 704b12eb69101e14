"""Input and output of user.ask."""

from __future__ import annotations

from pydantic import Field

from tidegate.tools.schemas.base import ToolInput, ToolOutput


class AskInput(ToolInput):
    question: str = Field(min_length=1, max_length=4000)
    choices: list[str] = Field(default_factory=list, max_length=10)


class AskOutput(ToolOutput):
    question_id: str
    answer: str
    choice: int | None
    """The index of the chosen entry of ``choices``, when the answer is one of them."""
