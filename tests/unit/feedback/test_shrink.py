"""SHRINK: excerpts, noise removal, collapsing repeats, the token budget, determinism."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tidegate.errors import ErrorClass
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command, shell_argv
from tidegate.feedback.classify import diagnose, file_reader
from tidegate.feedback.diagnostics import Diagnosis, ParseContext, clean_text
from tidegate.feedback.noise import clean_output
from tidegate.feedback.shrink import (
    build_feedback,
    estimate_tokens,
    group_diagnostics,
    render_excerpt,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tool_output"
PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"


def fixture(name: str, root: str | None = None) -> str:
    text = clean_text((FIXTURES / f"{name}.txt").read_text("utf-8"))
    return clean_output(text, ParseContext(root=Path(root) if root else None))


def run(root: Path, command: str) -> Diagnosis:
    result = run_command(
        shell_argv(command),
        cwd=root,
        timeout_s=60,
        spill_dir=root.parent / "spill",
        clearance=Clearance.user(),
    )
    assert not result.ok
    return diagnose(command, result, root=root)


# --- token estimate -----------------------------------------------------------------------


def test_estimate_tokens_is_characters_over_four_rounded_up() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert estimate_tokens("éé") == 1  # characters, not bytes


# --- excerpts ---------------------------------------------------------------------------

SOURCE = "".join(f"line {n}\n" for n in range(1, 21)).encode()


def test_excerpt_shows_three_lines_each_side_numbered_and_marked() -> None:
    assert render_excerpt(SOURCE, 10) == "\n".join(
        [
            "   7 | line 7",
            "   8 | line 8",
            "   9 | line 9",
            "> 10 | line 10",
            "  11 | line 11",
            "  12 | line 12",
            "  13 | line 13",
        ]
    )


def test_excerpt_at_the_edges_of_the_file() -> None:
    assert render_excerpt(SOURCE, 1) == "> 1 | line 1\n  2 | line 2\n  3 | line 3\n  4 | line 4"
    assert render_excerpt(SOURCE, 20) == "\n".join(
        ["  17 | line 17", "  18 | line 18", "  19 | line 19", "> 20 | line 20"]
    )
    assert render_excerpt(SOURCE, 21) is None
    assert render_excerpt(SOURCE, 0) is None
    assert render_excerpt(b"", 1) is None


def test_excerpt_stops_at_a_neighbouring_definition() -> None:
    source = b"import os\n\n\ndef first():\n    return 1\n\n\ndef second():\n    return 2\n"
    assert render_excerpt(source, 5) == "  4 | def first():\n> 5 |     return 1"


def test_excerpt_expands_tabs_cuts_long_lines_and_reads_crlf() -> None:
    source = b"a\r\n\tb = 1\r\n" + b"c" * 300 + b"\r\n"
    lines = render_excerpt(source, 2)
    assert lines is not None
    assert lines.splitlines()[1] == "> 2 |     b = 1"
    assert lines.splitlines()[2].endswith("c…")
    assert len(lines.splitlines()[2]) < 200


def test_excerpt_of_undecodable_bytes_does_not_fail() -> None:
    assert render_excerpt(b"ok\n\xff\xfe bad\n", 2) == "  1 | ok\n> 2 | \ufffd\ufffd bad"


# --- noise removal ------------------------------------------------------------------------


def test_go_noise_removed() -> None:
    out = fixture("go_test_fail_verbose", "/tmp/tidegate-capture/go/calc")
    assert "=== RUN" not in out
    assert "--- PASS" not in out
    assert "/usr/lib/go-1.19/src/" not in out  # standard library frames
    assert "testing.tRunner" not in out
    assert "example.com/calc.TestPanic(0x…?)" in out
    assert "\tcalc_test.go:26 +0x2e" in out
    assert "(0.00s)" not in out and "0.005s" not in out
    assert "goroutine [running]:" in out
    assert "--- FAIL: TestTable/neg" in out


def test_cargo_noise_removed() -> None:
    out = fixture("cargo_test_fail_backtrace", "/tmp/tidegate-capture/rs/calc")
    assert "/rustc/" not in out
    assert "core::panicking" not in out
    assert "   4: calc::tests::it_adds\n             at ./src/lib.rs:15:9" in out
    assert "thread 'tests::it_adds' panicked at src/lib.rs:15:9:" in out
    assert "Finished" not in out and "Running" not in out
    assert "test tests::it_passes ... ok" not in out
    assert "finished in" not in out


def test_jest_noise_removed() -> None:
    out = fixture("jest_syntax_error", "/tmp/tidegate-capture/jest")
    assert "node_modules" not in out
    assert "Time:" not in out
    assert "SyntaxError: src/syntax.test.js: Unexpected token" in out
    assert len(out.splitlines()) < 20  # from 90 lines


def test_npm_log_path_and_apt_process_id_removed() -> None:
    assert "A complete log" not in fixture("npm_ls_missing")
    out = fixture("apt_dpkg_lock")
    assert "It is held by another process" in out
    assert "process 1" not in out and "process 2" not in out


def test_repeated_lines_and_blank_runs_collapse(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    diag = run(
        root, "for i in 1 2 3 4 5; do echo retrying; done; echo; echo; echo; echo gave up; exit 2"
    )
    assert diag.output == "retrying  [repeated 5 times]\n\ngave up"


# --- grouping and the feedback --------------------------------------------------------------

PARAM_TESTS = """\
import pytest


@pytest.mark.parametrize("n", range(40))
def test_many(n):
    assert False


def test_other():
    assert 1 == 2
"""


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Diagnosis:
    root = tmp_path_factory.mktemp("many")
    (root / "test_many.py").write_text(PARAM_TESTS)
    return run(root, PYTEST)


def test_identical_failures_are_collapsed_with_a_count(many: Diagnosis) -> None:
    assert many.error_class is ErrorClass.TEST
    assert len(many.failing_tests) == 41
    groups = group_diagnostics(many.diagnostics)
    assert [g.count for g in groups] == [40, 1]
    assert "40 times; also test_many.py::test_many[1], test_many.py::test_many[2]" in (
        build_feedback(many, file_reader(None), 1500)
    )


@pytest.mark.parametrize("budget", [30, 60, 100, 200, 400, 800, 1500, 3000])
def test_feedback_fits_the_budget(many: Diagnosis, budget: int) -> None:
    text = build_feedback(many, file_reader(None), budget)
    assert estimate_tokens(text) <= budget
    if budget >= 60:
        assert text.startswith("TEST: 41 failing tests (pytest): ")


def test_a_larger_budget_shows_more(many: Diagnosis) -> None:
    sizes = [len(build_feedback(many, file_reader(None), b)) for b in (100, 200, 400, 800)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    small = build_feedback(many, file_reader(None), 200)
    assert "… and " in small  # failing tests listed only in part
    assert "[trimmed to ~200 tokens:" in small


def test_feedback_reads_excerpts_through_read_file(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "calc.py").write_text("def half(n):\n    return n / 0\n")
    (root / "test_calc.py").write_text(
        "import calc\n\n\ndef test_half():\n    assert calc.half(4) == 2\n"
    )
    diag = run(root, PYTEST)
    asked: list[str] = []

    def read(path: str) -> bytes | None:
        asked.append(path)
        return (root / path).read_bytes()

    text = build_feedback(diag, read, 1500)
    assert asked == ["calc.py"]  # relative to the root, read once
    assert "> 2 |     return n / 0" in text
    assert "   via test_calc.py:5" in text
    assert diag.files_involved == ["calc.py", "test_calc.py"]
    unreadable = build_feedback(diag, lambda path: None, 1500)
    assert "calc.py:2: ZeroDivisionError: division by zero" in unreadable
    assert "> 2 |" not in unreadable


def test_feedback_without_diagnostics_is_the_output_tail(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    diag = run(root, 'for i in $(seq 1 400); do echo "step $i of 400 done"; done; exit 1')
    assert diag.error_class is ErrorClass.LOGIC
    text = build_feedback(diag, file_reader(root), 300)
    assert estimate_tokens(text) <= 300
    assert text.splitlines()[-2] == "  step 400 of 400 done"
    assert "step 1 of 400 done" not in text
    assert text.splitlines()[-1].startswith("[trimmed to ~300 tokens: ")
    assert "earlier output line(s) left out]" in text.splitlines()[-1]
