# SPDX-License-Identifier: GPL-2.0
#
# A private apt state: Debian's archive read with lists, cache and status
# of its own, so that the system's apt sources are never touched.
#
# Sourced. apt_state DIR ARCH SUITE... writes DIR's sources (main of each
# SUITE), sets APT_OPTS to the options that make apt-get and apt-cache use
# DIR for ARCH's packages alone, and refreshes DIR's lists at most once a
# day, or when the sources changed (DIR/updated keeps the sources of the
# last refresh).

MIRROR=http://deb.debian.org/debian

apt_state() { # dir arch suite...
	local dir=$1 arch=$2 suite
	shift 2
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	for suite; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $suite main"
	done > "$dir/sources.list"
	[ -f "$dir/status" ] || : > "$dir/status"
	APT_OPTS=(
		-o "Dir::Etc::sourcelist=$dir/sources.list"
		-o "Dir::Etc::sourceparts=-"
		-o "Dir::State::Lists=$dir/lists"
		-o "Dir::State::status=$dir/status"
		-o "Dir::Cache=$dir"
		-o "Dir::Cache::Archives=$dir/archives"
		-o "APT::Architecture=$arch"
		-o "APT::Architectures::=$arch"
		-o "Acquire::Languages=none"
		-o "Debug::NoLocking=1"
		-o "APT::Sandbox::User=root"
	)
	if [ -z "$(find "$dir/updated" -mmin -1440 2>/dev/null)" ] ||
	   ! cmp -s "$dir/sources.list" "$dir/updated"; then
		apt-get "${APT_OPTS[@]}" -qq update
		cp "$dir/sources.list" "$dir/updated"
	fi
}
