"""Shell completion: ``tidegate completion bash`` sourced into a real bash completes commands,
sub-commands, options, an option's choices and the run ids a command applies to, without
importing typer or the engine; the table it reads is the typer application's shape.

``python -m tests.e2e.test_completion > src/tidegate/cli/completion_table.py`` writes the
table again after a command or an option changed."""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

import pytest
import typer

from tests.conftest import Repo, tidegate_cli
from tests.e2e._landing import dirty, held, landed
from tidegate.cli import completion_table
from tidegate.cli.app import full_app

__all__ = ["dirty"]  # the fixture

TABLE = Path(completion_table.__file__)

HEADER = '''"""The command line's shape for shell completion and "did you mean" (``cli.completion``),
written by ``python -m tests.e2e.test_completion`` from the typer application, which
``tests/e2e/test_completion.py`` compares it with. Each command path names its words:
a sub-command (``!``: a hidden one), an option (``--name``: a flag, ``--name=``: takes a
value, ``--name=a|b``: one of these), ``RUN``: it takes a run id. Read without typer."""

COMMANDS: dict[str, str | tuple[str, ...]] = {
'''


def table_text() -> str:
    """The completion table module's text for the typer application as it is."""
    lines = [HEADER]
    _walk(typer.main.get_command(full_app()), "", lines)
    lines.append("}\n")
    return "".join(lines)


def _choices(annotation: Any) -> tuple[str, ...]:
    """An option's choices: an enum's values or a Literal's (Optional or not); else ()."""
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(str(member.value) for member in annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return tuple(str(a) for a in typing.get_args(annotation))
    for arg in typing.get_args(annotation):
        if found := _choices(arg):
            return found
    return ()


def _walk(command: Any, path: str, lines: list[str]) -> None:
    subs = getattr(command, "commands", {})
    words = [("!" if subs[n].hidden else "") + n for n in sorted(subs)]
    for param in command.params:
        if param.param_type_name == "argument":
            words += ["RUN"] if param.name == "run_id" else []
            continue
        value = "" if param.is_flag else "=" + "|".join(_choices(param.type_descriptor.annotation))
        words += [name + value for name in (*param.opts, *param.secondary_opts)]
    text = " ".join(words)
    single = f"    {path!r}: {text!r},\n".replace("'", '"')
    if len(single) <= 101:
        lines.append(single)
    else:
        parts = textwrap.wrap(text, 84, break_long_words=False, break_on_hyphens=False)
        lines.append(f'    "{path}": (\n')
        lines.extend(f'        "{part}",\n' for part in parts)
        lines.append("    ),\n")
    for name in sorted(subs):
        _walk(subs[name], f"{path} {name}".strip(), lines)


def test_the_table_is_the_typer_applications_shape() -> None:
    assert TABLE.read_text() == table_text(), (
        "python -m tests.e2e.test_completion > src/tidegate/cli/completion_table.py"
    )


def _bash(line: str, cwd: Path) -> list[str]:
    """What a real bash with ``tidegate completion bash`` sourced offers for ``line``
    (the cursor at its end)."""
    script = tidegate_cli("completion", "bash", cwd=cwd).stdout
    program = (
        f"{script}\n"
        'read -ra COMP_WORDS <<< "$LINE"; [[ $LINE == *" " ]] && COMP_WORDS+=("")\n'
        "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "complete -p tidegate\n"
        '_tidegate_complete; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {
        **os.environ,
        "LINE": line,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    shown = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    registered, *offered = shown.stdout.splitlines()
    assert registered == "complete -o default -F _tidegate_complete tidegate"
    return [o for o in offered if o]


def test_bash_completes_commands_options_choices_and_run_ids(dirty: Repo) -> None:
    assert _bash("tidegate ru", dirty.root) == ["run", "runs"]
    assert _bash("tidegate tools ", dirty.root) == ["call", "list"]
    assert _bash("tidegate run --cont", dirty.root) == ["--containment"]
    assert _bash("tidegate run --hold --containment ", dirty.root) == ["auto", "required", "none"]
    assert _bash("tidegate apply --r", dirty.root) == ["--repo", "--review"]
    assert _bash("tidegate run --objective-file ", dirty.root) == []  # bash: file names
    assert _bash("tidegate apply ", dirty.root) == ["latest"]  # nothing held yet
    first = landed(dirty)
    second = held(dirty, "edit-file: README.md\nreplace: unstaged notes\nwith: notes\n", "true")
    assert _bash("tidegate apply ", dirty.root) == ["latest", second]
    assert _bash("tidegate undo ", dirty.root) == ["latest", first]
    assert _bash("tidegate read ", dirty.root) == ["latest", second, first]
    assert _bash(f"tidegate read {first[:-2]}", dirty.root) == [first]
    assert _bash("tidegate read latest ", dirty.root) == []  # one run id only
    outside = dirty.root.parent
    assert _bash(f"tidegate read --repo {dirty.root} ", outside) == ["latest", second, first]
    assert _bash("tidegate read ", outside) == []  # not in a repository: nothing, no error


def test_completion_imports_neither_typer_nor_the_engine(dirty: Repo, tmp_path: Path) -> None:
    held(dirty, verify="true")
    log = tmp_path / "importtime.txt"
    argv = [sys.executable, "-X", "importtime", "-m", "tidegate", "__complete", "--", "apply", ""]
    with log.open("w") as err:
        shown = subprocess.run(argv, cwd=dirty.root, stdout=subprocess.PIPE, stderr=err, text=True)
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) == 2
    imported = {line.split("|")[-1].strip() for line in log.read_text().splitlines()[1:]}
    assert "tidegate.cli.completion" in imported
    heavy = {"typer", "click", "rich", "pydantic", "tidegate.flow", "tidegate.workspace"}
    assert not heavy & imported, heavy & imported


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse(shell: str, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    path = tmp_path / f"tidegate.{shell}"
    path.write_text(tidegate_cli("completion", shell, cwd=tmp_path).stdout)
    check = [shell, "-n", str(path)]
    assert subprocess.run(check, capture_output=True, check=False).returncode == 0


if __name__ == "__main__":
    sys.stdout.write(table_text())
