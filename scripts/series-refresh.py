#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`make series-refresh`: carry a change of the project's files into the
patches' diffs of them.

A patch may change, by a diff in its .patch, a file that an earlier commit
of the series adds (see patches/series): the file in the project is the
file as the last such patch leaves it, and each diff takes it from one
version to the next.  When the file changes, its diffs must follow, or
`make check` fails: a change to lines that a diff adds belongs to that
diff, and a change to other lines belongs to every version before.

This takes each file's versions as they were at BASE (HEAD by default):
the file at BASE, then back through the patches' diffs of it, from the
last patch to the first.  It carries the change from BASE's file to the
working file back into each earlier version, and writes each diff again
from the new versions: a changed line that the diff adds stays in the
diff, any other goes to the version before it, and a change to both is a
conflict, which stops it before it writes anything, naming the patch and
the file.

Usage: series-refresh.py [BASE]
       series-refresh.py --self-test
"""

import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPONENT = "kernel/trace/stackmap/"


def git(*args, cwd=ROOT, ok=(0,), data=None):
    """Runs git; returns (status, stdout)."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=data,
                          capture_output=True, text=True)
    if proc.returncode not in ok:
        sys.exit(f"series-refresh: git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.returncode, proc.stdout


def source(path):
    """The project file installed at `path` in the tree, or None."""
    if path.startswith(COMPONENT) and "/" not in path[len(COMPONENT):]:
        src = path[len(COMPONENT):]
    else:
        src = path
    return src if os.path.isfile(os.path.join(ROOT, src)) else None


def split(text):
    """A patch's header and its 'diff --git' blocks, each (path, text)."""
    parts = re.split(r"(?m)^(?=diff --git )", text)
    blocks = []
    for part in parts[1:]:
        path = re.match(r"diff --git a/(\S+) b/", part).group(1)
        blocks.append((path, part))
    return parts[0], blocks


def apply_reverse(block, path, content, work):
    """`content` of `path` with the diff `block` undone, or None."""
    os.makedirs(os.path.dirname(os.path.join(work, path)), exist_ok=True)
    with open(os.path.join(work, path), "w") as f:
        f.write(content)
    if git("apply", "-R", "-", cwd=work, data=block, ok=range(0, 256))[0]:
        return None
    with open(os.path.join(work, path)) as f:
        return f.read()


def carry(old_after, new_after, old_before):
    """`old_before` with the change from `old_after` to `new_after`, or None.

    A change to lines that exist in `old_before` too goes to it; a change
    to lines the diff adds stays in the diff; a change to both is a
    conflict.  New lines go to `old_before`, unless they come between two
    lines the diff adds.
    """
    before = old_before.splitlines(keepends=True)
    after = old_after.splitlines(keepends=True)
    new = new_after.splitlines(keepends=True)
    # Where each line of the file after the diff was before it.
    was = {}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, b1, b2, a1, a2 in matcher.get_opcodes():
        if tag == "equal":
            was.update(zip(range(a1, a2), range(b1, b2)))
    edits = []
    matcher = difflib.SequenceMatcher(None, after, new, autojunk=False)
    for tag, a1, a2, n1, n2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if a1 == a2:
            # An insertion between lines a1 - 1 and a1.
            if a1 - 1 in was:
                at = was[a1 - 1] + 1
            elif a1 in was:
                at = was[a1]
            elif a1 == 0 or a1 == len(after):
                at = 0 if a1 == 0 else len(before)
            else:
                continue
            edits.append((at, at, new[n1:n2]))
            continue
        lines = [was.get(a) for a in range(a1, a2)]
        if all(b is None for b in lines):
            continue
        if None in lines or lines != list(range(lines[0], lines[0] + len(lines))):
            return None
        edits.append((lines[0], lines[-1] + 1, new[n1:n2]))
    for start, end, text in sorted(edits, key=lambda e: e[0], reverse=True):
        before[start:end] = text
    return "".join(before)


def diff(path, before, after, work):
    """The diff of `path` from `before` to `after`, as `git diff` writes it."""
    repo = os.path.join(work, "repo")
    if not os.path.isdir(repo):
        git("init", "-q", repo)
        attributes = os.path.join(ROOT, "build", "linux", ".gitattributes")
        if os.path.isfile(attributes):
            os.makedirs(os.path.join(repo, ".git", "info"), exist_ok=True)
            with open(attributes) as f, \
                 open(os.path.join(repo, ".git", "info", "attributes"), "w") as g:
                g.write(f.read())
    full = os.path.join(repo, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(before)
    git("add", path, cwd=repo)
    with open(full, "w") as f:
        f.write(after)
    return git("diff", "--abbrev=9", "--", path, cwd=repo)[1]


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    pdir = os.path.join(ROOT, "patches")
    names = sorted(n for n in os.listdir(pdir) if re.match(r"\d{4}-.*\.patch$", n))
    patches = {}
    for name in names:
        with open(os.path.join(pdir, name)) as f:
            patches[name] = split(f.read())

    # Each installed file's diffs, from the last patch back.
    chains = {}
    for name in reversed(names):
        for i, (path, _) in enumerate(patches[name][1]):
            if source(path):
                chains.setdefault(path, []).append((name, i))

    changed = set()
    with tempfile.TemporaryDirectory() as work:
        for path, chain in sorted(chains.items()):
            src = source(path)
            _, old_after = git("show", f"{base}:{src}")
            with open(os.path.join(ROOT, src)) as f:
                new_after = f.read()
            for name, i in chain:
                block = patches[name][1][i][1]
                old_before = apply_reverse(block, path, old_after, work)
                if old_before is None:
                    sys.exit(f"series-refresh: {name}: {path}: the diff does "
                             f"not undo onto the file at {base}, which the "
                             "patches must follow; nothing written")
                new_before = carry(old_after, new_after, old_before)
                if new_before is None:
                    sys.exit(f"series-refresh: {name}: {path}: the change "
                             "conflicts with the diff; nothing written")
                new_block = diff(path, new_before, new_after, work)
                if new_block != block:
                    patches[name][1][i] = (path, new_block)
                    changed.add(name)
                    print(f"series-refresh: {name}: {path}", flush=True)
                old_after, new_after = old_before, new_before

    for name in sorted(changed):
        header, blocks = patches[name]
        with open(os.path.join(pdir, name), "w") as f:
            f.write(header + "".join(text for _, text in blocks))
    if not changed:
        print("series-refresh: the patches' diffs follow the files")


def self_test():
    """Prints TAP: how `carry()` splits changes between a diff and the
    version before it."""
    before = "a\nb\nc\n"
    after = "a\nb\nX\nY\nc\n"  # the diff adds X and Y
    cases = [
        ("a line the diff adds changes in the diff only",
         "a\nb\nX2\nY\nc\n", before),
        ("a line before the diff changes in the version before too",
         "a2\nb\nX\nY\nc\n", "a2\nb\nc\n"),
        ("a context line of the diff changes in the version before too",
         "a\nb2\nX\nY\nc2\n", "a\nb2\nc2\n"),
        ("a line between two the diff adds goes to the diff",
         "a\nb\nX\nN\nY\nc\n", before),
        ("a line next to those the diff adds goes to the version before",
         "a\nN\nb\nX\nY\nc\n", "a\nN\nb\nc\n"),
        ("a line removed that the version before has goes from it too",
         "a\nb\nX\nY\n", "a\nb\n"),
        ("a change to lines of both is a conflict",
         "a\nb2\nX2\nY\nc\n", None),
    ]
    print(f"1..{len(cases)}")
    failed = 0
    for n, (what, new_after, want) in enumerate(cases, 1):
        got = carry(after, new_after, before)
        failed += got != want
        print(f"{'ok' if got == want else 'not ok'} {n} {what}")
        if got != want:
            print(f"# got {got!r}, want {want!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    main()
