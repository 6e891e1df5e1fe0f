#!/usr/bin/env python3
"""Fails when a tracked C++ file differs from what clang-format makes of it under the root's
.clang-format (DEVELOPERS.md, Style). The layout is clang-format 14's (Debian 12's): another
major version formats some constructs differently, so the check needs 14 and passes with a note
when it is missing (scripts/deps.sh test installs it).
Usage: format.py ROOT [--clang-format PATH]   (or CLANG_FORMAT=PATH in the environment)"""
import argparse
import os
import re
import shutil
import subprocess
import sys

from tracked import tracked_files

SUFFIXES = (".cpp", ".h", ".hpp")
VERSION = 14


def version_of(exe):
    """clang-format's major version and its version line, or (None, why)."""
    try:
        line = subprocess.run([exe, "--version"], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        return None, str(e)
    m = re.search(r"version (\d+)\.", line)
    return (int(m.group(1)) if m else None), line


def find_clang_format(asked):
    """The clang-format to use: the one asked for, else clang-format-14, else clang-format."""
    for name in [asked] if asked else [f"clang-format-{VERSION}", "clang-format"]:
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--clang-format", default=os.environ.get("CLANG_FORMAT"))
    args = ap.parse_args()

    exe = find_clang_format(args.clang_format)
    if not exe:
        print(f"SKIPPED: clang-format {VERSION} is not installed, so formatting is not checked "
              "(scripts/deps.sh test installs it)")
        return 0
    major, line = version_of(exe)
    if major != VERSION:
        print(f"SKIPPED: {exe} is '{line}', not version {VERSION}; the tree is formatted with "
              f"clang-format {VERSION}, so formatting is not checked "
              f"(install clang-format-{VERSION}, or pass --clang-format PATH)")
        return 0
    print(f"using {exe}: {line}")

    files = [rel for rel in tracked_files(args.root)
             if rel.endswith(SUFFIXES) and os.path.isfile(os.path.join(args.root, rel))]
    if not files:
        print(f"no C++ files found under {args.root}", file=sys.stderr)
        return 1
    differ = []
    # A few hundred files a call keeps each command line short; --style=file finds the
    # .clang-format above each file.
    for i in range(0, len(files), 200):
        batch = files[i:i + 200]
        r = subprocess.run([exe, "--dry-run", "--Werror", "--style=file"] + batch,
                           cwd=args.root, capture_output=True, text=True)
        if r.returncode == 0:
            continue
        named = {m.group(1) for m in re.finditer(r"^(.+?):\d+:\d+: (?:error|warning):",
                                                 r.stderr, re.M)}
        found = [f for f in batch if f in named]
        if not found:  # failed without naming a file: report what it said
            print(r.stderr, file=sys.stderr)
            return 1
        differ += found
    for rel in differ:
        print(f"{rel}: not clang-formatted: run clang-format-{VERSION} -i {rel}",
              file=sys.stderr)
    if differ:
        print(f"{len(differ)} of {len(files)} C++ files differ from .clang-format",
              file=sys.stderr)
        return 1
    print(f"{len(files)} C++ files, all clang-formatted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
