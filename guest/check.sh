# SPDX-License-Identifier: GPL-2.0
#
# Run in the guest by `make check`: each argument names a section to run,
# printed behind markers that scripts/summarize.py reads.
#
#   kunit              the KUnit results the kernel printed at boot
#   stackmap           ftracetest on our tests ($STACKMAP_TESTS)
#   baseline[-NAME]    ftracetest on the upstream baseline ($BASELINE_TESTS)
#   boot               checks of a boot with the stackmap on the command line
cd /selftests/ftrace || exit 1

for section in "$@"; do
	case $section in
	kunit)
		echo "@@SECTION kunit@@"
		dmesg | sed 's/^\[[ 0-9.]*\] //'
		;;
	stackmap)
		echo "@@SECTION ftracetest stackmap@@"
		./ftracetest -K -l /tmp/logs-stackmap $STACKMAP_TESTS
		;;
	baseline*)
		echo "@@SECTION ftracetest $section@@"
		./ftracetest -K -l /tmp/logs-$section $BASELINE_TESTS
		;;
	boot)
		echo "@@SECTION ftracetest boot@@"
		sh /boot-check.sh
		;;
	esac
	echo "@@END@@"
done
