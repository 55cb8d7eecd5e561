"""The Python package holds no second copy of what include/kjit.h and
libkjit define: it asks libkjit for the names of the KJIT_E* codes, and its
backend and status tables say what libkjit says.

Needs only libkjit (KJIT_LIBRARY, PYTHONPATH=python); tests/e2e/python.sh
runs it with the rest of tests/python/:
    PYTHONPATH=python KJIT_LIBRARY=build/libkjit.so python3 -m unittest tests/python/test_lists.py
"""
import os
import re
import unittest

import kjit
from kjit import _lib, errors

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def header_codes():
    """{value: name} of enum kjit_error in include/kjit.h, KJIT_OK left out."""
    with open(os.path.join(TOP, "include", "kjit.h"), encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"enum kjit_error \{(.*?)\};", text, re.S).group(1)
    pairs = re.findall(r"\b(KJIT_\w+)\s*=\s*(-?\d+)", body)
    return {int(v): n for n, v in pairs if int(v) != 0}


class TestOneSource(unittest.TestCase):
    def test_code_names_are_the_headers(self):
        want = header_codes()
        self.assertGreaterEqual(len(want), 20)
        self.assertEqual(errors.codes(), want)
        self.assertEqual(errors.code_name(-6), "KJIT_ECOMPILE")
        self.assertEqual(errors.code_name(min(want) - 1), "")
        self.assertEqual(errors.code_name(None), "")

    def test_error_classes_name_real_codes(self):
        names = set(header_codes().values())
        for name, cls in errors._CLASS.items():
            self.assertIn(name, names, f"errors._CLASS names {name}, which include/kjit.h does not define")
            code = next(v for v, n in header_codes().items() if n == name)
            e = errors.error_for(code, "m")
            self.assertIs(type(e), cls)
            self.assertEqual(e.code_name, name)
        self.assertIs(type(errors.error_for(-2, "m")), kjit.Error)

    def test_no_second_table_of_codes(self):
        """A table of codes by number written into the package again (the
        copy this replaced) fails here."""
        pkg = os.path.join(TOP, "python", "kjit")
        pat = re.compile(r"-\d+\s*:\s*[\"']KJIT_E|[\"']KJIT_E\w+[\"']\s*:\s*-\d+|KJIT_E\w+\s*=\s*-\d+")
        for f in sorted(os.listdir(pkg)):
            if f.endswith(".py"):
                with open(os.path.join(pkg, f), encoding="utf-8") as fh:
                    m = pat.search(fh.read())
                self.assertIsNone(m, f"python/kjit/{f} spells a KJIT_E* code's value: {m and m.group(0)!r}; "
                                  "ask libkjit (kjit.errors.code_name) instead")

    def test_backends_and_statuses_are_libkjits(self):
        lib = _lib.lib()
        backends = {}
        for v in range(1, 64):
            name = lib.kjit_backend_name(v)
            if name:
                backends[name.decode()] = v
        self.assertEqual(kjit.BACKENDS, backends)
        for name, v in backends.items():
            self.assertEqual(lib.kjit_backend_from_name(name.encode()), v)
        statuses = {}
        for v in range(1, 64):
            name = lib.kjit_status_name(v).decode()
            if name != "none":
                statuses[v] = name
        self.assertEqual(kjit.STATUSES, statuses)


if __name__ == "__main__":
    unittest.main()
