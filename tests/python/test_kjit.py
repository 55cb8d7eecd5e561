"""Tests of the Python package kjit against a real kjitd.

Run by tests/e2e/python.sh, which starts kjitd on a temporary socket and
cache (KJIT_SOCKET, KJIT_CACHE_DIR, KJIT_NO_AUTOSTART=1) and sets
KJIT_LIBRARY to the build's libkjit.so, KJIT_BIN to the kjit command,
KJIT_KJITD to kjitd and KJIT_TEST_TMP to a scratch directory.  Compiles are
real: shaderc (vulkan), NVRTC (cuda) and hiprtc (hip) for explicit targets,
since this machine has no GPU.  Each test that needs an uncompiled object
salts its source with a fresh token, so tests do not depend on each other's
order.
"""
import ctypes
import hashlib
import json
import os
import stat as stat_mod
import subprocess
import sys
import threading
import time
import unittest
import uuid

import kjit

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KJIT_BIN = os.environ["KJIT_BIN"]
KJITD = os.environ["KJIT_KJITD"]
TMP = os.environ["KJIT_TEST_TMP"]
SCALE_HIP = os.path.join(TOP, "tests", "e2e", "data", "scale.hip")
SYNTAX_ERROR_HIP = os.path.join(TOP, "tests", "e2e", "data", "syntax_error.hip")
SPIRV_MAGIC = b"\x03\x02\x23\x07"

CUDA_SRC = """extern "C" __global__ void scale_k(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}
"""

GLSL_SRC = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float x[]; };
void main() { x[gl_GlobalInvocationID.x] *= 2.0; }
"""


def salted(src: str) -> str:
    """src with a comment no other request carries: a guaranteed miss."""
    return src + f"\n// {uuid.uuid4().hex}\n"


def cli(*args, env=None, check=True):
    """Runs the kjit command; returns the CompletedProcess."""
    p = subprocess.run([KJIT_BIN, *args], capture_output=True, env=env, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"kjit {' '.join(args)} exited {p.returncode}: {p.stderr.decode()}")
    return p


def pymod(*args, env=None):
    """Runs python3 -m kjit; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "kjit", *args], capture_output=True, env=env,
                          timeout=120)


def stat(name: str) -> int:
    return json.loads(cli("stats", "--json").stdout)[name]


class TestGet(unittest.TestCase):
    def test_library_is_the_builds(self):
        self.assertEqual(os.path.realpath(kjit.library_path()),
                         os.path.realpath(os.environ["KJIT_LIBRARY"]))

    def test_get_kernel_vulkan_compiled_then_hit(self):
        a = kjit.get_kernel("sub_f32", backend="vulkan")
        b = kjit.get_kernel("sub_f32", backend="vulkan")
        self.assertEqual(a.status, "compiled")
        self.assertEqual(b.status, "hit")
        self.assertEqual(a.data, b.data)
        self.assertEqual(a.data[:4], SPIRV_MAGIC)
        self.assertRegex(a.key, r"^[0-9a-f]{64}$")
        self.assertEqual(a.key, b.key)
        self.assertRegex(a.target, r"^vulkan1\.[123]$")
        self.assertEqual(a.backend, "vulkan")

    def test_get_source_cuda_nvrtc(self):
        src = salted(CUDA_SRC)
        o = kjit.get(src, backend="cuda", target="sm_90", entries=["scale_k"], name="scale.cu")
        self.assertEqual(o.status, "compiled")
        self.assertEqual(o.target, "sm_90")
        self.assertEqual(o.data[:4], b"\x7fELF")
        self.assertIn(b"scale_k", o.data)
        self.assertRegex(o.version, r"^\d+\.\d+")
        # bytes and str sources are the same request
        again = kjit.get(src.encode(), backend="cuda", target="sm_90", entries=["scale_k"])
        self.assertEqual((again.status, again.key, again.data), ("hit", o.key, o.data))

    def test_get_many_mixed(self):
        # a hit (fetched first), two misses of different backends, a failure
        kjit.get_kernel("maximum_f32", backend="vulkan")
        reqs = [{"kernel": "maximum_f32", "backend": "vulkan"},
                {"source": salted(GLSL_SRC), "backend": "vulkan", "target": "vulkan1.2"},
                {"source": salted(CUDA_SRC), "backend": "cuda", "target": "sm_90", "entries": ["scale_k"]},
                {"kernel": "no_such_kernel", "backend": "vulkan"}]
        seen = []
        out = kjit.get_many(reqs, return_exceptions=True, on_ready=lambda i, o: seen.append(i))
        self.assertEqual(sorted(seen), [0, 1, 2, 3])
        self.assertEqual(out[0].status, "hit")
        self.assertEqual(out[0].data, kjit.get_kernel("maximum_f32", backend="vulkan").data)
        self.assertEqual((out[1].status, out[1].data[:4]), ("compiled", SPIRV_MAGIC))
        self.assertEqual((out[2].status, out[2].data[:4]), ("compiled", b"\x7fELF"))
        self.assertIsInstance(out[3], kjit.Error)
        self.assertIn("no_such_kernel", str(out[3]))
        with self.assertRaises(kjit.Error):
            kjit.get_many(reqs)
        self.assertEqual(kjit.get_many([]), [])
        # the same batch again: every success is a hit now, same bytes
        again = kjit.get_many(reqs[:3])
        self.assertEqual([o.status for o in again], ["hit"] * 3)
        self.assertEqual([o.data for o in again], [o.data for o in out[:3]])

    def test_get_glsl_source_vulkan(self):
        o = kjit.get(salted(GLSL_SRC), backend="vulkan", target="vulkan1.2")
        self.assertEqual((o.status, o.target), ("compiled", "vulkan1.2"))
        self.assertEqual(o.data[:4], SPIRV_MAGIC)

    def test_headers_and_options(self):
        src = salted('#include "kjt/scale.h"\nextern "C" __global__ void h(float *x) '
                     '{ x[0] = KJT_SCALE * FACTOR; }\n')
        hdr = {"kjt/scale.h": "#define KJT_SCALE 3.0f\n"}
        a = kjit.get(src, backend="hip", target="gfx90a", options=["-DFACTOR=2.0f"], headers=hdr)
        b = kjit.get(src, backend="hip", target="gfx90a", options=["-DFACTOR=4.0f"],
                     headers={"kjt/scale.h": b"#define KJT_SCALE 3.0f\n"})
        c = kjit.get(src, backend="hip", target="gfx90a", options=["-DFACTOR=2.0f"], headers=hdr)
        self.assertEqual((a.status, b.status, c.status), ("compiled", "compiled", "hit"))
        self.assertNotEqual(a.key, b.key)
        self.assertEqual(a.key, c.key)
        self.assertEqual(a.data[:4], b"\x7fELF")

    def test_include_dirs(self):
        d = os.path.join(TMP, "incdir")
        os.makedirs(os.path.join(d, "kjt"), exist_ok=True)
        hp = os.path.join(d, "kjt", "factor.h")
        with open(hp, "w") as f:
            f.write("#define KJT_FACTOR 3.0f\n")
        src = salted('#include "kjt/factor.h"\nextern "C" __global__ void f(float *x) { x[0] = KJT_FACTOR; }\n')
        a = kjit.get(src, backend="hip", target="gfx90a", include_dirs=[d])
        b = kjit.Client().get(src, backend="hip", target="gfx90a", include_dirs=[d])
        with open(hp, "w") as f:
            f.write("#define KJT_FACTOR 5.0f\n")
        c = kjit.Client().get(src, backend="hip", target="gfx90a", include_dirs=[d])
        self.assertEqual((a.status, b.status, c.status), ("compiled", "hit", "compiled"))
        self.assertEqual(a.key, b.key)
        self.assertNotEqual(a.key, c.key)

    def test_name_expressions(self):
        src = salted("template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n")
        cl = kjit.Client()
        a = cl.get(src, backend="cuda", target="sm_90", name_expressions=["scale<float>"])
        b = cl.get(src, backend="cuda", target="sm_90", name_expressions=["scale<float>"])  # process memo
        c = kjit.Client().get(src, backend="cuda", target="sm_90", name_expressions=["scale<float>"])
        self.assertEqual((a.status, b.status, c.status), ("compiled", "hit", "hit"))
        low = a.lowered_names["scale<float>"]
        self.assertTrue(low and low.startswith("_Z") and "scale" in low, low)
        self.assertEqual(b.lowered_names, a.lowered_names)
        self.assertEqual(c.lowered_names, a.lowered_names)
        self.assertIn(low.encode(), a.data)

    def test_bytes_identical_to_kjit_get(self):
        out = os.path.join(TMP, "scale.cli.hsaco")
        p = cli("get", "--source", SCALE_HIP, "--backend", "hip", "--target", "gfx90a", "--json",
                "-o", out)
        ref = json.loads(p.stdout)
        with open(SCALE_HIP, "rb") as f:
            o = kjit.get(f.read(), backend="hip", target="gfx90a", name="scale.hip")
        with open(out, "rb") as f:
            self.assertEqual(o.data, f.read())
        self.assertEqual(o.key, ref["key"])
        self.assertEqual(o.as_json()["size"], ref["size"])
        self.assertEqual(o.target, ref["target"])
        self.assertEqual(o.version, ref["version"])
        # and a bundled kernel
        out2 = os.path.join(TMP, "mul.cli.spv")
        cli("get", "--kernel", "mul_f32", "--backend", "vulkan", "-o", out2)
        with open(out2, "rb") as f:
            self.assertEqual(kjit.get_kernel("mul_f32", backend="vulkan").data, f.read())

    def test_hit_path_identical_to_c(self):
        # issue 35: get() keeps each call's prepared request and reuses one
        # result per Client; every hit must still be the C client's answer,
        # field for field, whichever path (process memo, shared table,
        # socket) answered it, and differing arguments must never share a
        # prepared request.
        src = salted(CUDA_SRC)
        path = os.path.join(TMP, "hitpath.cu")
        with open(path, "w") as f:
            f.write(src)
        cl = kjit.Client()
        first = cl.get(src, backend="cuda", target="sm_90", options=["-DV=1"])
        for i in range(3):
            out = os.path.join(TMP, f"hitpath.c{i}.cubin")
            ref = json.loads(cli("get", "--source", path, "--backend", "cuda", "--target", "sm_90", "-DV=1",
                                 "--json", "-o", out).stdout)
            for o in (cl.get(src, backend="cuda", target="sm_90", options=["-DV=1"]),
                      cl.get(src.encode(), backend="cuda", target="sm_90", options=("-DV=1",)),
                      cl.get(bytearray(src.encode()), backend="cuda", target="sm_90", options=["-DV=1"]),
                      kjit.Client().get(src, backend="cuda", target="sm_90", options=["-DV=1"])):
                with open(out, "rb") as f:
                    self.assertEqual(o.data, f.read())
                self.assertIsInstance(o.data, bytes)
                self.assertEqual((o.status, ref["status"]), ("hit", "hit"))
                self.assertEqual((o.key, o.target, o.version, o.log, o.lowered_names, o.explain),
                                 (ref["key"], ref["target"], ref["version"], "", {}, None))
        other = cl.get(src, backend="cuda", target="sm_90", options=["-DV=2"])
        self.assertNotEqual(other.key, first.key)
        self.assertEqual(cl.get(src, backend="cuda", target="sm_90", options=["-DV=1"]).key, first.key)
        # a 64 KB bundled-kernel-sized object and an error, twice each: the
        # prepared path answers as the first call did
        big = salted(CUDA_SRC) + "// " + "x" * 65536 + "\n"
        a, b = cl.get(big, backend="cuda", target="sm_90"), cl.get(big, backend="cuda", target="sm_90")
        self.assertEqual((a.data, a.key, b.status), (b.data, b.key, "hit"))
        missing = "no_such_kernel_" + uuid.uuid4().hex[:6]
        for _ in range(2):
            with self.assertRaises(kjit.Error) as cm:
                cl.get(None, backend="vulkan", kernel=missing)
            self.assertIn(missing, str(cm.exception))

    def test_environment_resolution_and_no_env(self):
        src = salted(CUDA_SRC)
        os.environ["KJIT_CUDA_ARCH"] = "sm_80"
        try:
            o = kjit.get(src, backend="cuda")
            self.assertEqual(o.target, "sm_80")
            with self.assertRaises(kjit.TargetError) as cm:
                kjit.get(src, backend="cuda", no_env=True)
            self.assertEqual(cm.exception.code_name, "KJIT_ENOTARGET")
        finally:
            del os.environ["KJIT_CUDA_ARCH"]

    def test_object_protocol(self):
        o = kjit.get_kernel("add_f32", backend="vulkan")
        self.assertEqual(len(o), len(o.data))
        self.assertEqual(bytes(o), o.data)
        self.assertIn(o.key[:12], repr(o))
        self.assertEqual(set(o.as_json()), {"status", "key", "target", "version", "size", "log"})
        self.assertIn(o.status, ("hit", "compiled", "joined"))


class TestErrors(unittest.TestCase):
    def test_compile_error_carries_the_log(self):
        with open(SYNTAX_ERROR_HIP) as f:
            src = f.read()
        with self.assertRaises(kjit.CompileError) as cm:
            kjit.get(src, backend="hip", target="gfx90a", name="syntax_error.hip")
        e = cm.exception
        self.assertIsInstance(e, kjit.Error)
        self.assertEqual((e.code, e.code_name), (-6, "KJIT_ECOMPILE"))
        self.assertIn("undeclared_variable_kjit", e.log)
        self.assertIn("syntax_error.hip", str(e))
        self.assertNotIn("\n", str(e))

    def test_compile_error_nvrtc_and_shaderc(self):
        with self.assertRaises(kjit.CompileError) as cm:
            kjit.get('extern "C" __global__ void k() { nvrtc_undeclared_kjit = 1; }',
                     backend="cuda", target="sm_90")
        self.assertIn("nvrtc_undeclared_kjit", cm.exception.log)
        with self.assertRaises(kjit.CompileError) as cm:
            kjit.get("#version 450\nvoid main() { shaderc_undeclared_kjit = 1; }\n",
                     backend="vulkan", target="vulkan1.2")
        self.assertIn("shaderc_undeclared_kjit", cm.exception.log)

    def test_no_target_is_target_error(self):
        with self.assertRaises(kjit.TargetError) as cm:
            kjit.get(CUDA_SRC, backend="cuda")
        self.assertEqual(cm.exception.code_name, "KJIT_ENOTARGET")
        self.assertIn("KJIT_CUDA_ARCH", str(cm.exception))

    def test_unsupported_target_is_target_error(self):
        with self.assertRaises(kjit.TargetError) as cm:
            kjit.get_kernel("add_f32", backend="hip", target="gfx000")
        self.assertEqual(cm.exception.code_name, "KJIT_ETARGET")
        self.assertIn("gfx000", str(cm.exception))

    def test_unreachable_daemon_is_daemon_error(self):
        with self.assertRaises(kjit.DaemonError) as cm:
            kjit.Client(socket=os.path.join(TMP, "nobody", "kjitd.sock"), autostart=False)
        self.assertEqual(cm.exception.code_name, "KJIT_ECONNECT")
        self.assertIn(os.path.join(TMP, "nobody"), str(cm.exception))

    def test_other_failures_are_plain_errors(self):
        with self.assertRaises(kjit.Error) as cm:
            kjit.get_kernel("no_such_kernel_kjit", backend="vulkan")
        self.assertIs(type(cm.exception), kjit.Error)
        self.assertEqual(cm.exception.code_name, "KJIT_ENOKERNEL")
        with self.assertRaises(kjit.Error) as cm:  # a name that could leave the roots
            kjit.get('#include "/etc/passwd"\n', backend="hip", target="gfx90a")
        self.assertEqual(cm.exception.code_name, "KJIT_EINCLUDE")
        # A header found nowhere is the compiler's to judge (issue 11).
        with self.assertRaises(kjit.CompileError):
            kjit.get(salted('#include "absent_kjit.h"\n'), backend="hip", target="gfx90a")

    def test_python_side_mistakes(self):
        with self.assertRaises(ValueError):
            kjit.get("x", backend="metal")
        with self.assertRaises(ValueError):  # no default backend, as kjit get --backend
            kjit.get("x")
        with self.assertRaises(ValueError):
            kjit.get("x", backend="hip", kernel="add_f32")
        with self.assertRaises(TypeError):
            kjit.get("x", backend="hip", target="gfx90a", options="-O3")
        with self.assertRaises(kjit.Error) as cm:  # libkjit's own check
            kjit.get("x", backend="hip", target="gfx90a", name="bad/../name")
        self.assertEqual(cm.exception.code_name, "KJIT_EINVAL")

    def test_library_not_found(self):
        env = dict(os.environ, KJIT_LIBRARY=os.path.join(TMP, "no-libkjit.so"))
        p = subprocess.run([sys.executable, "-c", "import kjit\ntry:\n kjit.ping()\n"
                            "except kjit.LibraryNotFound as e:\n print('LNF', e)\n"],
                           capture_output=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"LNF libkjit not found", p.stdout)
        self.assertIn(b"KJIT_LIBRARY", p.stdout)


class TestClient(unittest.TestCase):
    def test_context_manager_ping_close(self):
        with kjit.Client() as c:
            c.ping()
            self.assertIn(c.get_kernel("add_f32", backend="vulkan").status, ("hit", "compiled"))
        with self.assertRaises(kjit.Error):
            c.ping()
        c.close()  # idempotent

    def test_explicit_socket(self):
        with kjit.Client(socket=os.environ["KJIT_SOCKET"], autostart=False, timeout_ms=5000) as c:
            c.ping()

    def test_stats_is_the_cli_json(self):
        py = kjit.stats()
        ref = json.loads(cli("stats", "--json").stdout)
        self.assertEqual(set(py), set(ref))
        self.assertIsInstance(py["hit_latency_us"], dict)
        # asking for stats is not a request (issue 32): the CLI's stats saw the same count
        self.assertEqual(ref["requests"], py["requests"])
        self.assertIn("hit_rate", py)
        self.assertEqual(py["socket"], os.environ["KJIT_SOCKET"])
        before = py["hits"]
        kjit.get_kernel("add_f32", backend="vulkan")
        # A second handle: the first one's process memo would answer a
        # repeat without asking the daemon (libkjit's KJIT_PROCESS_MEMO).
        with kjit.Client() as c:
            c.get_kernel("add_f32", backend="vulkan")
        self.assertGreaterEqual(kjit.stats()["hits"], before + 1)

    def test_targets_is_the_cli_json_less_client(self):
        ref = json.loads(cli("targets", "--json").stdout)
        ref.pop("client")
        self.assertEqual(kjit.targets(), ref)
        names = [b["backend"] for b in kjit.targets()["backends"]]
        self.assertEqual(sorted(names), ["cuda", "hip", "vulkan"])

    def test_admin_text_and_kernels(self):
        with kjit.Client() as c:
            self.assertIn("hits", c.admin("stats", json=False))
            ks = c.kernels("cuda")
            self.assertIn("rms_norm_f32", ks)
            self.assertEqual(ks, [ln.split()[0] for ln in
                                  c.admin("kernels", "cuda", json=False).splitlines() if ln])
            with self.assertRaises(kjit.Error):
                c.admin("no-such-command-kjit")

    def test_stop_and_autostart(self):
        """A package used from the build tree starts the build's kjitd (the
        package points KJIT_KJITD at it), and Client.stop() ends it."""
        d = os.path.join(TMP, "auto")
        env = {k: v for k, v in os.environ.items()
               if k not in ("KJIT_NO_AUTOSTART", "KJIT_KJITD")}
        env.update(KJIT_SOCKET=os.path.join(d, "kjitd.sock"), KJIT_CACHE_DIR=os.path.join(d, "cache"))
        code = ("import kjit, os\n"
                "o = kjit.get_kernel('add_f32', backend='vulkan')\n"
                "print(o.status, os.environ['KJIT_KJITD'])\n"
                "kjit.default_client().stop()\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        status, kjitd = p.stdout.decode().split()
        self.assertEqual(status, "compiled")
        self.assertEqual(os.path.realpath(kjitd), os.path.realpath(KJITD))
        for _ in range(200):  # the daemon exits, so the socket stops answering
            q = subprocess.run([KJIT_BIN, "ping"], capture_output=True,
                               env=dict(env, KJIT_NO_AUTOSTART="1"))
            if q.returncode != 0:
                break
            time.sleep(0.05)
        self.assertEqual(q.returncode, 3, "kjitd still answers after Client.stop()")

    def test_threads_share_the_default_client(self):
        ref = kjit.get_kernel("add_f32", backend="vulkan").data
        errs, datas = [], []

        def work():
            try:
                for _ in range(20):
                    datas.append(kjit.get_kernel("add_f32", backend="vulkan").data)
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(e)

        ts = [threading.Thread(target=work) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errs, [])
        self.assertEqual(len(datas), 160)
        self.assertTrue(all(d == ref for d in datas))

    def test_fork_child_gets_its_own_connection(self):
        """After fork, parent and child share the socket unless the child
        reconnects: both then read each other's replies (same ids)."""
        a = kjit.get_kernel("add_f32", backend="vulkan").data
        b = kjit.get_kernel("mul_f32", backend="vulkan").data
        c = kjit.Client(timeout_ms=5000)
        c.ping()
        kjit.ping()  # the default client too is connected before the fork
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                ok = all(c.get_kernel("add_f32", backend="vulkan").data == a for _ in range(100))
                ok = ok and kjit.get_kernel("add_f32", backend="vulkan").data == a
            finally:
                os.write(w, b"good" if ok else b"bad")
                os._exit(0)
        os.close(w)
        parent_ok = all(c.get_kernel("mul_f32", backend="vulkan").data == b for _ in range(100))
        got = os.read(r, 64)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertTrue(parent_ok, "the parent got another object's bytes")
        self.assertEqual(got, b"good", "the child got another object's bytes or failed")
        kjit.ping()
        c.close()


WORKER = """
import hashlib, os, sys, time
import kjit
go, src = sys.argv[1], open(sys.argv[2]).read()
c = kjit.Client()
c.ping()
open(sys.argv[3], "w").close()  # ready: connected
while not os.path.exists(go):
    time.sleep(0.005)
o = c.get(src, backend="hip", target="gfx90a", name="flight.hip")
print(o.status, o.key, hashlib.sha256(o.data).hexdigest())
"""


class TestSingleFlight(unittest.TestCase):
    def test_16_processes_one_compile(self):
        src_path = os.path.join(TMP, "flight.hip")
        with open(SCALE_HIP) as f:
            src = salted(f.read())
        with open(src_path, "w") as f:
            f.write(src)
        go = os.path.join(TMP, "flight.go")
        compiles = stat("compiles")
        ready = [os.path.join(TMP, f"flight.ready.{i}") for i in range(16)]
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, go, src_path, ready[i]],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i in range(16)]
        try:
            deadline = time.monotonic() + 120
            while not all(os.path.exists(r) for r in ready) and time.monotonic() < deadline:
                time.sleep(0.02)
            open(go, "w").close()  # all 16 connected: release them together
            outs = [p.communicate(timeout=300) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err.decode())
        rows = [o.decode().split() for o, _ in outs]
        statuses = sorted(r[0] for r in rows)
        self.assertEqual(statuses.count("compiled"), 1, statuses)
        self.assertEqual(len([s for s in statuses if s in ("joined", "hit")]), 15, statuses)
        self.assertGreaterEqual(statuses.count("joined"), 1, statuses)
        self.assertEqual(len({(r[1], r[2]) for r in rows}), 1, "different keys or bytes")
        self.assertEqual(stat("compiles"), compiles + 1)


class TestCommandLine(unittest.TestCase):
    def test_get_json_and_output(self):
        out = os.path.join(TMP, "m.spv")
        p = pymod("get", "--kernel", "add_f32", "--backend", "vulkan", "--json", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        js = json.loads(p.stdout)
        self.assertEqual(set(js), {"status", "key", "target", "version", "size", "log"})
        self.assertRegex(p.stderr.decode(), r"^(hit|compiled) [0-9a-f]{64} vulkan1\.\d \d+ bytes\n$")
        with open(out, "rb") as f:
            data = f.read()
        self.assertEqual(len(data), js["size"])
        self.assertEqual(data, kjit.get_kernel("add_f32", backend="vulkan").data)
        c = cli("get", "--kernel", "add_f32", "--backend", "vulkan")
        self.assertEqual(c.stdout.split()[1:], pymod("get", "--kernel", "add_f32", "--backend",
                                                     "vulkan").stdout.split()[1:])

    def test_output_like_cp(self):
        # issue 16: a symlink is followed and kept, a FIFO written in place,
        # /dev/null stays a device, "-" is stdout, a directory is refused.
        want = kjit.get_kernel("add_f32", backend="vulkan").data
        args = ("get", "--kernel", "add_f32", "--backend", "vulkan", "-o")
        real, link = os.path.join(TMP, "o-real.spv"), os.path.join(TMP, "o-link.spv")
        os.symlink("o-real.spv", link)
        self.assertEqual(pymod(*args, link).returncode, 0)
        self.assertTrue(os.path.islink(link))
        with open(real, "rb") as f:
            self.assertEqual(f.read(), want)
        fifo = os.path.join(TMP, "o-fifo")
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
        reader.start()
        self.assertEqual(pymod(*args, fifo).returncode, 0)
        reader.join(30)
        self.assertEqual(got, [want])
        self.assertTrue(stat_mod.S_ISFIFO(os.stat(fifo).st_mode))
        self.assertTrue(stat_mod.S_ISCHR(os.stat("/dev/null").st_mode),
                        "/dev/null was replaced before this test, by another program")
        self.assertEqual(pymod(*args, "/dev/null").returncode, 0)
        self.assertTrue(stat_mod.S_ISCHR(os.stat("/dev/null").st_mode))
        p = pymod(*args, "-")
        self.assertEqual((p.returncode, p.stdout), (0, want))
        p = pymod(*args, TMP)
        self.assertEqual(p.returncode, 1)
        self.assertIn("is a directory", p.stderr.decode())

    def test_get_source_matches_kjit(self):
        out_py, out_c = os.path.join(TMP, "p.hsaco"), os.path.join(TMP, "c.hsaco")
        p = pymod("get", "--source", SCALE_HIP, "--backend", "hip", "--target", "gfx90a", "-o",
                  out_py)
        self.assertEqual(p.returncode, 0, p.stderr)
        c = cli("get", "--source", SCALE_HIP, "--backend", "hip", "--target", "gfx90a", "-o", out_c)
        self.assertEqual(p.stdout.split()[1:], c.stdout.split()[1:])
        with open(out_py, "rb") as a, open(out_c, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_compiler_style_options_as_kjit_get(self):
        # -I/-D/-U/-O/-std= as `kjit get` takes them (client/ccopts.c): the
        # same request, so the same key; a header found through -I is read
        # by this process and keyed.
        d = os.path.join(TMP, "pyinc")
        os.makedirs(os.path.join(d, "kjt"), exist_ok=True)
        hp = os.path.join(d, "kjt", "f.h")
        with open(hp, "w") as f:
            f.write("#define KJT_F 3.0f\n")
        src = os.path.join(TMP, "ccopts.hip")
        with open(src, "w") as f:
            f.write(salted('#include "kjt/f.h"\n#ifdef GONE\n#error GONE is defined\n#endif\n'
                           'extern "C" __global__ void f(float *x) { x[0] = KJT_F * FACTOR; }\n'))
        base = ("get", "--source", src, "--backend", "hip", "--target", "gfx90a")
        cc = ("-I", d, "-DFACTOR=2.0f", "-U", "GONE", "-O3", "-std=c++17")
        p = pymod(*base, *cc)
        self.assertEqual(p.returncode, 0, p.stderr)
        a = p.stdout.split()
        self.assertEqual(a[0], b"compiled")
        c = cli(*base, *cc).stdout.split()
        self.assertEqual(c[:2], [b"hit", a[1]])  # the C client's request is the same
        p = pymod(*base, "-I" + d, "-D", "FACTOR=2.0f", "-UGONE", "-O2", "-std=c++17")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotEqual(p.stdout.split()[1], a[1])  # -O2: another key
        self.assertEqual(p.stdout.split()[1], cli(*base, "-I" + d, "-D", "FACTOR=2.0f", "-UGONE", "-O2",
                                                   "-std=c++17").stdout.split()[1])
        # the value of --opt is never taken: the same options, the same key
        p = pymod(*base, "--include-path=" + d, "--opt", "-DFACTOR=2.0f", "-UGONE", "-O3", "-std=c++17")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotEqual(p.stdout.split()[1], a[1])  # -U GONE now after -DFACTOR: another order
        p = pymod(*base, "-I", d, "-DGONE", "-DFACTOR=2.0f")
        self.assertEqual(p.returncode, 1)
        self.assertIn("GONE is defined", p.stderr.decode())
        with open(hp, "w") as f:
            f.write("#define KJT_F 5.0f\n")
        p = pymod(*base, *cc)
        self.assertEqual(p.stdout.split()[0], b"compiled")
        self.assertNotEqual(p.stdout.split()[1], a[1])

    def test_compiler_style_usage_errors_and_vulkan(self):
        for args, why in ((("-I",), "missing argument to -I"),
                          (("--target-env=vulkan1.2",), "are for --backend vulkan")):
            p = pymod("get", "--source", SCALE_HIP, "--backend", "hip", "--target", "gfx90a", *args)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertRegex(p.stderr.decode(), r"^kjit: .*" + why + r".*; usage: kjit get .*\n$")
        p = pymod("get", "--source", SCALE_HIP, "--backend", "vulkan", "--target-env=vulkan1.2",
                  "--target", "vulkan1.3")
        self.assertEqual(p.returncode, 2)
        src = os.path.join(TMP, "opt.comp")
        with open(src, "w") as f:
            f.write(salted("#version 450\nlayout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer B { float x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] *= SCALE; }\n"))
        args = ("get", "--source", src, "--backend", "vulkan", "-fshader-stage=compute",
                "--target-env=vulkan1.2", "-std=450", "-O3", "-D", "SCALE=2.0")
        p = pymod(*args)
        self.assertEqual(p.returncode, 0, p.stderr)
        py = p.stdout.split()
        self.assertEqual((py[0], py[2]), (b"compiled", b"vulkan1.2"))
        self.assertEqual(cli(*args).stdout.split()[:2], [b"hit", py[1]])  # -O3 became glslc's -O there too

    def test_name_expression_lines(self):
        src = os.path.join(TMP, "tmpl.cu")
        with open(src, "w") as f:
            f.write(salted("template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n"))
        args = ("get", "--source", src, "--backend", "cuda", "--target", "sm_90",
                "--name-expression", "scale<float>", "--name-expression=scale<double>")
        p = pymod(*args)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertRegex(lines[1], r"^lowered scale<float> _Z5scaleIfEvPT_S0_$")
        self.assertRegex(lines[2], r"^lowered scale<double> _Z5scaleIdEvPT_S0_$")
        self.assertEqual(cli(*args).stdout.decode().splitlines()[1:], lines[1:])

    def test_exit_status_and_one_line_errors(self):
        p = pymod("get", "--kernel", "add_f32")
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr.decode(), r"^kjit: --backend is required; usage: kjit get .*\n$")
        p = pymod("get", "--source", SYNTAX_ERROR_HIP, "--backend", "hip", "--target", "gfx90a")
        self.assertEqual(p.returncode, 1)
        err = p.stderr.decode().splitlines()
        self.assertIn("undeclared_variable_kjit", "\n".join(err[:-1]))
        self.assertRegex(err[-1], r"^kjit: compile failed: .*; fix the source and retry$")
        p = pymod("get", "--kernel", "add_f32", "--backend", "cuda")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.decode().splitlines()), 1)
        p = pymod("ping", env=dict(os.environ, KJIT_SOCKET=os.path.join(TMP, "none.sock")))
        self.assertEqual(p.returncode, 3)
        self.assertEqual(len(p.stderr.decode().splitlines()), 1)
        self.assertEqual(pymod("frobnicate").returncode, 2)

    def test_stats_targets_ping(self):
        for cmd in ("stats", "targets", "ping"):
            p = pymod(cmd, "--json")
            self.assertEqual(p.returncode, 0, p.stderr)
            js = json.loads(p.stdout)
            self.assertIsInstance(js, dict)
        self.assertIn("backends", json.loads(pymod("targets", "--json").stdout))
        p = pymod("stats")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout.decode(), r"(?m)^hits +\d+$")


class TestExamples(unittest.TestCase):
    def test_fleet_compile(self):
        """examples/python/fleet_compile.py: 6 processes, one NVRTC compile
        (no GPU here: it fetches and says why it does not launch)."""
        before = stat("compiles")
        p = subprocess.run([sys.executable, os.path.join(TOP, "examples", "python", "fleet_compile.py"),
                            "--target", "sm_90", "--procs", "6"], capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = p.stdout.decode()
        self.assertRegex(out, r"(?m)^  1 processes: compiled ")
        self.assertIn("one key for all: True", out)
        self.assertRegex(out, r"(?m)^saxpy for sm_90: hit ")
        self.assertRegex(out, r"(?m)^(not launched: |saxpy on the GPU: max error)")
        self.assertEqual(stat("compiles"), before + 1)


class TestInstall(unittest.TestCase):
    def test_make_install_python(self):
        """make install-python (part of make install) copies the package
        and records PREFIX's library, which the installed package loads."""
        root, pfx = os.path.join(TMP, "root"), os.path.join(TMP, "pfx")
        env = {k: v for k, v in os.environ.items()
               if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "KJIT_LIBRARY")}
        make = ["make", "-s", "-C", TOP, f"DESTDIR={root}", "PYTHONDIR=/site", f"PREFIX={pfx}"]
        p = subprocess.run(make + ["install-python"], capture_output=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        site = os.path.join(root, "site")
        src = os.path.join(TOP, "python", "kjit")
        for f in sorted(os.listdir(src)):
            if f.endswith(".py"):
                with open(os.path.join(src, f), "rb") as a, \
                        open(os.path.join(site, "kjit", f), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f)
        os.makedirs(os.path.join(pfx, "lib"))
        lib = os.path.join(pfx, "lib", "libkjit.so.0")
        with open(os.environ["KJIT_LIBRARY"], "rb") as a, open(lib, "wb") as b:
            b.write(a.read())
        env["PYTHONPATH"] = site
        q = subprocess.run([sys.executable, "-c", "import kjit; print(kjit.__file__); "
                            "print(kjit.library_path()); kjit.ping(); "
                            "print(kjit.default_client().hit_path, kjit._lib.extension().__file__)"],
                           capture_output=True, env=env, timeout=60, cwd=TMP)
        self.assertEqual(q.returncode, 0, q.stderr)
        ext = [f for f in os.listdir(os.path.join(site, "kjit")) if f.startswith("_hit.") and f.endswith(".so")]
        self.assertEqual(len(ext), 1, ext)  # the C extension, installed beside the modules
        self.assertEqual(q.stdout.decode().split(),
                         [os.path.join(site, "kjit", "__init__.py"), lib,
                          "extension", os.path.join(site, "kjit", ext[0])])
        p = subprocess.run(make + ["uninstall-python"], capture_output=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(site, "kjit")))


FAKE_LAUNCH = """
import array, ctypes, math, random, sys
import kjit
which = sys.argv[1]
if which == "cuda":
    import kjit.cuda as drv
    target = drv.arch()
    assert target == "sm_90", target
else:
    import kjit.hip as drv
    target = "gfx90a"
fake = ctypes.CDLL("libcuda.so.1")  # the fake of tests/python/fakegpu.c
fake.fake_last.restype = ctypes.c_uint
rows, cols, eps = 3, 1000, 1e-6
obj = kjit.get_kernel("rms_norm_f32", backend=which, target=target)
mod = drv.load(obj)
fn = mod.function("rms_norm_f32", "PPPiif")
x = array.array("f", (random.uniform(-2, 2) for _ in range(rows * cols)))
w = array.array("f", (random.uniform(-2, 2) for _ in range(cols)))
ref = []
for r in range(rows):
    row = x[r * cols:(r + 1) * cols]
    inv = 1 / math.sqrt(sum(v * v for v in row) / cols + eps)
    ref += [row[i] * inv * w[i] for i in range(cols)]
with drv.DeviceBuffer.from_bytes(x.tobytes()) as dx, drv.DeviceBuffer.from_bytes(w.tobytes()) as dw, \\
        drv.DeviceBuffer(rows * cols * 4) as dy:
    fn.launch((rows, 1), 256, [dx, dw, dy, rows, cols, eps], stream=0xABC)
    drv.synchronize()
    y = array.array("f", dy.to_bytes())
    print("err", max(abs(a - b) for a, b in zip(y, ref)))
    print("geometry", *[fake.fake_last(i) for i in range(8)])
    bare = mod.function("rms_norm_f32")  # ctypes values, no signature
    bare.launch(2, (256,), [dx, dw, ctypes.c_void_p(dy.ptr), ctypes.c_int32(rows), ctypes.c_int32(cols),
                            ctypes.c_float(eps)], shared=64)
    print("geometry", *[fake.fake_last(i) for i in range(8)])
for bad in (lambda: drv.load(b"not an object"), lambda: mod.function("nope")):
    try:
        bad()
    except drv.DriverError as e:
        print("error", e.name)
mod.unload()
"""


class TestLaunchFakeDriver(unittest.TestCase):
    """kjit.cuda and kjit.hip end to end against tests/python/fakegpu.c: a
    libcuda / libamdhip64 whose device memory is host memory and whose one
    kernel, rms_norm_f32, runs on the CPU."""

    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(TMP, "fakegpu")
        os.makedirs(cls.dir, exist_ok=True)
        lib = os.path.join(cls.dir, "libcuda.so.1")
        p = subprocess.run(["cc", "-std=c11", "-O1", "-shared", "-fPIC", "-Wall", "-Wextra",
                            "-Werror", "-Wno-unused-parameter", "-o", lib,
                            os.path.join(TOP, "tests", "python", "fakegpu.c"), "-lm"],
                           capture_output=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError("cannot build fakegpu.c: " + p.stderr.decode())
        os.symlink("libcuda.so.1", os.path.join(cls.dir, "libamdhip64.so"))

    def run_fake(self, which):
        env = dict(os.environ, LD_LIBRARY_PATH=self.dir)
        p = subprocess.run([sys.executable, "-c", FAKE_LAUNCH, which], capture_output=True,
                           env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        lines = [ln.split() for ln in p.stdout.decode().splitlines()]
        self.assertEqual(lines[0][0], "err")
        self.assertLess(float(lines[0][1]), 1e-4)
        # grid x y z, block x y z, shared, stream given
        self.assertEqual(lines[1], ["geometry", "3", "1", "1", "256", "1", "1", "0", "1"])
        self.assertEqual(lines[2], ["geometry", "2", "1", "1", "256", "1", "1", "64", "0"])
        self.assertEqual(lines[3:], [["error", "CUDA_ERROR_INVALID_IMAGE"],
                                     ["error", "CUDA_ERROR_NOT_FOUND"]])

    def test_cuda_launch_through_the_driver_api(self):
        self.run_fake("cuda")

    def test_hip_launch_through_the_runtime_api(self):
        self.run_fake("hip")


class TestLaunchModules(unittest.TestCase):
    """kjit.cuda and kjit.hip import without a GPU and fail clearly."""

    def _no_device(self, mod, obj):
        try:
            n = mod.device_count()
        except mod.DriverError as e:
            self.assertTrue(str(e).startswith(("no CUDA driver", "no HIP", "hipInit", "cuInit")),
                            str(e))
            with self.assertRaises(mod.DriverError):
                mod.load(obj)
            return
        self.skipTest(f"{mod.__name__} sees {n} device(s): launches are tested by "
                      "scripts/gpu-python.sh on a GPU machine")

    def test_cuda_without_a_driver(self):
        import kjit.cuda
        self._no_device(kjit.cuda, kjit.get(CUDA_SRC, backend="cuda", target="sm_90"))

    def test_hip_without_a_device(self):
        import kjit.hip
        self._no_device(kjit.hip, kjit.get_kernel("add_f32", backend="hip", target="gfx90a"))

    def test_argument_packing(self):
        from kjit._gpu import dim3, pack_args
        params, keep = pack_args([0x1000, None, 7, -3, 1.5], "PPiIf")
        self.assertEqual([k.value for k in keep], [0x1000, 0, 7, 2**32 - 3, 1.5])
        self.assertEqual(ctypes.c_uint64.from_address(params[0]).value, 0x1000)
        self.assertEqual(ctypes.c_int32.from_address(params[2]).value, 7)
        with self.assertRaises(TypeError):
            pack_args([1], None)  # a bare int has no C type
        with self.assertRaises(ValueError):
            pack_args([1, 2], "P")

        class Tensor:  # what torch.Tensor offers
            def data_ptr(self):
                return 0xABC0
        _, keep = pack_args([Tensor(), ctypes.c_int32(5)], None)
        self.assertEqual([k.value for k in keep], [0xABC0, 5])
        self.assertEqual(dim3((4, 2), "grid"), (4, 2, 1))
        with self.assertRaises(ValueError):
            dim3(0, "grid")


if __name__ == "__main__":
    unittest.main()
