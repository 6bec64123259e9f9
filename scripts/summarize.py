#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the test cases of a `make check` boot and print the summary line.

Reads the console log the guest printed (sections between '@@SECTION name@@'
and '@@END@@'), and optionally host-side cargo test output.  Every case is
listed with its verdict; the last line is 'N passed, N failed, N skipped'.
A section that was expected but not reported, or reported no case, is a
failure.
"""

import argparse
import re
import sys

KTAP_CASE = re.compile(r"^(?P<indent>\s*)(?P<ok>not ok|ok) \d+ (?P<name>.*?)"
                       r"(?:\s+#\s*(?P<directive>\S+).*)?$")


def sections(log):
    """Yields (name, lines) for each marked section of the console log."""
    name, lines = None, []
    for line in log.splitlines():
        if line.startswith("@@SECTION ") and line.endswith("@@"):
            name, lines = line[len("@@SECTION "):-2], []
        elif line == "@@END@@" and name is not None:
            yield name, lines
            name = None
        elif name is not None:
            lines.append(line)


def kunit_cases(lines):
    """Yields (name, verdict) for the test cases (not suites) in KTAP."""
    suite = None
    for line in lines:
        m = re.match(r"^\s+# Subtest: (\S+)", line)
        if m:
            suite = m.group(1)
            continue
        m = KTAP_CASE.match(line)
        if not m or len(m.group("indent")) != 4:
            continue
        yield f"{suite}.{m.group('name')}", verdict(m)


def ftracetest_cases(lines, must_run):
    """Yields (name, verdict) for each ftracetest case in KTAP mode."""
    for line in lines:
        m = KTAP_CASE.match(line)
        if not m or m.group("indent"):
            continue
        v = verdict(m)
        if must_run and v == "skipped":
            v = "failed"
        yield m.group("name"), v


def verdict(m):
    directive = (m.group("directive") or "").upper()
    if m.group("ok") == "not ok":
        return "failed"
    if directive in ("SKIP", "XFAIL"):
        return "skipped"
    return "passed"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("logs", nargs="+", metavar="log")
    ap.add_argument("--kunit-suite", action="append", default=[],
                    help="a KUnit suite that must have reported")
    ap.add_argument("--section", action="append", default=[],
                    help="an ftracetest section that must have reported")
    ap.add_argument("--must-run", action="append", default=[],
                    help="a section whose skipped cases count as failures")
    ap.add_argument("--cargo", help="cargo test output to count as well")
    args = ap.parse_args()

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    seen = set()

    def count(group, name, v):
        counts[v] += 1
        print(f"{v.upper():8} {group}: {name}")

    log = ""
    for path in args.logs:
        with open(path, errors="replace") as f:
            log += f.read()
    for name, lines in sections(log):
        if name == "kunit":
            for case, v in kunit_cases(lines):
                seen.add("kunit:" + case.split(".")[0])
                count("kunit", case, v)
        elif name.startswith("ftracetest "):
            group = name.split()[1]
            n = 0
            for case, v in ftracetest_cases(lines, group in args.must_run):
                count(group, case, v)
                n += 1
            if n:
                seen.add(group)

    if args.cargo:
        with open(args.cargo, errors="replace") as f:
            for line in f:
                m = re.match(r"^test (\S+) \.\.\. (ok|FAILED|ignored)", line)
                if m:
                    v = {"ok": "passed", "FAILED": "failed"}.get(m.group(2), "skipped")
                    count("host", m.group(1), v)

    for suite in args.kunit_suite:
        if "kunit:" + suite not in seen:
            count("kunit", f"{suite} (suite did not report)", "failed")
    for section in args.section:
        if section not in seen:
            count("ftracetest", f"{section} (no case reported)", "failed")

    print(f"{counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
