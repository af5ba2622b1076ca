#!/usr/bin/env bash
# Write the inputs that once took hours or aborted the simulator into DIR
# (the same scenarios as crates/testkit's `big` module generates for the
# workspace's tests); fuzz/run.sh runs them through the targets first.
#   fuzz/regressions.sh DIR
set -euo pipefail
dir=$1
mkdir -p "$dir"
munmap() {
    printf '[system]\nmemory = "2G"\n[[step]]\nop = "mmap"\nregion = "a"\nkind = "anon"\nsize = "%s"\n[[step]]\nop = "munmap"\nregion = "a"\n' "$1"
}
# A 1 EiB mapping (ENOMEM; its munmap past TASK_SIZE) and the largest one
# the model places (96 TiB), each unmapped.
munmap '1T<<20' > "$dir/munmap-1eib.toml"
munmap 105553116200960 > "$dir/munmap-96tib.toml"
# 100,000 [[file]] tables (the name check was quadratic).
{
    printf '[system]\nmemory = "64M"\n'
    seq 0 99999 | awk '{ printf "[[file]]\nname = \"f%d\"\nsize = 4096\nfill = \"cold\"\n", $1 }'
    printf '[[step]]\nop = "mmap"\nregion = "a"\nkind = "file"\nfile = "f99999"\nsize = "4K"\n'
} > "$dir/files-100000.toml"
# 10^6 phases (the memory estimate ignored them; parsing alone needs GBs).
{
    printf '[system]\nmemory = "64M"\n[[step]]\nop = "mmap"\nregion = "a"\nkind = "anon"\nsize = "64K"\n'
    seq 0 999999 | awk '{ printf "[[step]]\nop = \"phase\"\nname = \"p%d\"\n", $1 }'
} > "$dir/phases-1000000.toml"
