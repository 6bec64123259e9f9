#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the stackmap's recording path cannot panic, lock or sleep.

A Rust panic in the kernel is a BUG(), and ftrace_stackmap_lookup() runs
for every stack ftrace records, in any context, NMI included: no slice
index, arithmetic overflow or unwrap() on that path may be able to fail,
and nothing on it may take a lock, allocate or sleep. This follows every
direct call and tail call from the entry points through vmlinux and fails
if any function it reaches is a panic or failure routine of the Rust core
library, or if the path makes an indirect call that cannot be followed;
and, in a second case, if it reaches any function outside the stackmap
but the atomics, per-CPU operations (add, read, cmpxchg) and memcpy
helpers it is meant to use, or the Rust core library, which cannot lock
or sleep but through a panic.

With --ub-checks, for a kernel built with CONFIG_RUST_DEBUG_ASSERTIONS,
the core library's checks of the preconditions of unsafe operations
(null or misaligned pointers, ...) may be reached: that kernel adds them
on purpose, and they fail only where the code would otherwise have
undefined behaviour. Any other panic still fails the first case.

With --kasan, for a kernel built with CONFIG_KASAN, the path calls
KASAN's checks of each access and its reports of a bad one, which the
compiler adds: they are allowed and not followed. They are KASAN's to
make safe in any context, and a report, which prints (and can panic with
panic_on_warn), runs only where the code made a bad access anyway.

Where a per-CPU operation is not one instruction (arm64), it runs between
preempt_disable_notrace() and preempt_enable_notrace(), whose call of
preempt_schedule_notrace() is allowed and not followed: the count it
checks never drops to zero on the recording path, which ftrace runs with
preemption disabled (__ftrace_trace_stack()), and where preemption is
disabled preempt_schedule_notrace() returns at once.

Prints TAP, two cases per entry point.

Usage: panic-free.py [--ub-checks] [--kasan] OBJDUMP VMLINUX SYMBOL...
"""

import re
import subprocess
import sys

from vmlinux import functions

# A direct call or jump (x86: call, jmp, jcc; arm64: bl, b, b.cc, cbz,
# tbz, ...) to a function: `<symbol>`, not `<symbol+0x...>` inside one.
# The target is the last operand: cbz and tbz name registers before it.
TARGET = re.compile(r':\s+(call|j|bl?\b|b\.|cbn?z|tbn?z)\S*\s.*\s<([^<>+]+)>\s*$')
# A call or jump through a register or memory, not to a fixed address.
INDIRECT = re.compile(r':\s+((call|jmp)q?\s+\*|blr\s|br\s)')
# What a panic looks like once demangled: core::panicking::*,
# core::slice::index::*_fail, core::option::unwrap_failed, ...
PANIC = re.compile(r'panic|_fail(ed)?\b|rust_begin_unwind')
# The panics of the core library's checks of undefined behaviour.
UB_CHECK = re.compile(r'^core::panicking::panic_(nounwind(_fmt)?|null_pointer_dereference'
                      r'|misaligned_pointer_dereference)$')
# What the recording path may call besides its own code: nothing that
# locks, allocates or sleeps.
# memcpy() is memmove() on arm64 (one function, two names), whose body
# without the MOPS instructions is __pi_memcpy_generic.
ALLOWED = re.compile(r'^(<?stackmap::|ftrace_stackmap_|<?core::'
                     r'|(__)?memcpy|memmove|__pi_memcpy_generic'
                     r'|rust_helper_(atomic|this_cpu_(add|read|cmpxchg)_))')
# KASAN's runtime, which the compiler calls on every access it checks.
KASAN = re.compile(r'^(__asan_|__kasan_|kasan_)')
# The end of a section with preemption disabled for a per-CPU operation.
PREEMPT = re.compile(r'^preempt_schedule_notrace$')


def unfollowed(name, kasan):
    """Returns whether `name` is allowed on the path but not followed:
    the end of a per-CPU operation's section, and, if `kasan`, KASAN's
    runtime."""
    return bool(PREEMPT.search(name) or (kasan and KASAN.search(name)))


def disassemble(objdump, vmlinux, span):
    """Returns the instructions in `span` as a list of lines."""
    out = subprocess.run([objdump, '-d', '--no-show-raw-insn',
                          f'--start-address={span[0]:#x}',
                          f'--stop-address={span[1]:#x}', vmlinux],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if re.match(r'\s*[0-9a-f]+:', line)]


def demangle(cxxfilt, name):
    """Returns the demangled form of `name`."""
    return subprocess.run([cxxfilt, name], capture_output=True, text=True,
                          check=True).stdout.strip()


def walk(tools, vmlinux, table, root, kasan):
    """Returns the functions reachable from `root`, demangled, and the
    indirect branches found in them. A panic is not descended into, nor
    what is `unfollowed()`."""
    objdump, cxxfilt = tools
    seen, reached, todo, indirect = set(), [], [root], []
    while todo:
        symbol = todo.pop()
        if symbol in seen:
            continue
        seen.add(symbol)
        if symbol not in table:
            raise RuntimeError(f'{symbol}: no such function in {vmlinux}')
        name = demangle(cxxfilt, symbol)
        reached.append(name)
        if PANIC.search(name) or unfollowed(name, kasan):
            continue
        for line in disassemble(objdump, vmlinux, table[symbol]):
            if INDIRECT.search(line):
                indirect.append(f'{name}: {line.split(":", 1)[1].strip()}')
            m = TARGET.search(line)
            if m and m.group(2) != symbol:
                todo.append(m.group(2))
    return sorted(reached), indirect


def main():
    args = sys.argv[1:]
    ub_checks = '--ub-checks' in args
    kasan = '--kasan' in args
    args = [arg for arg in args if arg not in ('--ub-checks', '--kasan')]
    objdump, vmlinux, roots = args[0], args[1], args[2:]
    cxxfilt = objdump.replace('objdump', 'cxxfilt')
    table = functions(objdump.replace('objdump', 'nm'), vmlinux)
    print(f'1..{2 * len(roots)}')
    failed = 0
    for n, root in enumerate(roots, 1):
        try:
            reached, indirect = walk((objdump, cxxfilt), vmlinux, table, root, kasan)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            print(f'not ok {2 * n - 1} {root} cannot panic # {e}')
            print(f'not ok {2 * n} {root} cannot lock or sleep # {e}')
            failed += 2
            continue
        for name in reached:
            print(f'# {root} reaches {name}')
        for line in indirect:
            print(f'# indirect branch in {line}')
        panics = [name for name in reached if PANIC.search(name)
                  and not (ub_checks and UB_CHECK.search(name))]
        if panics or indirect:
            why = ', '.join(panics + ['an indirect branch'] * bool(indirect))
            print(f'not ok {2 * n - 1} {root} cannot panic: it reaches {why}')
            failed += 1
        else:
            but = ' but checks of undefined behaviour' if ub_checks else ''
            print(f'ok {2 * n - 1} {root} cannot panic: {len(reached)} functions '
                  f'reached, no panic among them{but}')
        others = [name for name in reached
                  if not ALLOWED.search(name) and not unfollowed(name, kasan)]
        if others or indirect:
            why = ', '.join(others + ['an indirect branch'] * bool(indirect))
            print(f'not ok {2 * n} {root} cannot lock or sleep: it reaches {why}')
            failed += 1
        else:
            print(f'ok {2 * n} {root} cannot lock or sleep: it reaches only the '
                  'stackmap, atomics, per-CPU operations, memcpy and the core library'
                  f'{" besides KASAN" if kasan else ""}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
