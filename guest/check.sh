# SPDX-License-Identifier: GPL-2.0
#
# Run in the guest by `make check`: print the boot's KUnit results, then
# run ftracetest on our tests and on the upstream baseline, each section
# behind a marker that scripts/summarize.py reads.
cd /selftests/ftrace || exit 1

echo "@@SECTION kunit@@"
dmesg | sed 's/^\[[ 0-9.]*\] //'
echo "@@END@@"

# Our tests first: they must run (UNSUPPORTED counts as a failure).
if [ -n "$STACKMAP_TESTS" ]; then
	echo "@@SECTION ftracetest stackmap@@"
	./ftracetest -K -l /tmp/logs-stackmap $STACKMAP_TESTS
	echo "@@END@@"
fi

echo "@@SECTION ftracetest baseline@@"
./ftracetest -K -l /tmp/logs-baseline $BASELINE_TESTS
echo "@@END@@"
