// SPDX-License-Identifier: GPL-2.0

#include <linux/percpu.h>

__rust_helper void __percpu *rust_helper___alloc_percpu_gfp(size_t size,
							    size_t align,
							    gfp_t gfp)
{
	return __alloc_percpu_gfp(size, align, gfp);
}

__rust_helper void *rust_helper_per_cpu_ptr(void __percpu *ptr,
					    unsigned int cpu)
{
	return per_cpu_ptr(ptr, cpu);
}

__rust_helper void *rust_helper_raw_cpu_ptr(void __percpu *ptr)
{
	return raw_cpu_ptr(ptr);
}

__rust_helper void rust_helper_this_cpu_add_u64(u64 __percpu *ptr, u64 val)
{
	this_cpu_add(*ptr, val);
}

__rust_helper u64 rust_helper_this_cpu_read_u64(u64 __percpu *ptr)
{
	return this_cpu_read(*ptr);
}

__rust_helper u64 rust_helper_this_cpu_cmpxchg_u64(u64 __percpu *ptr, u64 old,
						   u64 new)
{
	return this_cpu_cmpxchg(*ptr, old, new);
}
