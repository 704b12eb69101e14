"""Attack: the user's secret appears after the session started. A model's first command
runs (the mask's index is built), then the user, outside the tools, drops a ``.env`` with
a key into an existing directory and a deploy key into a new one, and renames an old
secret. The model's next commands read all of them: each reads empty, because the mask is
brought up to date before every command, not computed once per session."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor

KEY = "UmVmcmVzaGVkLW1hc2stdmFsdWUtMjAyNi0xMi0wMg"


def _age(root: Path) -> None:
    """Directories an hour old, so no listing of them counts as racy: only the refresh's
    stat comparison can see what the user changes."""
    then = time.time_ns() - 3600 * 10**9
    for here, dirs, _files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for d in dirs:
            os.utime(os.path.join(here, d), ns=(then, then))
    os.utime(root, ns=(then, then))


@requires_containment
def test_secrets_written_between_commands_are_masked(committed_repo: Repo) -> None:
    committed_repo.write("config/settings.py", "DEBUG = True\n")
    committed_repo.write("old/.envrc", f"export KEY={KEY}\n")
    _age(committed_repo.root)
    root = committed_repo.root
    with executor(root, containment="required") as ex:
        first = ex.execute(call("command_run", command="cat old/.envrc; ls config"))
        assert first.ok and first.output is not None
        assert KEY not in first.output["stdout"]
        # the user, between two of the model's commands
        (root / "config/.env").write_text(f"SERVICE={KEY}\n")
        (root / "keys/deploy").mkdir(parents=True)
        (root / "keys/deploy/id_ed25519").write_text(f"BEGIN {KEY}\n")
        (root / "old/.envrc").rename(root / "old/.env.local")
        second = ex.execute(
            call(
                "command_run",
                command="cat config/.env keys/deploy/id_ed25519 old/.env.local; echo done",
            )
        )
    assert second.ok and second.output is not None, second
    out = second.output
    assert out["stdout"] == "done\n" and KEY not in out["stderr"], out
    masked = out["containment"]["masked"]
    for rel in ("config/.env", "keys/deploy/id_ed25519", "old/.env.local"):
        assert str(root.resolve() / rel) in masked, masked
    assert str(root.resolve() / "old/.envrc") not in masked
