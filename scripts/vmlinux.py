# SPDX-License-Identifier: GPL-2.0
"""What the scripts read of a vmlinux."""

import subprocess


def functions(nm, vmlinux):
    """Returns the start and end address of each function of `vmlinux`."""
    out = subprocess.run([nm, '-S', vmlinux], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in 'tTwW':
            start = int(fields[0], 16)
            table[fields[3]] = (start, start + int(fields[1], 16))
    return table
