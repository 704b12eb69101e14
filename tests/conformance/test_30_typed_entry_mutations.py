"""Conformance 30: mutations of directories, symlinks and special entries stay typed from
the command's inventory to the recorded result and back: a created directory is
missing -> dir with two null hashes, a symlink carries the hash of its target, a fifo a
special hash, a deletion is file -> missing, a file replaced by a directory keeps both
kinds. The same evidence survives JSON serialisation (what a checkpoint stores)."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration.tools.support import call, executor
from tidegate.tools.calls import ToolResult
from tidegate.tools.effects import Effects
from tidegate.tools.scripted import ListRecorder
from tidegate.workspace.states import sha256_bytes

SCRIPT = (
    "mkdir -p made/inner && ln -s calc.py link && mkfifo pipe && rm README.md "
    "&& rm .gitignore && mkdir .gitignore"
)


def test_typed_mutations_from_a_command(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    with executor(committed_repo.root, recorder=recorder) as ex:
        result = ex.execute(call("command_run", command=SCRIPT))
    assert result.ok and result.output is not None
    assert result.output["status"] == "succeeded", result.output
    writes = {w.path: (w.before, w.after) for w in result.effects.write}
    assert writes["made"][0].kind == "missing" and writes["made"][1].kind == "dir"
    assert writes["made"][1].sha256 is None and writes["made"][0].sha256 is None
    assert writes["made/inner"][1].kind == "dir"
    assert writes["link"][1].kind == "symlink"
    assert writes["link"][1].sha256 == sha256_bytes(b"symlink\0calc.py")
    assert writes["pipe"][1].kind == "special" and writes["pipe"][1].sha256 is not None
    assert writes["README.md"][0].kind == "file" and writes["README.md"][1].kind == "missing"
    assert writes["README.md"][1].sha256 is None
    assert (writes[".gitignore"][0].kind, writes[".gitignore"][1].kind) == ("file", "dir")
    assert list(writes) == sorted(writes)

    stored = recorder.calls[0][1].to_json()
    again = ToolResult.model_validate(
        {**stored, "effects": Effects.model_validate(stored["effects"])}
    )
    assert again.effects == result.effects
    assert again == result
