# Everything that is specific to x86_64: the kernel's ARCH, the image the
# build leaves, the QEMU machine and the console the guest talks on.
KERNEL_ARCH	:= x86_64
KERNEL_IMAGE	:= arch/x86/boot/bzImage
KERNEL_CONFIG	:= arch/x86_64/kernel.config
QEMU_SYSTEM	:= qemu-system-x86_64
QEMU_MACHINE	:= -M pc -cpu max
GUEST_CONSOLE	:= ttyS0
