"""backend: the PEP 517 build backend of ``pip install ./python``.

Standard library only, so pip's build isolation (which installs the
``requires = []`` of pyproject.toml into an empty environment) needs no
network.  It builds one wheel: the package kjit (every file of python/kjit)
and, when the tree has been built (``make``: ``build/libkjit.so``, or the
``$BUILD`` folder, or ``$KJIT_WHEEL_LIBRARY``), a copy of libkjit as
``kjit/libkjit.so.0``, which kjit._lib loads first.  A wheel with the library
is tagged for this platform (``py3-none-linux_x86_64``), one without it is
pure (``py3-none-any``) and finds an installed libkjit.

PEP 517 hooks: build_wheel, build_sdist, get_requires_for_build_wheel,
get_requires_for_build_sdist, prepare_metadata_for_build_wheel, and the
PEP 660 editable hooks (an editable install is a ``.pth`` naming python/).
"""
import base64
import hashlib
import io
import os
import re
import sysconfig
import tarfile
import zipfile

NAME = "kjit"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
SUMMARY = "Client of kjitd, the shared JIT cache for GPU kernels (ctypes over libkjit)"


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


def _tag(lib):
    if lib is None:
        return "py3-none-any"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-" + plat


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
    return _write_wheel(wheel_directory, files, _tag(lib))


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
        for rel in ("pyproject.toml", "_build/backend.py"):
            with open(os.path.join(HERE, rel), "rb") as f:
                add(rel, f.read())
        for arc, data, _ in _package_files():
            add(arc, data)
        add("PKG-INFO", _metadata().encode())
    return name
