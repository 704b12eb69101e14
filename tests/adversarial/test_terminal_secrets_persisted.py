"""Attack: a program on an operator terminal prints credentials (an OpenAI key, an AWS key
id, a GitHub token, a ``password=`` line, a private key block that arrives a line at a
time, a JSON token coloured by escape codes in the middle, a key wrapped across two screen
rows) and a bidi override that disguises a file name. Everything the session persists
under the state root (the transcript file, the handoffs' previews and last lines, the
screen captures of ``agent-submit``, the evidence and memory records) goes through the one
sanitiser: no byte of any file written holds a secret, its tail, or a raw control
character.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tests.e2e._operator import op

SP = "single-process"
OPENAI = "sk-proj-Q7x9Lm2Np4Rt6Vw8Yz1Ab3Cd5Ef7Gh9Jk"
AWS = "AKIAZ7Q2M4X8C6V1B3N5"
GITHUB = "ghp_a9B8c7D6e5F4g3H2i1J0k9L8m7N6o5P4q3R2"
PASSWORD = "Hunter2-Correct-Horse-77"
TOKEN = "tok-Zx81-Qw72-Er63"
PEM_BODY = (
    "MIIEpAIBAAKCAQEA7s9Xq2Lr4Kc8Vb1Nm3Qw5Ez7Ty9Uo0Ip2As4Df6Gh8",
    "Jk1Lz3Xc5Vb7Nm9Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz1Xc3Vb5Nm7Qw9Er",
)
WRAPPED = "sk-proj-" + "Wr4pP3dK3yT41lZ9x8C7v6B5n4M3q2W1e0R9t8Y7u6I5o4P3a2S1d0F9g8H7"
BIDI = "\u202e"
FORBIDDEN = [
    OPENAI[8:],
    AWS,
    GITHUB[4:],
    PASSWORD,
    TOKEN,
    *PEM_BODY,
    WRAPPED[-40:],  # the part a screen wrap would leave without its sk-proj- prefix
]
# What the program prints, in pieces (a private key a line at a time, as a slow cat does).
PIECES = [
    f"key {OPENAI}\naws {AWS}\ngh {GITHUB}\nDB_PASSWORD={PASSWORD}\n",
    f'{{"api_token": \x1b[0;32m"{TOKEN}"\x1b[0m}}\n',
    f"report{BIDI}fdp.exe\n",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    f"{PEM_BODY[0]}\n",
    f"{PEM_BODY[1]}\n-----END RSA PRIVATE KEY-----\n",
    "visible-marker-42\n",
]


def octal(text: str) -> str:
    """``text`` (as UTF-8) as a quoted printf %b argument, every byte an octal escape, so
    that the objective itself holds no secret."""
    return "'" + "".join(f"\\0{b:o}" for b in text.encode()) + "'"


def assert_nothing_secret_persisted(root: Path) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for secret in FORBIDDEN:
            assert secret.encode() not in data, (path.name, secret)
        assert BIDI.encode() not in data and b"\x1b" not in data, path.name
    return files


def test_a_terminal_session_persists_no_secret_it_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "state"
    printing = "; sleep 0.3; ".join(f"printf '%b' {octal(piece)}" for piece in PIECES)
    objective = f"command: {printing}\nwait-for: visible-marker-42\n"
    for secret in FORBIDDEN:
        assert secret not in objective
    res = op(
        capsys, "engineer", "terminal", SP, objective, str(root), "--cwd", str(tmp_path), "--json"
    )
    assert res.code == 0, res.out
    files = assert_nothing_secret_persisted(root)
    transcript = next(p for p in files if p.parent.name == "terminal_transcripts")
    kept = transcript.read_text()
    assert "visible-marker-42" in kept and "DB_PASSWORD=[REDACTED]" in kept
    assert "report\\u202efdp.exe" in kept  # the override, made visible
    assert "-----BEGIN RSA PRIVATE KEY-----" not in kept  # withheld from BEGIN to END
    read = op(capsys, "engineer", "terminal-read", SP, str(root), "--json")
    assert read.code == 0 and "visible-marker-42" in read.out
    for secret in FORBIDDEN:
        assert secret not in read.out


FAKE_CODEX = r"""
import sys, time
pieces = PIECES
def say(text):
    sys.stdout.write(text.replace("\n", "\r\n")); sys.stdout.flush()
try:
    say("OpenAI Codex (v0.0.0-fake)\n")
    for piece in pieces:
        say(piece); time.sleep(0.1)
    say("x" * 100 + " " + WRAPPED + "\n")  # runs past column 120: the screen wraps it
    say("Ask Codex to do anything\n")
    sys.stdin.readline()
    say("Worked for 1s\n")
    sys.stdin.readline()
except KeyboardInterrupt:
    pass
"""


@requires_containment  # agent-submit starts nothing it cannot contain
def test_agent_submit_persists_no_secret_its_agent_showed(
    capsys: pytest.CaptureFixture[str],
    committed_repo: Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "fake_codex.py"  # beside the wrapper: the contained view shows it
    script.write_text(f"PIECES = {PIECES!r}\nWRAPPED = {WRAPPED!r}\n{FAKE_CODEX}")
    wrapper = bin_dir / "codex"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("TIDEGATE_AGENT_PATH", str(bin_dir))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    root = tmp_path / "state"
    res = op(
        capsys, "engineer", "agent-submit", SP, str(root), "--agent", "codex",
        "--cwd", str(committed_repo.root), "--json",
    )  # fmt: skip
    view = res.json()
    assert (res.code, view["outcome"]) == (0, "success"), view
    assert "[REDACTED]" in view["transcript_preview"]
    assert "visible-marker-42" in view["transcript_preview"]
    assert_nothing_secret_persisted(root)
    for secret in FORBIDDEN:
        assert secret not in res.out
