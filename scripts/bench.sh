#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: one boot runs guest/bench.sh; scripts/bench.py turns its
# figures into a table and build/bench.json.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:?}"

log=$BUILD/bench-console.log
CMD="sh /bench.sh" TIMEOUT=${TIMEOUT:-900} LOG=$log \
	"$ROOT/scripts/qemu-run.sh" > "$BUILD/bench.out" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
	tail -n 30 "$BUILD/bench.out"
	echo "bench: the guest failed (see $log)"
	exit 1
fi
python3 "$ROOT/scripts/bench.py" "$log" "$BUILD/bench.json"
