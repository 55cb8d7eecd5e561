#!/bin/sh
# The short stress run of `make test`: 8 clients x 100 requests (under 20 s);
# `make stress` runs 64 x 1000 (tests/stress/run-stress.sh).
STRESS_CLIENTS=${STRESS_CLIENTS_SHORT:-8} STRESS_REQUESTS=${STRESS_REQUESTS_SHORT:-100} \
	exec sh "$(dirname "$0")/../stress/run-stress.sh"
