# SPDX-License-Identifier: GPL-2.0
#
# Run in the guest by `make check`: each argument names a section to run,
# printed behind markers that scripts/summarize.py reads. Exits 1 if a
# KUnit case failed or skipped, ftracetest failed (unsupported and
# unresolved cases included), a boot check failed or a section is unknown.
#
#   kunit              the KUnit results the kernel printed at boot
#   stackmap           ftracetest on our tests ($STACKMAP_TESTS)
#   baseline[-NAME]    ftracetest on the upstream baseline ($BASELINE_TESTS)
#   boot               checks of a boot with the stackmap on the command line
cd /selftests/ftrace || exit 1

FTRACETEST="./ftracetest -K --fail-unsupported --fail-unresolved"
status=0
for section in "$@"; do
	case $section in
	kunit)
		echo "@@SECTION kunit@@"
		dmesg > /tmp/dmesg || status=1
		sed 's/^\[[ 0-9.]*\] //' /tmp/dmesg
		if grep -q -e '^\[[ 0-9.]*\] *not ok ' \
			-e '^\[[ 0-9.]*\] *ok .* # SKIP' /tmp/dmesg; then
			status=1
		fi
		;;
	stackmap)
		echo "@@SECTION ftracetest stackmap@@"
		$FTRACETEST -l /tmp/logs-stackmap $STACKMAP_TESTS || status=1
		;;
	baseline*)
		echo "@@SECTION ftracetest $section@@"
		$FTRACETEST -l /tmp/logs-$section $BASELINE_TESTS || status=1
		;;
	boot)
		echo "@@SECTION ftracetest boot@@"
		sh /boot-check.sh || status=1
		;;
	*)
		echo "check.sh: unknown section '$section'"
		status=1
		continue
		;;
	esac
	echo "@@END@@"
done
exit $status
