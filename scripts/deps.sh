#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what building, booting and testing the kernel needs.  Idempotent:
# when everything is present it only checks and returns.
set -euo pipefail

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

BACKPORTS=/etc/apt/sources.list.d/bookworm-backports.sources
: "${LLVM_SUFFIX:?}" "${QEMU_SYSTEM:?}" "${QEMU_PACKAGE:?}"
PACKAGES="clang$LLVM_SUFFIX lld$LLVM_SUFFIX llvm$LLVM_SUFFIX libclang$LLVM_SUFFIX-dev
	  flex bison bc libelf-dev libssl-dev cpio busybox-static gawk gcc libc6-dev
	  make python3 xz-utils zstd git rsync ca-certificates perl python3-ply
	  python3-git"
# The oldest bindgen the kernel takes, and the one installed when it has
# none as new: a fixed version, so that every machine generates the same
# bindings.
MIN_BINDGEN=0.71.1
BINDGEN=0.73.2

# The Rust toolchain comes from rustup, which this script does not install.
if ! command -v rustup >/dev/null || ! command -v cargo >/dev/null; then
	echo "deps: rustup and cargo are needed (https://rustup.rs);" \
		"Debian 12's rustc is older than the kernel's minimum" >&2
	exit 1
fi

# CONFIG_RUST_INLINE_HELPERS links the C helpers, built by clang, into the
# Rust code as LLVM bitcode: both must be of one LLVM major version.
rust_llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
if [ "-$rust_llvm" != "$LLVM_SUFFIX" ]; then
	echo "deps: rustc is built on LLVM $rust_llvm but clang$LLVM_SUFFIX was asked" \
		"for: pick a rustc built on LLVM ${LLVM_SUFFIX#-} (rustup default)," \
		"or set LLVM_SUFFIX=-$rust_llvm" >&2
	exit 1
fi

missing=
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null ||
		missing="$missing $p"
done

# QEMU 7.2 (bookworm) crashes SMP guests under multi-threaded TCG when the
# kernel patches its own text; bookworm-backports carries 10.0.
qemu_ok() {
	command -v "$QEMU_SYSTEM" >/dev/null &&
		"$QEMU_SYSTEM" --version | head -1 |
		awk '{ split($4, v, "."); exit !(v[1] >= 8) }'
}

if [ -n "$missing" ] || ! qemu_ok; then
	if [ ! -e "$BACKPORTS" ]; then
		$SUDO tee "$BACKPORTS" >/dev/null <<'EOS'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
	fi
	$SUDO apt-get update -qq
	# Debian 12 carries clang-22 only in bookworm-security, which an
	# installed system lists but a bare debootstrap does not.
	for p in $missing; do
		apt-cache policy "$p" 2>/dev/null |
			grep 'Candidate: [^(]' >/dev/null && continue
		echo "deps: no package $p in the apt sources" \
			"(Debian 12 has clang-22 and its kin in bookworm-security)" >&2
		exit 1
	done
	# An install cut short leaves packages unconfigured, and apt refuses
	# to install more until they are.
	$SUDO dpkg --configure -a
	if [ -n "$missing" ]; then
		echo "deps: installing$missing"
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $missing
	fi
	if ! qemu_ok; then
		echo "deps: installing $QEMU_PACKAGE from bookworm-backports"
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends -t bookworm-backports \
			"$QEMU_PACKAGE"
	fi
fi

# rust-src for the kernel build, rustfmt and clippy for scripts/lint.sh.
for component in rust-src rustfmt clippy; do
	rustup component list --installed 2>/dev/null | grep "^$component" >/dev/null ||
		rustup component add "$component"
done

# Miri runs the host tests: a pinned nightly, so that every machine checks
# with the same one.
if ! cargo "+${MIRI_TOOLCHAIN:?}" miri --version >/dev/null 2>&1; then
	echo "deps: installing $MIRI_TOOLCHAIN with Miri"
	rustup toolchain install "$MIRI_TOOLCHAIN" --profile minimal \
		--component miri,rust-src
	cargo "+$MIRI_TOOLCHAIN" miri setup
fi

version_ge() {
	[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]
}

bindgen_version=$(bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ -z "$bindgen_version" ] || ! version_ge "$bindgen_version" "$MIN_BINDGEN"; then
	echo "deps: installing bindgen-cli $BINDGEN"
	cargo install --locked --version "$BINDGEN" bindgen-cli
fi
