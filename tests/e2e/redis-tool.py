#!/usr/bin/env python3
"""redis-tool.py: what tests/e2e/fleet-trust.sh needs that redis-cli lacks.

An attacker's hands on the fleet's Redis (binary-safe GET/SET of values,
KJO1 and KJO2 values built and signed the way docs/remote.md says), a
checker of values, and a fake Redis that answers the handshake and then
trickles or stalls every GET.  Standard library only, but for checking an
AES-256-GMAC signature (what nodes write since issue 35): python3-cryptography
(scripts/deps.sh).  Values built here are signed with HMAC-SHA256 (flags 0),
as nodes before issue 35 wrote them and every node still reads.

  get SOCK KEY OUT                 the value of KEY into OUT (exit 1: none)
  set SOCK KEY FILE                SET KEY to FILE's bytes
  kjo1 OBJ OUT                     a well-formed KJO1 value of OBJ (right digest)
  kjo2 IN OUT [--object F] [--meta M] [--entries a,b] [--key K --secret S]
       [--mac good|none|bad|checksum] [--digest HEX]
                                   IN (a KJO2 value) rebuilt: object, metadata
                                   (\n escapes) or entries replaced, signed
                                   for key K with secret S (checksum: the
                                   unsigned trailer for key K), its digest
                                   HEX instead of the object's
  verify VALUE KEY SECRET [OBJ]    exit 0 if VALUE is KJO2, its MAC verifies
                                   for KEY, and (given OBJ) its object is OBJ
  fake SOCK trickle|silent|huge|slowbulk|extra|array|badsub|errinject|flood
                                   a fake Redis on SOCK until killed: GET
                                   trickles 1 MB, stops mid-reply, announces
                                   900 GB and trickles, sends 3 MiB of
                                   garbage in 1.5 s, answers twice, answers
                                   an array of 2^31 elements; or the
                                   subscription gets a one-element message,
                                   an error with a newline in it, or 600
                                   MiB of a 900 MB message
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading
import time

FLOOD_MIB = 600  # mode flood: what the fake sends on the subscription before it waits

HDR = struct.Struct("<4sIQIIIIII32s")  # 72 bytes


def redis(sock, *args):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(req)
    buf = b""
    while b"\r\n" not in buf:
        buf += s.recv(65536)
    line, rest = buf.split(b"\r\n", 1)
    if line[:1] == b"$":
        n = int(line[1:])
        if n < 0:
            return None
        while len(rest) < n + 2:
            rest += s.recv(1 << 20)
        return rest[:n]
    return line


def secret_of(path):
    b = open(path, "rb").read()
    return b.rstrip(b"\r\n")


def parse2(v):
    magic, flags, size, meta, ents, low, log, rec, mac, dg = HDR.unpack_from(v)
    assert magic == b"KJO2", magic
    p = HDR.size
    parts = {}
    for name, n in (("meta", meta), ("entries", ents), ("lowered", low), ("object", size), ("log", log),
                    ("recipe", rec), ("mac", mac)):
        parts[name] = v[p:p + n]
        p += n
    assert p == len(v)
    parts["digest"] = dg
    return parts


CK_KEY = b"kjit public value checksum key 1"  # the unsigned value's checksum key (public)


def build2(parts, key=None, secret=None, mac="good", digest=None):
    body = HDR.pack(b"KJO2", 0, len(parts["object"]), len(parts["meta"]), len(parts["entries"]),
                    len(parts["lowered"]), len(parts["log"]), len(parts["recipe"]),
                    0 if mac == "none" else 32, digest or hashlib.sha256(parts["object"]).digest())
    body += parts["meta"] + parts["entries"] + parts["lowered"] + parts["object"] + parts["log"] + parts["recipe"]
    if mac == "none":
        return body
    if mac == "bad":
        return body + os.urandom(32)
    k = key.encode()
    if mac == "checksum":  # what a node without a secret writes: "KJC1" | zero IV | GMAC tag, public key
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        iv = bytes(12)
        return body + b"KJC1" + iv + AESGCM(CK_KEY).encrypt(iv, b"", struct.pack("<I", len(k)) + k + body)
    return body + hmac.new(secret, struct.pack("<I", len(k)) + k + body, hashlib.sha256).digest()


GMAC_LABEL = b"kjit fleet value GMAC key v1"


def verify(v, key, secret, obj=None):
    if v[:4] != b"KJO2" or len(v) < HDR.size + 28:
        return False
    flags = struct.unpack_from("<I", v, 4)[0]
    parts = parse2(v)
    k = key.encode()
    signed = struct.pack("<I", len(k)) + k + v[:-len(parts["mac"])] if parts["mac"] else None
    if signed is None:
        return False
    if flags == 1 and len(parts["mac"]) == 28:  # AES-256-GMAC: IV(12) | tag(16)
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        aes_key = hmac.new(secret, struct.pack("<I", 0) + GMAC_LABEL, hashlib.sha256).digest()
        want = AESGCM(aes_key).encrypt(parts["mac"][:12], b"", signed)  # no text: the tag alone
        ok = hmac.compare_digest(want, parts["mac"][12:])
    elif flags == 0 and len(parts["mac"]) == 32:  # HMAC-SHA256, before issue 35
        ok = hmac.compare_digest(hmac.new(secret, signed, hashlib.sha256).digest(), parts["mac"])
    else:
        return False
    return ok and (obj is None or parts["object"] == obj)


# ---- the fake Redis ----

def fake_client(c, mode):
    buf = b""
    try:
        while True:
            while True:
                cmd, buf = take_command(buf)
                if cmd is None:
                    break
                name = cmd[0].upper()
                if name == b"PING":
                    c.sendall(b"+PONG\r\n")
                elif name == b"SUBSCRIBE":
                    ch = cmd[1]
                    c.sendall(b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(ch), ch))
                    if mode == "badsub":  # a message hiredis 0.14 asserts on (fewer than 2 elements)
                        time.sleep(0.5)
                        c.sendall(b"*1\r\n$7\r\nmessage\r\n")
                    if mode == "errinject":  # an error whose text would be a log line of its own
                        time.sleep(0.3)
                        c.sendall(b"-ERR evil\n2026-01-01T00:00:00 kjitd[1]: INJECTED\r\n")
                    if mode == "flood":  # a bulk nobody asked for, streamed on the idle subscription
                        c.sendall(b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$900000000\r\n" % (len(ch), ch))
                        chunk = b"x" * (1 << 20)
                        for _ in range(FLOOD_MIB):
                            c.sendall(chunk)
                elif name == b"GET" and mode == "extra":
                    c.sendall(b"$-1\r\n+OK\r\n")  # a miss, then a reply to nothing
                elif name == b"GET" and mode == "array":
                    c.sendall(b"*2147483647\r\n" + b":1\r\n" * 100000)  # an array nobody can GET
                elif name == b"GET" and mode == "slowbulk":
                    c.sendall(b"$3145728\r\n")  # 3 MiB of garbage over about 1.5 s, then its end
                    for _ in range(24):
                        time.sleep(0.0625)
                        c.sendall(b"x" * 131072)
                    c.sendall(b"\r\n")
                elif name == b"GET":
                    if mode in ("trickle", "huge"):
                        c.sendall(b"$1000000\r\n" if mode == "trickle" else b"$900000000000\r\n")
                        while True:  # one byte every 100 ms, until the client gives up
                            time.sleep(0.1)
                            c.sendall(b"K")
                    c.sendall(b"$1000\r\nKJO2\0\0")  # silent: stops mid-reply
                    while c.recv(65536):
                        pass
                    return
                elif name in (b"EVAL", b"EVALSHA", b"PEXPIRE", b"PUBLISH", b"DEL"):
                    c.sendall(b":0\r\n")
                else:  # SET (a lease: ours), AUTH, SELECT
                    c.sendall(b"+OK\r\n")
            data = c.recv(65536)
            if not data:
                return
            buf += data
    except OSError:
        return
    finally:
        c.close()


def take_command(buf):
    """One RESP array of bulk strings from buf: (args, rest) or (None, buf)."""
    if not buf.startswith(b"*") or b"\r\n" not in buf:
        return None, buf
    line, rest = buf.split(b"\r\n", 1)
    args = []
    for _ in range(int(line[1:])):
        if b"\r\n" not in rest:
            return None, buf
        l, rest2 = rest.split(b"\r\n", 1)
        n = int(l[1:])
        if len(rest2) < n + 2:
            return None, buf
        args.append(rest2[:n])
        rest = rest2[n + 2:]
    return args, rest


def fake(sock, mode):
    s = socket.socket(socket.AF_UNIX)
    s.bind(sock)
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=fake_client, args=(c, mode), daemon=True).start()


def main(a):
    if a[0] == "get":
        v = redis(a[1], "GET", a[2])
        if v is None:
            return 1
        open(a[3], "wb").write(v)
    elif a[0] == "set":
        return 0 if redis(a[1], "SET", a[2], open(a[3], "rb").read()) == b"+OK" else 1
    elif a[0] == "kjo1":
        obj = open(a[1], "rb").read()
        v = b"KJO1" + struct.pack("<QII", len(obj), 0, 0) + hashlib.sha256(obj).digest() + obj
        open(a[2], "wb").write(v)
    elif a[0] == "kjo2":
        parts = parse2(open(a[1], "rb").read())
        opts = dict(zip(a[3::2], a[4::2]))
        if "--object" in opts:
            parts["object"] = open(opts["--object"], "rb").read()
        if "--meta" in opts:  # backslash escapes (\n) decoded
            parts["meta"] = opts["--meta"].encode().decode("unicode_escape").encode()
        if "--entries" in opts:
            parts["entries"] = b"".join(e.encode() + b"\0" for e in opts["--entries"].split(",") if e)
        sec = secret_of(opts["--secret"]) if "--secret" in opts else None
        dg = bytes.fromhex(opts["--digest"]) if "--digest" in opts else None
        open(a[2], "wb").write(build2(parts, opts.get("--key"), sec, opts.get("--mac", "good"), dg))
    elif a[0] == "verify":
        obj = open(a[4], "rb").read() if len(a) > 4 else None
        return 0 if verify(open(a[1], "rb").read(), a[2], secret_of(a[3]), obj) else 1
    elif a[0] == "fake":
        fake(a[1], a[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
