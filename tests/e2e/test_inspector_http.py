"""``tidegate inspect`` over plain HTTP: who may ask and how.

The server answers only on 127.0.0.1, only to a request naming 127.0.0.1:PORT or
localhost:PORT as its host (DNS rebinding), only GET (405 for every other method, on every
path), only behind the token (404 without it, with a wrong one or one in another case);
every answer carries the strict headers; a run id is looked up in the store, never used
as a path; long outputs are cut with a note. ``tidegate inspect`` as a user runs it
prints its address and serves until interrupted.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.e2e._inspector import record_two, served, set_report
from tidegate.inspector.server import HEADERS, Inspector


def get(
    inspector: Inspector, path: str, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", inspector.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{inspector.port}")
        conn.endheaders()
        res = conn.getresponse()
        return res.status, dict(res.getheaders()), res.read().decode("utf-8")
    finally:
        conn.close()


def raw(inspector: Inspector, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", inspector.port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def recorded(committed_repo: Repo) -> tuple[Repo, str, str]:
    ok, failed = record_two(committed_repo)
    return committed_repo, ok, failed


def test_the_token_is_required(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, _ = recorded
    with served(repo) as inspector:
        token = inspector.token
        assert get(inspector, f"/{token}/")[0] == 200
        assert get(inspector, f"/{token}")[0] == 200
        assert get(inspector, f"/{token}/run/{ok}")[0] == 200
        assert get(inspector, f"/{token}/style.css")[0] == 200
        refused = [
            "/", "/style.css", f"/run/{ok}", f"/{token.swapcase()}/", f"/{token.upper()}/",
            f"/{token[:-1]}/", f"/{token}x/", f"/x{token}/", f"/?token={token}",
            f"/%2F{token}/", f"/./{token}/", f"/{token[:-1]}/run/{ok}", f"http://x/{token}/",
            f"/{token.swapcase()}/run/{ok}", "/favicon.ico",
        ]  # fmt: skip
        for path in refused:
            status, _, body = get(inspector, path)
            assert (status, body) == (404, "not found\n"), path
            assert token not in body and ok not in body


@pytest.mark.parametrize(
    "method", ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "X"]
)
def test_only_get_is_served(recorded: tuple[Repo, str, str], method: str) -> None:
    repo, ok, _ = recorded
    with served(repo) as inspector:
        for path in (f"/{inspector.token}/", f"/{inspector.token}/run/{ok}", "/", "/x"):
            status, headers, _ = get(inspector, path, method=method)
            assert status == 405, (method, path)
            assert headers["Allow"] == "GET"
            assert headers["Content-Security-Policy"] == HEADERS["Content-Security-Policy"]
        # A body sent with it changes nothing in the store.
        before = get(inspector, f"/{inspector.token}/run/{ok}")[2]
        res = raw(
            inspector,
            f"POST /{inspector.token}/run/{ok} HTTP/1.0\r\nHost: 127.0.0.1:{inspector.port}\r\n"
            "Content-Length: 9\r\n\r\nstatus=ok".encode(),
        )
        assert res.startswith(b"HTTP/1.0 405 ")
        assert get(inspector, f"/{inspector.token}/run/{ok}")[2] == before


def test_the_host_must_be_this_server(recorded: tuple[Repo, str, str]) -> None:
    repo, _, _ = recorded
    with served(repo) as inspector:
        token, port = inspector.token, inspector.port
        assert get(inspector, f"/{token}/", host=f"localhost:{port}")[0] == 200
        assert get(inspector, f"/{token}/", host=f"LOCALHOST:{port}")[0] == 200
        for host in (
            f"evil.example:{port}", "evil.example", "127.0.0.1", f"127.0.0.1:{port + 1}",
            f"127.0.0.2:{port}", f"[::1]:{port}", f"localhost.evil.example:{port}", "",
            f"127.0.0.1:{port}.evil.example",
        ):  # fmt: skip
            status, _, body = get(inspector, f"/{token}/", host=host)
            assert (status, body) == (403, "forbidden\n"), host
        # No Host at all (HTTP/1.0), and two of them.
        assert raw(inspector, f"GET /{token}/ HTTP/1.0\r\n\r\n".encode()).startswith(
            b"HTTP/1.0 403 "
        )
        two = f"GET /{token}/ HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n\r\n"
        assert raw(inspector, two.encode()).startswith(b"HTTP/1.0 403 ")


def test_every_answer_carries_the_strict_headers(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, _ = recorded
    with served(repo) as inspector:
        token = inspector.token
        answers = [
            get(inspector, f"/{token}/"),
            get(inspector, f"/{token}/run/{ok}"),
            get(inspector, f"/{token}/style.css"),
            get(inspector, "/"),
            get(inspector, f"/{token}/", method="POST"),
            get(inspector, f"/{token}/", host="evil.example"),
            get(inspector, f"/{token}/run/nope"),
        ]
        for status, headers, _ in answers:
            for name, value in HEADERS.items():
                assert headers[name] == value, (status, name)
            assert headers["X-Content-Type-Options"] == "nosniff"
            assert headers["Referrer-Policy"] == "no-referrer"
            assert "default-src 'none'" in headers["Content-Security-Policy"]
            assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
            assert "script-src" not in headers["Content-Security-Policy"]  # none at all
        kinds = [a[1]["Content-Type"] for a in answers[:3]]
        assert kinds == ["text/html; charset=utf-8"] * 2 + ["text/css; charset=utf-8"]
        page = answers[1][2]
        assert (
            "<script" not in page
            and " style=" not in page
            and "http" not in page.split("<body>")[0].replace('http-equiv="refresh"', "")
        )


def test_it_binds_loopback_only(recorded: tuple[Repo, str, str]) -> None:
    repo, _, _ = recorded
    with served(repo) as inspector:
        assert inspector.httpd.server_address[0] == "127.0.0.1"
        assert inspector.url.startswith(f"http://127.0.0.1:{inspector.port}/")
        # The kernel's own account of the listening socket: 127.0.0.1, no other address.
        listening = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError), open(table) as f:
                for line in f.readlines()[1:]:
                    local, state = line.split()[1], line.split()[3]
                    address, port = local.rsplit(":", 1)
                    if int(port, 16) == inspector.port and state == "0A":
                        listening.append(address)
        assert listening == ["0100007F"]
        # Another loopback address reaches nothing (no traffic leaves the loopback range).
        with pytest.raises(OSError), socket.create_connection(("127.0.0.2", inspector.port), 2):
            pass


def test_a_run_id_is_looked_up_never_followed(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, failed = recorded
    with served(repo) as inspector:
        base = f"/{inspector.token}/run/"
        assert ok in get(inspector, base + ok)[2]
        # An id's random part is hex: upper case is another id unless it is all digits
        # (~6% of ids: then upper case is the id itself, and rightly found).
        upper = [ok.upper()] if ok.upper() != ok else []
        for rid in (
            "latest", "..", "..%2F..%2Fetc%2Fpasswd", "../../../etc/passwd", "%ff", "",
            *upper, ok + "%00", f"{ok}/", f"{ok}%2F..", "x" * 300, f"{ok}'--",
            "%25", "runs.sqlite3",
        ):  # fmt: skip
            assert get(inspector, base + rid)[0] == 404, rid
        assert failed in get(inspector, base + failed)[2]


def test_long_output_is_cut_with_a_note(recorded: tuple[Repo, str, str]) -> None:
    repo, _, failed = recorded
    set_report(failed, feedback=["x" * 300_000, "y"], diff="+" + "z" * 900_000 + "\n")
    with served(repo) as inspector:
        status, _, page = get(inspector, f"/{inspector.token}/run/{failed}")
    assert status == 200
    assert "more characters not shown" in page
    assert "x" * 20_000 in page and "x" * 20_001 not in page
    assert len(page) < 600_000


def test_the_command_line(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, _ = recorded
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "inspect", "--repo", str(repo.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first, url = proc.stdout.readline(), proc.stdout.readline().strip()
        assert first.startswith("tidegate inspect: the runs of ")
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        host, _, rest = url.removeprefix("http://").partition("/")
        conn = http.client.HTTPConnection(host, timeout=10)
        conn.request("GET", f"/{rest}run/{ok}")
        res = conn.getresponse()
        assert res.status == 200 and ok in res.read().decode()
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    # The port taken: one line, exit 2.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = subprocess.run(
            [sys.executable, "-m", "tidegate", "inspect", "--repo", str(repo.root),
             "--port", str(port)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert f"127.0.0.1:{port}" in res.stderr


def test_not_a_repository_is_one_line(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "tidegate", "inspect", "--repo", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr


def test_a_running_run_refreshes_itself(recorded: tuple[Repo, str, str]) -> None:
    from tests.e2e._inspector import edit
    from tidegate.disk.owners import process_start

    repo, ok, failed = recorded
    me = os.getpid()
    edit(
        "UPDATE runs SET status = 'running', pid = ?, pid_start = ?, host = ? WHERE run_id = ?",
        (me, process_start(me), os.uname().nodename, failed),
    )
    with served(repo) as inspector:
        listing = get(inspector, f"/{inspector.token}/")[2]
        live = get(inspector, f"/{inspector.token}/run/{failed}")[2]
        done = get(inspector, f"/{inspector.token}/run/{ok}")[2]
    assert '<meta http-equiv="refresh" content="3">' in listing
    assert '<meta http-equiv="refresh" content="3">' in live and "badge running" in live
    assert "http-equiv" not in done


def test_a_corrupt_run_and_a_corrupt_store_are_one_line(
    recorded: tuple[Repo, str, str],
) -> None:
    from tests.e2e._inspector import edit, store_path

    repo, ok, failed = recorded
    edit("UPDATE runs SET status = 'bogus' WHERE run_id = ?", (failed,))
    with served(repo) as inspector:
        status, _, listing = get(inspector, f"/{inspector.token}/")
        assert status == 200 and "corrupt" in listing and ok in listing
        status, headers, body = get(inspector, f"/{inspector.token}/run/{failed}")
        assert status == 500 and headers["Content-Type"].startswith("text/plain")
        assert len(body.splitlines()) == 1 and "corrupt" in body
        assert get(inspector, f"/{inspector.token}/run/{ok}")[0] == 200
        path = store_path()
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        path.write_bytes(b"SQLite format 3\0" + b"\xff" * 4000)
        status, _, body = get(inspector, f"/{inspector.token}/")
        assert status == 500 and len(body.splitlines()) == 1 and "run store" in body


def test_a_held_run_says_how_to_answer_it_then_what_became_of_it(committed_repo: Repo) -> None:
    from tests.conftest import tidegate_cli
    from tests.e2e._inspector import FIX, query

    repo = committed_repo
    held = tidegate_cli("run", "--hold", "--objective", FIX, "--verify", "true", cwd=repo.root)
    assert held.returncode == 0, held.stderr
    ((run_id,),) = query("SELECT run_id FROM runs")
    with served(repo) as inspector:
        page = get(inspector, f"/{inspector.token}/run/{run_id}")[2]
        assert "badge held" in page and f"<code>tidegate apply {run_id}</code>" in page
        assert "+    return a + b" in page  # the held diff
        discarded = tidegate_cli("discard", run_id, cwd=repo.root)
        assert discarded.returncode == 0, discarded.stderr
        page = get(inspector, f"/{inspector.token}/run/{run_id}")[2]
    assert f"<code>tidegate apply {run_id}</code>" not in page and "<li>discarded at " in page
