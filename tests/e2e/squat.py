#!/usr/bin/env python3
"""squat.py: a squatter's listener for tests/e2e/trust.sh.

squat.py SOCKET RECORD: binds SOCKET (mode 0777), writes RECORD.ready, then
for every connection appends one line "conn" to RECORD.conns and every byte
it receives to RECORD; each peer that sends gets garbage back (what a
squatter would answer) and is closed.  Runs until killed.
"""
import os
import socket
import sys

path, record = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(16)
open(record, "ab").close()
open(record + ".conns", "a").close()
open(record + ".ready", "w").close()
while True:
    c, _ = s.accept()
    with open(record + ".conns", "a") as f:
        f.write("conn\n")
    c.settimeout(2.0)
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            with open(record, "ab") as f:
                f.write(d)
            c.sendall(b"\x00garbage, not a kjit reply\x00" * 4)
            break
    except OSError:
        pass
    c.close()
