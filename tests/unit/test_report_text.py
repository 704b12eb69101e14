"""The one report renderer (``tidegate.cli.report_text``): its exact lines, its styles on a
terminal, and hostile text shown inert (no escape sequence, no carriage return, no secret,
no markup or emoji interpretation)."""

from __future__ import annotations

import base64
import random
import re
from typing import Any

import pytest

from tests.conftest import Repo
from tidegate.cli.report_text import diff_files, report_text, terminal_styles
from tidegate.records.report import FlowReport

REPORT = FlowReport(
    status="failed",
    mode="patch",
    run_id="r1",
    repo="/w",
    attempts=2,
    max_attempts=2,
    fs_mode="read-write",
    planner="structured",
    message="verification failed",
    failure_phase="VERIFY",
    error_class="TEST_FAILURE",
    changed_files=[
        {
            "path": "calc.py",
            "action": "modify",
            "before_sha256": "ab" * 32,
            "after_sha256": "cd" * 32,
        },
        {
            "path": "new dir/x.py",
            "action": "create",
            "before_sha256": None,
            "after_sha256": "ef" * 32,
        },
    ],  # type: ignore[list-item]
    diff_sha256="12" * 32,
    t0_ref="refs/tidegate/t0/r1",
    feedback=["\n".join(f"line {n}" for n in range(1, 18))],
    notes=["kept the shadow"],
    duration_s=1.5,
)

TABLE = [  # the last column is padded too: every row as wide as the table
    "change  path          before sha256     after sha256    ",
    "modify  calc.py       abababababababab  cdcdcdcdcdcdcdcd",
    "create  new dir/x.py  -                 efefefefefefefef",
]
EXPECTED = "\n".join(
    [
        "failed patch run r1 after 2 attempt(s): verification failed",
        "  failed in VERIFY (TEST_FAILURE)",
        *TABLE,
        "  diff sha256 " + "12" * 32 + "  (T0 refs/tidegate/t0/r1)",
        "  feedback from attempt 1:",
        *(f"    line {n}" for n in range(1, 16)),
        "    ... (2 more lines in the --json report)",
        "  note: kept the shadow",
        "",
    ]
)


def _dump(**update: Any) -> dict[str, Any]:
    return REPORT.model_copy(update=update).model_dump(mode="json")


def test_a_report_reads_line_by_line() -> None:
    assert report_text(_dump()) == EXPECTED


def test_a_paused_run_says_how_to_continue_and_findings_and_rejects_are_listed() -> None:
    finding = {
        "message": "unused import",
        "path": "a.py",
        "line": 3,
        "severity": "error",
        "source": "lint",
    }
    report = _dump(status="paused", changed_files=[], feedback=[], notes=[])
    report.update(findings=[finding], rejects=["calc.py.rej"], rejects_dir="/w/.tidegate/rejects")
    text = report_text(report)
    lines = text.splitlines()
    assert lines[1] == "  continue it with: tidegate resume r1"
    assert "  [error] a.py:3 unused import" in lines
    assert lines[-2:] == ["  rejects written to /w/.tidegate/rejects:", "    calc.py.rej"]


def test_on_a_terminal_the_status_and_the_header_are_styled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    styles = terminal_styles()
    text = report_text(_dump(), styles)
    assert text.startswith("\x1b[1;31mfailed\x1b[0m patch run r1")
    assert "\x1b[1mchange\x1b[0m\x1b[1m \x1b[0m" in text
    assert re.sub(r"\x1b\[[0-9;]*m", "", text) == EXPECTED
    succeeded = report_text(_dump(status="succeeded", failure_phase=None), styles)
    assert succeeded.startswith("\x1b[1;32msucceeded\x1b[0m")
    monkeypatch.setenv("NO_COLOR", "1")
    assert report_text(_dump(), terminal_styles()).startswith("\x1b[1mfailed\x1b[0m")
    monkeypatch.setenv("TERM", "dumb")
    assert terminal_styles() is None
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert terminal_styles() is None


PIECES = ["a", " ", "[", "]", "\\", "[bold]", "[/bold]", ":smile:", "é", "\x1b[2J", "\x9b31m"]
PIECES += ["\r", "\x07", "\t", " sk-" + "Q" * 24, "/", "=", "#", "\u202e", "\x1b]52;c;eA==\x07"]


def test_hostile_text_is_shown_inert() -> None:
    rng = random.Random(5)
    styles = {"bold": "1", **{f"bold {n}": f"1;{n}" for n in (31, 32, 33, 36)}}
    for _ in range(400):

        def text() -> str:
            return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 8)))

        name = text() or "x"
        files = [{"path": name, "action": "modify", "before_sha256": "ab", "after_sha256": "cd"}]
        report = _dump(
            message=text(),
            notes=[text()],
            feedback=[text()],
            t0_ref=text(),
            changed_files=[REPORT.changed_files[0].model_validate(files[0])],
        )
        for shown in (report_text(report), report_text(report, styles)):
            plain = re.sub(r"\x1b\[(?:1|1;3[1236])m|\x1b\[0m", "", shown)
            assert "\x1b" not in plain and "\x9b" not in plain and "\r" not in plain, shown
            assert "\x07" not in plain and "\u202e" not in plain and "\t" not in plain, shown
            assert "sk-" + "Q" * 24 not in shown
    marked = report_text(_dump(message="[bold]x[/bold] :smile:", notes=["[red]n"]))
    assert "[bold]x[/bold] :smile:" in marked and "note: [red]n" in marked


def test_a_path_is_shown_from_its_exact_bytes() -> None:
    raw = base64.b64encode(b"caf\xe9.py").decode()
    files = [
        {"path": "caf\udce9.py", "action": "create", "before_sha256": None, "after_sha256": "a"}
    ]
    report = _dump(changed_files=[REPORT.changed_files[0].model_validate(files[0])])
    report["changed_files"][0]["path_bytes"] = raw
    assert '  "caf\\351.py"  ' in report_text(report)


def test_a_diff_is_cut_into_its_files_by_their_real_paths(repo: Repo) -> None:
    """``diff_files``: git's own diff of paths it quotes (a tab, non-ASCII, a quote) and of
    one it does not (a space), each file's part under its path, nothing lost."""
    names = ["plain.py", 'quote".txt', "tab\tand ünï.txt", "with space.txt"]
    for name in names:
        repo.write(name, "old\n")
    repo.commit_all()
    for name in names:
        repo.write(name, "new\n")
    diff = repo.git("diff", "--no-renames", "--binary")
    assert '"a/tab\\tand \\303\\274n\\303\\257.txt"' in diff  # quoted by git

    parts = diff_files(diff)

    assert [path for path, _ in parts] == names
    assert all(text.startswith("diff --git ") and "+new\n" in text for _, text in parts)
    assert "".join(text for _, text in parts) == diff
