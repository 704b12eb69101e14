"""Attack: a model asks git.exec for secret-shaped files git itself still holds.

The repository has a committed ``.env`` and ``.npmrc``, a staged ``config/prod.pem``, a
deploy key that was committed and then deleted, a ``.env.prod`` renamed (and cleaned) into
``settings.cfg``, a tag pointing straight at the key's blob, and a local edit of the
``.env``. Every git spelling that would print one of them (object names, index stages,
raw blob ids, tags, commit diffs, history patches, grep in trees and in the index, blame,
``--follow`` across the rename, output formats that defeat a filter of git's output, and
pickaxe searches that answer yes/no about the content) goes through the real tool
executor. The marker never appears in a result; each refusal names the withheld path or
object, and each diff-like result says that withheld names were kept out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call
from tidegate.tools.context import ContainmentMode, ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort
from tidegate.workspace.secret_files import SecretFiles

MARK = "tdg-canary-51f0e2"
"""In every secret-shaped file and nowhere else (not a known key shape)."""
FIND = MARK[:-1] + "."
"""A pattern that matches the marker without being it (the argv is echoed back)."""


@pytest.fixture
def history(committed_repo: Repo) -> Repo:
    r = committed_repo
    r.write(".gitignore", "build/\n")
    r.write(".env", f"DEBUG=1\nAPI_TOKEN={MARK}-env\n")
    r.write(".npmrc", f"//registry.example/:_authToken={MARK}-npm\n")
    r.write("deploy/id_ed25519", f"-----BEGIN-ish {MARK}-key\n")
    lines = "".join(f"option_{i} = {i}\n" for i in range(12))
    r.write(".env.prod", f"{lines}PROD_TOKEN={MARK}-prod\n")
    r.write(".env.example", "DEBUG=0\nAPI_TOKEN=changeme\n")
    r.commit_all("add configuration")
    r.git("tag", "key-blob", r.git("rev-parse", "HEAD:deploy/id_ed25519").strip())
    r.git("rm", "-q", "deploy/id_ed25519")
    r.git("mv", ".env.prod", "settings.cfg")
    r.write("settings.cfg", lines)  # renamed, the token line dropped
    r.write("calc.py", "def add(a, b):\n    return a + b\n")
    r.commit_all("remove the key, rename the prod settings, fix add")
    r.write("config/prod.pem", f"-----BEGIN PRIVATE KEY {MARK}-pem\n")
    r.git("add", "config/prod.pem")  # staged, never committed
    r.write(".env", f"DEBUG=1\nAPI_TOKEN={MARK}-env\nLOCAL={MARK}-local\n")
    return r


def _host(
    repo: Repo, containment: ContainmentMode = "auto", allowed: tuple[str, ...] = ()
) -> ToolExecutor:
    context = ToolContext(
        workspace=WorkspacePort(repo.root, secrets=SecretFiles(allowed)), containment=containment
    )
    return ToolExecutor(context, activate_all=True)


def _git(ex: ToolExecutor, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = ex.execute(call("git_exec", args=list(args))).to_json()
    return result


def _blob(repo: Repo, spec: str) -> str:
    return repo.git("rev-parse", spec).strip()


REFUSED_BY_NAME = [
    ["show", "HEAD:.env"],
    ["show", ":.env"],  # the index
    ["show", ":0:.npmrc"],  # an index stage
    ["show", "HEAD:./.env"],
    ["show", "HEAD:deploy/../.env"],
    ["show", "HEAD^{tree}:.env"],
    ["show", "HEAD~1:deploy/id_ed25519"],  # deleted since
    ["show", ":config/prod.pem"],  # staged only
    ["cat-file", "-p", "HEAD:.env"],
    ["cat-file", "blob", "HEAD:.npmrc"],
    ["diff", "HEAD:calc.py", "HEAD:.env"],
    ["diff", "HEAD:calc.py..HEAD:.npmrc"],
    ["blame", ".env"],
    ["blame", "HEAD~1", "--", "deploy/id_ed25519"],
]


@pytest.mark.parametrize("args", REFUSED_BY_NAME, ids=" ".join)
def test_an_object_named_by_a_withheld_path_is_refused(history: Repo, args: list[str]) -> None:
    with _host(history) as ex:
        result = _git(ex, *args)
    assert MARK not in json.dumps(result), result
    assert result["ok"] is False
    assert result["error"]["code"] == "secret_withheld", result
    assert "withheld" in result["error"]["message"]


def test_a_blob_read_by_its_id_or_a_tag_is_refused(history: Repo) -> None:
    """No path in the argument: git.exec finds where the blob is stored and refuses it."""
    env, npm = _blob(history, "HEAD:.env"), _blob(history, "HEAD:.npmrc")
    key, pem = _blob(history, "HEAD~1:deploy/id_ed25519"), _blob(history, ":config/prod.pem")
    calc = _blob(history, "HEAD:calc.py")
    calls = [
        ["cat-file", "-p", env],
        ["cat-file", "-p", key[:10]],  # an abbreviated id of a deleted file
        ["cat-file", "blob", npm],
        ["cat-file", "-p", pem],  # only in the index
        ["show", env],
        ["show", "key-blob"],  # a tag that points at the blob
        ["show", f"{calc}", f"{env}"],
        ["diff", calc, env],
    ]
    with _host(history) as ex:
        results = [_git(ex, *args) for args in calls]
        shown = _git(ex, "cat-file", "-p", calc)  # a readable file's blob is shown
    for args, result in zip(calls, results, strict=True):
        assert MARK not in json.dumps(result), (args, result)
        assert result["error"]["code"] == "secret_withheld", (args, result)
        assert "withheld" in result["error"]["message"]
    assert shown["ok"] and "return a + b" in shown["output"]["stdout"]


DIFF_LIKE = [
    ["log", "-p"],
    ["log", "-p", "--all", "--stat"],
    ["log", "-p", "--no-prefix"],  # no a/ b/ in the section headers
    ["log", "-p", "--src-prefix=x/", "--dst-prefix=y/"],
    ["log", "-p", "--line-prefix=> "],  # every line, the headers too, start with '> '
    ["log", "-p", "-C", "--find-copies-harder"],
    ["log", "-p", "-M", "--", "settings.cfg"],
    ["log", "--raw", "-p", "-z"],
    ["show", "HEAD~1"],  # the commit that added them
    ["show", "HEAD~1", "--word-diff"],
    ["diff", "HEAD~2"],
    ["diff", "HEAD~2", "HEAD"],
    ["diff", "HEAD~2", "--", "."],
    ["diff", "HEAD~2", "calc.py"],  # paths without '--': git.exec moves them after it
    ["log", "-p", "calc.py"],
    ["diff", "--cached"],  # the staged key
    ["diff", "--cached", "--no-prefix"],
    ["diff"],  # the local edit of .env (tracked)
    ["diff", "HEAD~2:", "HEAD~1:"],  # two trees
    ["grep", FIND, "HEAD~1"],
    ["grep", "-n", FIND, "HEAD~1", "--", "."],
    ["grep", "--heading", "-e", FIND, "HEAD~1"],  # the file name on a line of its own
    ["grep", "-h", FIND, "HEAD~1"],  # no file name at all
    ["grep", "-z", FIND, "HEAD~1"],
    ["grep", "--cached", FIND],
    ["grep", FIND],
    ["grep", "-e", FIND, "HEAD~1:"],  # a tree
    ["grep", "-e", FIND, "HEAD~1:deploy"],  # a subtree: paths within it
    ["diff", "HEAD~2:", "HEAD~1:deploy"],
]


@pytest.mark.parametrize("containment", ["auto", "none"])
def test_diffs_logs_and_greps_leave_withheld_files_out(history: Repo, containment: str) -> None:
    with _host(history, containment) as ex:  # type: ignore[arg-type]
        results = [_git(ex, *args) for args in DIFF_LIKE]
    for args, result in zip(DIFF_LIKE, results, strict=True):
        assert MARK not in json.dumps(result), (args, result)
        assert result["ok"], (args, result)
        assert result["output"]["exit_code"] in (0, 1), (args, result)
        assert "secret-shaped" in result["output"]["withheld"], (args, result)
    log = results[0]["output"]["stdout"]
    assert "return a + b" in log and "changeme" not in log  # templates are left out too
    assert "option_3" in results[6]["output"]["stdout"]  # settings.cfg is not a secret


ORACLES = [
    ["log", "--all", "--oneline", f"-S{MARK[:-1]}"],
    ["log", "--all", "--oneline", f"-G{FIND}-e.v"],
    ["log", "--all", "--name-only", "--format=%h", f"-G{FIND}"],
    ["diff", "--cached", "--name-only", f"-S{MARK[:-1]}"],
    ["grep", "-l", MARK, "HEAD~1"],
    ["grep", "-c", "--cached", FIND],
]


@pytest.mark.parametrize("args", ORACLES, ids=" ".join)
def test_a_search_does_not_answer_questions_about_the_content(
    history: Repo, args: list[str]
) -> None:
    """Without the marker in the output, a yes/no answer still leaks it character by
    character: a pickaxe or grep must not look inside a withheld file at all."""
    with _host(history) as ex:
        result = _git(ex, *args)
    assert result["ok"], result
    assert result["output"]["stdout"].strip() == "", result


REFUSED_FORMS = [
    ["log", "--follow", "-p", "--", ".env"],
    ["log", "--follow", "-p", "--", "settings.cfg"],  # follows it back to .env.prod
    ["log", "--follow", "--oneline", f"-S{MARK}", "--", "settings.cfg"],
    ["log", "-p", "--full-diff", "--", "calc.py"],  # the whole diff of every commit
    ["archive", "HEAD"],
]


@pytest.mark.parametrize("args", REFUSED_FORMS, ids=" ".join)
def test_forms_that_escape_the_path_limits_are_refused(history: Repo, args: list[str]) -> None:
    with _host(history) as ex:
        result = _git(ex, *args)
    assert MARK not in json.dumps(result), result
    assert result["ok"] is False
    assert result["error"]["code"] == "approval_denied", result  # the allowlist is the rule
    assert args[0] == "archive" or "withheld" in result["error"]["message"]


def test_listings_name_withheld_files_but_their_content_stays_out(history: Repo) -> None:
    """A tree listing (ls-tree, rev-list --objects) names the file and its blob id, as a
    workspace listing names it under ``excluded``; reading the id is refused above."""
    with _host(history) as ex:
        tree = _git(ex, "ls-tree", "-r", "HEAD~1")
        objects = _git(ex, "rev-list", "--objects", "--all")
    for result in (tree, objects):
        assert result["ok"] and MARK not in json.dumps(result)
    assert ".env" in tree["output"]["stdout"] and ".npmrc" in tree["output"]["stdout"]


def test_an_allowed_secret_is_readable_through_git_too(history: Repo) -> None:
    """``readable_secrets = [".env"]``: git.exec shows .env like workspace.read does;
    the others stay withheld."""
    env = _blob(history, "HEAD:.env")
    with _host(history, allowed=(".env",)) as ex:
        show, cat, log, grep, diff = (
            _git(ex, "show", "HEAD:.env"),
            _git(ex, "cat-file", "-p", env),
            _git(ex, "log", "-p"),
            _git(ex, "grep", MARK, "HEAD"),
            _git(ex, "diff"),
        )
        npm = _git(ex, "show", "HEAD:.npmrc")
    for result in (show, cat, log, grep, diff):
        assert result["ok"] and f"{MARK}-env" in result["output"]["stdout"], result
    assert f"{MARK}-local" in diff["output"]["stdout"]
    for result in (log, grep):
        assert f"{MARK}-npm" not in result["output"]["stdout"]
    assert npm["error"]["code"] == "secret_withheld"


def test_a_workspace_below_the_top_keeps_the_whole_repository_out(history: Repo) -> None:
    """The workspace is a subdirectory: git's history still spans the repository, and the
    exclusions count from its top (without ``top`` they would start at the workspace)."""
    history.write("pkg/mod.py", "x = 1\n")
    history.commit_all("a package")
    context = ToolContext(workspace=WorkspacePort(history.root / "pkg"))
    with ToolExecutor(context, activate_all=True) as ex:
        results = [_git(ex, *args) for args in (["log", "-p"], ["grep", FIND, "HEAD~2"])]
    for result in results:
        assert result["ok"] and MARK not in json.dumps(result), result
    assert "return a + b" in results[0]["output"]["stdout"]


def test_the_remembered_object_map_is_read_again_for_new_objects(history: Repo) -> None:
    """git.exec keeps the object -> path map between calls; objects committed after it was
    read make it be read again, so a new secret blob is still refused and a new readable
    one shown."""
    with _host(history) as ex:
        assert _git(ex, "cat-file", "-p", _blob(history, "HEAD:calc.py"))["ok"]
        history.write(".env", f"API_TOKEN={MARK}-rotated\n")
        history.write("new.py", "print('new')\n")
        history.commit_all("rotate the token, add new.py")
        secret = _git(ex, "cat-file", "-p", _blob(history, "HEAD:.env"))
        readable = _git(ex, "cat-file", "-p", _blob(history, "HEAD:new.py"))
    assert secret["error"]["code"] == "secret_withheld" and MARK not in json.dumps(secret)
    assert "stored at .env" in secret["error"]["message"]
    assert readable["ok"] and "print('new')" in readable["output"]["stdout"], readable


def test_a_path_allowance_reads_the_file_by_name_and_id(history: Repo) -> None:
    """``readable_secrets = ["config/prod.pem"]``: readable as ``:<path>`` and by its id;
    a pathspec cannot re-include one path, so ``diff --cached`` still leaves it out and
    says so."""
    pem = _blob(history, ":config/prod.pem")
    with _host(history, allowed=("config/prod.pem",)) as ex:
        by_name, by_id = _git(ex, "show", ":config/prod.pem"), _git(ex, "cat-file", "-p", pem)
        staged = _git(ex, "diff", "--cached")
    for result in (by_name, by_id):
        assert result["ok"] and f"{MARK}-pem" in result["output"]["stdout"], result
    assert f"{MARK}-pem" not in staged["output"]["stdout"]
    assert "secret-shaped" in staged["output"]["withheld"]
