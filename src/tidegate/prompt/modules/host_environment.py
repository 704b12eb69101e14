"""The host and the one interpreter that runs commands, stated exactly as the host names them.

Assembly refuses to build a prompt with an active command tool and no concrete interpreter
(``CapabilityMismatch``), so when a command tool is listed this module always has a real
executable, argument prefix, dialect and path style to state.
"""

from __future__ import annotations

import json

from tidegate.prompt.contract import CommandEnvironment
from tidegate.prompt.modules.base import ModuleContext, PromptModule

# A reader-friendly gloss for well-known dialects; the host's own name is always shown too.
_DIALECT_GLOSS = {
    "sh": "POSIX sh",
    "posix-sh": "POSIX sh",
    "dash": "POSIX sh",
    "bash": "GNU bash",
    "zsh": "zsh",
    "cmd": "Windows cmd.exe",
    "cmd.exe": "Windows cmd.exe",
    "powershell": "Windows PowerShell",
    "pwsh": "PowerShell",
}

_PATHS = {
    "posix": "POSIX paths (forward slashes)",
    "windows": "Windows paths (drive letters, backslashes)",
}


def _command_lines(cmd: CommandEnvironment) -> list[str]:
    name = cmd.effective_dialect
    gloss = _DIALECT_GLOSS.get(name.lower())
    dialect = f"`{name}`" + (f" ({gloss})" if gloss else "")
    prefix = json.dumps(list(cmd.arguments_prefix), ensure_ascii=False)
    if cmd.command_mode == "shell_string":
        how = (
            f"Commands are run as `{cmd.executable}` with the argument prefix {prefix} "
            f"followed by your command as one string, so write each command in the "
            f"{dialect} dialect."
        )
    else:
        how = (
            f"Commands are run as `{cmd.executable}` with the argument prefix {prefix} "
            f"followed by your arguments as a list; no shell parses them (declared dialect "
            f"{dialect}), so quoting, pipes, redirection and variables have no effect."
        )
    return [
        how,
        f"Paths inside commands use {_PATHS.get(cmd.path_style, cmd.path_style)}.",
        "Write for exactly this interpreter, not for the user's login shell or terminal.",
        "Standard input is closed and no terminal (TTY) is attached: a command that prompts "
        "or waits for input fails or runs into its deadline, so pass non-interactive flags "
        "(for example --yes, --no-pager) and never start an editor or a pager.",
    ]


def _render(ctx: ModuleContext) -> str | None:
    env = ctx.config.host_environment
    if env is None:
        return None
    lines = [
        "# Host environment",
        f"Operating system: {env.operating_system}; architecture: {env.architecture}.",
    ]
    if isinstance(env.command, CommandEnvironment):
        lines.extend(_command_lines(env.command))
    else:
        lines.append("The host published no command interpreter; no command can be run.")
    return "\n".join(lines)


MODULE = PromptModule(name="host-environment", version="1.0.0", render=_render)
