// SPDX-License-Identifier: GPL-2.0

#include <linux/percpu.h>

__rust_helper void __percpu *rust_helper_alloc_percpu_gfp(size_t size,
							  size_t align, gfp_t gfp)
{
	return __alloc_percpu_gfp(size, align, gfp);
}

__rust_helper void *rust_helper_per_cpu_ptr(void __percpu *ptr,
					    unsigned int cpu)
{
	return per_cpu_ptr(ptr, cpu);
}

/*
 * Atomic against interrupts on this CPU, and against NMIs where this_cpu
 * operations or cmpxchg() are NMI-safe (ARCH_HAVE_NMI_SAFE_CMPXCHG): where
 * only cmpxchg() is, a cmpxchg() loop on the copy of the CPU it runs on.
 */
__rust_helper void rust_helper_this_cpu_add_u64(u64 __percpu *ptr, u64 val)
{
	u64 *counter, old;

	if (IS_ENABLED(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS)) {
		this_cpu_add(*ptr, val);
		return;
	}
	counter = raw_cpu_ptr(ptr);
	old = READ_ONCE(*counter);
	while (!try_cmpxchg(counter, &old, old + val))
		;
}

__rust_helper u64 rust_helper_this_cpu_read_u64(u64 __percpu *ptr)
{
	return this_cpu_read(*ptr);
}

/*
 * Atomic against interrupts on this CPU, and against NMIs where this_cpu
 * operations or cmpxchg() are NMI-safe: where only cmpxchg() is, an atomic
 * cmpxchg() of the copy of the CPU it runs on.
 */
__rust_helper u64 rust_helper_this_cpu_cmpxchg_u64(u64 __percpu *ptr, u64 old,
						   u64 new)
{
	if (IS_ENABLED(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS))
		return this_cpu_cmpxchg(*ptr, old, new);
	return cmpxchg(raw_cpu_ptr(ptr), old, new);
}
