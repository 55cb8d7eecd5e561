"""Tests of kjit.Client.get's two hit paths (issue 35): the C extension
kjit._hit (python/kjit/_hit.c, _hitcall.c) and the ctypes fallback, with
and without get(view=True), against the C client's answers.

Run by tests/e2e/python.sh with KJIT_PYTHON_EXT=1 (the extension must
load: a build without it fails here, it is not skipped); a Client made
while KJIT_PYTHON_EXT=0 takes the ctypes path.
"""
import gc
import json
import os
import subprocess
import sys
import threading
import unittest
import uuid

import kjit
from kjit import _lib

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KJIT_BIN = os.environ["KJIT_BIN"]
TMP = os.environ["KJIT_TEST_TMP"]

GLSL_SRC = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float x[]; };
void main() { x[gl_GlobalInvocationID.x] *= 3.0; }
"""
CUDA_TEMPLATE = "template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n"


def salted(src):
    return src + f"\n// {uuid.uuid4().hex}\n"


def client(path):
    """A Client on the extension ("extension") or on ctypes ("ctypes")."""
    old = os.environ.get("KJIT_PYTHON_EXT")
    os.environ["KJIT_PYTHON_EXT"] = "1" if path == "extension" else "0"
    try:
        c = kjit.Client()
    finally:
        if old is None:
            del os.environ["KJIT_PYTHON_EXT"]
        else:
            os.environ["KJIT_PYTHON_EXT"] = old
    assert c.hit_path == path, c.hit_path
    return c


def cli_get(path_args, out):
    p = subprocess.run([KJIT_BIN, "get", *path_args, "--json", "-o", out], capture_output=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"kjit get {path_args}: {p.stderr.decode()}")
    with open(out, "rb") as f:
        return json.loads(p.stdout), f.read()


PATHS = ("extension", "ctypes")


class TestHitPaths(unittest.TestCase):
    def test_the_extension_is_used(self):
        self.assertEqual(os.environ.get("KJIT_PYTHON_EXT"), "1", "python.sh requires the extension")
        self.assertEqual(kjit.Client().hit_path, "extension")
        self.assertEqual(kjit.default_client().hit_path, "extension")
        # the build's own, beside the library it was built with
        ext = _lib.extension()
        self.assertEqual(os.path.dirname(ext.__file__),
                         os.path.join(os.path.dirname(os.path.realpath(_lib.library_path())), "python", "kjit"))
        # Client.get on the class is still the documented Python function
        self.assertEqual((kjit.Client.get.__name__, kjit.Client.get.__doc__.split()[0]), ("get", "Fetches"))

    def test_both_paths_identical_to_c(self):
        """Compiled, then hit from the process memo and from a fresh
        Client: every answer the C client's, byte for byte and field for
        field, on both paths, as bytes and as a view."""
        src = salted(GLSL_SRC)
        path = os.path.join(TMP, "hit-paths.comp")
        with open(path, "w") as f:
            f.write(src)
        first = client("extension").get(src, backend="vulkan", target="vulkan1.2", name="hit-paths.comp")
        self.assertEqual(first.status, "compiled")
        ref, data = cli_get(["--source", path, "--backend", "vulkan", "--target", "vulkan1.2"],
                            os.path.join(TMP, "hit-paths.spv"))
        self.assertEqual((first.data, first.key), (data, ref["key"]))
        for p in PATHS:
            c = client(p)
            for i in range(3):  # the first call prepares, the others reuse it
                for view in (False, True):
                    o = c.get(src, "vulkan", "vulkan1.2", name="hit-paths.comp", view=view)
                    what = f"{p} call {i} view={view}"
                    self.assertIsInstance(o, kjit.Object, what)
                    self.assertIs(type(o.data), memoryview if view else bytes, what)
                    self.assertEqual(bytes(o.data), data, what)
                    self.assertEqual((o.status, o.key, o.target, o.version, o.log, o.backend, o.lowered_names,
                                      o.explain), ("hit", ref["key"], ref["target"], ref["version"], "", "vulkan",
                                                   {}, None), what)
                    self.assertEqual(o.as_json()["size"], ref["size"], what)
                    self.assertEqual((len(o), bytes(o)), (len(data), data), what)
            c.close()

    def test_lowered_names_and_bundled_kernels_both_paths(self):
        src = salted(CUDA_TEMPLATE)
        kjit.get(src, backend="cuda", target="sm_90", name_expressions=["scale<float>", "scale<int>"])
        ref, data = cli_get(["--kernel", "mul_f32", "--backend", "vulkan"], os.path.join(TMP, "hit-mul.spv"))
        seen = []
        for p in PATHS:
            c = client(p)
            for view in (False, True):
                o = c.get(src, backend="cuda", target="sm_90", name_expressions=["scale<float>", "scale<int>"],
                          view=view)
                seen.append((o.status, o.lowered_names, bytes(o.data)))
                k = c.get_kernel("mul_f32", backend="vulkan")
                self.assertEqual((k.data, k.key, k.status), (data, ref["key"], "hit"))
        self.assertEqual(seen[0][0], "hit")
        self.assertTrue(seen[0][1]["scale<float>"].startswith("_Z"), seen[0][1])
        self.assertEqual(seen, [seen[0]] * len(seen))

    def test_a_repeat_is_the_same_request_only(self):
        """The C path takes a repeat of the last call without a key only
        when nothing it names has changed: a list edited in place, another
        argument, a bytearray source are new requests."""
        src = salted(GLSL_SRC)
        c = client("extension")
        opts = ["-DV=1"]
        keys = []
        for _ in range(2):
            keys.append(c.get(src, "vulkan", "vulkan1.2", opts).key)
        opts[0] = "-DV=2"  # the same list object, another request
        keys.append(c.get(src, "vulkan", "vulkan1.2", opts).key)
        keys.append(c.get(src, "vulkan", "vulkan1.2", ["-DV=2"]).key)  # an equal list: the same
        keys.append(c.get(src, "vulkan", "vulkan1.2", ("-DV=2",)).key)
        opts.append("-DW=1")
        keys.append(c.get(src, "vulkan", "vulkan1.2", opts).key)
        buf = bytearray(src.encode())
        keys.append(c.get(buf, "vulkan", "vulkan1.2", opts).key)
        buf[-2:-1] = b"x"  # edited in place: another source
        keys.append(c.get(buf, "vulkan", "vulkan1.2", opts).key)
        self.assertEqual(keys[0], keys[1])
        self.assertEqual(len({keys[1], keys[2], keys[5]}), 3, keys)
        self.assertEqual((keys[3], keys[4]), (keys[2], keys[2]))
        self.assertEqual(keys[6], keys[5])
        self.assertNotEqual(keys[7], keys[6])
        ref = client("ctypes")
        self.assertEqual(ref.get(src, "vulkan", "vulkan1.2", ["-DV=2", "-DW=1"]).key, keys[5])

    def test_errors_are_the_same_on_both_paths(self):
        bad = salted('extern "C" __global__ void k() { both_paths_undeclared = 1; }')
        missing = "no_such_kernel_" + uuid.uuid4().hex[:6]
        got = []
        for p in PATHS:
            c = client(p)
            row = []
            for _ in range(2):  # the second call reuses the prepared request
                for call in (lambda: c.get(bad, backend="cuda", target="sm_90"),
                             lambda: c.get(None, backend="vulkan", kernel=missing, view=True),
                             lambda: c.get_kernel("add_f32", backend="hip", target="gfx000"),
                             lambda: c.get("x", backend="metal"),
                             lambda: c.get("x", "hip", "gfx90a", "-O3"),
                             lambda: c.get("x", backend="hip", nonsense=1)):
                    with self.assertRaises(Exception) as cm:
                        call()
                    e = cm.exception
                    row.append((type(e).__name__, str(e), getattr(e, "code", None), getattr(e, "log", None)))
            got.append(row)
            c.close()
            with self.assertRaises(kjit.Error) as cm:
                c.get_kernel("add_f32", backend="vulkan")
            self.assertIn("closed", str(cm.exception))
        self.assertEqual(got[0], got[1])
        names = [r[0] for r in got[0][:6]]
        self.assertEqual(names, ["CompileError", "Error", "TargetError", "ValueError", "TypeError", "TypeError"])
        self.assertIn("both_paths_undeclared", got[0][0][3])
        self.assertIn(missing, got[0][1][1])

    def test_view_lifetime(self):
        """get(view=True): a read-only memoryview over the kjit_result,
        which lives while any view of it does and is freed on release;
        a released view raises ValueError."""
        c = client("extension")
        h = c._hitter
        want = c.get_kernel("add_f32", backend="vulkan").data
        self.assertEqual(h.live, 0)
        o = c.get(None, backend="vulkan", kernel="add_f32", view=True)
        self.assertEqual((h.live, o.data.readonly, o.data.format, o.data.nbytes), (1, True, "B", len(want)))
        with self.assertRaises(TypeError):
            o.data[0] = 0
        res = o.data.obj
        self.assertEqual((type(res).__name__, res.released, len(res)), ("Result", False, len(want)))
        with self.assertRaises(BufferError):  # a view is open
            res.release()
        part = o.data[4:8]  # a slice keeps the result alive
        o.release()
        with self.assertRaises(ValueError):
            o.data[0]
        with self.assertRaises(ValueError):
            bytes(o)
        self.assertEqual((h.live, bytes(part)), (1, want[4:8]))
        part.release()
        self.assertEqual((h.live, res.released), (1, False))  # res itself is still referenced
        res.release()
        res.release()  # idempotent
        self.assertEqual((h.live, res.released, len(res)), (0, True, 0))
        with self.assertRaises(ValueError):
            memoryview(res)
        del res
        # a with block releases; dropping the Object frees; the bytes form owns nothing
        with c.get(None, backend="vulkan", kernel="add_f32", view=True) as o2:
            self.assertEqual((bytes(o2.data), h.live), (want, 1))
        self.assertEqual(h.live, 0)
        with self.assertRaises(ValueError):
            o2.data.tobytes()
        views = [c.get(None, backend="vulkan", kernel="add_f32", view=True) for _ in range(5)]
        self.assertEqual(h.live, 5)
        del views
        gc.collect()
        self.assertEqual(h.live, 0)
        o3 = c.get(None, backend="vulkan", kernel="add_f32")
        o3.release()  # a no-op for bytes
        self.assertEqual((h.live, o3.data), (0, want))
        # the ctypes path gives a view with the same release semantics
        v = client("ctypes").get(None, backend="vulkan", kernel="add_f32", view=True)
        self.assertEqual(bytes(v.data), want)
        v.release()
        with self.assertRaises(ValueError):
            v.data[0]

    def test_a_temporary_client_and_a_subclass(self):
        """kjit.Client().get(...) keeps its Client alive through the call;
        a subclass's own get is its own; both paths under threads."""
        want = kjit.get_kernel("add_f32", backend="vulkan").data
        for _ in range(3):
            self.assertEqual(kjit.Client().get(None, backend="vulkan", kernel="add_f32").data, want)

        class Mine(kjit.Client):
            def get(self, *a, **kw):
                o = super().get(*a, **kw)
                o.log = "mine"
                return o
        m = Mine()
        self.assertEqual([m.get(None, backend="vulkan", kernel="add_f32").log for _ in range(2)], ["mine"] * 2)
        g = kjit.Client().get  # a bound get keeps its Client
        gc.collect()
        self.assertEqual(g(None, backend="vulkan", kernel="add_f32").data, want)
        for p in PATHS:
            c, bad = client(p), []

            def work():
                for i in range(200):
                    o = c.get(None, backend="vulkan", kernel="add_f32", view=bool(i % 2))
                    if bytes(o.data) != want:
                        bad.append(i)
            ts = [threading.Thread(target=work) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(bad, [], p)

    def test_fallback_without_the_extension(self):
        """A library with no extension beside it: the default takes the
        ctypes path and works; KJIT_PYTHON_EXT=1 refuses, saying why."""
        d = os.path.join(TMP, "noext")
        os.makedirs(d, exist_ok=True)
        lib = os.path.join(d, "libkjit.so")
        with open(os.environ["KJIT_LIBRARY"], "rb") as a, open(lib, "wb") as b:
            b.write(a.read())
        code = ("import kjit\nc = kjit.Client()\no = c.get(None, backend='vulkan', kernel='add_f32', view=True)\n"
                "print(c.hit_path, o.status, len(o.data))\n")
        env = dict(os.environ, KJIT_LIBRARY=lib, PYTHONPATH=os.path.join(TOP, "python"))
        env.pop("KJIT_PYTHON_EXT")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=60, cwd=TMP)
        self.assertEqual(p.returncode, 0, p.stderr)
        n = len(kjit.get_kernel("add_f32", backend="vulkan").data)
        self.assertEqual(p.stdout.decode().split(), ["ctypes", "hit", str(n)])
        env["KJIT_PYTHON_EXT"] = "1"
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=60, cwd=TMP)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"KJIT_PYTHON_EXT=1 but the C extension kjit._hit did not load", p.stderr)
        self.assertIn(os.path.join(d, "python", "kjit").encode(), p.stderr)


if __name__ == "__main__":
    unittest.main()
