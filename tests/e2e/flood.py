#!/usr/bin/env python3
"""flood.py: the unread-replies flood of issue 21 item 3, for
tests/e2e/budget.sh and bench/RESULTS.md (not a test itself).

  flood.py SOCKET CONNS REQS SIZE MS READY HOLD
      opens CONNS connections; on each pipelines REQS GETs (backend hip,
      target gfx90a, test compiler) of one source whose object is SIZE
      bytes, compiled after MS milliseconds ("#pragma kjit_test size"),
      the same source on every connection; never reads a byte; writes
      READY once all are sent, keeps the connections open HOLD seconds,
      then closes them.  With READ set to 1 (an eighth argument), it then
      reads every reply instead and writes to READY.out one line per
      outcome ("CODE SIZE COUNT": code, object size, how many replies).
      With DISTINCT set to 1 (a ninth argument), every request asks for an
      object of its own (the source differs by a comment).
"""
import os
import socket
import struct
import sys
import time

GET = 2
F_BACKEND, F_TARGET, F_SOURCE, F_CODE, F_DATA = 1, 2, 5, 11, 13


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        k = s.recv(min(n - len(buf), 1 << 20))
        if not k:
            return None
        buf += k
    return bytes(buf)


def read_reply(s):
    hdr = recv_exact(s, 12)
    if hdr is None:
        return "closed", 0
    n = struct.unpack_from("<I", hdr)[0]
    body = recv_exact(s, n)
    if body is None:
        return "closed", 0
    code, size, off = None, 0, 0
    while off + 6 <= len(body):
        tag, k = struct.unpack_from("<HI", body, off)
        if tag == F_CODE:
            code = struct.unpack_from("<i", body, off + 6)[0]
        elif tag == F_DATA:
            size = k
        off += 6 + k
    return code, size


def field(tag, data):
    return struct.pack("<HI", tag, len(data)) + data


def main():
    path, conns, reqs, size, ms, ready, hold = sys.argv[1:8]
    read = len(sys.argv) > 8 and sys.argv[8] == "1"
    distinct = len(sys.argv) > 9 and sys.argv[9] == "1"
    conns, reqs, hold = int(conns), int(reqs), float(hold)
    def body(i):
        src = "#pragma kjit_test size %d %d\n// flood %d\n" % (int(size), int(ms), os.getpid())
        if distinct:
            src += "// request %d\n" % i
        return field(F_BACKEND, struct.pack("<I", 1)) + field(F_TARGET, b"gfx90a") + field(F_SOURCE, src.encode())
    socks = []
    for k in range(conns):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        if not read:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # read nothing, hold little
        bodies = [body(k * reqs + i) for i in range(reqs)]
        s.sendall(b"".join(struct.pack("<IHBBI", len(b), GET, 1, 0, i + 1) + b for i, b in enumerate(bodies)))
        socks.append(s)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % len(socks))
    os.rename(ready + ".tmp", ready)
    time.sleep(hold)
    if read:
        seen = {}
        for s in socks:
            for _ in range(reqs):
                k = read_reply(s)
                seen[k] = seen.get(k, 0) + 1
                if k[0] == "closed":
                    break
        with open(ready + ".out", "w") as f:
            for (code, size), n in sorted(seen.items(), key=str):
                f.write("%s %d %d\n" % (code, size, n))
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
