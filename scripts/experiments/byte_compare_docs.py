"""Do the documented analytic commands print what they printed before a refactor? (Issue 27's check.)

    git worktree add /tmp/old fd160a2
    python scripts/experiments/byte_compare_docs.py /tmp/old .

Takes every `roofline` line of the OLD tree's README and docs/*.md shell blocks (tests/test_docs_commands.py
reads them) that writes no file, runs it analytic (`analyze` gets --no-time and, without a --gpu, --gpu h100),
plus a check, its markdown and a terminal chart of two old results documents, in both trees (PYTHONPATH each
tree, COLUMNS=80, no GPU), and prints `same` or the diff for each.
"""

from __future__ import annotations

import difflib
import os
import shlex
import subprocess
import sys
from pathlib import Path


def commands(old: Path) -> list[list[str]]:
    sys.path.insert(0, str(old / "tests"))
    cwd = os.getcwd()
    os.chdir(old)
    try:
        from test_docs_commands import commands as documented
        found = [argv for _, argv in documented(("",))]
    finally:
        os.chdir(cwd)
    out = []
    for a in found:
        if "-o" in a or "--output" in a:
            continue
        if a[0] in ("specs", "ops", "occupancy", "compare"):
            out.append(a)
        elif a[0] == "analyze":
            out.append(a if "--no-time" in a else [*a, "--no-time", *([] if "--gpu" in a else ["--gpu", "h100"])])
    return out


def main() -> int:
    old, new = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    cmds = commands(old)
    docs = sorted((old / "docs" / "results").rglob("kernels*.json"))[:2]
    if len(docs) == 2:
        a, b = map(str, docs)
        cmds += [["check", b, "--baseline", a], ["check", b, "--baseline", a, "--markdown"], ["plot", a, "--terminal"]]
    env = dict(os.environ, COLUMNS="80", ROOFLINE_NO_GPU="1", ROOFLINE_CACHE_DIR="/tmp/byte_compare_cache")
    differ = 0
    for argv in cmds:
        outs = [subprocess.run([sys.executable, "-m", "roofline", *argv], cwd=tree, capture_output=True, text=True,
                               env={**env, "PYTHONPATH": str(tree)}) for tree in (old, new)]
        same = [(o.returncode, o.stdout) for o in outs]
        differ += same[0] != same[1]
        print("same" if same[0] == same[1] else "DIFF", shlex.join(argv))
        if same[0] != same[1]:
            print("".join(difflib.unified_diff(outs[0].stdout.splitlines(True), outs[1].stdout.splitlines(True))))
    print(f"{len(cmds)} commands, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
