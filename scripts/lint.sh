#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The style checks of `make check`, as TAP: the kernel's rustfmtcheck over
# the tree the project is installed in, and rustfmt and clippy (warnings
# denied) on the host crate.  Clippy on the kernel build is left to `make
# ... CLIPPY=1` (README.md): it rebuilds the kernel crate, and the next
# build would rebuild it again.
#
# Usage: lint.sh (with BUILD, TREE, OBJ and LLVM_SUFFIX from the Makefile)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${TREE:?}" "${OBJ:?}" "${LLVM_SUFFIX:?}" "${BUILD:?}"
HOST=$ROOT/host/Cargo.toml

n=0
failed=0
# Runs a check and prints its result; its output, on failure only, as
# TAP diagnostics.
lint() { # name command...
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n $name"
	else
		echo "not ok $n $name"
		printf '%s\n' "$out" | tail -n 40 | sed 's/^/# /'
		failed=$((failed + 1))
	fi
}

echo "1..3"
lint "rustfmtcheck: the kernel's Rust, the stackmap's included" \
	make -s -C "$TREE" O="$OBJ" LLVM="$LLVM_SUFFIX" rustfmtcheck
lint "host crate: cargo fmt --check" \
	cargo fmt --check --manifest-path "$HOST" -- --color never
lint "host crate: cargo clippy --all-targets, warnings denied" \
	env CARGO_TARGET_DIR="$BUILD/cargo" \
	cargo clippy --color never --release --locked --all-targets --manifest-path "$HOST" \
	-- -D warnings
[ "$failed" -eq 0 ]
