#!/bin/sh
# dropmiss-ab.sh: issue 31's second GPU call, kept as run: from a folder made
# by `sh scripts/gpu-dropin.sh pack DIR` plus kjitd-old (another kjitd build),
# it prints the kernel's speculative-store-bypass policy, then for each kjitd
# (old, new) the workers' Speculation_Store_Bypass state and 5 fresh
# bench-dropmiss processes through the drop-in (sm_90), then the real NVRTC
# in-process with and without the worker's --include-path options.
#   cp bench/dropmiss-ab.sh DIR/ab.sh; sh DIR/ab.sh
set -u
D=$(cd "$(dirname "$0")" && pwd); W=$(mktemp -d)
for f in "$D"/debs/*.deb; do dpkg -x "$f" "$W/libs"; done
export LD_LIBRARY_PATH="$W/libs/usr/lib/x86_64-linux-gnu" KJIT_NO_AUTOSTART=1 KJIT_DROPIN_STATS=$W/ds
getent passwd kjit-worker >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin kjit-worker
grep -H . /sys/devices/system/cpu/vulnerabilities/spec_store_bypass; uname -r
I=$(realpath /usr/local/cuda/include)
for v in old new; do
  export KJIT_SOCKET=$W/$v.sock; bin=$D/kjitd; [ $v = old ] && bin=$D/kjitd-old
  $bin --socket $KJIT_SOCKET --cache-dir $W/c$v --log $W/$v.log --prestart nvrtc; sleep 3
  for p in $(pgrep -f "kjitd-*o*l*d* --worker nvrtc|kjitd --worker nvrtc"); do echo "$v worker $p: $(grep Speculation_Store /proc/$p/status)"; done
  for i in 1 2 3 4 5; do
    LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/bench-dropmiss" -a sm_90 -s "$v$i" | sed "s/^/$v kjit sm_90 /" | cut -c1-140
  done
  "$D/kjit" stop >/dev/null
done
for i in 1 2 3; do
  LD_LIBRARY_PATH="/usr/local/cuda/lib64" "$D/tests/bench-dropmiss" -a sm_90 -s "r$i" | sed "s/^/real sm_90 /" | cut -c1-140
  LD_LIBRARY_PATH="/usr/local/cuda/lib64" "$D/tests/bench-dropmiss" -a sm_90 -s "i$i" -- --include-path=$I --include-path=$I/cccl | sed "s/^/real+worker-includes sm_90 /" | cut -c1-140
done
