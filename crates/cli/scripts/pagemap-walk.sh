#!/bin/sh
# Runs pagemap-walk.c (see its header) as root with a temporary swap file,
# under the native engine's host lock; removes the swap file on any exit.
# Usage: sudo crates/cli/scripts/pagemap-walk.sh [pages] [repeats]
set -eu
dir=$(mktemp -d /var/tmp/foliosim-pagemap-walk.XXXXXX)
swap="$dir/swap"
cleanup() { swapoff "$swap" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
cc -O2 -o "$dir/pagemap-walk" "$(dirname "$0")/pagemap-walk.c"
pages=${1:-16384}
mb=$(( pages * 4096 / 1048576 + 64 ))
dd if=/dev/zero of="$swap" bs=1M count="$mb" status=none
chmod 600 "$swap"
mkswap "$swap" >/dev/null
exec 9>/run/foliosim-native.lock
flock 9
swapon "$swap"
for state in 100 50 present swapped; do
	"$dir/pagemap-walk" "$pages" "${2:-9}" $state
done
