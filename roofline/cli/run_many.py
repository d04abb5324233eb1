"""`roofline run SUITE --repeat N` and `--devices`: the suite run again in fresh processes (`roofline run` itself,
one per run or per GPU), their documents merged into one, written and shown like one run's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from roofline.cli.common import note
from roofline.cli.results import save_and_print
from roofline.core.errors import RooflineError, UsageError

if TYPE_CHECKING:
    from roofline.core.document import Document


def child_args(*, gpu: str | None, device: str | None, warm_l2: bool, timer: str, power: str,
               kernels: bool, threads: int | str | None = None, db: Path | None = None) -> list[str]:
    """The options a `--repeat` run passes on to each of its runs (all that change what is measured, and the
    operator database of its predicted times: the merged records keep the first run's, `merge_runs`)."""
    return [*(["--gpu", gpu] if gpu else []), *(["--device", device] if device else []),
            *(["--warm-l2"] if warm_l2 else []), "--timer", timer, "--power", power,
            *([] if kernels else ["--no-kernels"]), *(["--threads", str(threads)] if threads else []),
            *(["--db", str(db)] if db is not None else [])]


def _run_child(cmd: list[str], seen: set[str] | None = None, hide: str | None = None) -> int:
    """One run in a fresh process: its table is dropped (the merged one is printed), its progress and notes
    (stderr) pass through, but a note already in `seen` (an earlier run's: the same CPU, the same roof) is said
    once, and a line naming `hide` (the temporary file the run writes, deleted after the merge) not at all."""
    import subprocess
    import sys

    from roofline.core.process import child_env

    if seen is None and hide is None:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False, env=child_env()).returncode
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env()) as p:
        assert p.stderr is not None
        for line in p.stderr:
            if (hide and hide in line) or (seen is not None and line.startswith("note:") and line in seen):
                continue
            if seen is not None and line.startswith("note:"):
                seen.add(line)
            sys.stderr.write(line)
        return p.wait()


def run_repeated(suite: Path, repeat: int, args: list[str]) -> Document:
    """`roofline run SUITE --repeat N`: the suite run N times one after another, each in a fresh process (the
    unit that repeats between CI jobs: its own clocks, placement, allocator and library start-up), merged into
    one document that keeps every run's samples (`ci.baseline.merge_runs`)."""
    import sys
    import tempfile

    from roofline.ci.baseline import merge_runs
    from roofline.ci.judge import load_for_check
    from roofline.measuring.target import command_line

    docs = []
    seen: set[str] = set()  # each run's notes, said once
    with tempfile.TemporaryDirectory(prefix="roofline-repeat-") as tmp:
        for i in range(1, repeat + 1):
            note(f"run {i} of {repeat} (a fresh process)")
            path = Path(tmp) / f"run{i}.json"
            code = _run_child([sys.executable, "-m", "roofline", "run", str(suite), "-o", str(path), *args],
                              seen, hide=tmp)
            if code != 0:
                raise RooflineError(f"run {i} of {repeat} failed (exit status {code}; its error is above)")
            docs.append((f"run {i}", load_for_check(path)))
    doc = merge_runs(docs)
    doc.extra["command"] = command_line()
    return doc


DEVICES_MODES = ("parallel", "serial")


def device_indices(devices: str | None, *, device: str | None, repeat: int, no_time: bool) -> list[int]:
    """The GPUs `--devices` names ([] for none or not given); its conflicts with other options refused."""
    if devices is None:
        return []
    from roofline.analysis.devices import parse_devices
    from roofline.measuring.device import detect_gpus

    indices = parse_devices(devices, len(detect_gpus()))
    if indices and device is not None:
        raise UsageError("give --devices or --device, not both")
    if indices and repeat > 1:
        raise UsageError("--devices with --repeat: run each GPU's repeats with --device cuda:N --repeat N")
    if indices and no_time:
        raise UsageError("--devices times the suite on each GPU: the model alone (--no-time) is the same on all")
    return indices


def check_conflicts(*, repeat: int, devices: str | None, no_time: bool, counters: bool, energy: bool) -> None:
    """The options that cannot go with `--repeat` or `--devices` (usage errors, before any work)."""
    if counters and repeat > 1:
        raise UsageError("--counters goes with one run: counter bytes are the same every run")
    if energy and (repeat > 1 or devices):
        raise UsageError("--energy goes with one run on one GPU: leave out --repeat and --devices")
    if repeat > 1 and no_time:
        raise UsageError("--repeat needs timed runs: the model alone (--no-time) is the same every run")


def run_many(suite: Path, name: str, indices: list[int], mode: str, repeat: int, args: list[str], *,
             counters: bool, db: Path | None, output: Path | None, force: bool, json_: bool, wide: bool) -> Document:
    """`--devices` (`indices`) or `--repeat`: the runs in fresh processes, merged, written and shown; the merged
    document."""
    if counters and indices:
        raise UsageError("--counters goes with one GPU: run it without --devices")
    if db is not None:  # a bad file: one line here, not one per child run
        from roofline.ceilings.opdb import read

        read(db)
    if indices:
        return show_on_devices(suite, indices, mode, args, output=output, force=force, json_=json_, wide=wide,
                               name=name)
    return show_repeated(suite, repeat, args, output=output, force=force, json_=json_, wide=wide, name=name)


def run_on_devices(suite: Path, indices: list[int], mode: str, args: list[str]) -> Document:
    """The suite on each GPU in `indices`, one fresh process per GPU (`run --device cuda:N`), all at once
    (parallel: their output kept in files, the first failure's last line reported) or one after another
    (serial: their progress shown), merged by `analysis.devices.merge_devices`."""
    import subprocess
    import sys
    import tempfile

    from roofline.analysis.devices import merge_devices
    from roofline.ci.judge import load_for_check
    from roofline.core.process import child_env
    from roofline.measuring.target import command_line
    from roofline.report.progress import StatusLine

    with tempfile.TemporaryDirectory(prefix="roofline-devices-") as tmp:
        paths = {i: Path(tmp) / f"gpu{i}.json" for i in indices}
        cmds = {i: [sys.executable, "-m", "roofline", "run", str(suite), "-o", str(paths[i]), "--device",
                    f"cuda:{i}", *args] for i in indices}
        if mode == "serial":
            for i in indices:
                note(f"GPU {i} ({indices.index(i) + 1} of {len(indices)})")
                code = _run_child(cmds[i])
                if code != 0:
                    raise RooflineError(f"the run on GPU {i} failed (exit status {code}; its error is above)")
        else:
            with StatusLine() as line:
                line.status(f"{suite.name} on GPUs {', '.join(map(str, indices))} at once")
                logs = {i: open(Path(tmp) / f"gpu{i}.err", "w") for i in indices}  # closed below
                try:
                    procs = {i: subprocess.Popen(cmds[i], stdout=subprocess.DEVNULL, stderr=logs[i],
                                                 env=child_env()) for i in indices}
                    codes = {i: p.wait() for i, p in procs.items()}
                finally:
                    for f in logs.values():
                        f.close()
            for i, code in codes.items():
                if code != 0:
                    said = [ln for ln in (Path(tmp) / f"gpu{i}.err").read_text().splitlines() if ln.strip()]
                    why = said[-1].removeprefix("error: ") if said else "no message"
                    raise RooflineError(f"the run on GPU {i} failed (exit status {code}): {why}")
        doc = merge_devices([(i, load_for_check(paths[i])) for i in indices], mode)
    doc.extra["command"] = command_line()
    return doc


def show_repeated(suite: Path, repeat: int, args: list[str], *, output: Path | None, force: bool, json_: bool,
            wide: bool, name: str) -> Document:
    """`--repeat N`: the runs, then the merged document written and shown like one run's, with its noise."""
    from roofline.ci.baseline import noise_summary
    from roofline.report.text import records_table, show

    doc = run_repeated(suite, repeat, args)
    save_and_print(doc, output, force, json_)
    if not json_:
        title = f"{name} on {doc.device.get('name') or '?'}, {repeat} runs (each time: the mean of its runs' medians)"
        show(records_table(doc.records, title=title, wide=wide), wide=wide)
        for line in noise_summary(doc):
            note(line)
        if output is not None:
            note(f"results written to {output}")
    return doc


def show_on_devices(suite: Path, indices: list[int], mode: str, args: list[str], *, output: Path | None, force: bool,
                json_: bool, wide: bool, name: str) -> Document:
    """`--devices`: the merged document written and shown, and any GPU slower than its peers named."""
    from roofline.analysis.devices import slow_devices
    from roofline.report.text import records_table, show

    doc = run_on_devices(suite, indices, mode, args)
    save_and_print(doc, output, force, json_)
    if not json_:
        title = f"{name} on {len(indices)} GPU(s) ({mode}): {doc.device.get('name') or '?'}"
        show(records_table(doc.records, title=title, wide=wide), wide=wide)
    slow = slow_devices(doc.records)
    for finding in slow:
        note(finding.sentence())
    if len(indices) > 1 and not slow:
        note(f"no GPU slower than its peers past the noise ({len(indices)} GPUs)")
    if output is not None and not json_:
        note(f"results written to {output}")
    return doc
