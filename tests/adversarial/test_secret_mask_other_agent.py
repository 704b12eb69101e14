"""Attack: another agent on the same repository writes a secret between two of this
agent's commands. Two tool hosts share one work tree, as 8 MCP servers do; the first
host's mask index is built and watched (inotify) before the second host's contained
command creates a ``.env`` and a deploy key in new directories (merged into the real tree
from that host's own overlay), and the user moves a directory holding another key. The first host's next command
reads both empty: the watch reported the other process's changes, though nothing of them
went through this host."""

from __future__ import annotations

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor

KEY = "T3RoZXItYWdlbnQtd3JvdGUtdGhpcy0yMDI2LTEyLTA2"


@requires_containment
def test_a_secret_another_agent_writes_is_masked_at_the_next_command(
    committed_repo: Repo,
) -> None:
    root = committed_repo.root
    committed_repo.write("src/app.py", "print()\n")
    committed_repo.write("keys/old/id_rsa", f"BEGIN {KEY}\n")
    with (
        executor(root, containment="required") as first,
        executor(root, containment="required") as other,
    ):
        warm = first.execute(call("command_run", command="ls src"))
        assert warm.ok, warm
        (index,) = first.context.workspace.secrets._indexes.values()
        assert index.watching  # the inotify path, not the stat walk
        wrote = other.execute(
            call(
                "command_run",
                command=f"mkdir -p deep/er && echo 'K={KEY}' > deep/er/.env"
                f" && mkdir -p keys/new && echo 'BEGIN {KEY}' > keys/new/id_rsa",
            )
        )
        assert wrote.ok and wrote.output is not None and wrote.output["exit_code"] == 0, wrote
        assert (root / "deep/er/.env").exists() and (root / "keys/new/id_rsa").exists()
        (root / "moved").mkdir()  # and the user moves a directory that holds a key
        (root / "keys/old").rename(root / "moved/old")
        second = first.execute(
            call(
                "command_run",
                command="cat deep/er/.env keys/new/id_rsa moved/old/id_rsa; echo done",
            )
        )
    assert second.ok and second.output is not None, second
    out = second.output
    assert out["stdout"] == "done\n" and KEY not in out["stderr"], out
    masked = out["containment"]["masked"]
    for rel in ("deep/er/.env", "keys/new/id_rsa", "moved/old/id_rsa"):
        assert str(root.resolve() / rel) in masked, masked
    assert index.stated == 0  # nothing was stat-walked: the events named what changed
