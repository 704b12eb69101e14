"""The published interpreter: one immutable value that both spawns and describes."""

from __future__ import annotations

import pytest

from tidegate.exec.interpreter import POSIX_SH, Interpreter, host_interpreter
from tidegate.exec.runner import SHELL, shell_argv


def test_host_interpreter_is_posix_sh_with_closed_stdin_and_no_tty() -> None:
    interp = host_interpreter()
    assert interp is host_interpreter()  # one value per process
    assert (interp.executable, interp.argv_prefix) == ("/bin/sh", ("-c",))
    assert (interp.dialect, interp.path_style) == ("posix-sh", "posix")
    assert (interp.stdin, interp.tty, interp.interactive) == ("closed", False, False)


def test_argv_keeps_the_command_one_argument() -> None:
    command = "echo 'a b'; $(touch x) `y` \n z"
    assert host_interpreter().argv(command) == ["/bin/sh", "-c", command]
    assert shell_argv(command) == [*SHELL, command]


def test_describe_is_computed_from_the_same_value() -> None:
    described = host_interpreter().describe()
    assert described == {
        "executable": "/bin/sh",
        "argumentsPrefix": ["-c"],
        "commandMode": "shell_string",
        "shell": "sh",
        "dialect": "posix-sh",
        "pathStyle": "posix",
        "interactive": False,
        "stdin": "closed",
        "tty": False,
    }
    other = Interpreter("/usr/bin/dash", ("-e", "-c"), "posix-sh", "posix")
    assert other.describe()["executable"] == other.argv("x")[0]
    assert other.describe()["argumentsPrefix"] == other.argv("x")[1:-1]


def test_the_interpreter_cannot_be_changed_in_place() -> None:
    with pytest.raises(AttributeError, match="immutable"):
        POSIX_SH.executable = "/bin/bash"  # type: ignore[misc]
