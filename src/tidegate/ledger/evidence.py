"""What counts as evidence, and what does not.

Accepted references (the text given to ``record --evidence``):

``command: CMD (exit N)``     a command that was run, with its exit code
``artifact: PATH [-- CLAIM]`` a file produced by the work; hashed when recorded; an image
                              (a screenshot) needs the claim it supports
``ci: URL`` or a bare URL     a CI or check run
``review: VERDICT REFS``      approved / changes_requested / blocked, with at least one
                              normalised ref (``E-N``, a URL or an existing path)
``file: PATH -- CLAIM``       a concrete file and the claim it supports; hashed when recorded

Refused: agent or chat claims ("agent says done", "the agent reported that it is done",
also inside a ``command:``/``artifact:``/``file:`` line; see ``tidegate.ledger.claims``), command names without a result, a run
record typed by hand (``ledger run`` records those), and summaries that name no path,
command, URL or artifact. ``record --run CMD`` runs the command itself and records
host-attested command evidence.

Each piece of evidence gets a fingerprint of what it shows (not when it was recorded): two
records with the same fingerprint are the same evidence, and the second does not count as
a changed condition.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import urlparse

import msgspec

from tidegate.ledger.claims import quotes_agent
from tidegate.ledger.errors import EvidenceRejected
from tidegate.ledger.model import EvidenceKind, Verdict
from tidegate.text.numbers import DIGITS, whole_number
from tidegate.text.sanitize import sanitize

_COMMAND = re.compile(r"^(?P<cmd>.+?)\s*\(exit(?: code)?\s+(?P<code>-?\d+)\)\s*$")
_PREFIX = re.compile(r"^(?P<kind>[a-z]+):\s*(?P<rest>.*)$", re.DOTALL)
_EVIDENCE_ID = re.compile(rf"^E-{DIGITS}$")
_IMAGE = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".svg"}
_AGENT_CLAIM = re.compile(
    r"^(the )?(agent|assistant|model|ai|bot|llm|copilot|claude|gpt)\b.*\b(say|said|says|"
    r"report|reports|reported|claim|claims|claimed|confirm|confirms|confirmed)\b"
    r"|^(done|fixed|finished|complete|completed|works|it works|all good|looks good|lgtm|ok|"
    r"verified|tests pass|tests passed|should work|implemented)\W*$",
    re.IGNORECASE,
)
_CHAT = re.compile(r"^(chat|conversation|discussed|as discussed|per chat|slack|message)\b", re.I)
_TOOL_WORDS = (
    "pytest python python3 npm npx yarn pnpm make cargo go ruff mypy tox nox uv pip "
    "git bash sh node jest tsc eslint gradle mvn dotnet ctest cmake bazel just flake8 "
    "black deno bun rspec bundle rake php composer swift pre-commit ran run"
)
_TOOLS = frozenset(_TOOL_WORDS.split())
_DURATION = re.compile(
    r"\b\d+(\.\d+)?\s*(ms|s|sec|secs|seconds|min|minutes)\b|0x[0-9a-f]+|"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?"
)


class Draft(msgspec.Struct, frozen=True):
    """Evidence checked and ready to record (the ledger gives it an id and an attempt)."""

    kind: EvidenceKind
    passed: bool
    ref: str
    fingerprint: str
    detail: tuple[str, ...] = ()


def fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_ref(text: str, base: Path, known_ids: set[str]) -> Draft:
    """Check one evidence reference; ``base`` resolves relative paths. Raises
    EvidenceRejected with the reason a person can act on."""
    text = " ".join(text.split())
    if not text:
        raise EvidenceRejected("empty evidence reference")
    if _is_url(text):
        return _ci(text)
    if quotes_agent(text):
        # Checked before the prefix: a hand-typed 'command:', 'artifact:' or 'file:' line
        # that passes on what an agent said is hearsay in any form.
        raise EvidenceRejected(_claim(text))
    m = _PREFIX.match(text)
    kind = m.group("kind") if m else ""
    rest = m.group("rest").strip() if m else ""
    if kind == "command":
        return _command(rest)
    if kind == "artifact":
        return _artifact(rest, base)
    if kind == "ci":
        return _ci(rest)
    if kind == "review":
        return _review(rest, base, known_ids)
    if kind == "file":
        return _file(rest, base)
    if kind == "run":
        raise EvidenceRejected(
            "run evidence is recorded by `tidegate ledger run` from the run's own report; "
            "it cannot be typed in"
        )
    raise EvidenceRejected(_why_not(text))


def _claim(text: str) -> str:
    return f"{text!r} is a claim, not evidence: give a command with its exit code, a file, an artifact or a URL"


def _why_not(text: str) -> str:
    if _AGENT_CLAIM.search(text):
        return _claim(text)
    if _CHAT.search(text):
        return f"{text!r} is a chat-only claim: evidence must be a command, file, artifact or URL"
    first = text.split()[0].lower()
    if first in _TOOLS or first.startswith("./"):
        return (
            f"{text!r} names a command but not its result: give 'command: {text} (exit N)' "
            "or let tidegate run it with --run"
        )
    return (
        f"{text!r} is a summary with no path, command, URL or artifact; use command:, "
        "artifact:, ci:, review: or file:"
    )


def _command(rest: str) -> Draft:
    m = _COMMAND.match(rest)
    if m is None:
        raise EvidenceRejected(
            f"'command: {rest}' has no result: an unrun command name is not evidence; "
            "write 'command: CMD (exit N)' or use --run"
        )
    cmd, digits = m.group("cmd").strip(), m.group("code")
    magnitude = whole_number(digits.removeprefix("-"))
    if magnitude is None:
        raise EvidenceRejected(f"'command: {rest}': the exit code must be a whole number")
    code = -magnitude if digits.startswith("-") else magnitude
    return Draft(
        EvidenceKind.COMMAND,
        code == 0,
        f"command: {cmd} (exit {code})",
        fingerprint("command", cmd, str(code)),
        ("- reported by the person who recorded it (not run by tidegate)",),
    )


def attested_command(command: str, exit_code: int | None, output: bytes, tail: str) -> Draft:
    """Evidence for a command tidegate ran itself. The fingerprint covers the exit code and
    the output with durations, timestamps and addresses blanked, so a blind rerun is the
    same evidence while a changed result is new. What is written (command, output tail) is
    sanitised: secrets redacted, terminal controls made visible."""
    normalised = _DURATION.sub("#", output.decode("utf-8", "replace"))
    digest = hashlib.sha256(output).hexdigest()
    shown = "timeout" if exit_code is None else str(exit_code)
    lines = [
        "- run by tidegate (host-attested)",
        f"- command: `{sanitize(command)}`",
        f"- exit: {shown}",
        f"- output sha256: {digest}",
        *_fenced(sanitize(tail)),
    ]
    return Draft(
        EvidenceKind.COMMAND,
        exit_code == 0,
        f"command: {sanitize(command)} (exit {shown}) [attested, output sha256 {digest[:12]}]",
        fingerprint("command", command, shown, normalised),
        tuple(lines),
    )


def _fenced(text: str, max_lines: int = 20) -> list[str]:
    lines = text.rstrip("\n").splitlines()[-max_lines:]
    if not lines:
        return []
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return ["", f"{fence}text", *lines, fence]


def _split_claim(rest: str) -> tuple[str, str]:
    path, _, claim = rest.partition(" -- ")
    return path.strip(), claim.strip()


def _existing(path: str, base: Path, what: str) -> Path:
    if not path:
        raise EvidenceRejected(f"{what} evidence needs a path")
    full = (base / path).expanduser()
    if not full.is_file():
        raise EvidenceRejected(f"{what} evidence {path!r}: no such file (from {base})")
    return full


def _artifact(rest: str, base: Path) -> Draft:
    path, claim = _split_claim(rest)
    full = _existing(path, base, "artifact")
    if full.suffix.lower() in _IMAGE and not claim:
        raise EvidenceRejected(
            f"{path!r} is a screenshot without a stated claim: write 'artifact: {path} -- what it shows'"
        )
    sha = file_sha256(full)
    ref = f"artifact: {path} (sha256 {sha[:12]})" + (f" -- {claim}" if claim else "")
    return Draft(
        EvidenceKind.ARTIFACT,
        True,
        ref,
        fingerprint("artifact", path, sha),
        (f"- path: `{path}`", f"- sha256: {sha}") + ((f"- claim: {claim}",) if claim else ()),
    )


def _file(rest: str, base: Path) -> Draft:
    path, claim = _split_claim(rest)
    full = _existing(path, base, "file")
    if len(claim.split()) < 2 or _AGENT_CLAIM.search(claim):
        raise EvidenceRejected(
            f"file evidence needs the claim the file supports: 'file: {path} -- what is true of it'"
        )
    sha = file_sha256(full)
    return Draft(
        EvidenceKind.FILE,
        True,
        f"file: {path} (sha256 {sha[:12]}) -- {claim}",
        fingerprint("file", path, sha, claim),
        (f"- path: `{path}`", f"- sha256 when recorded: {sha}", f"- claim: {claim}"),
    )


def _is_url(text: str) -> bool:
    parsed = urlparse(text)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc) and " " not in text


def _ci(rest: str) -> Draft:
    if not _is_url(rest):
        raise EvidenceRejected(f"ci evidence needs an http(s) URL, got {rest!r}")
    return Draft(EvidenceKind.CI, True, f"ci: {rest}", fingerprint("ci", rest))


def normalised_ref(token: str, base: Path, known_ids: set[str]) -> bool:
    """True for an evidence id that exists, a URL, or a path that exists."""
    if _EVIDENCE_ID.match(token):
        return token in known_ids
    return _is_url(token) or (base / token).expanduser().exists()


def _review(rest: str, base: Path, known_ids: set[str]) -> Draft:
    words = [w for w in re.split(r"[\s,]+", rest) if w]
    verdicts = ", ".join(v.value for v in Verdict if v is not Verdict.PENDING)
    if not words or words[0] not in verdicts.split(", "):
        raise EvidenceRejected(f"a review reference starts with its verdict ({verdicts})")
    verdict, refs = Verdict(words[0]), words[1:]
    bad = [r for r in refs if not normalised_ref(r, base, known_ids)]
    if bad:
        raise EvidenceRejected(
            f"review refs must be evidence ids, URLs or existing paths; not: {', '.join(bad)}"
        )
    if not refs:
        raise EvidenceRejected(
            "a review verdict needs normalised evidence refs (E-N, a URL or a path)"
        )
    return Draft(
        EvidenceKind.REVIEW,
        verdict is Verdict.APPROVED,
        f"review: {verdict.value} {' '.join(refs)}",
        fingerprint("review", verdict.value, *sorted(refs)),
    )
