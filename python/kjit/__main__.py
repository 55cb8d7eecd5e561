"""python3 -m kjit get|stats|targets|ping: the kjit command's everyday
subcommands through the Python package, with the same options, output and
exit status (docs/cli.md):

    python3 -m kjit get (--source FILE | --kernel NAME) [--backend B] [--target T]
                        [--entry E]... [-I DIR]... [-D NAME[=VALUE]]... [-U NAME]...
                        [-O[LEVEL]] [-std=STD] [--compiler FAMILY]
                        [--name-expression EXPR]... [--opt OPT]...
                        [--include-header [NAME=]FILE]... [-o FILE] [--json]
    python3 -m kjit stats [--json] [--zero]
    python3 -m kjit targets [--json]
    python3 -m kjit ping [--json]

The compiler-style options (-I, -D, -U, -O, -std=, glslc's -fshader-stage=
and --target-env=, NVRTC's -default-device, nvcc's --fatbin, --compiler,
--name-expression) are taken as client/ccopts.c takes them for `kjit get`:
before the rest is parsed, never from the value of another option, and
sent before the --opt values.

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
    "get": "get (--source FILE | --kernel NAME) [--backend B] [--target T] [--entry E]... "
           "[-I DIR]... [-D NAME[=VALUE]]... [-U NAME]... [-O[LEVEL]] [-std=STD] [--compiler FAMILY] "
           "[--name-expression EXPR]... [--opt OPT]... [--include-header [NAME=]FILE]... [-o FILE] [--json] "
           "[--explain]",
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


# get's own options that take a separate value: their values are never
# mistaken for compiler-style options ("--opt -DX", "--source -Dx.cu").
VALUED = ("--source", "--kernel", "--backend", "--target", "--entry", "--opt", "--include-header",
          "--output", "-o")
CCOPTS_MAX = 256  # KJ_CCOPTS_MAX


# client/ccflags.c's tables: the flags of build files, taken as typed.
HABIT_EXACT = ("--use_fast_math", "-use_fast_math", "-lineinfo", "--generate-line-info", "--expt-relaxed-constexpr",
               "-expt-relaxed-constexpr", "--expt-extended-lambda", "-expt-extended-lambda", "--extended-lambda",
               "-extended-lambda", "--restrict", "-restrict", "--device-int128", "-device-int128",
               "--extra-device-vectorization", "--disable-warnings", "--resource-usage", "-res-usage",
               "--device-as-default-execution-space", "-fPIC", "-fPIE", "-m64")
HABIT_PREFIXED = ("--ftz=", "--fmad=", "--prec-div=", "--prec-sqrt=", "-prec-div=", "-prec-sqrt=", "--maxrregcount=",
                  "-maxrregcount=", "--diag-suppress=", "-diag-suppress=", "--diag-warn=", "-diag-warn=",
                  "--diag-error=", "-diag-error=", "--compress-mode=", "--gpu-max-threads-per-block=",
                  "--target-spv=", "-Xcompiler=", "-Xptxas=", "--compiler-options=", "--ptxas-options=")
HABIT_VALUED = ("-Xcompiler", "-Xptxas", "--compiler-options", "--ptxas-options", "--diag-suppress",
                "-diag-suppress")
ARCH_FLAGS = ("-arch", "--gpu-architecture", "--offload-arch", "--cuda-gpu-arch")
MULTI_FLAGS = ("-gencode", "--generate-code", "-code", "--gpu-code")
BINDING_BASES = tuple(f"-f{k}-binding-base" for k in ("image", "sampler", "texture", "ubo", "cbuffer", "ssbo",
                                                      "uav"))


def backend_of(source: Optional[str], target: Optional[str]) -> Optional[str]:
    """The backend a command line implies (kj__ccflags_backend): the
    target's, else the source's suffix; None when neither says."""
    if target and target.startswith(("sm_", "compute_")):
        return "cuda"
    if target and target.startswith("gfx"):
        return "hip"
    if target and target.startswith("vulkan"):
        return "vulkan"
    for suffix, backend in ((".cu", "cuda"), (".hip", "hip"), (".comp", "vulkan"), (".glsl", "vulkan"),
                            (".hlsl", "vulkan")):
        if source and len(source) > len(suffix) and source.endswith(suffix):
            return backend
    return None


class CcOpts:
    """The compiler-style options of a command line (client/ccopts.c and
    client/ccflags.c)."""

    def __init__(self) -> None:
        self.dirs: List[str] = []        # -I DIR, in order
        self.opts: List[str] = []        # "-DNAME=V", "-UNAME", "-O3", "-std=c++17", ...
        self.exprs: List[str] = []       # --name-expression EXPR
        self.compiler: Optional[str] = None
        self.target_env: Optional[str] = None
        self.stage: Optional[str] = None
        self.entry_point: Optional[str] = None  # glslc's -fentry-point=NAME
        self.arch: Optional[str] = None         # -arch=sm_90, --offload-arch=gfx90a ...: the target
        self.arch_opt = ""                      # that flag as typed, for messages

    def _take_arch(self, flag: str, v: Optional[str]) -> None:
        if not v:
            raise ValueError(f"missing argument to {flag}")
        if v == "native" or v.startswith("all") or "," in v:
            raise ValueError(f"{flag} {v}: kjit compiles one target a request; name it with --target "
                             "(`kjit targets` lists this machine's)")
        if self.arch is not None and self.arch != v:
            raise ValueError(f"{self.arch_opt} and {flag} {v}: kjit compiles one target a request; give it "
                             "once, with --target")
        self.arch, self.arch_opt = v, f"{flag} {v}"

    def _habit(self, argv: List[str], i: int) -> int:
        """client/ccflags.c's kj__ccflags_take: how many words argv[i] took
        (0: not one of them).  Raises ValueError."""
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a in HABIT_EXACT or a.startswith(HABIT_PREFIXED) or re.match(r"-m[a-z]", a):
            self._add(self.opts, a, "compiler options")
            return 1
        if a in HABIT_VALUED:
            if nxt is None:
                raise ValueError(f"missing argument to {a}")
            self._add(self.opts, f"{a}={nxt}", "compiler options")
            return 2
        flag, eq, v = a.partition("=")
        if flag in ARCH_FLAGS:
            self._take_arch(flag, v if eq else nxt)
            return 1 if eq else 2
        if flag in MULTI_FLAGS:
            raise ValueError(f"{flag}: kjit compiles one target a request; name it with --target (as "
                             "-arch=sm_90 or --offload-arch=gfx90a would)")
        if a in BINDING_BASES:
            k = i + 1
            if k < len(argv) and argv[k] and not argv[k].isdigit():
                if argv[k] not in ("comp", "compute"):
                    raise ValueError(f"{a} {argv[k]}: kjit builds compute shaders only (a stage of comp or none)")
                k += 1
            if k >= len(argv) or not argv[k].isdigit():
                raise ValueError(f"{a} takes [comp] and a binding number")
            self._add(self.opts, f"{a} {argv[k]}", "compiler options")
            return k + 1 - i
        return 0

    def _add(self, kind: List[str], v: str, what: str) -> None:
        if len(kind) >= CCOPTS_MAX:
            raise ValueError(f"more than {CCOPTS_MAX} {what}")
        kind.append(v)

    def take(self, argv: List[str]) -> List[str]:
        """Takes the compiler-style options out of argv; returns the rest,
        in order.  Raises ValueError (a usage error) for a missing
        argument or too many."""
        rest: List[str] = []
        i = 0
        while i < len(argv):
            a = argv[i]
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if a == "--":
                rest.extend(argv[i:])
                break
            if a in VALUED and nxt is not None:  # joined: argparse takes "-DX" as a value then
                rest.append(f"{'--output' if a == '-o' else a}={nxt}")
                i += 2
                continue
            n = self._habit(argv, i)
            i += n if n else self._one(a, nxt, rest)
        return rest

    def _one(self, a: str, nxt: Optional[str], rest: List[str]) -> int:
        """Handles a (with its value nxt); returns how many words it took."""
        for flag, kind, what in (("--name-expression", self.exprs, "name expressions"),
                                 ("--compiler", None, "")):
            if a == flag or a.startswith(flag + "="):
                v = a[len(flag) + 1:] if a != flag else nxt
                if v is None:
                    raise ValueError(f"missing argument to {a}")
                if kind is None:
                    self.compiler = v
                else:
                    self._add(kind, v, what)
                return 1 if a != flag else 2
        if a in ("-I", "--include-path", "-D", "-U", "--define-macro"):
            if nxt is None:
                raise ValueError(f"missing argument to {a}")
            if a in ("-I", "--include-path"):
                self._add(self.dirs, nxt, "include directories")
            else:
                self._add(self.opts, ("-U" if a == "-U" else "-D") + nxt, "compiler options")
            return 2
        if a.startswith("-x"):  # -x LANG / -xLANG: one option "-x LANG"
            lang = a[2:] or nxt
            if not lang:
                raise ValueError("missing argument to -x")
            self._add(self.opts, "-x " + lang, "compiler options")
            return 1 if a[2:] else 2
        if (a.startswith("-I") and len(a) > 2) or a.startswith("--include-path="):
            self._add(self.dirs, a[2:] if a[1] == "I" else a[15:], "include directories")
        elif a.startswith("--define-macro="):
            self._add(self.opts, "-D" + a[15:], "compiler options")
        elif (a[:2] in ("-D", "-U") and len(a) > 2) or re.fullmatch(r"-O[0-3]?|-Os|-Ofast", a) or \
                a.startswith(("-std=", "--std=")) or a in ("-default-device", "--fatbin", "-fatbin", "-w", "-g") or \
                re.match(r"-W[a-z]", a):  # warnings: -Wall, -Wextra, -Werror, -Wno-...
            self._add(self.opts, a, "compiler options")
        elif a.startswith("-fshader-stage="):
            self.stage = a[15:]
        elif a.startswith("-fentry-point="):
            self.entry_point = a[14:]
        elif a.startswith("--target-env="):
            self.target_env = a[13:]
        elif re.match(r"-f[a-z]", a):  # -ffast-math, -fhlsl-iomap ...: the family's whitelist decides
            self._add(self.opts, a, "compiler options")
        else:
            rest.append(a)
        return 1

    def finish(self, backend: str, target: Optional[str]) -> Optional[str]:
        """Checks the options against backend and turns glslc's spellings
        into kjit's; returns the target.  Raises ValueError."""
        if (self.stage or self.target_env or self.entry_point) and backend != "vulkan":
            raise ValueError("-fshader-stage=, -fentry-point= and --target-env= are for --backend vulkan")
        if self.entry_point is not None and not re.fullmatch(r"[A-Za-z0-9._+-]{1,255}", self.entry_point):
            raise ValueError(f"-fentry-point={self.entry_point}: not a name kjit takes ([A-Za-z0-9._+-])")
        if self.stage is not None and self.stage not in ("compute", "comp"):
            raise ValueError(f"-fshader-stage={self.stage}: kjit builds compute shaders only")
        if self.arch is not None:  # -arch=sm_90, --offload-arch=gfx90a ...
            if target is not None and target != self.arch:
                raise ValueError(f"{self.arch_opt} and --target {target} disagree: give the target once, "
                                 "with --target")
            target = self.arch
        if self.target_env is not None:
            if target is not None and target != self.target_env:
                raise ValueError(f"--target-env={self.target_env} and --target {target} disagree")
            target = self.target_env
        if backend == "vulkan":  # glslc has one level: -O
            self.opts = ["-O" if re.fullmatch(r"-O[1-3]|-Ofast", o) else o for o in self.opts]
        return target


def cmd_get(argv: List[str]) -> int:
    p = Parser("get")
    cc = CcOpts()
    try:
        argv = cc.take(argv)
    except ValueError as e:
        p.error(str(e))
    p.add_argument("--source")
    p.add_argument("--kernel")
    p.add_argument("--backend")
    p.add_argument("--target")
    p.add_argument("--entry", action="append", default=[])
    p.add_argument("--opt", action="append", default=[])
    p.add_argument("--include-header", action="append", default=[])
    p.add_argument("-o", "--output")
    p.add_argument("--json", action="store_true")
    p.add_argument("--explain", action="store_true")
    a = p.parse_args(argv)
    if (a.source is None) == (a.kernel is None):
        p.error("give exactly one of --source and --kernel")
    if a.backend is None:  # the target's or the suffix's (client/ccflags.c)
        a.backend = backend_of(a.source, a.target or cc.arch)
    if a.backend is None:
        p.error("--backend is required (the file's suffix, .cu, .hip, .comp, .glsl or .hlsl, does not say)"
                if a.source else "--backend is required")
    if a.backend not in ("hip", "cuda", "vulkan"):
        p.error(f"unknown backend {a.backend} (expected hip, cuda or vulkan)")
    if a.json and a.output == "-":
        p.error("-o - and --json both want standard output; give -o a file")
    try:
        target = cc.finish(a.backend, a.target)
    except ValueError as e:
        p.error(str(e))
    if cc.entry_point is not None:  # glslc's -fentry-point=: the first entry
        if a.entry and a.entry[0] != cc.entry_point:
            p.error(f"-fentry-point= and the first --entry disagree {a.entry[0]}")
        if not a.entry:
            a.entry = [cc.entry_point]
    headers = {}
    for spec in a.include_header:
        name, eq, file = spec.partition("=")
        if not eq:
            name, file = os.path.basename(spec), spec
        headers[name] = read_input(file)
    try:
        with Client() as c:
            more = dict(entries=a.entry, include_dirs=cc.dirs, compiler=cc.compiler,
                        name_expressions=cc.exprs, explain=a.explain)
            if a.source is not None:
                obj = c.get(read_input(a.source), a.backend, target, cc.opts + a.opt, headers,
                            source_name_of(a.source), **more)
            else:
                obj = c.get(None, a.backend, target, cc.opts + a.opt, headers, kernel=a.kernel, **more)
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
    out = sys.stderr if a.json or a.output == "-" else sys.stdout
    print(f"{obj.status} {obj.key} {obj.target or '-'} {len(obj.data)} bytes", file=out)
    for e in cc.exprs:  # --name-expression
        print(f"lowered {e} {obj.lowered_names.get(e) or '-'}", file=out)
    if a.explain and not a.json:  # as `kjit get --explain` prints it
        lines = (["a hit: nothing to explain"] if obj.status == "hit" else
                 (obj.explain or "kjitd sent no explanation (an older kjitd)\n").splitlines())
        for line in lines:
            print(f"explain: {line}", file=out)
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
