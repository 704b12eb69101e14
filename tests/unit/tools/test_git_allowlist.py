"""git.exec's parser: what it accepts, the argv it rebuilds, and what it refuses."""

from __future__ import annotations

import pytest

from tidegate.tools.git_allowlist import Accepted, Refused, canonical
from tidegate.tools.git_subcommands import SUBCOMMANDS

NO_PROGRAMS = ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        (["log", "-n5"], ("log", *NO_PROGRAMS, "--max-count=5")),
        (["log", "-5"], ("log", *NO_PROGRAMS, "--max-count=5")),
        (["log", "-n", "5"], ("log", *NO_PROGRAMS, "--max-count=5")),
        (["log", "--max-c", "5"], ("log", *NO_PROGRAMS, "--max-count=5")),
        (["log", "-pw"], ("log", *NO_PROGRAMS, "--patch", "--ignore-all-space")),
        (["log", "-M50%"], ("log", *NO_PROGRAMS, "--find-renames=50%")),
        (["log", "-M", "x"], ("log", *NO_PROGRAMS, "--find-renames", "--end-of-options", "x")),
        (["diff", "-U1", "a", "--", "b"],
         ("diff", *NO_PROGRAMS, "--unified=1", "--end-of-options", "a", "--", "b")),
        (["diff", "--name-o"], ("diff", *NO_PROGRAMS, "--name-only")),
        (["status", "-sb", "x"], ("status", "--ignore-submodules=dirty", "--short", "--branch",
                                  "--", "x")),
        (["grep", "-e", "", "x"], ("grep", "--no-textconv", "-e", "", "x")),
        (["grep", "-n", "pat"], ("grep", "--no-textconv", "--line-number", "-epat")),
        (["grep", "/etc/x"], ("grep", "--no-textconv", "-e/etc/x")),  # a pattern, not a place
        (["blame", "f"], ("blame", "--no-textconv", "--", "f")),
        (["branch", "--list", "f*"], ("branch", "--list", "f*")),
        (["branch", "--contains", "HEAD"], ("branch", "--contains=HEAD", "--list")),
        (["rev-parse", "--short", "HEAD"], ("rev-parse", "--short", "HEAD")),
        (["log", "--", "-p"], ("log", *NO_PROGRAMS, "--end-of-options", "--", "-p")),
    ],
)  # fmt: skip
def test_the_argv_that_runs_is_rebuilt(argv: list[str], runs: tuple[str, ...]) -> None:
    got = canonical(argv)
    assert got == Accepted(runs)
    # what runs, less the options tidegate adds, parses to itself: a fixed point
    forced = SUBCOMMANDS[runs[0]].forced
    assert canonical([runs[0], *(a for a in runs[1:] if a not in forced)]) == got


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["grep", "-iOsh", "x"], "-O is not allowed"),
        (["grep", "--open-files-in-pag=sh", "x"], "not allowed"),
        (["diff", "--s"], "ambiguous"),
        (["diff", "--stat=1", "--no-index"], "not allowed"),
        (["diff", "--patch=x"], "takes no value"),
        (["log", "-n"], "needs a value"),
        (["log", "--", "/etc/passwd"], "outside the repository"),
        (["show", "HEAD", "../../x"], "climbs out"),
        (["log", "--end-of-options", "-p"], "would be read as an option"),
        (["diff", "-"], "standard input"),
        (["grep", "-e", "a", "/etc"], "outside the repository"),
        (["blame", "/etc/passwd"], "outside the repository"),
        (["cat-file", "-p", "a", "b", "c"], "at most 2"),
        (["rev-parse", "HEAD", "--", "x"], "takes no paths"),
        (["blame", "a", "b", "c"], "exactly one file"),
        (["branch", "new"], "only list"),
        (["branch", "--show-current", "-a"], "nothing else"),
        (["log", "--format=%GS"], "signature"),
        (["push"], "not an allowed subcommand"),
        ([], "needs a subcommand"),
        (["log", "--grep=a\0b"], "NUL"),
    ],
)
def test_refusals_say_why(argv: list[str], why: str) -> None:
    got = canonical(argv)
    assert isinstance(got, Refused) and why in got.reason, got


def test_no_table_holds_an_option_that_runs_writes_or_redirects() -> None:
    dangerous = {"output", "ext-diff", "textconv", "open-files-in-pager", "contents",
                 "ignore-revs-file", "no-index", "exclude-from", "orderfile", "git-dir",
                 "work-tree", "exec-path", "show-signature", "filters", "file", "untracked",
                 "recurse-submodules", "paginate", "config", "dirty", "stdin"}  # fmt: skip
    for name, spec in SUBCOMMANDS.items():
        query = {"git-dir"} if name == "rev-parse" else set()  # prints the path, nothing more
        assert not dangerous & (set(spec.by_long) - query), name
        assert "O" not in spec.by_short and "X" not in spec.by_short, name
    assert "f" not in SUBCOMMANDS["grep"].by_short  # grep -f reads patterns from a file
    assert "S" not in SUBCOMMANDS["blame"].by_short  # blame -S reads revisions from a file
