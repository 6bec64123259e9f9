#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Watch a QEMU guest, and when it is still running at the deadline, show
where each of its CPUs is before stopping it.

A guest that hangs with interrupts off on every CPU prints nothing: no
lockup or RCU stall report ever reaches its console. The instruction
pointer of each vCPU, read from QEMU's monitor, is then all there is.

Usage: qemu-hang.py PIDFILE MONITOR SECONDS REGS [VMLINUX NM]

Waits for QEMU to write PIDFILE, then for it to exit. If it still runs
SECONDS after the start, asks the HMP monitor at the unix socket MONITOR
for every CPU's registers and quits QEMU. REGS then gets a line per CPU
with its instruction pointer (and its symbol in VMLINUX, read with the
nm tool NM, for a kernel linked where it runs), a blank line and all the
registers.
"""

import os
import re
import socket
import subprocess
import sys
import time

from vmlinux import functions

PROMPT = b"(qemu) "


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_pid(pidfile, deadline):
    while time.monotonic() < deadline:
        try:
            with open(pidfile) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            time.sleep(0.2)
    return None


def command(sock, line):
    """Sends one monitor command and returns its output."""
    sock.sendall(line.encode() + b"\n")
    return read_prompt(sock).decode(errors="replace")


def read_prompt(sock):
    out = b""
    while not out.endswith(PROMPT):
        chunk = sock.recv(65536)
        if not chunk:
            break
        out += chunk
    return out


def symbolizer(vmlinux, nm):
    """Returns a function that names an address in `vmlinux`."""
    try:
        table = functions(nm, vmlinux)
    except (OSError, subprocess.CalledProcessError):
        return lambda addr: ""

    def name(addr):
        for sym, (start, end) in table.items():
            if start <= addr < end:
                return f" <{sym}+{addr - start:#x}>"
        return ""

    return name


def main():
    if len(sys.argv) not in (5, 7):
        sys.exit(__doc__)
    pidfile, monitor, seconds, regs = sys.argv[1:5]
    deadline = time.monotonic() + int(seconds)
    pid = wait_pid(pidfile, deadline)
    if pid is None:
        return
    while alive(pid):
        if time.monotonic() >= deadline:
            break
        time.sleep(1)
    else:
        return

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(monitor)
            read_prompt(sock)
            dump = command(sock, "info registers -a")
            # From the first CPU's: the monitor echoes the command first.
            dump = dump[dump.find("CPU#"):].removesuffix(PROMPT.decode())
            name = (symbolizer(*sys.argv[5:7]) if len(sys.argv) == 7
                    else lambda addr: "")
            with open(regs, "w") as f:
                # x86_64 names the instruction pointer RIP, arm64 PC.
                for cpu, reg, pc in re.findall(r"CPU#(\d+).*?\b(RIP|PC)=([0-9a-f]+)",
                                               dump, re.S):
                    f.write(f"  CPU#{cpu} {reg}={pc}{name(int(pc, 16))}\n")
                f.write("\n" + dump)
            sock.sendall(b"quit\n")
    except OSError as e:
        with open(regs, "w") as f:
            f.write(f"  (the monitor did not answer: {e})\n")


if __name__ == "__main__":
    main()
