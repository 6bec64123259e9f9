# Everything that is specific to arm64: the kernel's ARCH, the image the
# build leaves, the QEMU machine and the console the guest talks on, the
# Debian package of QEMU, the Debian architecture of the guest's programs
# and the directory of their libraries, our tests that cannot run there,
# and what the debug kernel's boots add to the command line.
KERNEL_ARCH	:= arm64
KERNEL_IMAGE	:= arch/arm64/boot/Image
KERNEL_CONFIG	:= arch/arm64/kernel.config
QEMU_SYSTEM	:= qemu-system-aarch64
QEMU_PACKAGE	:= qemu-system-arm
QEMU_MACHINE	:= -M virt -cpu max
GUEST_CONSOLE	:= ttyAMA0
GUEST_DEB_ARCH	:= arm64
GUEST_MULTIARCH	:= aarch64-linux-gnu
# The NMI test records stacks from the nmi_handler event, which only x86
# has: arm64's pseudo-NMIs have no tracepoint.
ARCH_NOT_RUN	:= test.d/stackmap/stackmap-nmi.tc
# The debug kernel's boots (DEBUG=1) need nothing more.
DEBUG_APPEND	:=
