"""Writers that lose nothing (issue 50), with real processes: of writers racing to one new file one writes it and the
others are refused in one line; a forced write replaces only a regular file; a read-modify-write (an operator
database, the calibration store) keeps every writer's part; SIGTERM ends a command as Ctrl-C does (its temporary file
removed, a sweep's points kept) with status 143; a killed writer's temporary file is known and removed.
scripts/writers_stress.py runs the same races 50 times each."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import DATA, write

from roofline.core.errors import RooflineError
from roofline.core.files import TMP_SUFFIX, atomic_write, locked
from roofline.core.process import child_env

# How long a test waits for a child to reach the point it is stopped at, or to finish: a bound against a hang,
# never a claim about speed (nothing here asserts a duration).
PATIENCE_S = 120.0


def roofline(*args: str) -> subprocess.Popen[str]:
    """`python -m roofline ARGS` as its own process (SIGINT at its default, whatever the runner's, so that Ctrl-C
    raises KeyboardInterrupt in it)."""
    return subprocess.Popen([sys.executable, "-m", "roofline", *args], env=child_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], env=child_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    """Each process's (status, stdout, stderr), once all have ended."""
    ends = [p.communicate(timeout=PATIENCE_S) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, ends, strict=True)]


def wait_for(found: object, what: str) -> None:
    """Poll `found()` (a callable) until true; fail naming `what` after PATIENCE_S."""
    deadline = time.monotonic() + PATIENCE_S
    while not found():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def start_together(go: Path, procs: list[subprocess.Popen[str]]) -> None:
    """Once every child has touched `go`.<its number> (ready), touch `go`: they wait for it to write at once."""
    wait_for(lambda: all(Path(f"{go}.{i}").exists() or p.poll() is not None for i, p in enumerate(procs)),
             "the writers to be ready")
    go.touch()


def temporaries(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(TMP_SUFFIX))


# ---------------------------------------------------------------- new files: one writes, the others are refused
def test_six_analyze_o_to_one_new_file_one_writes_it_five_are_refused(tmp_path: Path) -> None:
    """Issue 50: six `analyze -o same.json` at once all said they wrote it (one file survived; 3 of 6 exit 0 here
    before the fix). Each writer's document differs (its own m), so the file shows whose it is: the one that exit 0."""
    out = tmp_path / "same.json"
    procs = [roofline("analyze", "gemm", "--m", str(64 + i), "--n", "64", "--k", "64", "--no-time", "-o", str(out),
                      "--json") for i in range(6)]
    ends = finished(procs)
    won = [o for code, o, _ in ends if code == 0]
    refused = [e for code, _, e in ends if code == 1]
    assert len(won) == 1 and len(refused) == 5, ends
    assert json.loads(out.read_text()) == json.loads(won[0])
    for err in refused:
        assert err.count("\n") == 1 and err.startswith(f"error: {out} exists: not overwriting it"), err
    assert temporaries(tmp_path) == []


EXCLUSIVE_WRITER = """
import sys, time
from pathlib import Path
from roofline.core.errors import RooflineError
from roofline.core.files import atomic_write
go, path, text, me = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
Path(f"{go}.{me}").touch()
while not go.exists():  # all start writing at once
    time.sleep(0.001)
try:
    atomic_write(path, text, exclusive=True)
except RooflineError as exc:
    sys.exit(str(exc))
print("written")
"""


def test_exclusive_writers_past_the_first_check_still_make_one_file(tmp_path: Path) -> None:
    """The race `refuse_existing` cannot see: eight writers that all found no file reach the write at once. The
    file lands by a hard link, which fails where a file is: one says written, and the file is its text."""
    go, out = tmp_path / "go", tmp_path / "new.json"
    procs = [python(EXCLUSIVE_WRITER, str(go), str(out), f"writer {i}\n", str(i)) for i in range(8)]
    start_together(go, procs)
    ends = finished(procs)
    won = [i for i, (code, o, _) in enumerate(ends) if code == 0 and o == "written\n"]
    assert len(won) == 1, ends
    assert out.read_text() == f"writer {won[0]}\n"
    for i, (code, _, err) in enumerate(ends):
        if i != won[0]:
            assert code == 1 and err == f"{out} exists: not overwriting it (another writer made it while this one " \
                                        "ran; pass --force to replace it)\n", err
    assert temporaries(tmp_path) == []


def test_where_there_are_no_hard_links_the_name_is_claimed(tmp_path: Path) -> None:
    """The fallback of a file system without hard links (FAT, some FUSE mounts): the name claimed with O_EXCL, the
    whole file moved over the claim; a name taken is the same refusal."""
    from roofline.core.files import _claim_then_replace

    refusal = RooflineError("taken")
    tmp = write(tmp_path / ".x.tmp", "whole\n")
    _claim_then_replace(tmp, tmp_path / "x.json", refusal)
    assert (tmp_path / "x.json").read_text() == "whole\n" and not tmp.exists()
    tmp = write(tmp_path / ".y.tmp", "second\n")
    with pytest.raises(RooflineError, match=r"^taken$"):
        _claim_then_replace(tmp, tmp_path / "x.json", refusal)
    assert (tmp_path / "x.json").read_text() == "whole\n"


# ---------------------------------------------------------------- only a regular file is replaced
def test_force_replaces_only_a_regular_file(tmp_path: Path) -> None:
    """Issue 50: the atomic rename replaced FIFOs, symbolic links and (as root) device nodes, `-o /dev/full --force`
    included. Each is refused in one line, before the work and at the write, and left as it was."""
    fifo, target, link = tmp_path / "fifo", write(tmp_path / "target.txt", "keep\n"), tmp_path / "link.json"
    os.mkfifo(fifo)
    link.symlink_to(target.name)
    nodes = {fifo: "a FIFO", link: "a symbolic link"}
    if os.geteuid() == 0:  # a device node: a copy of /dev/null's (making one needs root)
        device = tmp_path / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        nodes[device] = "a device"
    procs = {node: roofline("analyze", "gemm", "--m", "64", "--no-time", "-o", str(node), "--force") for node in nodes}
    for node, kind in nodes.items():
        code, _, err = finished([procs[node]])[0]
        assert (code, err) == (1, f"error: cannot write {node}: it is {kind} (only a regular file is replaced)\n")
        with pytest.raises(RooflineError, match=f"it is {kind}"):  # at the write too (a node made since the check)
            atomic_write(node, "{}\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.readlink(link) == target.name and target.read_text() == "keep\n"
    if os.geteuid() == 0:
        assert stat.S_ISCHR(os.lstat(tmp_path / "null").st_mode)
    assert temporaries(tmp_path) == []


def test_checks_reports_replace_or_append_only_to_a_regular_file(tmp_path: Path) -> None:
    """Issue 50: `check --json/--junit/--markdown` replaced whatever was there (a FIFO by the JUnit report) and
    appended through a symbolic link. They are CI artifacts, replaced on every run without --force
    (docs/guide.md), but only where a regular file is."""
    from roofline.ci.judge import judge
    from roofline.core.document import read_document
    from roofline.report.check import write_outputs

    doc = read_document(DATA / "results_h200.json")
    report = judge(doc, doc)
    fifo, target, link = tmp_path / "junit.xml", write(tmp_path / "elsewhere.md", "theirs\n"), tmp_path / "summary.md"
    os.mkfifo(fifo)
    link.symlink_to(target.name)
    with pytest.raises(RooflineError, match=r"junit.xml: it is a FIFO \(only a regular file is replaced\)$"):
        write_outputs(report, junit=fifo)
    with pytest.raises(RooflineError, match=r"summary.md: it is a symbolic link \(only a regular file is replaced\)$"):
        write_outputs(report, markdown=link)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and target.read_text() == "theirs\n"
    write_outputs(report, json_path=tmp_path / "report.json", markdown=tmp_path / "kept.md")  # regular: written
    write_outputs(report, json_path=tmp_path / "report.json", markdown=tmp_path / "kept.md")  # replaced, appended
    assert json.loads((tmp_path / "report.json").read_text())["schema"] == "roofline-check"
    assert (tmp_path / "kept.md").read_text().count("###") == 2


# ---------------------------------------------------------------- read-modify-write under the folder's lock
SWEEP_WRITER = """
import sys, time
from pathlib import Path
from roofline.ceilings import opdb
go, path, me, n = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
device = {"kind": "cpu", "id": "cpu", "name": "Test CPU"}
db = opdb.open_for_sweep(device, path, me)  # each opens the file before any has written it
Path(f"{go}.{me}").touch()
while not go.exists():
    time.sleep(0.001)
for i in range(n):  # a point, then the database written, as a sweep saves as it goes
    db.points.append(opdb.Point(family="gemm", op="gemm", dtype="fp32", params={"m": i, "writer": me}, flops=1.0,
                                bytes=1.0, roofline_time_s=1e-6, time_s=2e-6))
    opdb.write(db)
"""


def test_sweeps_into_one_database_at_once_keep_every_point(tmp_path: Path) -> None:
    """Issue 50: two `calibrate ops --db same.json` at once kept one sweep's points. Four writers, each opening the
    file before any wrote it and then writing after each of its 5 points: all 4 x 5 = 20 points are in the file
    (each write merges what the others wrote, under the folder's lock from the read to the rename)."""
    from roofline.ceilings import opdb

    go, path = tmp_path / "go", tmp_path / "db.json"
    procs = [python(SWEEP_WRITER, str(go), str(path), str(w), "5") for w in range(4)]
    start_together(go, procs)
    assert all(code == 0 for code, _, _ in finished(procs))
    got = {(p.params["writer"], p.params["m"]) for p in opdb.read(path).points}
    assert got == {(str(w), i) for w in range(4) for i in range(5)}
    assert temporaries(tmp_path) == []


def test_a_merge_keeps_a_point_this_sweep_dropped_out() -> None:
    """A sweep drops an older timer's points to time them again; another writer's copy of them is not merged back,
    and a point both hold stays this writer's."""
    from roofline.ceilings import opdb

    def point(m: int, t: float) -> opdb.Point:
        return opdb.Point(family="gemm", op="gemm", dtype="fp32", params={"m": m}, flops=1.0, bytes=1.0,
                          roofline_time_s=1e-6, time_s=t)

    device = {"kind": "cpu", "id": "cpu", "name": "Test CPU"}
    mine = opdb.OpDB(device=device, points=[point(1, 1e-5)], created="2026-02-01T00:00:00Z")
    mine.dropped.add(point(2, 1.0).key())
    there = opdb.OpDB(device=device, points=[point(1, 9e-5), point(2, 9e-5), point(3, 9e-5)],
                      created="2026-01-01T00:00:00Z")
    assert opdb.merge(mine, there) == 1  # point 3 alone
    assert [(p.params["m"], p.time_s) for p in mine.points] == [(1, 1e-5), (3, 9e-5)]
    assert mine.created == "2026-01-01T00:00:00Z" and mine.merged == 1


STORE_WRITER = """
import sys, time
from pathlib import Path
from roofline.ceilings import store
from roofline.core.model import Ceilings
go, me, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
Path(f"{go}.{me}").touch()
while not go.exists():
    time.sleep(0.001)
for i in range(n):
    store.save(store.cpu_key(f"{me} {i}", 1), Ceilings(device_id="cpu", device_name=me, kind="cpu",
               source="measured", compute={"cpu_fp32": 1e11}, memory={"dram": 1e10}), {})
"""


def test_calibrations_saved_at_once_keep_every_entry(tmp_path: Path) -> None:
    """The calibration store is read, changed and written by each `calibrate`: four processes saving 5 entries
    each at once leave 4 x 5 = 20 entries (and the conftest's seeded one)."""
    from roofline.ceilings import store

    go = tmp_path / "go"
    procs = [python(STORE_WRITER, str(go), str(w), "5") for w in range(4)]
    start_together(go, procs)
    assert all(code == 0 for code, _, _ in finished(procs))
    names = {e["key"]["name"] for e in store.read_entries()}
    assert {f"{w} {i}" for w in range(4) for i in range(5)} <= names and len(names) == 21


def test_a_write_inside_a_locked_block_does_not_wait_for_itself(tmp_path: Path) -> None:
    with locked(tmp_path / "a.json"):
        atomic_write(tmp_path / "a.json", "1\n")
        atomic_write(tmp_path / "b.json", "2\n")  # the same folder
    assert (tmp_path / "a.json").read_text() == "1\n" and (tmp_path / "b.json").read_text() == "2\n"


# ---------------------------------------------------------------- SIGTERM as Ctrl-C; a killed writer's leftovers
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_write_leaves_no_temporary_file(tmp_path: Path, sig: int, status: int) -> None:
    """Issue 50: a killed `baseline update` left a hidden .tmp of 44 MB; SIGTERM ran no cleanup at all. A forced
    `-o` whose write waits for the folder's lock (held here) has its temporary file written: stopped there, by
    SIGTERM or SIGINT, it removes it, says `interrupted` in one line and exits 143 or 130 (128 + the signal)."""
    out = write(tmp_path / "out.json", "theirs\n")
    with locked(out):
        proc = roofline("analyze", "gemm", "--m", "64", "--no-time", "-o", str(out), "--force")
        wait_for(lambda: temporaries(tmp_path) or proc.poll() is not None, "the writer's temporary file")
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        code, _, err = finished([proc])[0]
    assert (code, err) == (status, "interrupted\n")
    assert temporaries(tmp_path) == [] and out.read_text() == "theirs\n"


SWEEP = """[sweep]
name = "long"
cpu_dtypes = ["fp32"]

[[family]]
op = "gemm"
cpu = {{ m = [{ms}], n = [64], k = [64] }}
"""


def test_sigterm_of_a_sweep_keeps_its_points_as_sigint_does(tmp_path: Path) -> None:
    """Issue 50: SIGTERM of `calibrate ops` kept no points (exit 143, no file) where Ctrl-C kept them. Each sweep is
    stopped once it says "level 1" (its 2 level-0 points measured; 31 more to go): both keep what they measured,
    say so in the same line, and exit 143 and 130."""
    suite = write(tmp_path / "long.toml", SWEEP.format(ms=", ".join(str(16 + 4 * i) for i in range(33))))
    runs = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        db = tmp_path / f"{sig.name}.json"
        runs[sig] = (db, roofline("calibrate", "ops", "--suite", str(suite), "--device", "cpu", "--budget", "600s",
                                  "--db", str(db)))
    for sig, (_, proc) in runs.items():
        assert proc.stderr is not None
        for line in proc.stderr:  # the notices, line by line as they come
            if line.startswith("note: level 1:"):
                proc.send_signal(sig)
                break
    for sig, status in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        db, proc = runs[sig]
        code, _, err = finished([proc])[0]
        kept = len(json.loads(db.read_text())["points"])
        assert code == status and kept >= 2, (sig, err)
        assert err.splitlines()[-1] == (f"interrupted: {kept} points measured kept in {db} ({kept} in all); the same "
                                        "command resumes")
        assert "Traceback" not in err
    assert temporaries(tmp_path) == []


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from roofline.core.files import _temp_name, _write_temp
_write_temp(_temp_name(Path(sys.argv[1])), "x" * 1_000_000)  # its temporary file written, killed before the rename
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_writers_temporary_file_is_named_as_ours_and_removed_by_the_next_write(tmp_path: Path) -> None:
    """SIGKILL runs no handler: the temporary file stays. Its name says whose it is (`.out.json.PID.HOST.*` +
    TMP_SUFFIX), and the next write of out.json on this machine removes it; a live writer's, another host's and a
    file not named as ours are kept."""
    from roofline.core.files import _host

    out = tmp_path / "out.json"
    proc = python(KILLED_WRITER, str(out))
    assert finished([proc])[0][0] == -signal.SIGKILL
    (left,) = temporaries(tmp_path)
    assert left.startswith(f".out.json.{proc.pid}.{_host()}.")
    live = write(tmp_path / f".out.json.{os.getpid()}.{_host()}.abcdefgh{TMP_SUFFIX}", "")
    other_host = write(tmp_path / f".out.json.{proc.pid}.elsewhere.abcdefgh{TMP_SUFFIX}", "")
    not_ours = write(tmp_path / ".out.json.1234.tmp", "")
    atomic_write(out, "{}\n")
    assert temporaries(tmp_path) == sorted([live.name, other_host.name]) and not_ours.exists()
