#!/usr/bin/env bash
# Fuzzes each target of presence-fuzz for a fixed time (README, "Fuzzing and soak").
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]       (default 60 s, every target)
#
# Builds the libFuzzer entry point (PRESENCE_FUZZ=1, coverage + AddressSanitizer, scratch path
# .build-fuzz), seeds one corpus per target from Vectors/, ../shared/spec/examples and
# ../shared/vectors/rfc4475 (plus Vectors/fuzz/<target>/, the regression vectors), and runs each
# target in libFuzzer's fork mode (one child at a time; a crash, timeout or out-of-memory is
# counted and written out, and fuzzing goes on). Prints per target: executions, crashes,
# timeouts, OOMs, coverage, corpus size; the table is also written to .build-fuzz/fuzz/summary.tsv.
# Crash inputs land in .build-fuzz/fuzz/crashes/<target>/, each replayed once here to print what
# failed. Corpora are kept between runs (.build-fuzz/fuzz/corpus/<target>).
#
# Targets: sip framer xml pidf categories msrtc batchsub rlmi pidf-diff simple-filter pres-rules rls-services catpub fault multipart map-pidf
# map-categories map-msrtc gateway list-notify winfo-notify upnp-payload (see Sources/FuzzTargets/FuzzTarget.swift).
# Environment: FUZZ_MAX_LEN (default 16384), FUZZ_RSS_MB (default 2048), FUZZ_NO_BUILD=1 to
# reuse the binary. Run long sessions with `nice -n 19`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

SECONDS_PER_TARGET=${1:-60}
shift || true
ALL=(sip framer xml pidf categories msrtc batchsub rlmi pidf-diff simple-filter pres-rules rls-services catpub fault multipart map-pidf map-categories map-msrtc gateway list-notify winfo-notify upnp-payload)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL[@]}"); fi
MAX_LEN=${FUZZ_MAX_LEN:-16384}
RSS_MB=${FUZZ_RSS_MB:-2048}
SHARED=../shared

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
    PRESENCE_FUZZ=1 swift build --product presence-fuzz --scratch-path .build-fuzz >&2
fi
BIN=$(pwd)/.build-fuzz/debug/presence-fuzz
[ -x "$BIN" ] || { echo "no $BIN" >&2; exit 1; }
WORK=$(pwd)/.build-fuzz/fuzz
mkdir -p "$WORK"
# libFuzzer reports a crash itself: Swift's backtracer, started on the same signal, can hang
# under AddressSanitizer (holding the output pipe open), so it is off.
export SWIFT_BACKTRACE=enable=no

# Seeds, written fresh each run (the corpora libFuzzer grows are kept separately).
seed() {
    local target=$1 dir=$WORK/seeds/$1
    rm -rf "$dir"
    mkdir -p "$dir"
    case $target in
    sip | framer)
        cp Vectors/rfc4475/*.dat "$dir"/ 2>/dev/null || true
        [ -d $SHARED/vectors/rfc4475 ] && for f in $SHARED/vectors/rfc4475/*.dat; do cp "$f" "$dir/shared-$(basename "$f")"; done
        # The gateway seeds without their side byte: whole SIP messages with presence bodies.
        for f in Vectors/fuzz/gateway/*; do tail -c +2 "$f" >"$dir/gw-$(basename "$f")"; done
        ;;
    multipart)
        local ex=$SHARED/spec/examples
        if [ -f "$ex/2.2.2.4.2-200ok-part1-rlmi-poolfqdn.xml" ]; then
            {
                printf -- '--b1\r\nContent-Transfer-Encoding: binary\r\nContent-ID: resourceList\r\nContent-Type: application/rlmi+xml\r\n\r\n'
                cat "$ex/2.2.2.4.2-200ok-part1-rlmi-poolfqdn.xml"
                printf -- '\r\n--b1\r\nContent-Transfer-Encoding: binary\r\nContent-Type: application/msrtc-event-categories+xml\r\n\r\n'
                cat "$ex/2.2.2.4.2-200ok-part2-categories.xml"
                printf -- '\r\n--b1--\r\n'
            } >"$dir/batch-200.multipart"
        fi
        ;;
    pidf-diff | simple-filter | pres-rules | rls-services | list-notify | winfo-notify | upnp-payload)
        cp Vectors/fuzz/$target/* "$dir"/
        if [ "$target" = pidf-diff ] && [ -d $SHARED/spec/ietf-schemas/examples ]; then
            cp $SHARED/spec/ietf-schemas/examples/rfc5262-*.xml "$dir"/
        fi
        ;;
    gateway)
        cp Vectors/fuzz/gateway/* "$dir"/
        # RFC 4475 torture messages from either side.
        for f in Vectors/rfc4475/*.dat; do
            { printf 0; cat "$f"; } >"$dir/0-$(basename "$f")"
            { printf 1; cat "$f"; } >"$dir/1-$(basename "$f")"
        done
        ;;
    *)
        [ -d $SHARED/spec/examples ] && cp $SHARED/spec/examples/*.xml "$dir"/
        for f in Vectors/presence/*/input/*.xml Vectors/presence/*/expected/*.xml; do
            [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | tr / _)"
        done
        ;;
    esac
    [ -d "Vectors/fuzz/$target" ] && cp "Vectors/fuzz/$target"/* "$dir"/ 2>/dev/null || true
    return 0
}

# The last value of a libFuzzer status field ("#123", "crash: 1") in a log.
last_runs() { grep -aoE '^#[0-9]+' "$1" | tail -1 | tr -d '#' || true; }
last_field() { grep -aoE "$2 [0-9]+" "$1" | tail -1 | awk '{print $2}' || true; }

printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' target seconds executions crashes timeouts ooms coverage corpus >"$WORK/summary.tsv"
printf '%-15s %7s %11s %7s %8s %5s %8s %7s\n' target seconds executions crashes timeouts ooms coverage corpus
for target in "${TARGETS[@]}"; do
    seed "$target"
    corpus=$WORK/corpus/$target
    crashes=$WORK/crashes/$target
    mkdir -p "$corpus" "$crashes" "$WORK/logs"
    log=$WORK/logs/$target.log
    # Dictionaries (scripts/fuzz/*.dict): SIP tokens, XML names and namespaces, both for the gateway.
    case $target in
    sip | framer) dict=scripts/fuzz/sip.dict ;;
    gateway | multipart) dict=$WORK/all.dict; cat scripts/fuzz/sip.dict scripts/fuzz/xml.dict >"$dict" ;;
    *) dict=scripts/fuzz/xml.dict ;;
    esac
    before=$(ls "$crashes" | grep -vc '\.txt$' || true)
    start=$(date +%s)
    # Fork mode: the parent merges what the child found into $corpus and restarts it after a
    # crash, timeout or OOM (counted in its status lines), so one finding does not end the run.
    PRESENCE_FUZZ_TARGET=$target "$BIN" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$SECONDS_PER_TARGET" -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb="$RSS_MB" \
        -dict="$dict" -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" "$WORK/seeds/$target" >"$log" 2>&1 || true
    elapsed=$(($(date +%s) - start))
    # Fork mode prints "#N: cov: C ft: F corp: K exec/s E oom/timeout/crash: O/T/X time: S".
    runs=$(last_runs "$log")
    status=$(grep -aoE 'oom/timeout/crash: [0-9]+/[0-9]+/[0-9]+' "$log" | tail -1 | awk '{print $2}')
    IFS=/ read -r ooms timeouts crashcount <<<"${status:-0/0/0}"
    cov=$(last_field "$log" 'cov:')
    corp=$(grep -aoE 'corp: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
    printf '%-15s %7s %11s %7s %8s %5s %8s %7s\n' "$target" "$elapsed" "${runs:-0}" "${crashcount:-0}" "${timeouts:-0}" \
        "${ooms:-0}" "${cov:-?}" "${corp:-?}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$elapsed" "${runs:-0}" "${crashcount:-0}" "${timeouts:-0}" \
        "${ooms:-0}" "${cov:-}" "${corp:-}" >>"$WORK/summary.tsv"
    after=$(ls "$crashes" | grep -vc '\.txt$' || true)
    if [ "$after" -gt "$before" ]; then
        for f in $(ls -t "$crashes" | grep -v '\.txt$' | head -n $((after - before))); do
            PRESENCE_FUZZ_TARGET=$target timeout -s KILL 60 "$BIN" "$crashes/$f" >"$crashes/$f.txt" 2>&1 </dev/null || true
            echo "  new finding $crashes/$f: $(grep -aE 'Fatal error|ERROR: AddressSanitizer' "$crashes/$f.txt" | head -1 | cut -c1-300)"
        done
    fi
done
echo "summary: $WORK/summary.tsv; logs: $WORK/logs/; findings: $WORK/crashes/"
