"""``tidegate mcp serve`` builds the contained commands' secret mask index while the
client starts, so the first command does not walk the workspace."""

from __future__ import annotations

from pathlib import Path

from tidegate.mcp.server import mask_ahead
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort


def test_the_mask_index_is_built_before_the_first_command(tmp_path: Path) -> None:
    (tmp_path / "app/config").mkdir(parents=True)
    (tmp_path / "app/config/.env").write_text("KEY=1")
    contained = ToolContext(workspace=WorkspacePort(tmp_path), containment="auto")
    with ToolExecutor(contained) as executor:
        worker = mask_ahead(executor)
        assert worker is not None
        worker.join(timeout=30)
        (index,) = contained.workspace.secrets._indexes.values()
        assert index.listed == 3  # the root, app, app/config: walked ahead
        found = contained.workspace.secrets.find_in(tmp_path)
        assert found == [tmp_path.resolve() / "app/config/.env"]
        assert index.listed == 0  # the first command's refresh: nothing to walk


def test_no_index_for_uncontained_commands(tmp_path: Path) -> None:
    uncontained = ToolContext(workspace=WorkspacePort(tmp_path), containment="none")
    with ToolExecutor(uncontained) as executor:
        assert mask_ahead(executor) is None
    assert uncontained.workspace.secrets._indexes == {}
