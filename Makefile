# SPDX-License-Identifier: GPL-2.0
#
# Build, boot and test the ftrace stackmap in a Linux 7.2 kernel under QEMU.
#
#   make run                 boot into a shell in /sys/kernel/tracing
#   make run CMD='...'       run one command in the guest, exit with its status
#   make check               build what is stale, boot, run every test
#   make check DEBUG=1       the same on a kernel with lockdep and KASAN
#   make check TARGET_ARCH=arm64   the same on an arm64 kernel and guest
#   make bench               measure what the stackmap buys and costs
#   make suite               the upstream ftrace selftests, stacks in full vs in the map
#   make series              the patch series to send upstream, in build/series
#   make series-build        build the kernel at each commit of the series
#   make series-refresh      update the patches' diffs of changed files
#   make fresh-check         make check and make run in a new Debian 12 root
#   make help                this list
#
# The steps, each also a target: deps, source, install, config, kernel,
# initramfs; and clean, distclean. See README.md for the rest.

ROOT		:= $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD		?= $(ROOT)/build
# Absolute, whether it came from the environment or the command line: the
# kernel build runs in the kernel tree, where a relative O= would point
# elsewhere.
override BUILD	:= $(abspath $(BUILD))
TREE		:= $(BUILD)/linux
# The architecture built and booted: a directory of arch/.
TARGET_ARCH	?= x86_64
# The nightly whose Miri `make check` runs the host tests under.
MIRI_TOOLCHAIN	?= nightly-2026-05-20
# The kernel's LLVM= version suffix: clang of rustc's LLVM major version,
# which CONFIG_RUST_INLINE_HELPERS needs to inline the C helpers (atomics,
# per-CPU counters) into the Rust code. Debian 12 has it in
# bookworm-security.
LLVM_SUFFIX	?= -22
# The branch of the kernel tree that `make series` writes the series to.
SERIES_BRANCH	:= stackmap-series

include $(ROOT)/arch/$(TARGET_ARCH)/arch.mk
# Another architecture than x86_64 builds and boots apart: its kernel
# build, image and initramfs carry its name. The kernel tree is shared.
ARCH_SUFFIX	:= $(if $(filter x86_64,$(TARGET_ARCH)),,-$(TARGET_ARCH))
OBJ		:= $(BUILD)/obj$(ARCH_SUFFIX)
export KERNEL_ARCH QEMU_SYSTEM QEMU_PACKAGE QEMU_MACHINE GUEST_CONSOLE GUEST_DEB_ARCH \
		GUEST_MULTIARCH BUILD TREE OBJ MIRI_TOOLCHAIN LLVM_SUFFIX SERIES_BRANCH

FRAGMENTS	:= $(ROOT)/configs/common.config $(ROOT)/$(KERNEL_CONFIG)
IMAGE		:= $(BUILD)/$(notdir $(KERNEL_IMAGE))$(ARCH_SUFFIX)

# DEBUG=1: the same targets on a kernel with lockdep, PROVE_RCU, KASAN,
# Rust debug assertions and the tracers' startup tests, built apart in
# build/obj-debug (a full build the first time).
ifeq ($(DEBUG),1)
OBJ		:= $(BUILD)/obj-debug$(ARCH_SUFFIX)
FRAGMENTS	+= $(ROOT)/configs/debug.config
IMAGE		:= $(BUILD)/$(notdir $(KERNEL_IMAGE))-debug$(ARCH_SUFFIX)
# Lockdep slows the guest several times over, the function tracer's tests
# most, and kmemleak with slab_debug=P (below) slows it again: the plain
# boot of make check took 31 minutes here in one run, and had not ended
# at 45 in another, beside the other boots and the host checks.
TIMEOUT		?= 3600
export TIMEOUT
# kmemleak (configs/debug.config) reports an object only if no word of the
# memory it scans points into it. slab_debug=P poisons each object freed,
# and takes the caches off their per-CPU sheaves, whose arrays keep a
# pointer to each object they handed out: kmemleak then saw no leak made
# by a write from user space until other allocations wrote over it.
DEBUG_APPEND	+= slab_debug=P
endif
# What the architecture needs of the kernel command line, on every boot
# and on the debug kernel's (BOOT_APPEND and DEBUG_APPEND, from
# arch/*/arch.mk).
KERNEL_APPEND	:= $(BOOT_APPEND) $(if $(filter 1,$(DEBUG)),$(DEBUG_APPEND))
export KERNEL_APPEND

INITRAMFS	:= $(BUILD)/initramfs$(ARCH_SUFFIX).cpio
# The bench's syscall loop is built by the host's gcc, and its figures are
# judged as x86_64 instructions, of the kernel that is shipped: lockdep
# and KASAN would weigh on every figure.
ifneq ($(filter bench,$(MAKECMDGOALS)),)
ifneq ($(TARGET_ARCH),x86_64)
$(error make bench runs on x86_64 only)
endif
ifeq ($(DEBUG),1)
$(error make bench measures the kernel without DEBUG=1)
endif
endif
QEMU_ENV	:= KERNEL=$(IMAGE) INITRAMFS=$(INITRAMFS)
KMAKE		:= $(MAKE) -C $(TREE) O=$(OBJ) ARCH=$(KERNEL_ARCH) LLVM=$(LLVM_SUFFIX)
JOBS		?= $(shell nproc)

.PHONY: all deps source install config kernel initramfs run check bench suite series series-build \
	series-refresh fresh-check clean distclean help

all: kernel

help:
	@sed -n '3,/^$$/s/^# \{0,1\}//p' $(ROOT)/Makefile

deps:
	@$(ROOT)/scripts/deps.sh

source: deps
	@$(ROOT)/scripts/fetch-source.sh $(TREE)

install: source
	@$(ROOT)/scripts/install.sh $(TREE)

config: install
	@$(ROOT)/scripts/config.sh $(TREE) $(OBJ) $(FRAGMENTS)

kernel: config
	+@$(KMAKE) -j$(JOBS) $(notdir $(KERNEL_IMAGE))
	@cmp -s $(OBJ)/$(KERNEL_IMAGE) $(IMAGE) || cp $(OBJ)/$(KERNEL_IMAGE) $(IMAGE)

initramfs: install
	@$(ROOT)/scripts/initramfs.sh $(TREE) $(INITRAMFS)

run: kernel initramfs
ifeq ($(CMD),)
	@$(QEMU_ENV) INTERACTIVE=1 $(ROOT)/scripts/qemu-run.sh
else
	@$(QEMU_ENV) CMD='$(subst ','\'',$(value CMD))' $(ROOT)/scripts/qemu-run.sh
endif

check: kernel initramfs
	@$(QEMU_ENV) $(ROOT)/scripts/check.sh

bench: kernel initramfs
	@$(QEMU_ENV) $(ROOT)/scripts/bench.sh

suite: kernel initramfs
	@$(QEMU_ENV) $(ROOT)/scripts/suite.sh

series: install
	@$(ROOT)/scripts/series.sh $(TREE) $(BUILD)/series

series-build: series config
	@KERNEL_IMAGE=$(KERNEL_IMAGE) $(ROOT)/scripts/series-build.sh $(TREE) \
		$(OBJ)/.config $(BUILD)/series-build$(ARCH_SUFFIX)

# BASE: the commit whose files the patches' diffs follow (HEAD).
series-refresh:
	@$(ROOT)/scripts/series-refresh.py $(BASE)

# Not on deps: it installs nothing here but debootstrap.
fresh-check:
	@$(ROOT)/scripts/fresh-check.sh

clean:
	rm -rf $(OBJ) $(IMAGE) $(INITRAMFS) $(BUILD)/*.log $(BUILD)/*.out $(BUILD)/accel

distclean:
	rm -rf $(BUILD)
