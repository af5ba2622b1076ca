#!/usr/bin/env bash
# Per-size anonymous allocations of a real program under a THP policy,
# against its recording's replay under the same policy (root; x86_64).
#
#   tools/recording/real-vs-replay.sh REC.rec RUNS POLICY -- CMD ARGS...
#
# POLICY is `mthp64` (hugepages-64kB enabled=always) or `thp` (enabled=
# always). The program runs RUNS times with address-space randomisation
# off (setarch -R), as the recorder ran it; each run's allocations are the
# difference of the system-wide counter around it (hugepages-64kB
# anon_fault_alloc, or vmstat thp_fault_alloc): run it on a quiet host.
# The replay's are the simulator's for the recording under the same
# policy. The THP setting is put back on every exit (trap).
set -euo pipefail
rec=$1 runs=$2 policy=$3
shift 3
[ "$1" = -- ] && shift
thp=/sys/kernel/mm/transparent_hugepage
case $policy in
mthp64)
    knob=$thp/hugepages-64kB/enabled
    set_arg=transparent_hugepage.hugepages-64kB.enabled=always
    counter=hugepages-64kB/anon_fault_alloc
    read_count() { cat $thp/hugepages-64kB/stats/anon_fault_alloc; }
    ;;
thp)
    knob=$thp/enabled
    set_arg=transparent_hugepage.enabled=always
    counter=hugepages-2048kB/anon_fault_alloc
    read_count() { awk '$1 == "thp_fault_alloc" { print $2 }' /proc/vmstat; }
    ;;
*)
    echo "policy: mthp64 or thp" >&2
    exit 2
    ;;
esac
old=$(sed 's/.*\[\(.*\)\].*/\1/' "$knob")
trap 'echo "$old" > "$knob"' EXIT
echo always > "$knob"
counts=()
for _ in $(seq "$runs"); do
    a=$(read_count)
    setarch -R "$@" > /dev/null
    b=$(read_count)
    counts+=($((b - a)))
done
echo "$old" > "$knob"
replay=$(foliosim run "$rec" --set "$set_arg" --format json |
    python3 -c "import json, sys; r = json.load(sys.stdin)['reports'][0]
print(r['phases'][0]['counters'].get('$counter', 0))")
echo "real: ${counts[*]}  replay: $replay"
