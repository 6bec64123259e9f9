#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare, case by case, two boots' runs of the same ftracetest section.

`make suite` runs the whole upstream ftrace suite on two boots that differ
only in the stackmap option. Every case must end the same way on both:
passed, failed, unsupported, unresolved or xfail as it does without the
map. Prints TAP, one case per selftest ('ok' when the outcomes agree),
then one more case per problem: a boot that did not report, a kernel
splat on a console, a section cut short, or a selftest that only one boot
ran. Exits 1 if any case is 'not ok'.
"""

import argparse
import sys

from summarize import EXIT_MARKER, ftracetest_cases, sections, splats


def outcome(m):
    """What ftracetest said of a case: 'ok', 'not ok', or with a directive."""
    directive = m.group("directive")
    return m.group("ok") + (f" # {directive.upper()}" if directive else "")


def read(path, section):
    """Returns ({case: outcome}, [problem]) of one boot's console log."""
    try:
        with open(path, errors="replace") as f:
            log = f.read()
    except OSError as e:
        return {}, [f"{path}: cannot read ({e.strerror})"]
    problems = [] if EXIT_MARKER.search(log) else [f"{path}: no guest exit marker"]
    problems += [f"{path}: kernel splat: {line.strip()[:80]}"
                 for line in splats(log)[:5]]
    found = [(lines, ended) for name, lines, ended in sections(log)
             if name == f"ftracetest {section}"]
    if not found:
        return {}, problems + [f"{path}: no section '{section}'"]
    lines, ended = found[0]
    cases, section_problems = ftracetest_cases(lines)
    problems += [f"{path}: {p}" for p in section_problems]
    if not ended:
        problems.append(f"{path}: section not ended (cut short?)")
    # Two selftests may share a description: the second is "NAME (2)".
    seen, results = {}, {}
    for name, m in cases:
        seen[name] = seen.get(name, 0) + 1
        results[name if seen[name] == 1 else f"{name} ({seen[name]})"] = outcome(m)
    return results, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("section", help="the ftracetest section both boots ran")
    ap.add_argument("off", help="console log of the boot without the option")
    ap.add_argument("on", help="console log of the boot with the option")
    args = ap.parse_args()

    off, problems = read(args.off, args.section)
    on, more = read(args.on, args.section)
    problems += more
    results = []
    for name in sorted(off.keys() | on.keys()):
        a, b = off.get(name, "not run"), on.get(name, "not run")
        results.append((a == b, f"{name} (off: {a}, on: {b})"))
    results += [(False, p) for p in problems]

    print(f"1..{len(results)}")
    for n, (same, text) in enumerate(results, 1):
        print(f"{'ok' if same else 'not ok'} {n} {text}")
    differ = sum(1 for same, _ in results if not same)
    print(f"# {len(off)} cases without the option, {len(on)} with it; "
          f"{differ} not ok")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
