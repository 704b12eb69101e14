"""The structured objective parser: every directive, blocks, prose, comments, and errors that
name ``source:line``."""

from __future__ import annotations

import re

import pytest

from tidegate.errors import UsageError
from tidegate.planners.objective import Block, ObjectiveError, parse_objective


def test_every_directive_parses() -> None:
    text = (
        "edit-file: calc.py\n"
        "replace: return a - b\n"
        "with: return a + b\n"
        "replace: x = 1\n"
        "with: x = 2\n"
        "verify-contains: return a + b\n"
        "\n"
        "create-file: docs/NOTE.md\n"
        "content: hello\n"
        "executable: true\n"
        "verify-contains: hello\n"
        "delete-file: old.txt\n"
        "rename-file: a.txt\n"
        "to: b/c.txt\n"
        "chmod-file: run.sh\n"
        "executable: false\n"
        "patch-file: fix.diff\n"
    )
    objective = parse_objective(text)
    assert objective.text == text
    assert objective.prose == ""
    assert objective.has_edits
    assert objective.blocks == [
        Block(
            kind="edit-file",
            path="calc.py",
            line=1,
            replacements=[("return a - b", "return a + b"), ("x = 1", "x = 2")],
            checks=["return a + b"],
        ),
        Block(
            kind="create-file",
            path="docs/NOTE.md",
            line=8,
            content="hello",
            executable=True,
            checks=["hello"],
        ),
        Block(kind="delete-file", path="old.txt", line=12),
        Block(kind="rename-file", path="a.txt", line=13, to="b/c.txt"),
        Block(kind="chmod-file", path="run.sh", line=15, executable=False),
        Block(kind="patch-file", path="fix.diff", line=17),
    ]


def test_edit_file_with_only_verify_contains_is_complete() -> None:
    (block,) = parse_objective("edit-file: a.py\nverify-contains: def f\n").blocks
    assert block.replacements == [] and block.checks == ["def f"]


def test_default_block_keeps_every_newline() -> None:
    text = (
        "edit-file: calc.py\n"
        "replace: <<<\n"
        "def add(a, b):\n"
        "    return a - b\n"
        ">>>\n"
        "with: <<<\n"
        "def add(a, b):\n"
        "\n"
        "    return a + b\n"
        "\n"
        ">>>\n"
    )
    (block,) = parse_objective(text).blocks
    assert block.replacements == [
        ("def add(a, b):\n    return a - b\n", "def add(a, b):\n\n    return a + b\n\n")
    ]


def test_tagged_block_may_contain_the_default_terminator_and_directives() -> None:
    text = (
        "create-file: doc.md\n"
        "content: <<<EOF\n"
        ">>>\n"
        "edit-file: not-a-directive.py\n"
        "# not a comment\n"
        "  indented  \n"
        "\n"
        "EOF\n"
    )
    (block,) = parse_objective(text).blocks
    assert block.content == ">>>\nedit-file: not-a-directive.py\n# not a comment\n  indented  \n\n"


def test_empty_block_is_empty_content() -> None:
    (block,) = parse_objective("create-file: empty.txt\ncontent: <<<\n>>>\n").blocks
    assert block.content == ""


def test_block_is_closed_by_a_line_holding_only_the_terminator() -> None:
    text = "create-file: a.txt\ncontent: <<<END\n END\nEND \nEND\n"
    (block,) = parse_objective(text).blocks
    assert block.content == " END\nEND \n"


@pytest.mark.parametrize("char", ["\x0c", "\x1c", "\x85", "\u2028"])
def test_block_keeps_unusual_characters_verbatim(char: str) -> None:
    """A block's value is verbatim: characters Python's str.splitlines() treats as line
    breaks (form feed, U+2028 ...) are not newlines and must survive unchanged."""
    body = f"page one{char}page two\n"
    (block,) = parse_objective(f"create-file: a.txt\ncontent: <<<\n{body}>>>\n").blocks
    assert block.content == body


def test_crlf_block_keeps_its_carriage_returns() -> None:
    text = "create-file: win.txt\r\ncontent: <<<\r\nline 1\r\nline 2\r\n>>>\r\n"
    (block,) = parse_objective(text).blocks
    assert block.path == "win.txt"
    assert block.content == "line 1\r\nline 2\r\n"


def test_prose_before_the_first_directive() -> None:
    text = (
        "Fix the sign in add().\n"
        "Note: the tests cover it.\n"
        "with: this is prose too, no file directive yet\n"
        "\n"
        "edit-file: calc.py\n"
        "replace: a - b\n"
        "with: a + b\n"
    )
    objective = parse_objective(text)
    assert objective.prose == (
        "Fix the sign in add().\nNote: the tests cover it.\n"
        "with: this is prose too, no file directive yet"
    )
    assert [b.kind for b in objective.blocks] == ["edit-file"]
    assert objective.blocks[0].line == 5


def test_prose_only_has_no_edits() -> None:
    objective = parse_objective("  Review calc.py for bugs.\n\n")
    assert objective.prose == "Review calc.py for bugs."
    assert objective.blocks == []
    assert not objective.has_edits


def test_comments_and_blank_lines_between_directives() -> None:
    text = (
        "edit-file: calc.py\n"
        "# the sign is wrong\n"
        "\n"
        "   # indented comment\n"
        "replace: a - b\n"
        "with: a + b\n"
        "# trailing comment\n"
    )
    (block,) = parse_objective(text).blocks
    assert block.replacements == [("a - b", "a + b")]


def test_values_keep_inner_and_trailing_spaces_but_paths_are_stripped() -> None:
    (block,) = parse_objective("edit-file:   calc.py  \nreplace:  a - b \nwith: a + b\n").blocks
    assert block.path == "calc.py"
    assert block.replacements == [(" a - b ", "a + b")]


def test_empty_with_value_deletes_the_text() -> None:
    (block,) = parse_objective("edit-file: calc.py\nreplace: # TODO\nwith:\n").blocks
    assert block.replacements == [("# TODO", "")]


def test_crlf_objective_parses() -> None:
    text = "edit-file: calc.py\r\nreplace: a - b\r\nwith: a + b\r\n"
    (block,) = parse_objective(text).blocks
    assert block.replacements == [("a - b", "a + b")]


def _error(text: str, source: str = "objective") -> str:
    with pytest.raises(ObjectiveError) as info:
        parse_objective(text, source)
    assert isinstance(info.value, UsageError)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        pytest.param("edit-file: a.py\ncontent: x\n", 2, ["content", "edit-file"], id="follower"),
        pytest.param(
            "create-file: a.txt\ncontent: x\nreplace: y\n", 3, ["replace"], id="follower-create"
        ),
        pytest.param("delete-file: a.txt\nto: b.txt\n", 2, ["to", "nothing"], id="follower-del"),
        pytest.param("edit-file: a.py\nfrobnicate: x\n", 2, ["frobnicate"], id="unknown-key"),
        pytest.param("edit-file: a.py\nwith: b\n", 2, ["with", "replace"], id="with-alone"),
        pytest.param(
            "edit-file: a.py\nreplace: a\nwith: b\nwith: c\n", 4, ["with"], id="second-with"
        ),
        pytest.param("edit-file: a.py\nreplace: a\n", 2, ["replace", "with"], id="no-with"),
        pytest.param(
            "edit-file: a.py\nreplace: a\ndelete-file: b\n", 2, ["replace"], id="no-with-next"
        ),
        pytest.param("edit-file: a.py\nreplace: a\nreplace: b\n", 3, ["replace"], id="two-rep"),
        pytest.param("edit-file: a.py\nreplace:\nwith: b\n", 2, ["replace", "empty"], id="empty"),
        pytest.param(
            "create-file: a.txt\ncontent: <<<\nline\n", 2, ["never closed", ">>>"], id="unclosed"
        ),
        pytest.param(
            "x\ncreate-file: a.txt\ncontent: <<<END\nline\nEND.\n",
            3,
            ["never closed", "END"],
            id="unclosed-tag",
        ),
        pytest.param("edit-file:\nreplace: a\nwith: b\n", 1, ["path"], id="missing-path"),
        pytest.param("\n\ndelete-file:    \n", 3, ["path"], id="blank-path"),
        pytest.param("create-file: new.txt\n", 1, ["content", "new.txt"], id="missing-content"),
        pytest.param("prose\nedit-file: a.py\n", 2, ["replace", "a.py"], id="no-replacement"),
        pytest.param("rename-file: a.txt\n", 1, ["to"], id="missing-to"),
        pytest.param("chmod-file: run.sh\n", 1, ["executable"], id="missing-executable"),
        pytest.param(
            "chmod-file: run.sh\nexecutable: yes\n", 2, ["true", "false"], id="bad-executable"
        ),
        pytest.param(
            "edit-file: a.py\nreplace: a\nwith: b\nnow fix it please\n",
            4,
            ["directive", "now fix it"],
            id="stray-text",
        ),
        pytest.param(
            "delete-file: a.txt\n\nreplace:x\n", 3, ["directive", "replace:x"], id="no-space"
        ),
    ],
)
def test_errors_name_source_and_line(text: str, line: int, words: list[str]) -> None:
    message = _error(text, source="task.txt")
    assert re.match(rf"task\.txt:{line}: ", message), message
    for word in words:
        assert word in message, message


def test_default_source_name() -> None:
    assert _error("create-file: x\n").startswith("objective:1: ")
