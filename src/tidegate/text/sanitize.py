"""The one sanitiser for everything tidegate persists or prints.

``redact(text)`` replaces secret-shaped values (provider API keys, tokens, private-key
blocks, passwords in URLs and in ``NAME=value`` assignments) with ``[REDACTED]``;
``escape_controls(text)`` makes terminal control characters visible (``\\x1b``,
``\\u009b``...) so that text which came from file names, command output or a model can
never move the cursor, clear the screen, set the clipboard or retitle the terminal;
``sanitize(text)`` does both. ``redact_value`` walks JSON-shaped data.

This module is on the ground floor: it imports nothing of tidegate, so every layer (the
store, the ledger, the renderers, the tools) can use it. Each pattern is a shape a real
secret has on its own: none of them needs a ``TOKEN=`` in front to be found. A cheap
trigger search rejects the common case (text with no secret-like substring) first.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence

REDACTED = "[REDACTED]"
OMITTED_REASONING = "[omitted: model reasoning is not stored]"

_KEY_CHARS = r"[A-Za-z0-9_-]"
# Shapes that stand on their own. A (?<!...) guard stops a match from starting inside a
# longer identifier where that would cut a word; prefixes distinctive enough to be glued
# to a word (``keysk-...``) have none. Each comes with the substrings one of which every
# text it matches contains (in lower case for the case-insensitive ones): it is compiled
# and run only on a text that holds one (see ``_Redactors``).
_SHAPE_SOURCES: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "pem_private_key": (
        r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
        r"(?:.*?-----END \1-----|.*\Z)",
        re.DOTALL,
        ("-----BEGIN ",),
    ),
    "stripe": (
        r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        0,
        ("_live_", "_test_"),
    ),
    "stripe_webhook": (r"\bwhsec_[A-Za-z0-9]{16,}", 0, ("whsec_",)),
    "github_pat": (r"github_pat_[A-Za-z0-9_]{22,}", 0, ("github_pat_",)),
    "github": (r"gh[pousr]_[A-Za-z0-9]{20,}", 0, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    "gitlab": (r"glpat-[A-Za-z0-9_-]{20,}", 0, ("glpat-",)),
    "slack": (r"xox[abposr]-[A-Za-z0-9-]{10,}", 0, ("xox",)),
    "slack_app": (r"xapp-\d-[A-Za-z0-9-]{10,}", 0, ("xapp-",)),
    "aws_access_key_id": (
        r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Z0-9])",
        0,
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
    ),
    "google_api_key": (r"AIza[0-9A-Za-z_-]{35}", 0, ("AIza",)),
    "jwt": (r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", 0, ("eyJ",)),
    "bearer": (r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*", 0, ("bearer",)),
    "basic_auth": (
        r"(?i)(?<=authorization: )basic\s+[A-Za-z0-9+/]{12,}=*",
        0,
        ("authorization: ",),
    ),
    "url_password": (r"(?<=://)([^/\s:@]*):[^/\s@]+(?=@)", 0, ("://",)),
}
_FOLDED = frozenset({"bearer", "basic_auth"})
"""The case-insensitive shapes: their substrings are looked for in the lower-cased text."""
# ``sk-`` keys (OpenAI's ``sk-``, ``sk-proj-``, Anthropic's ``sk-ant-``...): at a word
# start, 16+ key characters; glued to a word (``mykeysk-...``) only when the value looks
# random (letters of both cases and digits), so ``task-management-...`` is left alone.
_SK = rf"(?<![A-Za-z0-9_-])(sk-{_KEY_CHARS}{{16,}})|(?<=[A-Za-z0-9_-])(sk-{_KEY_CHARS}{{20,}})"

# A name that says its value is a secret: one of these words as a segment of the name
# (``DB_PASS``, ``client-secret``, ``apiKey``), or at the end of a run-together name
# (``DBPASSWORD``, ``githubtoken``). Plurals such as ``max_tokens`` are counts, not secrets.
_SECRET_SEGMENTS = frozenset(
    {
        "passwd",
        "password",
        "passphrase",
        "secret",
        "token",
        "credential",
        "credentials",
        "apikey",
        "privatekey",
    }
)
# Words that say "secret" only as part of a longer name: ``DB_PASS=`` is a password, a
# test runner's ``PASS: test_x`` and the shell's ``PWD=/src`` are not.
_SECRET_TAILS = frozenset({"pass", "pwd", "pw"})
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"), ("auth", "key")}
)
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token", "apikey", "accesskey")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[_.\-\s]+")


def secret_name(name: str) -> bool:
    """Whether ``name`` (a variable, key or flag name) says that its value is a secret."""
    words = [w.lower() for w in _SPLIT.split(_CAMEL.sub("_", name.strip("-\"' "))) if w]
    if not words:
        return False
    if any(w in _SECRET_SEGMENTS for w in words):
        return True
    if len(words) > 1 and any(w in _SECRET_TAILS for w in words):
        return True
    if any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words)):
        return True
    return words[-1].endswith(_SECRET_SUFFIXES)


_VALUE = (
    r"(\\\"(?:[^\"\\\n]|\\[^\"])*\\\""  # \"value\" inside an escaped JSON string
    r"|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s'\",;&)}\]\\]{3,})"
)
# NAME=value, NAME: value, "NAME": "value", NAME := value, and --name value / --name=value.
_ASSIGNMENT = (
    rf"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_.-]*)(\\?[\"']?[ \t]*(?::=|=|:)[ \t]*){_VALUE}"
)
_FLAG = rf"(?<![A-Za-z0-9_-])(--[A-Za-z][A-Za-z0-9_-]*)([ \t]+){_VALUE}"
_HARMLESS_VALUE = r"(?i)[\"']?(?:null|none|true|false|\[redacted\]|\*+|<[^>]*>)[\"']?"


_NAMED_GUARDS = ("pass", "pw", "secret", "token", "credential", "key")
"""A ``NAME=value`` or ``--name value`` is redacted only when ``secret_name(NAME)``, and
every such name holds one of these (lower-cased)."""


class _Redactors:
    """The redaction patterns, each compiled on first use: most text never needs them (the
    trigger search below rejects it, then each pattern's own substrings), and compiling
    them all costs more than a read-only command such as ``tidegate runs`` takes to run."""

    def __init__(self) -> None:
        self._compiled: dict[str, re.Pattern[str]] = {}

    def get(self, name: str) -> re.Pattern[str]:
        pattern = self._compiled.get(name)
        if pattern is None:
            if name in _SHAPE_SOURCES:
                source, flags, _ = _SHAPE_SOURCES[name]
            else:
                source, flags = _NAMED_SOURCES[name], 0
            pattern = self._compiled[name] = re.compile(source, flags)
        return pattern


_NAMED_SOURCES = {"sk": _SK, "assignment": _ASSIGNMENT, "flag": _FLAG, "harmless": _HARMLESS_VALUE}
_PATTERNS = _Redactors()


def _may_match(text: str, name: str) -> bool:
    """Whether ``text`` holds one of the substrings every match of shape ``name`` holds."""
    guards = _SHAPE_SOURCES[name][2]
    if name in _FOLDED:
        if not text.isascii():
            return True  # case folding beyond ASCII (a long s matches s): just run it
        text = text.lower()
    return any(guard in text for guard in guards)


# Every pattern above needs one of these; most text has none, and one search is cheap.
TRIGGER = re.compile(
    r"(?i:bearer|authorization|sk-|[sr]k_|whsec_|gh[pousr]_|github_pat_|glpat-|xox|xapp-"
    r"|-----begin|://|pass|pw|secret|token|key|credential|auth|session|cookie)"
    r"|AKIA|ASIA|AGPA|AIDA|AROA|AIza|eyJ"
)

# Keys under which a model's private reasoning would travel: never persisted.
_REASONING_KEYS = frozenset(
    {"reasoning", "reasoning_content", "thinking", "chain_of_thought", "thoughts"}
)


def redact(text: str) -> str:
    """``text`` with every secret-shaped value replaced by ``[REDACTED]``."""
    if not TRIGGER.search(text):
        return text
    for name in _SHAPE_SOURCES:
        if _may_match(text, name):  # checked on the text as the shapes before left it
            text = _PATTERNS.get(name).sub(_url_user if name == "url_password" else REDACTED, text)
    if "sk-" in text:
        text = _PATTERNS.get("sk").sub(_sk, text)
    if any(guard in text.lower() for guard in _NAMED_GUARDS):
        text = _PATTERNS.get("assignment").sub(_named, text)
        text = _PATTERNS.get("flag").sub(_named, text)
    return text


def _url_user(match: re.Match[str]) -> str:
    return f"{match.group(1)}:{REDACTED}"


def _sk(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return REDACTED
    value = match.group(2)[3:]
    looks_random = (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )
    return REDACTED if looks_random else match.group(0)


def _named(match: re.Match[str]) -> str:
    name, sep, value = match.group(1), match.group(2), match.group(3)
    if (
        not secret_name(name)
        or _PATTERNS.get("harmless").fullmatch(value)
        or REDACTED[:-1] in value
    ):
        return match.group(0)
    for quote in ('\\"', '"', "'"):
        if value.startswith(quote) and value.endswith(quote) and len(value) >= 2 * len(quote):
            return f"{name}{sep}{quote}{REDACTED}{quote}"
    return f"{name}{sep}{REDACTED}"


# C0 controls except tab and newline, DEL, C1 controls, and the Unicode format characters
# that reorder text (bidi embeddings, overrides and isolates, and the implicit marks: the
# Arabic letter mark and the left-to-right and right-to-left marks, which move neutral
# characters such as quotes and slashes as an override does); zero-width joiners are kept.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every terminal control character written out visibly: ESC as
    ``\\x1b`` (so no CSI, OSC or DCS sequence survives), a bare carriage return as
    ``\\x0d``, C1 controls as ``\\u009b``. Newlines and tabs are kept; CRLF becomes LF."""
    if text.isprintable():
        return text
    return _CONTROLS.sub(_visible, text.replace("\r\n", "\n"))


def sanitize(text: str) -> str:
    """``text`` redacted and with its control characters made visible."""
    return escape_controls(redact(text))


def redact_value(value: object) -> object:
    """A redacted copy of JSON-shaped ``value``: every string is redacted, a string under a
    secret-named key (``api_key``, ``password``...) is replaced whole, and reasoning keys
    are emptied. Numbers under secret-looking names (``max_tokens``) are kept."""
    return _walk(value, redact, redact_keys=True)


def escape_value(value: object) -> object:
    """A copy of JSON-shaped ``value`` with the controls of every string made visible."""
    return _walk(value, escape_controls, redact_keys=False)


def sanitize_value(value: object) -> object:
    """``redact_value`` then ``escape_value``: what a renderer shows of stored data."""
    return escape_value(redact_value(value))


def _walk(value: object, fix: Callable[[str], str], *, redact_keys: bool) -> object:
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in value.items():
            name = str(key) if redact_keys else fix(str(key))
            if redact_keys and name.lower() in _REASONING_KEYS:
                out[name] = OMITTED_REASONING
            elif redact_keys and isinstance(item, str) and item and secret_name(name):
                out[name] = REDACTED
            else:
                out[name] = _walk(item, fix, redact_keys=redact_keys)
        return out
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_walk(item, fix, redact_keys=redact_keys) for item in value]
    return value
