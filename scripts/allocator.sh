# Sourced by scripts/run.sh and scripts/bench/gateway-sipp.py: run the gateway on jemalloc
# (Debian's libjemalloc2, installed by scripts/setup.sh) instead of glibc's malloc.
#
# Why: a burst of subscription setups leaves each answered UDP transaction alive for 32 s (RFC 3261
# Timer J) between the long-lived subscription state, and glibc keeps the holes they leave (4.2 KB
# resident per bridged pair after 100,000 setups at 1,000/s, against 2.7 KB with jemalloc:
# scripts/bench/gateway-sipp.sh). One arena (the gateway works on one event loop), and freed pages
# given back within about a second, by jemalloc's background thread. A MALLOC_CONF already set wins.
# awk reads to the end: leaving early would end ldconfig with SIGPIPE, which pipefail makes fatal.
jemalloc=$(ldconfig -p | awk '/libjemalloc\.so\.2 / && !found { found = $NF } END { print found }')
if [ -n "$jemalloc" ]; then
  export LD_PRELOAD="$jemalloc"
  export MALLOC_CONF="${MALLOC_CONF:-background_thread:true,narenas:1,dirty_decay_ms:1000}"
fi
unset jemalloc
