#!/usr/bin/env bash
# Record six real programs from Debian packages and hold each replay
# against the host and against the real program (root; x86_64; needs
# xz-utils, python3, sqlite3, gcc, zstd and make). Prints, per program,
# the recorder's line, the summary's fault counts, the simulator against
# the host under three policies (recording policy, 64 KiB mTHP, THP
# always) and the real program's per-size allocations over 3 runs
# against the replay's. The numbers in docs/benchmarks.md ("Recordings")
# come from this script.
#
#   tools/recording/programs.sh WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$1
mkdir -p "$work"
cd "$work"
py=$(python3 -c 'import sys; print(sys.executable)')

# Inputs: 100 MB of base64 text, a SQLite script writing a 240 MB
# database, a 10,000-line C file, a small make project.
[ -f big.bin ] || head -c 75M /dev/urandom | base64 > big.bin
cat > sql.sql <<'SQL'
PRAGMA cache_size = -262144;
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 600000)
INSERT INTO t SELECT x, hex(randomblob(16)), randomblob(300) FROM c;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(length(v)) FROM t WHERE k > '8';
SELECT k FROM t ORDER BY k LIMIT 1 OFFSET 300000;
SQL
cat > dict.py <<'PY'
d = {}
for i in range(3_000_000):
    d[i] = str(i)
l = [x * 2 for x in range(5_000_000)]
print(len(d), len(l))
PY
python3 - <<'PY'
import random
random.seed(1)
out = ['#include <stdio.h>', '#include <string.h>']
for i in range(1500):
    out.append(f'''static int f{i}(int *a, int n) {{
  int s = {i};
  for (int j = 0; j < n; j++) {{ s += a[j] * {random.randint(1,99)} ^ (s >> {random.randint(1,7)}); if (s & {random.randint(1,255)}) s -= a[(j + {i}) % n]; }}
  switch (s & 7) {{ case 0: s += {i}; break; case 1: s *= 3; break; case 2: s ^= 0x{random.randint(1,65535):x}; break; default: s--; }}
  return s;
}}''')
out.append('int main(void) { int a[64]; memset(a, 1, sizeof a); long t = 0;')
out += [f'  t += f{i}(a, 64);' for i in range(1500)]
out.append('  printf("%ld\\n", t); return 0; }')
open('big.c', 'w').write('\n'.join(out))
PY
mkdir -p proj
for i in 1 2 3 4 5 6; do
    python3 -c "
import random
random.seed($i)
print('#include <stdio.h>')
for j in range(150):
    print(f'int g${i}_{j}(int x) {{ int s = x; for (int k = 0; k < {random.randint(3,50)}; k++) s = s * {random.randint(2,9)} + k; return s; }}')
" > proj/m$i.c
done
echo 'int main(void){return 0;}' > proj/main.c
printf 'OBJS = m1.o m2.o m3.o m4.o m5.o m6.o main.o\nprog: $(OBJS)\n\tcc -o $@ $(OBJS)\n%%.o: %%.c\n\tcc -O2 -c -o $@ $<\nclean:\n\trm -f *.o prog\n' > proj/Makefile

run() {
    local name=$1
    shift
    echo "== $name: $*"
    rm -rf "$name.rec"
    foliosim record --overhead --out "$name.rec" -- "$@" > /dev/null 2> "$name.err" || {
        cat "$name.err"
        return 1
    }
    foliosim record --summary "$name.rec" | grep -E 'wall time|trace|tasks|page faults|epochs|replay'
    for set in "" transparent_hugepage.hugepages-64kB.enabled=always transparent_hugepage.enabled=always; do
        echo "-- compare ${set:-(recording policy)}"
        foliosim compare "$name.rec" ${set:+--set "$set"} 2>&1 |
            grep -E '^  (minor-faults|major-faults|hugepages-(64|2048)kB/anon_fault_alloc|tlb:tlb_flush) |^(agree|DISAGREE)' || true
    done
    for policy in mthp64 thp; do
        echo "-- real vs replay, $policy"
        "$here/real-vs-replay.sh" "$name.rec" 3 "$policy" -- "$@"
    done
}

run xz xz -9 -k -f -T1 big.bin
run python "$py" dict.py
run sqlite sh -c 'rm -f test.db; exec sqlite3 test.db < sql.sql'
run gcc gcc -O2 -c -o big.o big.c
run zstd zstd -T2 -19 -f -q big.bin -o big.zst
run make sh -c 'cd proj && make clean > /dev/null && make -j2 > /dev/null'
