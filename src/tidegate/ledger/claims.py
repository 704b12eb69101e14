"""Recognising hearsay: text that passes on what an agent said instead of showing anything.

An agent's own account of its work ("the agent reported that it is done", "model claims all
tests pass", "according to Claude, fixed") is never evidence, however it is phrased. The
check works on words, not on where the sentence starts: a speaker word (agent, model,
assistant, a product name) within a few words of an attribution word (says, reported,
according, output...) or of a bare verdict (done, fixed, passing...) marks the text as a
quoted claim. Paths and commands are whole tokens (``src/model_report.py`` is one word),
so they do not trip it.
"""

from __future__ import annotations

import re

_SPEAKERS_WORDS = (
    "agent agents assistant assistants model models ai llm llms bot bots copilot claude gpt "
    "chatgpt codex gemini cursor devin aider subagent chatbot"
)
SPEAKERS = frozenset(_SPEAKERS_WORDS.split())
"""Who, when named as the source, turns a sentence into hearsay."""

_ATTRIBUTIONS_WORDS = (
    "say says said saying report reports reported reporting claim claims claimed claiming "
    "confirm confirms confirmed confirming tell tells told stated assert asserts asserted "
    "mention mentions mentioned noted believe believes believed think thinks thought "
    "according per replied answered responded wrote insist insists insisted promise "
    "promised promises verified assured assures"
)
ATTRIBUTIONS = frozenset(_ATTRIBUTIONS_WORDS.split())
"""Words that attribute what follows (or precedes) to the speaker. Nouns that also name
parts of a program (output, state, message) are left out: "the model output is cached" is
a claim about code, not hearsay."""

_VERDICTS_WORDS = (
    "done fixed finished complete completed pass passes passed passing green succeeded lgtm "
    "resolved implemented"
)
VERDICTS = frozenset(_VERDICTS_WORDS.split())
"""Bare outcomes: a speaker next to one of these is a verdict without a showing."""

WINDOW = 4
"""How many words may stand between the speaker and the attribution or verdict."""

_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def words(text: str) -> list[str]:
    """Whitespace-separated tokens, lower-cased, without surrounding punctuation or a
    possessive ``'s`` (so ``agent's`` is ``agent``; ``src/model.py`` stays one token)."""
    out = []
    for token in text.lower().split():
        token = _EDGE.sub("", token)
        if token.endswith(("'s", "\u2019s")):
            token = token[:-2]
        if token:
            out.append(token)
    return out


def quotes_agent(text: str) -> bool:
    """True when ``text`` passes on a claim made by an agent or model."""
    tokens = words(text)
    for i, token in enumerate(tokens):
        if token not in SPEAKERS:
            continue
        near = tokens[max(0, i - WINDOW) : i] + tokens[i + 1 : i + 1 + WINDOW]
        if any(w in ATTRIBUTIONS or w in VERDICTS for w in near):
            return True
    return False
