"""The ``featx`` shim of the documentation tests: ``python -I -S zygote_client.py SOCKET featx ARGS...`` hands ARGS,
the working folder, the environment and its standard streams to the fork server (``zygote.py``), which runs
``python -m featx ARGS`` with them (``SOCKET python -``, ``-c CODE ...``, ``-m MODULE ...``, ``SCRIPT ...``: that
``python`` command), and exits with that command's status.
It imports nothing outside the standard library, so it starts in milliseconds."""

import json
import os
import socket
import sys

HEADER = 16


def main() -> int:
    path, program, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    body = json.dumps({"argv0": program, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        socket.send_fds(conn, [str(len(body)).rjust(HEADER).encode()], [0, 1, 2])
        conn.sendall(body)
        status = b""
        while chunk := conn.recv(16):
            status += chunk
    return int(status) if status else 1  # no status: the command's process died (a signal)


if __name__ == "__main__":
    sys.exit(main())
