"""The client side of the warm server (``tidegate.cli.warm_server``): hand a run's command
line to a server that has the engine imported already, or say None and let the process
run it itself.

Most of a repeat run's start is the interpreter importing the engine, on the same two
cores the work-tree scan needs. A warm server (``tidegate warm start``) imports it once
and forks a child per run. This module is what every ``tidegate run|review|debug`` pays
when no server is there: one ``lstat`` of the socket. When one is, it connects, checks
that the server is this user's, and sends the command line with everything the child
must take over from this process: its standard streams and working directory (as file
descriptors), environment, umask, resource limits, signal mask and ignored signals, and
the stream encodings. The server refuses whatever it cannot reproduce exactly (another
interpreter, other code on disk, other credentials, namespaces or cgroup), and then this
process runs the command the ordinary way, so a refusal costs a few milliseconds and
changes nothing. Once the child has taken over (``A``), this process only forwards
SIGINT, SIGTERM, SIGHUP and SIGQUIT to it and ends as it ends: with its exit code, or
killed by the same signal.

``TIDEGATE_WARM=off`` in the environment bypasses the server.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: this module is on every run's start
if TYPE_CHECKING:
    from _socket import socket

PROTOCOL = b"TGW1"
SOCKET_NAME = "warm.sock"
LOCK_NAME = "warm.lock"
LOG_NAME = "warm.log"
COMMANDS = frozenset({"run", "review", "debug"})
FORWARDED = (1, 2, 3, 15)  # SIGHUP, SIGINT, SIGQUIT, SIGTERM
"""The signals a client passes on to its run (numbers, to not import ``signal`` first)."""
OFF_ENV = "TIDEGATE_WARM"
FLAGS = (
    "optimize",
    "isolated",
    "ignore_environment",
    "no_site",
    "no_user_site",
    "safe_path",
    "dev_mode",
    "utf8_mode",
    "bytes_warning",
)
"""The interpreter flags that change what the same code does: a client and its server must
agree on them."""


def runtime_dir() -> str:
    """Where this user's warm server listens: ``$XDG_RUNTIME_DIR/tidegate`` when that is
    set to an absolute path, else ``/tmp/tidegate-<uid>``."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base.startswith("/"):
        return os.path.join(base, "tidegate")
    return f"/tmp/tidegate-{os.getuid()}"


def open_private_dir(path: str) -> int | None:
    """A descriptor of ``path`` when it is a real directory (not a symlink) that this user
    owns and nobody else may enter, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def interpreter_key() -> bytes:
    """What makes the server's interpreter this one: the executable, the import path, the
    flags above and the file-system encoding."""
    flags = ",".join(f"{name}={getattr(sys.flags, name, '')}" for name in FLAGS)
    parts = [
        sys.executable,
        "\n".join(sys.path),
        flags,
        f"{sys.getfilesystemencoding()}:{sys.getfilesystemencodeerrors()}",
        sys.version,
    ]
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def frame(fields: list[bytes]) -> bytes:
    """Length-prefixed fields after the protocol tag and the total length."""
    body = b"".join(len(f).to_bytes(4, "big") + f for f in fields)
    return PROTOCOL + len(body).to_bytes(4, "big") + body


def connect(dir_fd: int) -> socket | None:
    """A connection to the server listening in the directory ``dir_fd``, checked to be this
    user's (``SO_PEERCRED``), or None. (``_socket``, not ``socket``: the module around it
    builds its enums at import, a few ms of every client's start.)"""
    import _socket
    import struct

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(10.0)
        # Through the directory's descriptor: the path is short whatever the directory's,
        # and it names the directory checked above, not whatever is at its path now.
        sock.connect(f"/proc/self/fd/{dir_fd}/{SOCKET_NAME}")
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            raise OSError("the warm server is another user's")
        return sock
    except OSError:
        sock.close()
        return None


def _context() -> list[bytes] | None:
    """This process's part of a run: umask, limits, signals, encodings (None: something
    the child could not take over, such as a closed standard stream)."""
    import resource
    import signal

    umask = os.umask(0)
    os.umask(umask)
    limits = []
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            number = getattr(resource, name)
            soft, hard = resource.getrlimit(number)
            limits.append(f"{number}:{soft}:{hard}")
    ignored = [str(s) for s in FORWARDED if signal.getsignal(s) is signal.SIG_IGN]
    blocked = [str(int(s)) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])]
    streams = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if stream is None:
            return None
        streams.append(f"{stream.encoding}:{stream.errors}")
    return [
        str(umask).encode(),
        ",".join(limits).encode(),
        ",".join(ignored).encode(),
        ",".join(blocked).encode(),
        ";".join(streams).encode(),
    ]


def run_remotely(args: list[str]) -> int | None:
    """Run ``tidegate ARGS`` in the warm server's child and return its exit code, or None:
    no server, or it refused (the caller runs the command itself)."""
    if not args or args[0] not in COMMANDS or os.environ.get(OFF_ENV) == "off":
        return None
    directory = runtime_dir()
    try:
        os.lstat(os.path.join(directory, SOCKET_NAME))
    except OSError:
        return None  # the common case: no server
    dir_fd = open_private_dir(directory)
    if dir_fd is None:
        return None
    try:
        sock = connect(dir_fd)
    finally:
        os.close(dir_fd)
    if sock is None:
        return None
    try:
        return _hand_over(sock, args)
    finally:
        sock.close()


def _hand_over(sock: socket, args: list[str]) -> int | None:
    import _socket
    import array

    context = _context()
    if context is None:
        return None
    try:
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        argv = [os.fsencode(a) for a in [sys.argv[0] if sys.argv else "tidegate", *args]]
        env = [k + b"=" + v for k, v in os.environb.items()]
        fields = [b"run", interpreter_key(), *context, str(len(argv)).encode(), *argv, *env]
        fds = array.array("i", [0, 1, 2, cwd])
        payload = frame(fields)
        sent = sock.sendmsg([payload], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        if sent < len(payload):
            sock.sendall(payload[sent:])
        reply = sock.recv(4096)  # "A" (the child took over), or why not
    except OSError:
        return None
    finally:
        os.close(cwd)
    if reply[:1] != b"A":
        return None  # refused (or gone before the child took over): nothing ran
    sock.settimeout(None)
    return _follow(sock, reply[1:])


def _follow(sock: socket, pending: bytes) -> int:
    """Forward signals to the child until the server reports how it ended."""
    import contextlib
    import signal

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            sock.sendall(b"S" + bytes([signum]))

    previous = {
        s: signal.signal(s, forward) for s in FORWARDED if signal.getsignal(s) is not signal.SIG_IGN
    }
    buffer = pending
    while True:
        while len(buffer) >= 5 and buffer[:1] in (b"X", b"K"):
            kind, number = buffer[:1], int.from_bytes(buffer[1:5], "big", signed=True)
            for s, handler in previous.items():
                signal.signal(s, handler)
            if kind == b"X":
                return number
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
            return 128 + number
        try:
            data = sock.recv(64)
        except OSError:
            data = b""
        if not data:
            sys.stderr.write("tidegate: the warm server ended without the run's exit status\n")
            return 1
        buffer += data
