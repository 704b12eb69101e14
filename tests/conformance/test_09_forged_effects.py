"""Conformance 9: effects are host-authored. An adapter that claims a write (only the
host observes writes), claims evidence outside its tool's profile (validation from a
read), or answers as a different canonical tool makes the outcome unknown: the call is
recorded as such and the run ends. A registry whose descriptor claims capabilities other
than the profile's is refused before any call."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import Repo
from tests.integration.tools.support import (
    ForgingReader,
    call,
    executor,
    forged_validation,
    forged_write,
)
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.catalog import CATALOG, ToolRegistry
from tidegate.tools.effects import Effects, InspectEffect, ProfileIntegrityError
from tidegate.tools.scripted import ListRecorder


@pytest.mark.parametrize(
    ("adapter", "reason"),
    [
        (ForgingReader(claims=forged_write("calc.py")), "host-only evidence: write"),
        (ForgingReader(claims=forged_validation()), "may not report validate"),
        (ForgingReader(answer_as="workspace.write"), "answered as workspace.write"),
        (ForgingReader(claims=Effects(state_version=7)), "host-only evidence: state_version"),
    ],
)
def test_forged_evidence_is_an_unknown_outcome(
    committed_repo: Repo, adapter: ForgingReader, reason: str
) -> None:
    recorder = ListRecorder()
    with executor(
        committed_repo.root, overrides={"workspace.read": adapter}, recorder=recorder
    ) as ex:
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(call("workspace_read", path="calc.py"))
        assert reason in caught.value.reason
        result = caught.value.result
        assert result.status == "unknown_outcome" and not result.ok
        assert result.effects.write == () and result.effects.validate_ is None
        assert result.label == adapter.label
        assert recorder.calls[-1][1] == result
        later = ex.execute(call("workspace_read", path="calc.py"))
        assert later.error is not None and later.error.code == "run_ended"


def test_honest_claims_inside_the_profile_pass(committed_repo: Repo) -> None:
    honest = ForgingReader(claims=Effects(inspect=(InspectEffect(kind="file", scope="calc.py"),)))
    with executor(committed_repo.root, overrides={"workspace.read": honest}) as ex:
        result = ex.execute(call("workspace_read", path="calc.py"))
    assert result.ok and result.label == honest.label
    assert result.effects.present() == ["approval", "inspect"]


def test_unlabelled_override_is_refused(committed_repo: Repo) -> None:
    with pytest.raises(ValueError, match="must carry a label"):
        executor(committed_repo.root, overrides={"workspace.read": ForgingReader(label=None)})


def test_descriptor_with_other_capabilities_is_refused() -> None:
    specs = [
        msgspec.structs.replace(s, declared=s.capabilities | {"validate"})
        if s.tool_id == "git.exec"
        else s
        for s in CATALOG
    ]
    with pytest.raises(ProfileIntegrityError, match=r"git\.exec declares"):
        ToolRegistry({}, specs=specs)
