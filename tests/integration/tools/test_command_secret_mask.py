"""A contained command's mask against real commands: its index is built by the first
command and kept by the workspace's ``SecretFiles``; what a command changed is noted so
its directories are listed again before the next one."""

from __future__ import annotations

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor


@requires_containment
def test_the_mask_index_lives_for_the_session_and_hears_of_command_writes(
    committed_repo: Repo,
) -> None:
    root = committed_repo.root
    committed_repo.write("conf/.env", "KEY=first\n")
    with executor(root, containment="required") as ex:
        first = ex.execute(call("command_run", command="cat conf/.env; echo x > conf/made.txt"))
        assert first.ok and first.output is not None
        assert first.output["stdout"] == ""  # masked: read as empty
        secrets = ex.context.workspace.secrets
        (index,) = secrets._indexes.values()
        assert index._dirty == {"conf", "conf/made.txt"}  # from the captured effects
        (root / "conf/.env").rename(root / "conf/prod.env")
        second = ex.execute(call("command_run", command="cat conf/prod.env conf/made.txt"))
        assert second.ok and second.output is not None
        assert second.output["stdout"] == "x\n"
        assert second.output["containment"]["masked"] == [str(root.resolve() / "conf/prod.env")]
        assert (index,) == tuple(secrets._indexes.values())  # the same index, refreshed
