#!/bin/sh
# Runs pagemap-walk.c (see its header) as root with a temporary swap file
# (with-swap.sh), once per region state.
# Usage: sudo tools/calibration/pagemap-walk.sh [pages] [repeats]
set -eu
pages=${1:-16384}
STATES="100 50 present swapped" exec "$(dirname "$0")/with-swap.sh" pagemap-walk \
	$(( pages * 4096 / 1048576 + 64 )) "$pages" "${2:-9}"
