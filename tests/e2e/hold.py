#!/usr/bin/env python3
"""hold.py: raw clients for tests/e2e/harden-daemon.sh (not a test itself).

  hold.py silent SOCKET N SECONDS READY
      opens N connections that send nothing, writes to READY how many were
      accepted and how many were refused (a REPLY with an error, or closed),
      and the first refusal's text; keeps them open SECONDS.
  hold.py flood SOCKET N MIB OUT
      N clients at once each send one GET of a distinct MIB-MiB HIP source
      (test compiler) and read the reply; writes to OUT one line per code
      ("CODE COUNT") and the first error text of each code.
  hold.py closed-after SOCKET SECONDS
      one silent connection; prints "closed" if kjitd closes it within
      SECONDS, else "open".
  hold.py reaper KJITD ARGS...
      runs KJITD ARGS as a child subreaper (orphans come to us, unreaped),
      waits for it to exit, then prints the pids of its descendants left as
      zombies ("none" if there are none).
"""
import ctypes
import os
import socket
import struct
import sys
import threading
import time

REPLY = 0x80
GET = 2
F_BACKEND, F_TARGET, F_SOURCE, F_CODE, F_ERROR = 1, 2, 5, 11, 16


def field(tag, data):
    return struct.pack("<HI", tag, len(data)) + data


def parse_reply(body):
    code, err, off = None, "", 0
    while off + 6 <= len(body):
        tag, n = struct.unpack_from("<HI", body, off)
        val = body[off + 6:off + 6 + n]
        off += 6 + n
        if tag == F_CODE:
            code = struct.unpack("<i", val)[0]
        elif tag == F_ERROR:
            err = val.decode(errors="replace")
    return code, err


def read_frame(s):
    buf = b""
    while len(buf) < 12:
        k = s.recv(12 - len(buf))
        if not k:
            return None
        buf += k
    n, typ, _ver, _fl, rid = struct.unpack("<IHBBI", buf)
    body = b""
    while len(body) < n:
        k = s.recv(n - len(body))
        if not k:
            return None
        body += k
    return typ, rid, body


def silent(path, n, seconds, ready):
    socks, refused, first = [], 0, ""
    for _ in range(n):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as e:  # our own descriptor limit
            print("hold.py: stopped at %d connections: %s" % (len(socks), e), file=sys.stderr)
            break
        try:
            s.connect(path)
        except OSError as e:
            refused += 1
            first = first or str(e)
            s.close()
            continue
        socks.append(s)
    # A refused connection gets one REPLY (id 0) and is closed at once.
    time.sleep(0.5)
    kept = []
    for s in socks:
        s.setblocking(False)
        try:
            k = s.recv(65536)
        except BlockingIOError:
            kept.append(s)
            continue
        except OSError:
            k = b""
        refused += 1
        if k and len(k) >= 12 and not first:
            first = parse_reply(k[12:])[1]
        s.close()
    with open(ready + ".tmp", "w") as f:
        f.write("%d %d\n%s\n" % (len(kept), refused, first))
    os.rename(ready + ".tmp", ready)
    time.sleep(seconds)


def flood(path, n, mib, out):
    filler = memoryview(b"a" * ((mib << 20) - 64))
    results, lock = {}, threading.Lock()
    start = threading.Barrier(n)

    def one(i):
        prefix = ("// flood %d %d\n" % (os.getpid(), i)).encode()
        src_len = len(prefix) + len(filler)
        head = field(F_BACKEND, struct.pack("<I", 1)) + field(F_TARGET, b"gfx90a")
        body_len = len(head) + 6 + src_len
        hdr = struct.pack("<IHBBI", body_len, GET, 1, 0, 1)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        code, err = "connect", ""
        try:
            s.connect(path)
            start.wait(30)
            s.sendall(hdr + head + struct.pack("<HI", F_SOURCE, src_len) + prefix)
            s.sendall(filler)
            fr = read_frame(s)
            if fr is None:
                code = "closed"
            else:
                code, err = parse_reply(fr[2])
        except (OSError, threading.BrokenBarrierError) as e:
            # The daemon may answer busy and close before all is sent.
            try:
                fr = read_frame(s)
                code, err = parse_reply(fr[2]) if fr else ("closed", str(e))
            except OSError:
                code, err = "error", str(e)
        s.close()
        kind = "%s %s" % (code, "".join(ch for ch in err if not ch.isdigit())[:40])
        with lock:
            c, e = results.get(kind, (0, err))
            results[kind] = (c + 1, e or err)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(out, "w") as f:
        for kind, (c, e) in sorted(results.items()):
            f.write("%s %d %s\n" % (kind.split(" ")[0], c, e))


def closed_after(path, seconds):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(seconds)
    try:
        print("closed" if s.recv(1) == b"" else "data")
    except socket.timeout:
        print("open")
    except OSError:
        print("closed")


def reaper(argv):
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become a subreaper")
        sys.exit(2)
    pid = os.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    os.waitpid(pid, 0)
    time.sleep(0.5)
    me, zombies = os.getpid(), []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        rest = st[st.rfind(")") + 2:].split()
        if rest[0] == "Z" and int(rest[1]) == me:
            zombies.append(p + st[st.find("("):st.rfind(")") + 1])
    for z in zombies:  # reap them now, so nothing outlives the test
        try:
            os.waitpid(int(z.split("(")[0]), 0)
        except OSError:
            pass
    print(" ".join(zombies) if zombies else "none")


def main():
    cmd = sys.argv[1]
    if cmd == "silent":
        silent(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    elif cmd == "flood":
        flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif cmd == "closed-after":
        closed_after(sys.argv[2], float(sys.argv[3]))
    elif cmd == "reaper":
        reaper(sys.argv[2:])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
