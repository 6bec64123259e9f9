#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the test cases of a `make check` boot and print the summary line.

Reads the console logs the guests printed (sections between '@@SECTION
name@@' and '@@END@@'), and optionally host-side cargo test outputs.  Every
case is listed with its verdict; then, under 'Failed:', the failures again,
with the lines of each splat and the end of each failed ftracetest case's
log that the guest printed; the last line is 'N passed, N failed, N
skipped'.  Each of these also counts as a failed case:

  - a section that was expected but not reported, or reported no case;
    an ftracetest section whose cases are not the number --cases gives
    (a test missing from the guest), and a boot whose KUnit section
    lacks a --kunit-suite;
  - a section not ended, without its plan line '1..N', with a number of
    results other than its plan, or whose totals (ftracetest's '# Totals:',
    a KUnit suite's '# NAME: pass:...') disagree with the results read:
    a run cut short, or a result line mangled by kernel messages on the
    shared console;
  - a log that is missing or lacks the guest's exit marker, a boot whose
    qemu-run status (--exit-status) is not 0, and a log with a kernel
    splat (warning, BUG, Oops, stall, panic, OOM kill, allocation
    failure report, NMI backtrace, kmemleak's report of a leak);
  - a cargo test output that is missing or reports no test, and an
    ignored cargo test of a --must-run group;
  - a TAP output (--tap) with a problem of a section, as above.
"""

import argparse
import collections
import os
import re
import sys

KTAP_CASE = re.compile(r"^(?P<indent>\s*)(?P<ok>not ok|ok) (?P<num>\d+) "
                       r"(?P<name>.*?)(?:\s+#\s*(?P<directive>\S+).*)?$")
PLAN = re.compile(r"^(?P<indent>\s*)1\.\.(?P<n>\d+)$")
STATS = re.compile(r"^# (?P<name>\S+): (?P<stats>(?:\w+:\d+ ?)+)$")
EXIT_MARKER = re.compile(r"^@@STACKMAP-GUEST-EXIT@@ \d+$", re.M)
# What the kernel prints when something went wrong, anywhere on a line: a
# kernel message can start in the middle of one the guest printed. Besides
# the warnings, BUGs and stalls, the first lines of the reports that come
# with a backtrace and no "WARNING:": the OOM killer, an allocation that
# failed or stalled, an NMI backtrace, an interrupt nobody handled, an MSR
# access that faulted.
SPLAT = re.compile(r"-{12}\[ cut here \]-{12}|WARNING:|BUG:|kernel BUG at"
                   r"|\bOops\b|Call Trace:|RCU stall|detected (expedited )?stalls? on"
                   r"|general protection fault|Kernel panic"
                   r"|invoked oom-killer|Out of memory|page allocation (failure|stall)"
                   r"|vmalloc error:|percpu: allocation failed|NMI backtrace for cpu"
                   r"|haven't responded|nobody cared|unchecked MSR access"
                   # An object kmemleak found no pointer to.
                   r"|unreferenced object 0x"
                   # A KUnit assertion that failed outside the case's thread,
                   # which KUnit cannot fail.
                   r"|Failure not reported to KUnit")
TOTALS_KEYS = ("pass", "fail", "xfail", "xpass", "skip", "error", "total")


def sections(log):
    """Yields (name, lines, ended) for each marked section of the log."""
    name, lines = None, []
    for line in log.splitlines():
        if line.startswith("@@SECTION ") and line.endswith("@@"):
            if name is not None:
                yield name, lines, False
            name, lines = line[len("@@SECTION "):-2], []
        elif line == "@@END@@" and name is not None:
            yield name, lines, True
            name = None
        elif name is not None:
            lines.append(line)
    if name is not None:
        yield name, lines, False


def splats(log):
    """Returns the lines of a console log that show a kernel splat."""
    return [line for line in log.splitlines() if SPLAT.search(line)]


def splat_window(log, before=4, after=10):
    """Returns the lines of a console log around its first splat line: the
    report's first lines, if no pattern matched them, and what came next."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if SPLAT.search(line):
            return lines[max(0, i - before):i + after]
    return []


def failed_case_logs(log, lines=10):
    """Returns the last lines of each part of a failed case's log that the
    guest's check.sh printed ('check.sh: what NAME printed:' and
    'check.sh: end of NAME:', each followed by lines in '|   ')."""
    out, name, tail = [], None, []
    for line in log.splitlines() + [""]:
        if line.startswith("|   ") and name is not None:
            tail.append(line)
            continue
        if name is not None:
            out.append(name)
            out.extend(tail[-lines:])
            name, tail = None, []
        if line.startswith("check.sh: "):
            name = line
    return out


def verdict(m):
    directive = (m.group("directive") or "").upper()
    if m.group("ok") == "not ok":
        return "failed"
    if directive in ("SKIP", "XFAIL"):
        return "skipped"
    return "passed"


def kind(m):
    """The key of a result in ftracetest's and KUnit's totals."""
    directive = (m.group("directive") or "").upper()
    if m.group("ok") == "ok":
        return {"SKIP": "skip", "XFAIL": "xfail"}.get(directive, "pass")
    return "error" if directive else "fail"


class Results:
    """The plan, the result lines and the printed totals of one KTAP level."""

    def __init__(self):
        self.plans, self.cases, self.totals = [], [], None

    def problems(self):
        """Yields what is wrong with the results read against the plan."""
        if len(self.plans) != 1:
            yield (f"{len(self.plans) or 'no'} plan lines '1..N', "
                   f"{len(self.cases)} results")
            return
        plan = self.plans[0]
        nums = [int(m.group("num")) for m in self.cases]
        if len(nums) != plan:
            yield f"{len(nums)} results for plan 1..{plan}"
        elif nums != list(range(1, plan + 1)):
            yield f"results not numbered 1..{plan}"
        if self.totals is None:
            return
        if not re.fullmatch(r"\w+:\d+(?: \w+:\d+)*", self.totals.strip()):
            yield f"totals unreadable: {self.totals[:40]}"
        else:
            read = collections.Counter(kind(m) for m in self.cases)
            read["total"] = len(self.cases)
            said = dict(kv.split(":") for kv in self.totals.split())
            diff = [k for k in TOTALS_KEYS
                    if k in said and int(said[k]) != read[k]]
            if diff:
                yield ("totals say " + " ".join(f"{k}:{said[k]}" for k in diff)
                       + ", read " + " ".join(f"{k}:{read[k]}" for k in diff))


def kunit_cases(lines):
    """Returns ([(name, match)] for the test cases, [problem]) of KTAP.

    The kernel prints a plan of suites, then for each suite its header
    '# Subtest: NAME', its plan and cases indented by 4, '# NAME: pass:...'
    (its case totals; '# Totals:' counts parameters) and its own result.
    """
    top, suites, suite, cases = Results(), {}, None, []
    for line in lines:
        m = re.match(r"^ {4}# Subtest: (\S+)$", line)
        if m:
            suite = m.group(1)
            suites[suite] = Results()
            continue
        m = PLAN.match(line)
        if m and not m.group("indent"):
            top.plans.append(int(m.group("n")))
            continue
        if m and m.group("indent") == " " * 4 and suite is not None:
            suites[suite].plans.append(int(m.group("n")))
            continue
        m = STATS.match(line)
        if m and m.group("name") in suites:
            suites[m.group("name")].totals = m.group("stats")
            continue
        m = KTAP_CASE.match(line)
        if m and not m.group("indent"):
            top.cases.append(m)
        elif m and m.group("indent") == " " * 4 and suite is not None:
            suites[suite].cases.append(m)
            cases.append((f"{suite}.{m.group('name')}", m))
    problems = []
    if top.plans or top.cases:
        problems += [f"suites: {p}" for p in top.problems()]
    for name, s in suites.items():
        problems += [f"{name}: {p}" for p in s.problems()]
    for m in top.cases:
        s = suites.get(m.group("name"), Results())
        if (m.group("ok") == "not ok"
                and all(c.group("ok") == "ok" for c in s.cases)):
            problems.append(f"{m.group('name')}: suite not ok")
    return cases, problems


def ftracetest_cases(lines):
    """Returns ([(name, match)] for each case, [problem]) of one section.

    ftracetest -K prints 'TAP version 13', the plan, a line per case and
    '# Totals:' at its end; boot-check.sh prints the plan and its cases.
    """
    res, tap = Results(), False
    for line in lines:
        tap = tap or line.startswith("TAP version ")
        m = PLAN.match(line)
        if m and not m.group("indent"):
            res.plans.append(int(m.group("n")))
        elif line.startswith("# Totals: "):
            res.totals = line[len("# Totals: "):]
        else:
            m = KTAP_CASE.match(line)
            if m and not m.group("indent"):
                res.cases.append(m)
    problems = list(res.problems())
    if tap and res.totals is None:
        problems.append("no '# Totals:' line (cut short?)")
    return [(m.group("name"), m) for m in res.cases], problems


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("logs", nargs="+", metavar="log")
    ap.add_argument("--kunit-suite", action="append", default=[],
                    help="a KUnit suite that must have reported")
    ap.add_argument("--section", action="append", default=[],
                    help="an ftracetest section that must have reported")
    ap.add_argument("--must-run", action="append", default=[],
                    help="a section whose skipped cases count as failures")
    ap.add_argument("--cases", action="append", default=[],
                    metavar="SECTION=N",
                    help="an ftracetest section that must report N cases")
    ap.add_argument("--exit-status", action="append", default=[],
                    metavar="LOG=STATUS",
                    help="the qemu-run exit status of the boot that wrote LOG")
    ap.add_argument("--cargo", action="append", default=[], metavar="GROUP=FILE",
                    help="cargo test output to count as well, as GROUP")
    ap.add_argument("--tap", action="append", default=[], metavar="GROUP=FILE",
                    help="TAP output of a host-side check to count as GROUP")
    args = ap.parse_args()
    expected = {}
    for arg in args.cases:
        section, _, n = arg.rpartition("=")
        expected[section] = int(n)

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    seen = set()

    # The failures again at the end, with what tells their cause: the
    # summary's last lines are the ones a reader of a long output sees.
    recap = []

    def count(group, name, v):
        counts[v] += 1
        print(f"{v.upper():8} {group}: {name}")
        if v == "failed":
            recap.append(f"{group}: {name}")

    def counted(group, name, v, directive):
        if v == "skipped" and group in args.must_run:
            v = "failed"
            name += f" (# {directive} in a must-run section)"
        count(group, name, v)

    def case(group, name, m):
        counted(group, name, verdict(m), m.group("directive"))

    # What check.sh printed of the logs of the ftracetest cases that
    # failed, after their section.
    recap_logs = []

    status = {}
    for arg in args.exit_status:
        path, _, rc = arg.rpartition("=")
        status[path] = rc
    for path in args.logs + [p for p in status if p not in args.logs]:
        boot = os.path.basename(path)
        try:
            with open(path, errors="replace") as f:
                log = f.read()
        except OSError as e:
            count("console", f"{boot}: cannot read ({e.strerror})", "failed")
            continue
        trouble = [] if EXIT_MARKER.search(log) else ["no guest exit marker"]
        if status.get(path, "0") != "0":
            trouble.append(f"qemu-run exited {status[path]}")
        if trouble:
            count("console", f"{boot}: {', '.join(trouble)}", "failed")
        splat = splats(log)
        if splat:
            count("console", f"{boot}: kernel splat:", "failed")
            shown = [f"| {line[:100]}" for line in splat[:5]]
            if len(splat) > 5:
                shown.append(f"| ({len(splat) - 5} more lines)")
            for line in shown:
                print(f"{'':8} {line}")
            recap.extend(f"  {line}" for line in shown)
            recap.append("  the console around the first:")
            recap.extend(f"  : {line[:100]}" for line in splat_window(log))
        recap_logs.extend(failed_case_logs(log))

        for name, lines, ended in sections(log):
            if name == "kunit":
                group = "kunit"
                cases, problems = kunit_cases(lines)
                for c, m in cases:
                    seen.add("kunit:" + c.split(".")[0])
                    case(group, f"{c} [{boot}]", m)
                reported = {c.split(".")[0] for c, _ in cases}
                problems += [f"{suite} (suite did not report in {boot})"
                             for suite in args.kunit_suite
                             if suite not in reported]
            elif name.startswith("ftracetest "):
                group = name.split()[1]
                cases, problems = ftracetest_cases(lines)
                for c, m in cases:
                    case(group, c, m)
                if cases:
                    seen.add(group)
                if group in expected and len(cases) != expected[group]:
                    problems.append(f"{len(cases)} cases in {boot}, "
                                    f"{expected[group]} tests to run")
            else:
                group, problems = name, [f"unknown section in {boot}"]
            if not ended:
                problems.append(f"section not ended in {boot} (cut short?)")
            for p in problems:
                count(group, p, "failed")

    for arg in args.cargo:
        group, path = arg.split("=", 1)
        tests = 0
        try:
            with open(path, errors="replace") as f:
                lines = f.readlines()
        except OSError as e:
            lines = []
            count(group, f"{path}: cannot read ({e.strerror})", "failed")
        for line in lines:
            m = re.match(r"^test (\S+) \.\.\. (ok|FAILED|ignored)", line)
            if m:
                v = {"ok": "passed", "FAILED": "failed"}.get(m.group(2), "skipped")
                counted(group, m.group(1), v, m.group(2))
                tests += 1
        if not tests:
            count(group, f"{path} (no test reported)", "failed")

    for arg in args.tap:
        group, path = arg.split("=", 1)
        try:
            with open(path, errors="replace") as f:
                cases, problems = ftracetest_cases(f.read().splitlines())
        except OSError as e:
            cases, problems = [], [f"{path}: cannot read ({e.strerror})"]
        for c, m in cases:
            case(group, c, m)
        if not cases:
            problems.append(f"{path} (no case reported)")
        for p in problems:
            count(group, p, "failed")

    for suite in args.kunit_suite:
        if "kunit:" + suite not in seen:
            count("kunit", f"{suite} (suite did not report)", "failed")
    for section in args.section:
        if section not in seen:
            count("ftracetest", f"{section} (no case reported)", "failed")

    if recap:
        print("Failed:")
        for line in recap + recap_logs:
            print(f"  {line}")
    print(f"{counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
