#!/bin/sh
# Installs what kjit needs on a fresh Debian 12 machine, and nothing more.
# Called by the Makefile when a dependency is missing; safe to run again
# (apt-get skips what is installed). Needs root, or sudo.
#   scripts/deps.sh         what building and running kjit needs (`make`,
#                           `make run`, `make install`, `make deb`)
#   scripts/deps.sh --test  that and the test tools (`make test`)
# libhiredis-dev (0.14 on Debian 12: async API and the libuv adapter, no TLS)
# is the fleet tier's client, remote/remote.c; redis-server only its tests'.
# glslc (the same shaderc) is what tests/e2e/options.sh compares kjit's SPIR-V
# with; python3-cryptography lets tests/e2e/redis-tool.py check a value's
# AES-256-GMAC signature (fleet-trust.sh); uidmap (newuidmap) lets
# tests/e2e/tenancy.sh connect from a child user namespace mapped to
# subordinate uids, as podman does.  python3-dev has the headers of the Python
# package's C extension (python/kjit/_hit.c), which make builds.
set -eu

# Building and running: compilers of the three backends, the libraries kjitd
# links, and what `make deb` uses (dpkg-dev comes with build-essential).
PKGS="build-essential pkg-config
libuv1-dev libsqlite3-dev libssl-dev libsystemd-dev
hipcc libamdhip64-dev rocm-device-libs rocminfo
libshaderc-dev glslang-dev libvulkan-dev mesa-vulkan-drivers
libhiredis-dev
python3 python3-dev"
# Testing only: the clang build and sanitizers, the suite's tools (sqlite3's
# shell, spirv-val, valgrind, systemd-analyze, groff, hyperfine, a Redis
# server for the fleet tests, python3-venv for pip.sh's venvs when python3 is
# Debian's) and lintian for the package (tests/e2e/deb.sh).
TEST_PKGS="clang libclang-rt-14-dev llvm sqlite3 spirv-tools glslc python3-cryptography python3-venv uidmap
valgrind systemd groff-base hyperfine
redis-server
lintian"
if [ "${1:-}" = --test ]; then
	PKGS="$PKGS $TEST_PKGS"
elif [ $# -gt 0 ]; then
	echo "usage: scripts/deps.sh [--test]" >&2
	exit 2
fi

# NVRTC and nvcc come from NVIDIA's CUDA toolkit, which Debian's main archive
# lacks; kjit finds it in /usr/local/cuda (where NVIDIA's installer puts it and
# where the machines this project runs on carry it).  Say so loudly when absent:
# the CUDA tests then fail rather than pass on nothing.
if ! ls /usr/local/cuda/lib64/libnvrtc.so* >/dev/null 2>&1 || [ ! -x /usr/local/cuda/bin/nvcc ]; then
	echo "deps: no CUDA toolkit in /usr/local/cuda (libnvrtc, bin/nvcc): install NVIDIA's CUDA" \
		"toolkit there; the CUDA tests need it" >&2
fi

# A root kjitd (the system service, or any daemon started as root, as CI
# does) runs its compile workers as this unprivileged user and refuses to
# start without it (docs/reliability.md, "What a compile can touch").
if ! getent passwd kjit-worker >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kjit-worker
	else
		sudo useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kjit-worker
	fi
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
