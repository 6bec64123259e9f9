# Everything that is specific to x86_64: the kernel's ARCH, the image the
# build leaves, the QEMU machine and the console the guest talks on, the
# Debian package of QEMU, the Debian architecture of the guest's programs
# and the directory of their libraries, and our tests that cannot run
# there (none).
KERNEL_ARCH	:= x86_64
KERNEL_IMAGE	:= arch/x86/boot/bzImage
KERNEL_CONFIG	:= arch/x86_64/kernel.config
QEMU_SYSTEM	:= qemu-system-x86_64
QEMU_PACKAGE	:= qemu-system-x86
QEMU_MACHINE	:= -M pc -cpu max
GUEST_CONSOLE	:= ttyS0
GUEST_DEB_ARCH	:= amd64
GUEST_MULTIARCH	:= x86_64-linux-gnu
ARCH_NOT_RUN	:=
