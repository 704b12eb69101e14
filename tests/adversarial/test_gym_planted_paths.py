"""Attack: paths of the gym shaped by a benchmark file or planted in the state root.

A SWE-bench instance file is untrusted: an ``instance_id`` that is absolute or climbs out
with ``..`` named the run store (and its checkpoint key) outside ``<state root>/gym``.
Such an id is refused in one line before anything runs. A link planted at
``<state root>/gym`` or at a directory below it (``runs``, ``swe``) is never
followed, nor one at the cache's ``swe-venvs`` (which a contained install may write): the
command is refused in one line, or the instance reports the refusal, and nothing outside
is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e._operator import Result, op
from tidegate.gym.swe_synthetic import shipped_instances


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tidegate.gym.swe_synthetic import build_mirrors

    directory = tmp_path_factory.mktemp("mirrors")
    build_mirrors(directory)
    return directory


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"outside\n")
    return out


def _state(directory: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(directory)): p.read_bytes() if p.is_file() else None
        for p in sorted(directory.rglob("*"))
    }


def _instances(tmp_path: Path, **changes: object) -> Path:
    first = json.loads(shipped_instances().read_text().splitlines()[0])
    path = tmp_path / "instances.jsonl"
    path.write_text(json.dumps({**first, **changes}) + "\n")
    return path


def _swe(capsys: pytest.CaptureFixture[str], instances: Path, mirrors: Path, state: Path) -> Result:
    args = [
        "gym",
        "swe",
        str(instances),
        "--repos",
        str(mirrors),
        "--oracle",
        "--allow-uncontained",
    ]
    return op(capsys, *args, "--state-root", str(state), "--json")


@pytest.mark.parametrize(
    "instance_id",
    ["{outside}/store", "../../../outside/store", "a/b", "..", ".hidden", ""],
    ids=["absolute", "dotdot", "slash", "parent", "dot-leading", "empty"],
)
def test_a_hostile_instance_id_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
    mirrors: Path,
    tmp_path: Path,
    outside: Path,
    instance_id: str,
) -> None:
    hostile = instance_id.format(outside=outside)
    instances = _instances(tmp_path, instance_id=hostile)
    before = _state(outside)

    res = op(
        capsys,
        "gym",
        "swe",
        str(instances),
        "--repos",
        str(mirrors),
        "--oracle",
        "--state-root",
        str(tmp_path / "state"),
    )

    assert res.code == 2, (res.out, res.err)
    assert res.err == (
        f"tidegate: error: instances.jsonl:1: instance_id {hostile!r} is not a plain name "
        "(letters, digits, '_', '.', '+', '-'; no '/' or '..'; at most 200 characters)\n"
    )
    assert _state(outside) == before
    assert not (tmp_path / "state" / "gym" / "swe").exists()


def test_a_linked_gym_directory_is_refused_and_not_followed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, outside: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "gym").symlink_to(outside)
    before = _state(outside)

    res = op(capsys, "gym", "run", "repo-inspection", "--state-root", str(state))

    assert res.code == 2, (res.out, res.err)
    assert res.err == f"tidegate: error: {state}/gym: a symlink; not followed\n"
    assert _state(outside) == before


def test_a_linked_runs_directory_is_refused_and_not_followed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, outside: Path
) -> None:
    state = tmp_path / "state"
    (state / "gym").mkdir(parents=True)
    (state / "gym" / "runs").symlink_to(outside)
    before = _state(outside)

    res = op(capsys, "gym", "run", "repo-inspection", "--state-root", str(state))

    assert res.code == 2, (res.out, res.err)
    assert res.err == f"tidegate: error: {state}/gym/runs: a symlink; not followed\n"
    assert _state(outside) == before


@pytest.mark.parametrize("planted", ["gym/swe", "cache/tidegate/swe-venvs"])
def test_a_linked_swe_or_venvs_directory_is_not_followed(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    mirrors: Path,
    tmp_path: Path,
    outside: Path,
    planted: str,
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where venvs are built
    link = (state if planted.startswith("gym") else tmp_path) / planted
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    before = _state(outside)
    # requirements: [] -> the gym builds the instance its own venv in the cache
    instances = _instances(tmp_path, instance_id="own-venv", requirements=[])

    res = _swe(capsys, instances, mirrors, state)

    if planted.startswith("gym"):  # the run's own directory: the whole run is refused
        assert res.code == 2, res.err
        assert res.err == f"tidegate: error: {link}: a symlink; not followed\n"
    else:
        assert res.code == 1, res.err
        (result,) = res.json()["results"]
        assert result["status"] == "error"
        assert result["error"] == f"{link}: a symlink; not followed"
    assert _state(outside) == before
