#!/usr/bin/env python3
"""dupid.py: a client reusing a request id to get around its uid's byte
budget (tests/e2e/dup-id.sh; not a test itself).

  dupid.py SOCKET S N REUSE

Sends, on one connection, N GETs all with id 5, each a distinct source of S
bytes that the test compiler takes 3 s over ("#pragma kjit_test size"), so
their bytes stay charged while they wait and compile; after 1 s, if REUSE
is 1, N more GETs with id 5 and sources of 4*S bytes, too large for what is
left of the budget (each refused at once); then GET id 6 with a source of
3*S bytes.  Prints "ID CODE" for each reply until id 6's.
"""
import socket
import struct
import sys
import time

GET = 2
F_BACKEND, F_TARGET, F_SOURCE, F_CODE = 1, 2, 5, 11


def field(tag, data):
    return struct.pack("<HI", tag, len(data)) + data


def frame(i, size, ms, salt):
    src = ("#pragma kjit_test size 64 %d\n// %s\n" % (ms, salt)).encode()
    src += b"/" * (size - len(src))
    body = field(F_BACKEND, struct.pack("<I", 1)) + field(F_TARGET, b"gfx90a") + field(F_SOURCE, src)
    return struct.pack("<IHBBI", len(body), GET, 1, 0, i) + body


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        k = s.recv(n - len(buf))
        if not k:
            return None
        buf += k
    return bytes(buf)


def reply(s):
    hdr = recv_exact(s, 12)
    if hdr is None:
        return None, None
    n, i = struct.unpack_from("<I", hdr)[0], struct.unpack_from("<I", hdr, 8)[0]
    body = recv_exact(s, n)
    off, code = 0, None
    while body and off + 6 <= len(body):
        tag, k = struct.unpack_from("<HI", body, off)
        if tag == F_CODE:
            code = struct.unpack_from("<i", body, off + 6)[0]
        off += 6 + k
    return i, code


def main():
    path, size, n, reuse = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
    salt = "%f" % time.time()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"".join(frame(5, size, 3000, "a%d %s" % (k, salt)) for k in range(n)))
    time.sleep(1.0)
    if reuse:
        s.sendall(b"".join(frame(5, 4 * size, 0, "b%d %s" % (k, salt)) for k in range(n)))
    s.sendall(frame(6, 3 * size, 0, "c" + salt))
    while True:
        i, code = reply(s)
        print(i, code, flush=True)
        if i is None or i == 6:
            break
    s.close()


if __name__ == "__main__":
    main()
