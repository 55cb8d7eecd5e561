"""The version of kjit, written here and nowhere else: the Makefile reads it
(kjit --version, kjitd --version, kjit.pc, the Debian package) and so does
the build backend of ``pip install ./python`` (python/_build/backend.py)."""
__version__ = "0.1.0"
