# Everything that is specific to x86_64: the kernel's ARCH, the image the
# build leaves, the QEMU machine and the console the guest talks on, the
# Debian package of QEMU, the Debian architecture of the guest's programs
# and the directory of their libraries, and what every boot and the debug
# kernel's boots add to the command line.
KERNEL_ARCH	:= x86_64
KERNEL_IMAGE	:= arch/x86/boot/bzImage
KERNEL_CONFIG	:= arch/x86_64/kernel.config
QEMU_SYSTEM	:= qemu-system-x86_64
QEMU_PACKAGE	:= qemu-system-x86
QEMU_MACHINE	:= -M pc -cpu max
GUEST_CONSOLE	:= ttyS0
GUEST_DEB_ARCH	:= amd64
GUEST_MULTIARCH	:= x86_64-linux-gnu
# Every boot: with the IO-APIC set up, the kernel checks that the timer
# interrupt comes through by waiting a few milliseconds for jiffies to
# move, and panics if they did not ("IO-APIC + timer doesn't work!"). A
# vCPU that its busy host leaves too little time in that window fails
# the check: a debug kernel's boot under multi-threaded TCG, beside three
# other boots, did. QEMU's IO-APIC delivers the timer; no_timer_check
# skips the check, as virtual machines commonly do.
BOOT_APPEND	:= no_timer_check

# The debug kernel's boots (DEBUG=1). The tracers' startup tests run while
# the kernel still keeps time by jiffies. The clocksource watchdog's skew
# check (new in 7.2) times out by that clock, which stops while the check
# spins with interrupts off waiting for the other CPU, and boots of a busy
# host have hung there for good (see README.md). Only the TSC asks for the
# watchdog on x86, and nothing in the guest needs it to.
#
# And 4-level paging. identify_cpu() clears the boot CPU's feature bits
# while it reads them again, and until the alternatives are patched,
# pgtable_l5_enabled() reads those bits. An interrupt taken meanwhile on
# a CPU with LA57 (QEMU's -cpu max has it) finds KASAN's bounds set for
# 4-level paging, under which the direct map has no shadow: KASAN
# reported its lock of an irq_desc as a wild access.
DEBUG_APPEND	:= tsc=nowatchdog no5lvl
