#!/bin/sh
# Runs mincore-shmem.c (see its header) as root with a temporary swap file
# (with-swap.sh).
# Usage: sudo tools/calibration/mincore-shmem.sh [pages] [repeats]
set -eu
pages=${1:-16384}
exec "$(dirname "$0")/with-swap.sh" mincore-shmem $(( pages * 4096 / 1048576 + 64 )) "$pages" "${2:-9}"
