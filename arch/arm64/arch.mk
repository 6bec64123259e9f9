# Everything that is specific to arm64: the kernel's ARCH, the image the
# build leaves, the QEMU machine and the console the guest talks on, the
# Debian package of QEMU, the Debian architecture of the guest's programs
# and the directory of their libraries, and what every boot and the
# debug kernel's boots add to the command line.
KERNEL_ARCH	:= arm64
KERNEL_IMAGE	:= arch/arm64/boot/Image
KERNEL_CONFIG	:= arch/arm64/kernel.config
QEMU_SYSTEM	:= qemu-system-aarch64
QEMU_PACKAGE	:= qemu-system-arm
QEMU_MACHINE	:= -M virt,gic-version=3 -cpu max
GUEST_CONSOLE	:= ttyAMA0
GUEST_DEB_ARCH	:= arm64
GUEST_MULTIARCH	:= aarch64-linux-gnu
# NMIs: arm64 has pseudo-NMIs, interrupts of a priority that masking
# interrupts leaves unmasked, with a GICv3 (see QEMU_MACHINE) and this
# parameter. The CPU backtrace IPI of sysrq-l is one, which the NMI test
# sends.
BOOT_APPEND	:= irqchip.gicv3_pseudo_nmi=1
# The debug kernel's boots (DEBUG=1) need nothing more.
DEBUG_APPEND	:=
