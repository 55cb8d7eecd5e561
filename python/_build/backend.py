"""backend: the PEP 517 build backend of ``pip install ./python``.

Standard library only, so pip's build isolation (which installs the
``requires = []`` of pyproject.toml into an empty environment) needs no
network.  It builds one wheel: the package kjit (every file of python/kjit)
and, when the tree has been built (``make``: ``build/libkjit.so``, or the
``$BUILD`` folder, or ``$KJIT_WHEEL_LIBRARY``), a copy of libkjit as
``kjit/libkjit.so.0``, which kjit._lib loads first.  A wheel with the library
is tagged for this platform (``py3-none-linux_x86_64``), one without it is
pure (``py3-none-any``) and finds an installed libkjit.

The wheel also carries the C extension kjit._hit (kjit/_hit.c, _hitbytes.c, _hitcall.c:
Client.get's hit path, issue 35), compiled here for the interpreter running
the build (its Python.h; ``$CC`` or the compiler Python was built with) and
include/kjit.h; the wheel is then tagged for that interpreter
(``cp311-cp311-linux_x86_64``).  When it cannot be built (no compiler, no
Python.h, not CPython) the wheel goes without it, saying why on stderr, and
the package takes its ctypes path; ``KJIT_WHEEL_EXTENSION=none`` leaves it
out on purpose.

PEP 517 hooks: build_wheel, build_sdist, get_requires_for_build_wheel,
get_requires_for_build_sdist, prepare_metadata_for_build_wheel, and the
PEP 660 editable hooks (an editable install is a ``.pth`` naming python/).
"""
import base64
import hashlib
import io
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "kjit"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
SUMMARY = "Client of kjitd, the shared JIT cache for GPU kernels (ctypes over libkjit)"
EXT_SOURCES = ("kjit/_hit.c", "kjit/_hitbytes.c", "kjit/_hitcall.c")
EXT_FILES = EXT_SOURCES + ("kjit/_hit.h",)


def _version():
    with open(os.path.join(HERE, "kjit", "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise RuntimeError("python/kjit/_version.py has no __version__ line")
    return m.group(1)


def _library():
    """The built libkjit.so to carry, or None."""
    env = os.environ.get("KJIT_WHEEL_LIBRARY")
    if env:
        return env if env != "none" else None
    top = os.path.dirname(HERE)
    for b in dict.fromkeys([os.environ.get("BUILD") or "build", "build"]):
        p = os.path.join(top, b, "libkjit.so")
        if os.path.isfile(p):
            return p
    return None


def _kjit_h():
    """The folder holding kjit.h: the sdist's include/, else the tree's."""
    for d in (os.path.join(HERE, "include"), os.path.join(os.path.dirname(HERE), "include")):
        if os.path.isfile(os.path.join(d, "kjit.h")):
            return d
    return None


def _extension(tmp):
    """(name in the wheel, bytes) of kjit._hit built for this interpreter,
    or None, saying why on stderr."""
    if os.environ.get("KJIT_WHEEL_EXTENSION") == "none":
        return None
    inc = sysconfig.get_paths().get("include") or ""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ""
    kh = _kjit_h()
    why = None
    if sys.implementation.name != "cpython" or not suffix:
        why = "not CPython"
    elif not os.path.isfile(os.path.join(inc, "Python.h")):
        why = "no Python.h in %s (python3-dev)" % inc
    elif kh is None:
        why = "no include/kjit.h"
    else:
        cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
        out = os.path.join(tmp, "_hit" + suffix)
        cmd = cc + ["-std=c11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-I", kh,
                    "-isystem", inc, "-o", out] + [os.path.join(HERE, f) for f in EXT_SOURCES]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        except OSError as e:
            why = "%s: %s" % (cc[0], e)
        else:
            if r.returncode == 0:
                with open(out, "rb") as f:
                    return ("%s/_hit%s" % (NAME, suffix), f.read())
            why = "%s failed: %s" % (" ".join(cmd), " | ".join(r.stdout.strip().splitlines()[-3:]))
    sys.stderr.write("kjit backend: the C extension kjit._hit is not in the wheel (%s); "
                     "kjit.Client.get takes its ctypes path\n" % why)
    return None


def _tag(lib, ext=False):
    if ext:
        py = "cp%d%d" % sys.version_info[:2]
        abi = py + getattr(sys, "abiflags", "")
    elif lib is None:
        return "py3-none-any"
    else:
        py, abi = "py3", "none"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (py, abi, plat)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: >=3.8\n"
            % (NAME, _version(), SUMMARY))


def _wheel_file(tag):
    return "Wheel-Version: 1.0\nGenerator: kjit-backend\nRoot-Is-Purelib: %s\nTag: %s\n" % (
        "true" if tag.endswith("-any") else "false", tag)


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (arc, digest, len(data))


def _write_wheel(wheel_directory, files, tag):
    """files: [(name in the wheel, bytes, mode)].  Returns the wheel's name."""
    dist = "%s-%s.dist-info" % (NAME, _version())
    files = list(files) + [(dist + "/METADATA", _metadata().encode(), 0o644),
                           (dist + "/WHEEL", _wheel_file(tag).encode(), 0o644)]
    name = "%s-%s-%s.whl" % (NAME, _version(), tag)
    record = "".join(_record_line(arc, data) for arc, data, _ in files) + dist + "/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, mode in files + [(dist + "/RECORD", record.encode(), 0o644)]:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _package_files():
    out = []
    pkg = os.path.join(HERE, NAME)
    for fn in sorted(os.listdir(pkg)):
        # _install.py is make install's and libkjit.so.0 a wheel's: never from the tree
        if fn in ("_install.py", "libkjit.so.0") or not (fn.endswith(".py") or fn == "py.typed"):
            continue
        with open(os.path.join(pkg, fn), "rb") as f:
            out.append(("%s/%s" % (NAME, fn), f.read(), 0o644))
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = "%s-%s.dist-info" % (NAME, _version())
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    with open(os.path.join(metadata_directory, dist, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return dist


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = _library()
    files = _package_files()
    if lib is not None:
        with open(lib, "rb") as f:
            files.append(("%s/libkjit.so.0" % NAME, f.read(), 0o755))
    with tempfile.TemporaryDirectory() as tmp:
        ext = _extension(tmp)
    if ext is not None:
        files.append((ext[0], ext[1], 0o755))
    return _write_wheel(wheel_directory, files, _tag(lib, ext is not None))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("%s.pth" % NAME, (HERE + "\n").encode(), 0o644)], "py3-none-any")


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        def add(arc, data):
            info = tarfile.TarInfo("%s/%s" % (base, arc))
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
        for rel in ("pyproject.toml", "_build/backend.py") + EXT_FILES:
            with open(os.path.join(HERE, rel), "rb") as f:
                add(rel, f.read())
        kh = _kjit_h()
        if kh is not None:  # the extension's one outside header
            with open(os.path.join(kh, "kjit.h"), "rb") as f:
                add("include/kjit.h", f.read())
        for arc, data, _ in _package_files():
            add(arc, data)
        add("PKG-INFO", _metadata().encode())
    return name
