"""python3 -m kjit get|stats|targets|ping: the kjit command's everyday
subcommands through the Python package, with the same options, output and
exit status (docs/cli.md):

    python3 -m kjit get (--source FILE | --kernel NAME) --backend B [--target T]
                        [--entry E]... [--opt OPT]... [--include-header [NAME=]FILE]...
                        [-o FILE] [--json]
    python3 -m kjit stats [--json] [--zero]
    python3 -m kjit targets [--json]
    python3 -m kjit ping [--json]

Exit status: 0 success, 1 the request failed, 2 usage error, 3 kjitd
unreachable.  Every failure prints one line `kjit: <what>; <what to do>` on
stderr (a compile error prints the compiler's log first).  `targets` shows
kjitd's view only: this process's own resolution is not exported by
libkjit (the kjit command prints it).
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import re
import stat
import sys
import tempfile
import time
from typing import List, NoReturn, Optional

from . import Client, CompileError, Error

EX_OK, EX_FAIL, EX_USAGE, EX_DOWN = 0, 1, 2, 3

USAGE = {
    "get": "get (--source FILE | --kernel NAME) --backend B [--target T] [--entry E]... "
           "[--opt OPT]... [--include-header [NAME=]FILE]... [-o FILE] [--json]",
    "stats": "stats [--json] [--zero]",
    "targets": "targets [--json]",
    "ping": "ping [--json]",
}

# What to do about a code whose message does not say already (as the kjit command).
HINTS = {
    -7: "pass --target or set the backend's variable (see `kjit targets`)",
    -8: "pass a supported --target (see `kjit targets`)",
    -9: "install the backend's compiler or use another --backend",
    -10: "check the name against the bundled kernels (kernels_src/)",
    -11: "retry; if it happens again, see kjitd's log",
    -12: "retry, or check that kjitd is not overloaded",
    -13: "make the input smaller",
    -14: "pass the header with --include-header",
    -17: "stop the other kjitd or use another cache directory",
    -18: "ask the administrator for access to kjitd's socket",
    -20: "retry in a moment",
    -5: "restart kjitd from the same kjit release",
    -2: "check the arguments",
}


def say(msg: str) -> None:
    print(f"kjit: {msg}", file=sys.stderr)


def report(e: Error) -> int:
    """Prints e as one line; returns the exit status."""
    msg = str(e)
    if ";" not in msg and e.code is not None:
        msg = msg + "; " + HINTS.get(e.code, "see kjitd's log")
    say(msg)
    return EX_DOWN if e.code in (-4, -12) else EX_FAIL


class Parser(argparse.ArgumentParser):
    """argparse with the kjit command's one-line usage errors (exit 2)."""

    def __init__(self, cmd: str) -> None:
        super().__init__(prog=f"kjit {cmd}", add_help=False)
        self.cmd = cmd

    def error(self, message: str) -> NoReturn:
        say(f"{message}; usage: kjit {USAGE[self.cmd]}")
        sys.exit(EX_USAGE)


def source_name_of(path: str) -> str:
    """FILE's base name with characters outside [A-Za-z0-9._+-] as '_'."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", os.path.basename(path)) or "source"


def _resolve_output(path: str) -> str:
    """What path names once its symlinks are followed (it may not exist:
    a dangling link names the file to create)."""
    cur = path
    for _ in range(40):
        if not os.path.islink(cur):
            return cur
        link = os.readlink(cur)
        cur = link if os.path.isabs(link) else os.path.join(os.path.dirname(cur), link)
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))


def write_output(path: str, data: bytes) -> None:
    """Writes data to path as cp does (docs/cli.md, common/outfile.c): "-"
    is stdout; a symlink is followed and kept; a character device or FIFO
    is written in place, never replaced; a socket, block device or
    directory is refused; a regular file is replaced atomically (temporary
    beside it, fsync, rename), keeping its mode (new: 0666 less the umask)."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    final = _resolve_output(path)
    try:
        st = os.stat(final)
    except FileNotFoundError:
        st = None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with open(final, "wb", buffering=0) as f:
            f.write(data)
        return
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else \
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file"
        raise OSError(errno.EINVAL, f"{path} is {kind}; give a file name (or - for standard output)")
    d = os.path.dirname(os.path.abspath(final))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(final) + ".tmp.", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, stat.S_IMODE(st.st_mode) & 0o777 if st is not None else 0o666 & ~mask)
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_input(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise SystemExit(fail(f"cannot read {path}: {e.strerror}; check the path"))


def fail(msg: str, status: int = EX_FAIL) -> int:
    say(msg)
    return status


def cmd_get(argv: List[str]) -> int:
    p = Parser("get")
    p.add_argument("--source")
    p.add_argument("--kernel")
    p.add_argument("--backend")
    p.add_argument("--target")
    p.add_argument("--entry", action="append", default=[])
    p.add_argument("--opt", action="append", default=[])
    p.add_argument("--include-header", action="append", default=[])
    p.add_argument("-o", "--output")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if (a.source is None) == (a.kernel is None):
        p.error("give exactly one of --source and --kernel")
    if a.backend is None:
        p.error("--backend is required")
    if a.backend not in ("hip", "cuda", "vulkan"):
        p.error(f"unknown backend {a.backend} (expected hip, cuda or vulkan)")
    if a.json and a.output == "-":
        p.error("-o - and --json both want standard output; give -o a file")
    headers = {}
    for spec in a.include_header:
        name, eq, file = spec.partition("=")
        if not eq:
            name, file = os.path.basename(spec), spec
        headers[name] = read_input(file)
    try:
        with Client() as c:
            if a.source is not None:
                obj = c.get(read_input(a.source), a.backend, a.target, a.opt, headers,
                            source_name_of(a.source), entries=a.entry)
            else:
                obj = c.get(None, a.backend, a.target, a.opt, headers, kernel=a.kernel,
                            entries=a.entry)
    except CompileError as e:
        if e.log:
            sys.stderr.write(e.log if e.log.endswith("\n") else e.log + "\n")
        return fail(f"compile failed: {e}; fix the source and retry")
    except Error as e:
        return report(e)
    if a.output:
        try:
            write_output(a.output, obj.data)
        except OSError as e:
            if e.strerror and e.strerror.startswith(a.output):
                return fail(e.strerror)
            return fail(f"cannot write {a.output}: {e.strerror}; check the path and free space")
    print(f"{obj.status} {obj.key} {obj.target or '-'} {len(obj.data)} bytes",
          file=sys.stderr if a.json or a.output == "-" else sys.stdout)
    if a.json:
        print(json.dumps(obj.as_json(), separators=(",", ":")))
    return EX_OK


def cmd_admin(cmd: str, argv: List[str]) -> int:
    p = Parser(cmd)
    p.add_argument("--json", action="store_true")
    if cmd == "stats":
        p.add_argument("--zero", action="store_true")
    a = p.parse_args(argv)
    try:
        with Client() as c:
            if cmd == "ping":
                t0 = time.monotonic()
                c.ping()
                us = int((time.monotonic() - t0) * 1e6)
                print(f'{{"ok":true,"us":{us}}}' if a.json else f"kjitd answered in {us / 1000:.3f} ms")
                return EX_OK
            arg = "zero" if cmd == "stats" and a.zero else None
            if a.json:
                print(json.dumps(c.admin(cmd, arg), separators=(",", ":")))
            else:
                text = c.admin(cmd, arg, json=False)
                if cmd == "targets":
                    print("kjitd:")
                sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    except Error as e:
        return report(e)
    return EX_OK


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: python3 -m kjit COMMAND ...\n" +
              "".join(f"  python3 -m kjit {u}\n" for u in USAGE.values()), end="")
        return EX_OK if argv else EX_USAGE
    cmd, rest = argv[0], argv[1:]
    if cmd == "get":
        return cmd_get(rest)
    if cmd in ("stats", "targets", "ping"):
        return cmd_admin(cmd, rest)
    return fail(f"unknown command {cmd}; usage: python3 -m kjit (get|stats|targets|ping) ...",
                EX_USAGE)


if __name__ == "__main__":
    sys.exit(main())
