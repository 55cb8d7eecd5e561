#!/bin/sh
# The short libFuzzer run (about 30 s) of `make test`: tests/fuzz/run-short.sh.
exec sh "$(dirname "$0")/../fuzz/run-short.sh"
