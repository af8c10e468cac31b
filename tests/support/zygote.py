"""A fork server for the ``featx`` command (and ``python -``) of the documentation tests: the same CLI, without a
fresh interpreter importing torch, transformers and scikit-learn for every command of a tutorial (about 3.5 s
of CPU each).

``python zygote.py serve SOCKET`` imports every ``featx`` module (and so its dependencies) once, then serves on a
Unix socket: a client (``zygote_client.py``, started as the ``featx`` shim) sends its arguments, working folder
and environment, and passes its standard input, output and error; the server forks, and the child runs
``python -m featx`` (``runpy``) with them exactly as a fresh process would, then sends back its exit status. A
``python`` request runs the script on its standard input as ``python -`` would, as ``__main__``.
Nothing of a command outlives it: each runs in its own forked child, and the server itself never runs one.
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
import signal
import socket
import sys
import threading
import traceback
import types

from featx.exiting import exit_code  # what sys.exit(code) makes the status

HEADER = 16  # bytes: the length of the JSON request that follows the passed descriptors


def preload() -> None:
    """Import every featx module (``__main__`` aside, which would run the CLI) and so what they import."""
    import featx

    for module in pkgutil.walk_packages(featx.__path__, "featx."):
        if module.name.rsplit(".", 1)[-1] != "__main__":
            # an optional dependency missing: the command that needs it imports it itself, and fails there
            with contextlib.suppress(Exception):
                importlib.import_module(module.name)


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: the header with the client's three descriptors, then the JSON body."""
    header, fds, _, _ = socket.recv_fds(conn, HEADER, 3)
    while len(header) < HEADER:
        header += conn.recv(HEADER - len(header))
    size, body = int(header), b""
    while len(body) < size:
        body += conn.recv(size - len(body))
    return json.loads(body), fds


def run_stdin_script() -> None:
    """What ``python -`` runs: the script on standard input, as a fresh ``__main__`` module, with the working
    folder first on ``sys.path``."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.path[0] = ""
    exec(compile(sys.stdin.read(), "<stdin>", "exec"), main.__dict__)


def run_command(request: dict, fds: list[int]) -> None:
    """In the forked child: become the client's ``python -m featx ARGS`` process (``featx.cli.run`` ends it), or
    its ``python -`` process."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    python = request["argv0"] == "python"
    sys.argv = request["argv"] if python else [request["argv0"], *request["argv"]]
    try:
        if python:
            run_stdin_script()
        else:
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


def serve(path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    server.listen(16)
    preload()
    gc.collect()
    gc.freeze()  # the imported objects move to a permanent generation: no collection in a child touches them
    sys.stdout.flush()
    sys.stderr.flush()
    os.rename(path + ".tmp", path)  # the socket appears once the imports are done
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # finished children are reaped by the kernel
    while True:
        conn, _ = server.accept()
        request, fds = receive(conn)
        if os.fork() == 0:
            server.close()
            handle(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[2])
