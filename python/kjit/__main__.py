"""python3 -m kjit COMMAND [OPTIONS]: the kjit command through the Python
package.  It is not a second implementation: it hands its arguments to
libkjit's kjit_cli_main (client/cli.c, the kjit binary's own entry point)
through ctypes, so every subcommand, option, output line, error message and
exit status is the kjit command's (docs/cli.md):

    python3 -m kjit get --kernel add_f32 --backend vulkan -o add.spv
    python3 -m kjit --help

Exit status: 0 success, 1 the request failed, 2 usage error, 3 kjitd
unreachable; every failure prints one line `kjit: <what>; <what to do>` on
stderr.  Only what the interpreter changes is put back first: SIGINT and
SIGPIPE as a C program has them (Ctrl-C stops a long compile, `| head`
ends the command), and `kjit run` is pointed at the drop-ins beside the
loaded library (the kjit binary looks beside itself, which here is
python3).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import List, Optional

from ._lib import LibraryNotFound, lib, library_path


def _dropin_dir() -> None:
    """Sets KJIT_DROPIN_DIR, when unset, to the drop-ins of the loaded
    library's build tree (<build>/dropin) or install (<libdir>/kjit)."""
    if os.environ.get("KJIT_DROPIN_DIR"):
        return
    here = os.path.dirname(os.path.realpath(library_path()))
    for d in (os.path.join(here, "dropin"), os.path.join(here, "kjit")):
        if os.path.isfile(os.path.join(d, "nvrtc", "libnvrtc.so.13")):
            os.environ["KJIT_DROPIN_DIR"] = d
            return


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the kjit command with argv (sys.argv[1:] by default); returns
    its exit status."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        dll = lib()
        _dropin_dir()
    except LibraryNotFound as e:
        print(f"kjit: {e}", file=sys.stderr)
        return 1
    fn = dll.kjit_cli_main
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    args = [b"kjit"] + [os.fsencode(a) for a in argv]
    cargv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return int(fn(len(args), cargv))


if __name__ == "__main__":
    sys.exit(main())
