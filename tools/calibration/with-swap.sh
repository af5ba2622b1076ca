#!/bin/sh
# Compiles PROGRAM.c (next to this script) and runs it as root with a
# temporary swap file of about MB MiB, under the native engine's host lock;
# the swap file is switched off and removed on any exit.
# Usage: [STATES="a b"] with-swap.sh PROGRAM MB [ARGS...]
# Runs PROGRAM ARGS once, or once per word of $STATES with it appended.
set -eu
prog=$1 mb=$2
shift 2
dir=$(mktemp -d "/var/tmp/foliosim-$prog.XXXXXX")
swap="$dir/swap"
cleanup() { swapoff "$swap" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
cc -O2 -I"$(dirname "$0")" -o "$dir/$prog" "$(dirname "$0")/$prog.c"
dd if=/dev/zero of="$swap" bs=1M count="$mb" status=none
chmod 600 "$swap"
mkswap "$swap" >/dev/null
exec 9>/run/foliosim-native.lock
flock 9
swapon "$swap"
for state in ${STATES:-""}; do
	"$dir/$prog" "$@" $state
done
