"""Bad input, from the command line and from Python (issue 52, "Sixty tracebacks and wrong answers from bad input"):
each row is one input of the issue, and what roofline must answer: one line and the exit status of
docs/guide.md#exit-status's table (2: bad input; the table's row is named beside each case), or from Python the
project's own error (roofline.core.errors: UsageError, RooflineError), never a traceback, a hang or a wrong answer.

The documents are schema-v1 results as the runner writes them (the gate's honest pair of tests/test_gate_attacks.py:
a gemm and a relu on the H200, 50 lognormal samples each, 2% spread, seeded), each row editing one field. Inputs
that could hang (a FIFO, /dev/zero) or spawn processes run in a child process with a timeout, so a regression fails
the row instead of stopping the suite.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run

GEMM = {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "epilogue": "none"}
RELU = {"numel": 268435456}
# How long a child process may take to refuse its input (importing roofline is ~1 s on a loaded 2-core machine);
# past it the input hung: a FIFO's read waits for a writer forever.
CHILD_TIMEOUT_S = 120
# The address space a child process may take: importing torch maps ~2 GiB; reading /dev/zero whole would take the
# machine's memory (shared by other work) before it failed.
CHILD_MEMORY = 8 * 2**30
HOSTILE = '<img src=x onerror="alert(1)">'


def lognormal(n: int, center: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * rng.lognormvariate(0.0, 0.02) for _ in range(n)]


def record(op: str, params: dict[str, Any], samples: list[float], gpu: str = "h200-sxm") -> dict[str, Any]:
    """A schema-v1 timed record on the H200, time_s the median of its samples (as the runner stores it)."""
    return {"op": op, "variant": None, "params": dict(params), "dtype": "fp16", "flops": 1.0e11,
            "bytes_read": 6.7e7, "bytes_written": 3.3e7, "bytes": 1.0e8, "arithmetic_intensity": 1000.0,
            "gpu": gpu, "roof_source": "datasheet", "peak_flops_per_s": 989e12, "peak_bytes_per_s": 4.8e12,
            "ridge_point": 989e12 / 4.8e12, "bound": "compute", "roofline_time_s": 0.5e-3,
            "time_s": sorted(samples)[len(samples) // 2], "time_samples_s": list(samples)}


def document(gpu: str = "h200-sxm", name: str = "NVIDIA H200", op: str = "gemm") -> dict[str, Any]:
    return {"schema_version": 1, "tool_version": "0.1.0", "created": "2026-12-01T00:00:00+00:00",
            "device": {"kind": "gpu", "spec_id": gpu, "name": name, "driver_version": "560.35.03"},
            "records": [record(op, GEMM, lognormal(50, 1e-3, 1), gpu),
                        record("relu", RELU, lognormal(50, 2e-4, 3), gpu)]}


def doc_file(tmp: Path, name: str = "doc.json", **field: Any) -> Path:
    """A results document whose first record has `field` (one key: its value) in place of the honest one."""
    doc = document()
    doc["records"][0].update(field)
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


def text_file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def big_flops(tmp: Path, zeros: int) -> Path:
    """A document whose first record's flops is 1 followed by `zeros` zeros, an integer literal JSON allows."""
    text = json.dumps(document())
    assert '"flops": 100000000000.0' in text  # the first record's 1e11 (record())
    return text_file(tmp, "big.json", text.replace('"flops": 100000000000.0', '"flops": 1' + "0" * zeros, 1))


def suite(tmp: Path, head: str = "", entry: str = 'op = "gemm"\nparams = { m = 64, n = 64, k = 64 }') -> Path:
    """A suite file: `head` (top-level keys, a [suite] table) and one [[entry]] of `entry`'s lines."""
    return text_file(tmp, "suite.toml", f"{head}\n[[entry]]\n{entry}\n")


def fifo(tmp: Path) -> Path:
    path = tmp / "results.json"
    os.mkfifo(path)
    return path


# How long a FIFO's writer waits for a reader (`fed_fifo`): a read refused before it opens never comes.
WRITER_WAIT_S = 30.0


def fed_fifo(tmp: Path) -> Path:
    """A FIFO that a thread feeds an honest document once a reader opens it: read in this process, it ends (a
    reader that opened it reads a valid document, and does not refuse it) instead of hanging the tests."""
    import threading
    import time

    path = fifo(tmp)
    data = json.dumps(document()).encode()

    def feed() -> None:
        end = time.monotonic() + WRITER_WAIT_S
        while time.monotonic() < end:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until a reader has it open
            except OSError:
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            os.write(fd, data)
            os.close(fd)
            return

    threading.Thread(target=feed, daemon=True).start()
    return path


def spec_dir(tmp: Path, value: str) -> Path:
    """A copy of specs/h100-sxm.toml whose memory bandwidth is `value` (TOML: nan, inf, 1e308, 1e-300)."""
    text = (ROOT / "specs" / "h100-sxm.toml").read_text()
    assert "memory_bandwidth_gbps = 3352\n" in text  # the datasheet's 3352 GB/s, H100 whitepaper v1.04 Table 3
    folder = tmp / "specs"
    folder.mkdir()
    (folder / "h100-sxm.toml").write_text(text.replace("memory_bandwidth_gbps = 3352\n",
                                                       f"memory_bandwidth_gbps = {value}\n", 1))
    return folder


# ---------------------------------------------------------------- the command line
@dataclass(frozen=True)
class Cli:
    """`roofline ARGS` (ARGS from `args(tmp_path)`) exits `code` with one error line matching `says`; `child`: in a
    child process (an input that could hang or spawn processes); `after(tmp_path)`: what else must hold."""

    args: Callable[[Path], list[str]]
    code: int
    says: str
    child: bool = False
    after: Callable[[Path], None] | None = None


def pair(tmp: Path, results: dict[str, Any] | None = None, base: dict[str, Any] | None = None) -> list[str]:
    """A check's two documents (the honest pair by default): [results, --baseline, baseline]."""
    r, b = tmp / "r.json", tmp / "base.json"
    r.write_text(json.dumps(results or document()))
    b.write_text(json.dumps(base or document()))
    return [str(r), "--baseline", str(b)]


def markdown_escaped(tmp: Path) -> None:
    page = (tmp / "report.md").read_text()
    assert "<img" not in page and "&lt;img src=x onerror=\"alert(1)\"&gt;" in page


def baseline_kept(tmp: Path) -> None:
    assert json.loads((tmp / "base.json").read_text())["device"]["spec_id"] == "h200-sxm"


def chart_cut(tmp: Path) -> None:
    """The 1,000,000-character name is drawn cut (report/chart/labels.py LABEL_CHARS: 120), not whole: the SVG
    was 78 MB; an honest chart of two points is ~60 kB (tests/test_plot.py's)."""
    from roofline.report.chart.labels import LABEL_CHARS

    svg = (tmp / "chart.svg").read_text()
    assert "x" * 1000 not in svg and "x" * (LABEL_CHARS // 2 - 1) in svg
    assert len(svg) < 2_000_000


CLI: dict[str, Cli] = {
    # -- documents with a field of the wrong type (guide row 2: "a field of another type such as params a string")
    "document params a string": Cli(lambda t: ["plot", str(doc_file(t, params="m=4096")), "--terminal"], 2,
                                    r"record 0 \(gemm\): params must be an object, got 'm=4096'"),
    "document op a list": Cli(lambda t: ["plot", str(doc_file(t, op=["gemm"])), "--terminal"], 2,
                              r"record 0 \(\['gemm'\]\): op must be a string"),
    "document dtype an int": Cli(lambda t: ["plot", str(doc_file(t, dtype=16)), "--terminal"], 2,
                                 r"dtype must be a string.*got 16"),
    # (a record's own time_s as text was refused before; one in its timing block was read as it was)
    "document timing.warmup_s a string": Cli(lambda t: ["check", str(doc_file(t, timing={"warmup_s": "1 ms"})),
                                                        "--baseline", str(doc_file(t, "base.json"))], 2,
                                             r"timing.warmup_s must be a number or null, got '1 ms'"),
    "document clocks.sm_mhz a string": Cli(lambda t: ["report", str(doc_file(t, clocks={"sm_mhz": "1980"})), "-o",
                                                      str(t / "r.html")], 2, r"clocks.sm_mhz must be an object"),
    "document nested 200,000 deep": Cli(lambda t: ["plot", str(text_file(t, "deep.json", "[" * 200_000 +
                                                                         "]" * 200_000)), "--terminal"], 2,
                                        r"nested deeper than Python reads"),
    "document of a 400-digit integer": Cli(lambda t: ["plot", str(big_flops(t, 400)), "--terminal"], 2,
                                           r"flops is an integer of 401 digits"),
    "document of a 5,000-digit integer": Cli(lambda t: ["plot", str(big_flops(t, 5000)), "--terminal"], 2,
                                             r"not a results document: Exceeds the limit"),
    "a FIFO as results": Cli(lambda t: ["plot", str(fifo(t)), "--terminal"], 2, r"a FIFO \(named pipe\), not a results",
                             child=True),
    "/dev/zero as results": Cli(lambda t: ["check", "/dev/zero", "--baseline", str(doc_file(t))], 2,
                                r"/dev/zero: a device, not a results file", child=True),
    "/dev/zero as a suite": Cli(lambda t: ["run", "/dev/zero", "--no-time", "--gpu", "h100"], 2,
                                r"/dev/zero: a device, not a suite file", child=True),
    # -- suites with a field of the wrong type (guide row 2: "a suite whose suite or params is no table")
    "suite = 'x'": Cli(lambda t: ["run", str(suite(t, head="suite = 'x'")), "--no-time", "--gpu", "h100"], 2,
                       r"suite must be a table .*got 'x'"),
    "suite params a string": Cli(lambda t: ["run", str(suite(t, entry='op = "gemm"\nparams = "m=64"')), "--no-time",
                                            "--gpu", "h100"], 2, r"entry 1: params must be a table .*got 'm=64'"),
    "suite op a list": Cli(lambda t: ["run", str(suite(t, entry='op = ["gemm"]')), "--no-time", "--gpu", "h100"], 2,
                           r"entry 1: op must be a string, got \['gemm'\]"),
    "suite name an int": Cli(lambda t: ["run", str(suite(t, head="[suite]\nname = 5")), "--no-time", "--gpu",
                                        "h100"], 2, r"suite.name must be a string, got 5"),
    # -- values on the command line (guide row 2: "a bad value")
    "--m 4,096": Cli(lambda t: ["analyze", "gemm", "--m", "4,096", "--no-time", "--gpu", "h100"], 2,
                     r"--m: '4,096' reads as 4096 written with thousands separators"),
    "--m of 400 digits": Cli(lambda t: ["analyze", "gemm", "--m", "9" * 400, "--no-time", "--gpu", "h100"], 2,
                             r"m must be <= 9223372036854775807, got an integer of 400 digits"),
    "--threads 99999999999": Cli(lambda t: ["analyze", "gemm", "--m", "64", "--n", "64", "--k", "64", "--device", "cpu",
                                            "--no-kernels", "--threads", "99999999999"], 2,
                                 r"--threads must be a whole number of at most 4096, got 99999999999"),
    "collectives --nproc 100000": Cli(lambda t: ["collectives", "--backend", "gloo", "--nproc", "100000"], 2,
                                      r"--nproc 100000: at most 64 CPU processes", child=True),
    # -- a chart of a 1,000,000-character op name: drawn, its name cut (it drew 214 s into a 78 MB SVG)
    "a chart of a 1,000,000-character op": Cli(lambda t: ["plot", str(doc_file(t, op="x" * 1_000_000)), "-o",
                                                          str(t / "chart.svg")], 0, r"chart written to",
                                               after=chart_cut),
    # -- exit codes against the guide's table: a check's own I/O is never the regression's 1
    "check --junit under a file": Cli(lambda t: ["check", *pair(t), "--junit", str(t / "r.json" / "junit.xml")], 2,
                                      r"cannot write .*junit.xml: .*r.json is a file, not a folder"),
    "check --markdown a folder": Cli(lambda t: ["check", *pair(t), "--markdown", str(t)], 2,
                                     r"cannot write .*: it is a folder"),
    # (the tool exited 2 already; the README said 1: test_the_guide_and_readme_give_the_codes_the_tool_exits_with)
    "baseline update over another GPU's": Cli(lambda t: ["baseline", "update", pair(
        t, results=document("a100-sxm", "NVIDIA A100-SXM4-80GB"))[0], "--baseline", str(t / "base.json")], 2,
        r"recorded on another GPU.*--force", after=baseline_kept),
    # -- a hostile op name in a markdown report: shown as text, never markup (the check passes: exit 0)
    "check --markdown of an op <img onerror>": Cli(lambda t: ["check", *pair(t, document(op=HOSTILE),
                                                                             document(op=HOSTILE)),
                                                              "--markdown", str(t / "report.md")], 0, r"",
                                                   after=markdown_escaped),
}


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def run_child(args: list[str]) -> tuple[int, str]:
    """`roofline ARGS` in a child process: (exit status, stderr); a hang fails the row (CHILD_TIMEOUT_S), and so
    does reading /dev/zero whole (CHILD_MEMORY)."""
    try:
        done = subprocess.run([sys.executable, "-m", "roofline", *args], capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S, stdin=subprocess.DEVNULL, cwd=ROOT, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"roofline {' '.join(args)[:200]} did not end in {CHILD_TIMEOUT_S} s")
    return done.returncode, done.stderr


@pytest.mark.parametrize("case", list(CLI.values()), ids=list(CLI))
def test_the_command_line_answers_bad_input_in_one_line(case: Cli, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    args = case.args(tmp_path)
    if case.child:
        code, err = run_child(args)
    else:
        code, _, err = run(capsys, *args)
    assert "Traceback" not in err, err[-2000:]
    assert code == case.code, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    if case.code == 0:
        assert not errors and re.search(case.says, err), err[-2000:]
    else:
        assert len(errors) == 1 and re.search(case.says, errors[0]), err[-2000:]
        assert len(errors[0]) < 600  # one line a terminal shows: a 1,000,000-character value is named, not printed
    if case.after is not None:
        case.after(tmp_path)


# ---------------------------------------------------------------- Python
@dataclass(frozen=True)
class Api:
    """`call(tmp_path)` raises `error` (a roofline.core.errors type) whose one line matches `says`;
    `after(tmp_path)`: what else must hold."""

    call: Callable[[Path], Any]
    error: str
    says: str
    after: Callable[[Path], None] | None = None


def measure_huge_bytes(tmp: Path) -> Any:
    import roofline

    return roofline.measure(lambda: None, flops=1.0, bytes=10**400)


def write_none_records(tmp: Path) -> Any:
    from roofline.core.document import Document, write_document

    return write_document(Document(device={}, records=None), tmp / "out.json")  # type: ignore[arg-type]


def run_check_int_rules(tmp: Path) -> Any:
    from roofline.ci.judge import run_check

    args = pair(tmp)
    return run_check(args[0], args[2], fail_on=5)  # type: ignore[arg-type]


def write_unreadable(field: str, value: Any) -> Callable[[Path], Any]:
    """write_document of a record whose `field` holds `value`: what read_document would refuse is never written."""
    def call(tmp: Path) -> Any:
        import dataclasses

        from roofline.core.document import read_document, write_document

        doc = read_document(doc_file(tmp, "honest.json"))
        doc.records[0] = dataclasses.replace(doc.records[0], **{field: value})
        return write_document(doc, tmp / "out.json")
    return call


def nothing_written(tmp: Path) -> None:
    assert not (tmp / "out.json").exists()


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def read(path: Callable[[Path], Path]) -> Callable[[Path], Any]:
    def call(tmp: Path) -> Any:
        from roofline.core.document import read_document

        return read_document(path(tmp))
    return call


def load_specs(value: str) -> Callable[[Path], Any]:
    def call(tmp: Path) -> Any:
        from roofline.ceilings.specs import load_all

        return load_all(str(spec_dir(tmp, value)))
    return call


API: dict[str, Api] = {
    "measure(bytes=10**400)": Api(measure_huge_bytes, "UsageError",
                                  r"measure: bytes must be a finite number, got an integer of 401 digits"),
    "write_document(records=None)": Api(write_none_records, "UsageError",
                                        r"doc.records must be a list of roofline.Record, got None", nothing_written),
    "run_check(fail_on=5)": Api(run_check_int_rules, "UsageError",
                                r"fail_on.* must be failure rules as text, such as 'median:5%'.*got 5"),
    "write_document of params 10**400": Api(write_unreadable("params", {"m": 10**400}), "UsageError",
                                            r"params.m is an integer of 401 digits", nothing_written),
    "write_document of a negative time": Api(write_unreadable("time_s", -1e-3), "UsageError", r"time_s",
                                             nothing_written),
    "write_document of params nested 5,000 deep": Api(write_unreadable("params", {"m": nested(5000)}), "UsageError",
                                                      r"nested too deeply", nothing_written),
    "write_document of a Path": Api(write_unreadable("params", {"m": Path("x")}), "UsageError",
                                    r"not a results document JSON can hold", nothing_written),
    "write_document of a params string": Api(write_unreadable("params", "m=64"), "UsageError",
                                             r"params must be an object, got 'm=64'", nothing_written),
    "read_document of a FIFO": Api(read(fed_fifo), "UsageError", r"a FIFO \(named pipe\), not a results file"),
    "read_document of an op a list": Api(read(lambda t: doc_file(t, op=["gemm"])), "UsageError",
                                         r"op must be a string"),
    # spec files (guide row 1, "a malformed spec file under specs/"): numbers no GPU has
    "a spec of NaN GB/s": Api(load_specs("nan"), "RooflineError", r"memory_bandwidth_gbps.*finite number, got nan"),
    "a spec of inf GB/s": Api(load_specs("inf"), "RooflineError", r"memory_bandwidth_gbps.*finite number, got inf"),
    "a spec of 1e308 GB/s": Api(load_specs("1e308"), "RooflineError", r"memory_bandwidth_gbps.*from 0.001 to 1e\+07"),
    "a spec of 1e-300 GB/s": Api(load_specs("1e-300"), "RooflineError",
                                 r"memory_bandwidth_gbps.*from 0.001 to 1e\+07"),
}


@pytest.mark.parametrize("case", list(API.values()), ids=list(API))
def test_the_python_api_raises_the_projects_errors(case: Api, tmp_path: Path) -> None:
    from roofline.core import errors

    with pytest.raises(errors.RooflineError) as info:  # never OverflowError, TypeError, AttributeError
        case.call(tmp_path)
    assert type(info.value).__name__ == case.error
    assert "\n" not in str(info.value) and len(str(info.value)) < 600
    assert re.search(case.says, str(info.value)), str(info.value)
    if case.after is not None:
        case.after(tmp_path)


def test_the_guide_and_readme_give_the_codes_the_tool_exits_with() -> None:
    """The rows above whose status docs/guide.md's table names in words (and README's summary): a baseline of
    another GPU and an unwritable check report are 2, as the tool exits (the README said 1 for the first)."""
    guide = (ROOT / "docs" / "guide.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in guide.splitlines() if re.match(r"\| (0|1|2|130|143) \|", line)}
    assert "`baseline update` over a baseline recorded on another GPU" in rows["2"]
    assert "another GPU" not in rows["1"]
    assert "a `check` report (`--junit`" in rows["2"] and "--junit" not in rows["1"]
    readme = (ROOT / "README.md").read_text()
    one, _, two = readme[readme.index("Errors are one line"):readme.index("(docs/guide.md#exit-status)")].partition(
        " and 2 for")
    assert "another GPU" in two and "another GPU" not in one
