"""The warm server: the engine imported once, a forked child per run.

``tidegate warm start`` starts it in the background (``tidegate warm stop`` ends it; it
also ends by itself after ``--idle-timeout`` seconds without a run, and when any file of
the code it imported changes on disk). It listens on a Unix socket in a directory only
its user may enter (``tidegate.cli.warm_client.runtime_dir``). A ``tidegate run``,
``review`` or ``debug`` connects (``tidegate.cli.warm_client``) and the server forks: the
child takes over the client's standard streams, working directory, environment, umask,
limits and signals, and runs the command line with every module already in memory. Each
run is a fresh fork of a server that has never run anything, so nothing a run does is
seen by the next.

A run must be the same run as without the server, in the same confinement. So the server
refuses (and the client runs the command itself) unless the connecting process is, as
far as ``/proc`` tells, in the server's own context:

- the same user, group and supplementary groups (real, effective, saved, file system);
- the same namespaces (mount, network, PID, user, IPC, UTS, cgroup, time) and root
  directory: a command confined by bubblewrap or a chroot that can reach the socket
  must not get a run outside its confinement;
- the same cgroup, no-new-privileges bit, seccomp mode, capabilities and security label;
- the same interpreter (executable, import path, flags, encodings) and the same code on
  disk as the server imported;
- resource limits the child can take on (a limit above the server's hard limit cannot).

What the child does not take over: the parent process (its parent is the server), the
session and the controlling terminal (it has the client's descriptors, not its terminal:
Ctrl-C reaches it because the client forwards it), the CPU affinity and the scheduling
priority.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

from tidegate.cli import warm_client as wire

PRELOAD = (
    "tidegate.cli.fast",
    "tidegate.cli.runcmd",
    "tidegate.flow.headstart",
    "tidegate.flow.transaction",
    "tidegate.flow.resume",
    "tidegate.store",
    "tidegate.store.db",
    "tidegate.store.recorder",
    "tidegate.store.checkpoints",
    "tidegate.store.state_root",
    "tidegate.workspace.fingerprint",
    "tidegate.exec.containment",
    "tidegate.exec.overlay",
    "platformdirs.unix",
    "sqlite3",
    "secrets",
)
"""The modules a run imports (a run imports whatever else it needs itself)."""
STATUS_FIELDS = (
    "Uid",
    "Gid",
    "Groups",
    "NoNewPrivs",
    "Seccomp",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
)
MAX_REQUEST = 4 << 20


class Refused(Exception):
    """A request the server does not run (the client runs the command itself)."""


@dataclass
class Request:
    key: bytes
    umask: int
    limits: list[tuple[int, int, int]]
    ignored: list[int]
    blocked: list[int]
    encodings: list[tuple[str, str]]
    argv: list[bytes]
    env: list[bytes]
    fds: list[int]


# -- the peer's context -----------------------------------------------------------------


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _status_lines(pid: int | str) -> dict[str, bytes]:
    lines: dict[str, bytes] = {}
    for line in _read(f"/proc/{pid}/status").splitlines():
        name, _, value = line.partition(b":")
        if name.decode(errors="replace") in STATUS_FIELDS:
            lines[name.decode()] = value.strip()
    return lines


def _start_time(pid: int | str) -> bytes:
    """The process's start time (field 22 of ``stat``), b"" when it is gone."""
    fields = _read(f"/proc/{pid}/stat").rpartition(b")")[2].split()
    return fields[19] if len(fields) > 19 else b""


def context_of(pid: int | str) -> dict[str, bytes]:
    """What must be equal between the server and a client (``pid``: a number or "self")."""
    ctx = {f"status:{k}": v for k, v in _status_lines(pid).items()}
    try:
        names = sorted(os.listdir("/proc/self/ns"))
    except OSError:
        names = []
    for name in names:
        try:
            ctx[f"ns:{name}"] = os.readlink(f"/proc/{pid}/ns/{name}").encode()
        except OSError:
            ctx[f"ns:{name}"] = b"?"
    try:
        st = os.stat(f"/proc/{pid}/root")
        ctx["root"] = f"{st.st_dev}:{st.st_ino}".encode()
    except OSError:
        ctx["root"] = b"?"
    ctx["cgroup"] = _read(f"/proc/{pid}/cgroup")
    ctx["label"] = _read(f"/proc/{pid}/attr/current")
    return ctx


def peer_problem(conn: socket.socket, own: dict[str, bytes]) -> str | None:
    """Why the process at the other end of ``conn`` may not have a run here, or None."""
    import struct

    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    if uid != os.getuid() or gid != os.getgid():
        return "another user or group"
    if pid <= 0:
        return "a process outside this PID namespace"
    started = _start_time(pid)
    theirs = context_of(pid)
    if not started or _start_time(pid) != started:
        return "a process that went away"
    for name, value in own.items():
        if theirs.get(name) != value:
            return f"another {name}"
    return None


# -- requests ---------------------------------------------------------------------------


def _fields(body: bytes) -> list[bytes]:
    fields, at = [], 0
    while at < len(body):
        if at + 4 > len(body):
            raise Refused("a malformed request")
        size = int.from_bytes(body[at : at + 4], "big")
        at += 4
        if at + size > len(body):
            raise Refused("a malformed request")
        fields.append(body[at : at + size])
        at += size
    return fields


def _ints(text: bytes) -> list[int]:
    return [int(x) for x in text.split(b",") if x]


def read_request(conn: socket.socket) -> tuple[bytes, list[bytes], list[int]]:
    """The request's kind, fields and the descriptors that came with it."""
    import array

    fds = array.array("i")
    data, ancillary, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(16 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    received = list(fds)
    try:
        while len(data) < 8:
            more = conn.recv(65536)
            if not more:
                raise Refused("a short request")
            data += more
        if data[:4] != wire.PROTOCOL:
            raise Refused("another protocol")
        size = int.from_bytes(data[4:8], "big")
        if size > MAX_REQUEST:
            raise Refused("a request too large")
        while len(data) < 8 + size:
            more = conn.recv(65536)
            if not more:
                raise Refused("a short request")
            data += more
        fields = _fields(data[8 : 8 + size])
        if not fields:
            raise Refused("an empty request")
        return fields[0], fields[1:], received
    except BaseException:
        for fd in received:
            os.close(fd)
        raise


def parse_run(fields: list[bytes], fds: list[int]) -> Request:
    if len(fields) < 8 or len(fds) != 4:
        raise Refused("a malformed run request")
    try:
        key, umask, limits, ignored, blocked, encodings, argc = fields[:7]
        count = int(argc)
        argv, env = fields[7 : 7 + count], fields[7 + count :]
        parsed_limits = []
        for item in limits.split(b","):
            if item:
                number, soft, hard = (int(x) for x in item.split(b":"))
                parsed_limits.append((number, soft, hard))
        streams = []
        for pair in encodings.decode().split(";"):
            enc, _, errors = pair.partition(":")
            streams.append((enc, errors))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refused("a malformed run request") from exc
    if count < 1 or len(argv) != count or len(streams) != 3:
        raise Refused("a malformed run request")
    if any(b"=" not in item for item in env):
        raise Refused("a malformed environment")
    return Request(
        key=key,
        umask=int(umask),
        limits=parsed_limits,
        ignored=_ints(ignored),
        blocked=_ints(blocked),
        encodings=streams,
        argv=argv,
        env=env,
        fds=fds,
    )


# -- the code on disk -------------------------------------------------------------------


def loaded_files() -> dict[str, tuple[int, int]]:
    """Every imported module's file, with its mtime and size."""
    files: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path not in files:
            with contextlib.suppress(OSError):
                st = os.stat(path)
                files[path] = (st.st_mtime_ns, st.st_size)
    return files


def changed_file(files: dict[str, tuple[int, int]]) -> str | None:
    for path, seen in files.items():
        try:
            st = os.stat(path)
        except OSError:
            return path
        if (st.st_mtime_ns, st.st_size) != seen:
            return path
    return None


# -- the child --------------------------------------------------------------------------


def _stream(fd: int, writing: bool, encoding: str, errors: str) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "w" if writing else "r", closefd=False)
    if writing:
        return io.TextIOWrapper(
            io.BufferedWriter(raw),
            encoding=encoding,
            errors=errors,
            line_buffering=fd == 2 or os.isatty(fd),
        )
    return io.TextIOWrapper(io.BufferedReader(raw), encoding=encoding, errors=errors)


def take_over(request: Request) -> None:
    """Make this (forked) process the client's run: its descriptors, directory, limits,
    environment and signals. Raises Refused when a limit cannot be taken on."""
    import resource

    for number, soft, hard in request.limits:
        try:
            resource.setrlimit(number, (soft, hard))
        except (ValueError, OSError) as exc:
            raise Refused(f"resource limit {number} above the server's") from exc
    stdin, stdout, stderr, cwd = request.fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
    os.fchdir(cwd)
    for fd in request.fds:
        if fd > 2:
            os.close(fd)
    os.umask(request.umask)
    os.environ.clear()
    for item in request.env:
        name, _, value = item.partition(b"=")
        os.environb[name] = value
    sys.argv = [os.fsdecode(a) for a in request.argv]
    import tempfile

    tempfile.tempdir = None  # read $TMPDIR again, the client's
    # A fresh interpreter's dispositions (the server's own handlers are not the run's),
    # then what the client ignores.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for signum in wire.FORWARDED:
        if signum in request.ignored:
            signal.signal(signum, signal.SIG_IGN)
        elif signum == signal.SIGINT:
            signal.signal(signum, signal.default_int_handler)
        else:
            signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, request.blocked)
    (ienc, ierr), (oenc, oerr), (eenc, eerr) = request.encodings
    for attr, stream in (
        ("stdin", _stream(0, False, ienc, ierr)),
        ("stdout", _stream(1, True, oenc, oerr)),
        ("stderr", _stream(2, True, eenc, eerr)),
    ):
        setattr(sys, attr, stream)
        setattr(sys, f"__{attr}__", stream)


def _watch(conn: socket.socket, done: threading.Event) -> None:
    """The client's forwarded signals, raised here; the client gone: SIGTERM, as a kill of
    the run's own process would have been."""
    pending = b""
    while True:
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:
            if not done.is_set():
                os.kill(os.getpid(), signal.SIGTERM)
            return
        pending += data
        while len(pending) >= 2:
            if pending[:1] == b"S" and pending[1] in wire.FORWARDED:
                os.kill(os.getpid(), pending[1])
            pending = pending[2:]


def child(server: Server, conn: socket.socket, request: Request) -> None:
    """The forked child: take over, say so, run the command line, exit. Never returns:
    it ends with ``os._exit``, after what the interpreter's own exit would do first (join
    the threads that are not daemons, run the exit handlers, flush the streams), and
    never unwinds into the server's loop."""
    code = 1
    try:
        server.close_in_child()
        try:
            take_over(request)
        except Refused as exc:
            with contextlib.suppress(OSError):
                conn.sendall(b"R" + str(exc).encode())
            os._exit(0)
        conn.sendall(b"A")
        done = threading.Event()
        threading.Thread(target=_watch, args=(conn, done), daemon=True).start()
        from tidegate.cli import main

        try:
            code = main(sys.argv[1:])
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except KeyboardInterrupt:
            code = 130
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        done.set()
        _exit_like_the_interpreter()
    finally:
        os._exit(code)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    sys.stderr.write(f"{value}\n")
    return 1


def _exit_like_the_interpreter() -> None:
    import atexit

    with contextlib.suppress(BaseException):
        getattr(threading, "_shutdown")()  # noqa: B009 (the private hook Py_Finalize calls)
    with contextlib.suppress(BaseException):
        getattr(atexit, "_run_exitfuncs")()  # noqa: B009
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


# -- the server -------------------------------------------------------------------------


@dataclass
class Server:
    listener: socket.socket
    dir_fd: int
    lock_fd: int
    idle_timeout: float
    own: dict[str, bytes]
    key: bytes
    files: dict[str, tuple[int, int]]
    started: float = field(default_factory=time.time)
    served: int = 0
    children: dict[int, socket.socket] = field(default_factory=dict)
    stopping: bool = False
    wake: tuple[int, int] = (-1, -1)

    def handle(self, conn: socket.socket) -> None:
        """One connection: read its request, answer it (a run: fork its child)."""
        fds: list[int] = []
        try:
            conn.settimeout(5.0)
            kind, fields, fds = read_request(conn)
            if kind == b"run":
                problem = peer_problem(conn, self.own)
                if problem is not None:
                    raise Refused(f"the client is {problem}")
                self.run(conn, fields, fds)
            elif kind in (b"ping", b"stop"):
                # Any process of this user may ask (the socket's uid check); a stop only
                # ends the server, whose clients then run commands themselves.
                self.stopping = self.stopping or kind == b"stop"
                conn.sendall(b"P" + json.dumps(self.status()).encode())
            else:
                raise Refused("an unknown request")
        except Refused as exc:
            with contextlib.suppress(OSError):
                conn.sendall(b"R" + str(exc).encode())
        except OSError:
            pass
        finally:
            for fd in fds:
                os.close(fd)
            conn.close()

    def status(self) -> dict[str, object]:
        return {
            "pid": os.getpid(),
            "started": self.started,
            "served": self.served,
            "running": len(self.children),
            "python": sys.executable,
            "stopping": self.stopping,
        }

    def run(self, conn: socket.socket, fields: list[bytes], fds: list[int]) -> None:
        request = parse_run(fields, fds)
        if request.key != self.key:
            raise Refused("another interpreter")
        changed = changed_file(self.files)
        if changed is not None:
            self.stopping = True
            raise Refused(f"the code changed on disk ({changed})")
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            child(self, conn, request)
        self.served += 1
        self.children[pid] = conn.dup()

    def close_in_child(self) -> None:
        """What a run's child must not keep: the server's socket, lock, directory, wake-up
        pipe and the other runs' connections."""
        signal.set_wakeup_fd(-1)
        self.listener.close()
        for fd in (self.lock_fd, self.dir_fd, *self.wake):
            with contextlib.suppress(OSError):
                os.close(fd)
        for other in self.children.values():
            other.close()
        self.children.clear()

    def reap(self) -> None:
        """Tell each client whose child has ended how it ended."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            message = b"X" + code.to_bytes(4, "big", signed=True)
            if code < 0:
                message = b"K" + (-code).to_bytes(4, "big", signed=True)
            with contextlib.suppress(OSError):
                conn.sendall(message)
            conn.close()

    def loop(self) -> None:
        self.wake = wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        last = time.monotonic()
        while True:
            self.reap()
            if self.stopping:
                self.close()
                if not self.children:
                    return
            elif not self.children and time.monotonic() - last > self.idle_timeout:
                self.stopping = True
                continue
            for key, _ in selector.select(timeout=1.0):
                if key.fileobj is self.listener and not self.stopping:
                    try:
                        conn, _addr = self.listener.accept()
                    except OSError:
                        continue
                    conn.setblocking(True)
                    self.handle(conn)
                    last = time.monotonic()
                elif key.fileobj == wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)

    def close(self) -> None:
        """Stop listening. The socket's file goes: it is this server's, as no other could
        bind it while this one holds the lock."""
        if self.listener.fileno() < 0:
            return
        with contextlib.suppress(OSError):
            os.unlink(wire.SOCKET_NAME, dir_fd=self.dir_fd)
        self.listener.close()


def make_dir(path: str) -> int:
    """The server's directory, created private if missing; refused when it is not."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    fd = wire.open_private_dir(path)
    if fd is None:
        raise OSError(f"{path}: not a private directory of this user (mode 0700, owned)")
    return fd


def lock(dir_fd: int) -> int | None:
    """The server's lock, held for its life, or None: another server holds it."""
    fd = os.open(
        wire.LOCK_NAME,
        os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=dir_fd,
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def preload() -> None:
    """Import the run path, and do once what each run would do on first use and that
    depends on the code alone (the records' field types)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from tidegate.checked import resolve_all

    resolve_all()


def serve(dir_fd: int, lock_fd: int, idle_timeout: float, ready: int | None = None) -> None:
    """Listen in ``dir_fd`` until stopped, idle, or the code changes (``lock_fd``: the
    lock this process holds for as long as it serves)."""
    preload()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(wire.SOCKET_NAME, dir_fd=dir_fd)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)
    try:
        listener.bind(f"/proc/self/fd/{dir_fd}/{wire.SOCKET_NAME}")
    finally:
        os.umask(old)
    listener.listen(64)
    listener.setblocking(False)
    server = Server(
        listener=listener,
        dir_fd=dir_fd,
        lock_fd=lock_fd,
        idle_timeout=idle_timeout,
        own=context_of("self"),
        key=wire.interpreter_key(),
        files=loaded_files(),
    )
    gc.collect()
    gc.freeze()  # the children share these pages; their collections skip them
    if ready is not None:
        os.write(ready, f"{os.getpid()}\n".encode())
        os.close(ready)
    try:
        server.loop()
    finally:
        server.close()


def start(idle_timeout: float, timeout: float = 30.0) -> tuple[int, str]:
    """Start a server in the background: (its pid, its directory). Raises OSError with a
    one-line reason when one is running already or it could not start."""
    directory = wire.runtime_dir()
    dir_fd = make_dir(directory)
    held = lock(dir_fd)
    if held is None:
        os.close(dir_fd)
        raise OSError(f"a warm server is running already in {directory}")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the first child: a session of its own, then the server's own fork
        try:
            os.close(read_end)
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            devnull = os.open(os.devnull, os.O_RDWR)
            log = os.open(
                wire.LOG_NAME,
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=dir_fd,
            )
            os.dup2(devnull, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            serve(dir_fd, held, idle_timeout, ready=write_end)
            os._exit(0)
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(1)
    os.close(write_end)
    os.close(held)  # the server's fork holds it now (same open file)
    os.close(dir_fd)
    os.waitpid(pid, 0)
    import select

    deadline = time.monotonic() + timeout
    answer = b""
    try:
        while not answer.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([read_end], [], [], remaining)[0]:
                break
            chunk = os.read(read_end, 64)
            if not chunk:
                break
            answer += chunk
    finally:
        os.close(read_end)
    if not answer.endswith(b"\n"):
        raise OSError(f"the warm server did not start (see {directory}/{wire.LOG_NAME})")
    return int(answer), directory


def request(kind: bytes) -> dict[str, object] | None:
    """Ask the running server ``kind`` (ping, stop): its status, or None when none runs."""
    dir_fd = wire.open_private_dir(wire.runtime_dir())
    if dir_fd is None:
        return None
    try:
        sock = wire.connect(dir_fd)
    finally:
        os.close(dir_fd)
    if sock is None:
        return None
    try:
        sock.sendall(wire.frame([kind]))
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    finally:
        sock.close()
    if data[:1] != b"P":
        return None
    answer = json.loads(data[1:])
    return answer if isinstance(answer, dict) else None


def wait_stopped(timeout: float = 30.0) -> bool:
    """Until the server's lock is free (it has exited), at most ``timeout`` seconds."""
    dir_fd = wire.open_private_dir(wire.runtime_dir())
    if dir_fd is None:
        return True
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            held = lock(dir_fd)
            if held is not None:
                os.close(held)
                return True
            time.sleep(0.02)
        return False
    finally:
        os.close(dir_fd)
