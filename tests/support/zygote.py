"""A fork server for the ``featx`` command (and ``python``) of the tests that run featx as a user does (the
tutorials, ``bench/gpu.sh --smoke``): the same CLI, without a fresh interpreter importing torch, transformers and
scikit-learn for every command (about 3.5 s of CPU each).

``python zygote.py serve SOCKET [PID] [--bare]`` imports every ``featx`` module (and so its dependencies), and
what those modules import on first use (``FIRST_USE``), once, then serves on a Unix socket: a client
(``zygote_client.py``, started as the ``featx`` shim) sends its arguments, working folder and environment, and
passes its standard input, output and error; the server forks, and the child runs ``python -m featx``
(``runpy``) with them exactly as a fresh process would, then sends back its exit status. A ``python`` request
runs ``python -`` (the script on standard input), ``python -c CODE``, ``python -m MODULE`` or ``python SCRIPT``
as a fresh interpreter would, as ``__main__``; modules come from the server's ``sys.path``, not from a
``PYTHONPATH`` the request changes. Nothing of a command outlives it: each runs in its own forked child, and the
server itself never runs one. With PID, the server ends when process PID does (the test run's pytest, whose
workers share one server). ``--bare`` skips the imports (the server's own tests).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import gc
import importlib
import json
import os
import pkgutil
import runpy
import select
import signal
import socket
import sys
import threading
import traceback
import types

from featx.exiting import exit_code  # what sys.exit(code) makes the status

HEADER = 16  # bytes: the length of the JSON request that follows the passed descriptors
# What featx's commands import on first use, inside a function (``featx.lazy``'s point: ``import featx`` stays
# light), that a command would otherwise import again in every forked child, by the seconds of CPU each costs
# a child that needs it (measured in the tutorials' commands): transformers' auto classes (every decoder
# extraction, ~1.5 s), the first torch.optim optimizer's torch._dynamo (the word probes' scalar mix, 0.4-1.6 s),
# matplotlib's pyplot (plot), scikit-learn's estimators and splitters (probe, fit), pyarrow (pandas' CSVs).
FIRST_USE = (
    "transformers:AutoConfig",
    "transformers:AutoModel",
    "transformers:AutoTokenizer",
    "transformers.activations",
    "torch._dynamo",
    "matplotlib.pyplot",
    "sklearn.decomposition",
    "sklearn.feature_extraction.text",
    "sklearn.feature_selection",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "sklearn.neural_network",
    "sklearn.svm",
    "pyarrow",
)


def preload() -> None:
    """Import every featx module (``__main__`` aside, which would run the CLI) and so what they import, then
    ``FIRST_USE``."""
    import featx

    names = [module.name for module in pkgutil.walk_packages(featx.__path__, "featx.")]
    for name in [name for name in names if name.rsplit(".", 1)[-1] != "__main__"] + list(FIRST_USE):
        # an optional dependency missing: the command that needs it imports it itself, and fails there
        with contextlib.suppress(Exception):
            module, _, attribute = name.partition(":")
            imported = importlib.import_module(module)
            if attribute:  # a lazy package's attribute (transformers.AutoModel) imports its module when read
                getattr(imported, attribute)


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: the header with the client's three descriptors, then the JSON body."""
    header, fds, _, _ = socket.recv_fds(conn, HEADER, 3)
    while len(header) < HEADER:
        header += conn.recv(HEADER - len(header))
    size, body = int(header), b""
    while len(body) < size:
        body += conn.recv(size - len(body))
    return json.loads(body), fds


def run_python(argv: list[str]) -> None:
    """What ``python ARGV`` runs for ``ARGV`` ``- ...`` (the script on standard input), ``-c CODE ...``,
    ``-m MODULE ...`` or ``SCRIPT ...``: as a fresh interpreter's ``__main__``, with its ``sys.argv`` and
    ``sys.path[0]``."""
    option = argv[0] if argv else None
    if option == "-m" and len(argv) > 1:
        sys.argv = argv[1:]  # runpy puts the module's file in sys.argv[0]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    if option and not option.startswith("-"):
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(option))
        runpy.run_path(option, run_name="__main__")
        return
    if option == "-c" and len(argv) > 1:
        source, name, sys.argv = argv[1], "<string>", ["-c", *argv[2:]]
    elif option == "-":
        source, name, sys.argv = sys.stdin.read(), "<stdin>", argv
    else:
        raise SystemExit(f"zygote: python {' '.join(argv)}: only -, -c CODE, -m MODULE or SCRIPT is served")
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.path[0] = ""
    exec(compile(source, name, "exec"), main.__dict__)


def run_command(request: dict, fds: list[int]) -> None:
    """In the forked child: become the client's ``python -m featx ARGS`` process (``featx.cli.run`` ends it), or
    its ``python`` process."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    try:
        if request["argv0"] == "python":
            run_python(request["argv"])
        else:
            sys.argv = [request["argv0"], *request["argv"]]
            runpy.run_module("featx", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = exit_code(stop.code)
    except BaseException:  # what an uncaught exception does to a fresh interpreter
        traceback.print_exc()
        code = 1
    # What the interpreter's exit does before its teardown, in its order (featx.exiting ends a command with
    # SystemExit where this is needed): wait for the threads that are not daemons and run threading's exit
    # hooks (joblib's loky workers are stopped there; skipped, they would outlive the command holding its
    # output pipes), then the atexit handlers (HDF5 files closed, temporary folders removed).
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:  # closed by the command itself (json.tool does): Python skips it
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, as in `featx ... | head -1`
            code = code or 120
    os._exit(code)


def handle(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In a forked child of the server: fork the command's process, wait for it, send the client its status
    (as a shell gives it: 128 + N for a process ended by signal N). ``featx.cli.run`` ends its process with
    ``os._exit``, so the status is read where a shell reads it, from the parent."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # this process and the command wait for their children
    try:
        pid = os.fork()
        if pid == 0:
            conn.close()
            run_command(request, fds)
        for fd in fds:
            os.close(fd)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        conn.sendall(str(128 - status if status < 0 else status).encode())
    finally:
        os._exit(0)


def watching(pid: int | None) -> tuple[list, float | None]:
    """What the accept loop waits on besides the socket, and how long: a descriptor that becomes readable when
    process ``pid`` ends (Linux), else a second between looks; nothing without ``pid``."""
    if pid is None:
        return [], None
    try:
        return [os.pidfd_open(pid)], None
    except (AttributeError, OSError):
        return [], 1.0


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (where no process descriptor can watch it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def serve(path: str, watch: int | None = None, bare: bool = False) -> None:
    """Serve on the socket at ``path``; with ``watch``, until process ``watch`` ends; ``bare``: nothing preloaded."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    server.listen(16)
    if not bare:
        preload()
    gc.collect()
    gc.freeze()  # the imported objects move to a permanent generation: no collection in a child touches them
    sys.stdout.flush()
    sys.stderr.flush()
    os.rename(path + ".tmp", path)  # the socket appears once the imports are done
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # finished children are reaped by the kernel
    ended, every = watching(watch)
    while True:
        ready, _, _ = select.select([server, *ended], [], [], every)
        if (ended and ended[0] in ready) or (watch is not None and not ended and not alive(watch)):
            os._exit(0)  # the commands still running go on: each is its own process
        if server not in ready:
            continue
        conn, _ = server.accept()
        request, fds = receive(conn)
        if os.fork() == 0:
            server.close()
            for fd in ended:
                os.close(fd)
            handle(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[3:] if argument != "--bare"]
    serve(sys.argv[2], int(arguments[0]) if arguments else None, bare="--bare" in sys.argv[3:])
