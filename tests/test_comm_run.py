"""`roofline collectives` on the CPU: real torch.distributed gloo ranks started by torch's elastic launcher (2
and 3 processes, no mocks), a small sweep, what rank 0 writes, a rank that dies, bad input; the alpha-beta fit
on synthetic data; `plot` and `check` on a collectives document; `run --devices` (its parsing, merging and the
slow-GPU rule on synthetic records, its refusals on this GPU-less machine).

Each launch starts its processes afresh (~2-5 s here, most of it importing torch), so the sweeps are the
smallest that show the arithmetic: 1 KiB and 64 KiB, 3 samples.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import ROOT, rendered, run

from roofline.analysis.commfit import fit_alpha_beta
from roofline.analysis.devices import merge_devices, parse_devices, slow_devices
from roofline.cli.collectives import parse_sizes
from roofline.core.document import Document, read_document, write_document
from roofline.core.errors import UsageError
from roofline.core.record import Record

KIB = 1024


# ---------------------------------------------------------------- the fit (pure)
def test_fit_recovers_alpha_beta_from_exact_data() -> None:
    # t = 5 us + x / (100 GB/s): at x = 1 MB, 5 us + 10 us = 15 us
    xs = [1e3, 1e4, 1e5, 1e6, 1e7]
    fit = fit_alpha_beta(xs, [5e-6 + x / 100e9 for x in xs])
    assert fit.intercept_s == pytest.approx(5e-6, rel=1e-9)
    assert fit.bandwidth_bytes_per_s == pytest.approx(100e9, rel=1e-9)
    assert fit.knee_bytes == pytest.approx(5e5, rel=1e-9)  # n1/2 = 5e-6 s x 100e9 B/s
    assert fit.worst_relative_error < 1e-9
    assert fit.time_s(1e6) == pytest.approx(15e-6)


def test_fit_worst_error_reads_the_noise() -> None:
    # the same line, measured 2% high and low in turn: no line is further than 2% from every point
    xs = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8]
    ts = [(5e-6 + x / 100e9) * (1.02 if i % 2 else 0.98) for i, x in enumerate(xs)]
    fit = fit_alpha_beta(xs, ts)
    assert 0.015 < fit.worst_relative_error < 0.03
    assert fit.bandwidth_bytes_per_s == pytest.approx(100e9, rel=0.05)


@pytest.mark.parametrize(("xs", "ts"), [([1.0, 1.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 0.0]), ([1.0], [1.0, 2.0])])
def test_fit_refuses_what_cannot_be_fitted(xs: list[float], ts: list[float]) -> None:
    with pytest.raises(UsageError):
        fit_alpha_beta(xs, ts)


# ---------------------------------------------------------------- sizes
@pytest.mark.parametrize(("text", "sizes"), [
    ("1KiB:8KiB", (1024, 2048, 4096, 8192)),  # x2 steps, both ends kept
    ("1KiB:4GiB", tuple(2**k for k in range(10, 33))),  # 2^10 .. 2^32: 23 sizes
    ("1MiB,64MiB", (2**20, 2**26)),
    ("4096", (4096,)),
])
def test_parse_sizes(text: str, sizes: tuple[int, ...]) -> None:
    assert parse_sizes(text) == sizes


# ---------------------------------------------------------------- real gloo runs
def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def test_two_gloo_ranks_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "comm.json"
    code, text, err = run(capsys, "collectives", "--ops", "all_reduce,all_gather", "--sizes", "1KiB,64KiB",
                          "--samples", "3", "-o", str(out))
    assert code == 0, err
    assert "all_gather" in text and "busbw" in text
    d = _doc(out)
    assert d["collectives"]["world_size"] == 2 and d["collectives"]["backend"] == "gloo"
    assert [r["rank"] for r in d["collectives"]["ranks"]] == [0, 1]
    recs = d["records"]
    assert [(r["op"], r["params"]) for r in recs] == [
        ("all_reduce", {"bytes": 1024, "ranks": 2}), ("all_reduce", {"bytes": 65536, "ranks": 2}),
        ("all_gather", {"bytes": 1024, "ranks": 2}), ("all_gather", {"bytes": 65536, "ranks": 2})]
    for r in recs:
        c = r["collective"]
        assert len(c["rank_samples_s"]) == 2 and all(len(s) == 3 for s in c["rank_samples_s"])
        # a sample is the mean over the ranks
        assert r["time_samples_s"][0] == pytest.approx((c["rank_samples_s"][0][0] + c["rank_samples_s"][1][0]) / 2)
        assert c["algbw_bytes_per_s"] == pytest.approx(r["params"]["bytes"] / r["time_s"])
        # nccl-tests' factors at n = 2: all_reduce 2 x 1/2 = 1, all_gather 1/2
        factor = 1.0 if r["op"] == "all_reduce" else 0.5
        assert c["busbw_bytes_per_s"] == pytest.approx(c["algbw_bytes_per_s"] * factor)
        assert c["fit_worst_relative_error"] >= c["fit_relative_error"] >= 0
        assert c["link_bytes_per_s_one_way"] is None  # a CPU has no NVLink figure
    # two sizes: the fitted line goes through both medians
    assert recs[0]["collective"]["fit_worst_relative_error"] < 1e-6
    # plot routes the document to the busbw chart
    code, text, _ = run(capsys, "plot", str(out), "--terminal")
    assert code == 0 and "busbw (one direction) by message size" in text and "64 KiB" in text
    chart = tmp_path / "comm.svg"
    assert run(capsys, "plot", str(out), "-o", str(chart))[0] == 0 and chart.stat().st_size > 0


def test_three_gloo_ranks_round_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, err = run(capsys, "collectives", "--ops", "reduce_scatter", "--sizes", "1KiB", "--samples", "3",
                          "--nproc", "3", "--dtype", "fp32", "--json")
    assert code == 0, err
    d = json.loads(text)
    (r,) = d["records"]
    # 1 KiB of fp32 = 256 elements, rounded down to a multiple of 3 ranks: 255 x 4 B = 1020 B
    assert r["params"] == {"bytes": 1020, "ranks": 3}
    assert len(r["collective"]["rank_samples_s"]) == 3
    # reduce_scatter busbw factor (n-1)/n = 2/3
    assert r["collective"]["busbw_bytes_per_s"] == pytest.approx(r["collective"]["algbw_bytes_per_s"] * 2 / 3)
    assert "alpha_s" not in r["collective"]  # one size: nothing to fit


def test_a_rank_that_dies_ends_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "comm.json"
    code, _, err = run(capsys, "collectives", "--ops", "all_reduce", "--sizes", "1KiB,2KiB", "--samples", "2",
                       "-o", str(out), "--inject-failure", "1")
    assert code == 1
    # the launcher may see rank 0 fail on the lost connection before it sees rank 1 exit: the status is said
    # only when it saw it
    assert err.strip() in ("error: rank 1 of 2 died (exit status 3); the other ranks were stopped, nothing written",
                           "error: rank 1 of 2 died; the other ranks were stopped, nothing written")
    assert not out.exists()


@pytest.mark.parametrize(("args", "message"), [
    (("--sizes", "0"), "--sizes: a collective's size must be > 0 bytes, got '0'"),
    (("--sizes", "1KiB:0"), "--sizes: a collective's size must be > 0 bytes, got '0'"),
    (("--ops", "all_reduce,allreduce"), "unknown collective 'allreduce' (known: all_reduce, all_gather, "
                                        "reduce_scatter, all_to_all, broadcast)"),
    (("--dtype", "fp8"), "--dtype fp8: collectives run on bf16, fp16, fp32, fp64 tensors"),
    (("--backend", "nccl"), "--backend nccl: no CUDA GPU here (use --backend gloo for CPU processes)"),
    (("--nproc", "0"), "--nproc must be >= 1, got 0"),
])
def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                      message: str) -> None:
    code, _, err = run(capsys, "collectives", *args)
    assert code == 2
    assert err.strip() == f"error: {message}"


# ---------------------------------------------------------------- check on collectives documents
def _collective_record(op: str, nbytes: int, samples: list[float], device: int | None = None) -> Record:
    return Record(op=op, variant=None, params={"bytes": nbytes, "ranks": 2}, dtype="bf16", flops=0.0,
                  bytes_read=nbytes, bytes_written=nbytes, bytes=2.0 * nbytes, gpu="h200-sxm", device_kind="gpu",
                  peak_flops_per_s=1e15, peak_bytes_per_s=9e11, ridge_point=1e15 / 9e11, bound="memory",
                  roofline_time_s=2 * nbytes / 9e11, time_s=sorted(samples)[len(samples) // 2],
                  time_samples_s=samples, collective={"busbw_bytes_per_s": nbytes / samples[0]},
                  device_index=device)


def test_check_fails_a_slower_all_reduce(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tight = [1e-4 * (1 + 0.001 * i) for i in range(10)]  # 100.0 .. 100.9 us
    base = [_collective_record("all_reduce", n, tight) for n in (2**20, 2**30)]
    base.append(_collective_record("all_gather", 2**20, tight))
    # the 1 GiB all-reduce 20% slower; the same op at 1 MiB and the all-gather unchanged
    new = [base[0], dataclasses.replace(base[1], time_samples_s=[t * 1.2 for t in tight],
                                        time_s=1.2 * base[1].time_s), base[2]]
    device = {"kind": "gpu", "name": "NVIDIA H200", "spec_id": "h200-sxm"}
    b = write_document(Document(device=device, records=base, extra={"collectives": {}}), tmp_path / "b.json")
    n = write_document(Document(device=device, records=new, extra={"collectives": {}}), tmp_path / "n.json")
    assert read_document(n).records[1].key() != read_document(n).records[0].key()  # size tells them apart
    code, text, err = run(capsys, "check", str(n), "--baseline", str(b))
    assert code == 1, err
    worse = [line for line in text.splitlines() if "bytes=1073741824" in line and "worse" in line]
    assert worse and "+20.0%" in text


# ---------------------------------------------------------------- run --devices
def test_parse_devices() -> None:
    assert parse_devices("all", 2) == [0, 1]
    assert parse_devices("1,0,1", 2) == [1, 0]
    assert parse_devices("none", 0) == []
    with pytest.raises(UsageError, match=r"--devices 7: this machine has 1 GPU\(s\), indices 0 to 0"):
        parse_devices("7", 1)
    with pytest.raises(UsageError, match="no GPU on this machine"):
        parse_devices("0", 0)
    with pytest.raises(UsageError, match="GPU indices"):
        parse_devices("zero", 2)


@pytest.mark.parametrize("devices", ["7", "all", "0"])
def test_run_devices_on_a_cpu_machine_is_exit_2(capsys: pytest.CaptureFixture[str], devices: str) -> None:
    code, _, err = run(capsys, "run", "suites/smoke.toml", "--devices", devices)
    assert code == 2
    assert err.strip() == (f"error: --devices {devices}: no GPU on this machine (NVML sees none); leave --devices "
                           "out or give none")


def test_merge_devices_and_the_slow_gpu() -> None:
    tight = [1e-3 * (1 + 0.002 * i) for i in range(10)]  # 1.000 .. 1.018 ms: half-IQR ~0.45%
    docs = []
    for index, factor in ((0, 1.0), (1, 1.01), (2, 1.10)):  # GPU 1: 1% slower (under 3%); GPU 2: 10%
        rec = dataclasses.replace(_collective_record("all_reduce", 2**20, [t * factor for t in tight]),
                                  collective=None)
        docs.append((index, Document(device={"kind": "gpu", "name": "NVIDIA H200", "index": index},
                                     records=[rec])))
    merged = merge_devices(docs, "parallel")
    assert [r.device_index for r in merged.records] == [0, 1, 2]
    assert len({r.key() for r in merged.records}) == 3  # check tells the GPUs apart
    assert [d["index"] for d in merged.device["devices"]] == [0, 1, 2]
    (slow,) = slow_devices(merged.records)
    # GPU 2 against the median of its peers' medians (1.009 and 1.019 ms: 1.014 ms): 1.1 x 1.009 / 1.014 - 1
    assert slow.device == 2 and slow.fraction == pytest.approx(1.1 * 1.009 / 1.01405 - 1, rel=1e-3)
    assert slow.sentence().startswith("GPU 2 is 9.5% slower than its peers on all_reduce bf16 bytes=1048576")


def test_analyze_takes_gpus_as_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("analyze", "all_reduce", "--bytes", "268435456", "--gpu", "h200", "--no-time", "--json")
    a = json.loads(run(capsys, *args, "--gpus", "8")[1])
    b = json.loads(run(capsys, *args, "--ranks", "8")[1])
    assert a["records"] == b["records"] and a["records"][0]["params"]["ranks"] == 8


def test_one_rank_runs_as_on_a_one_gpu_machine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    code, _, err = run(capsys, "collectives", "--ops", "all_reduce,broadcast", "--sizes", "1KiB,2KiB", "--samples",
                       "2", "--nproc", "1", "-o", str(out))
    assert code == 0, err
    recs = _doc(out)["records"]
    assert [r["params"]["ranks"] for r in recs] == [1, 1, 1, 1]
    # one rank: busbw factors 2 x 0 / 1 = 0 (all_reduce) and 1 (broadcast)
    assert recs[0]["collective"]["busbw_bytes_per_s"] == 0
    assert recs[2]["collective"]["busbw_bytes_per_s"] == pytest.approx(recs[2]["collective"]["algbw_bytes_per_s"])
    code, text, _ = run(capsys, "plot", str(out), "--terminal")
    assert code == 0 and text.startswith("algbw (one rank")


def test_fits_and_chart_of_a_synthetic_gpu_run(tmp_path: Path) -> None:
    from roofline.analysis.commfit import fit_alpha_beta
    from roofline.core.format import si
    from roofline.measuring.collectives import _with_fits
    from roofline.ops.collectives import algbw, busbw, ring_bytes_per_gpu
    from roofline.report.chart.comm_draw import save_comm_chart
    from roofline.report.comm import comm_chart, knee_busbw

    # all_reduce over 2 GPUs that follows t = 8 us + bytes sent / 370 GB/s exactly, on the H200's 450 GB/s link
    recs = []
    for k in range(10, 33):
        t = 8e-6 + ring_bytes_per_gpu("all_reduce", 2**k, 2) / 370e9
        recs.append(_collective_record("all_reduce", 2**k, [t]))
        recs[-1] = dataclasses.replace(recs[-1], time_s=t, collective={
            "ranks": 2, "busbw_bytes_per_s": busbw("all_reduce", 2**k, 2, t),
            "algbw_bytes_per_s": algbw(2**k, t), "link_bytes_per_s_one_way": 450e9})
    recs = _with_fits(recs, fit_alpha_beta, si)
    c = recs[0].collective or {}
    assert c["alpha_s"] == pytest.approx(4e-6, rel=1e-6)  # 8 us over 2 x (2 - 1) ring steps
    assert 1 / c["beta_s_per_byte"] == pytest.approx(370e9, rel=1e-6)
    assert c["knee_bytes"] == pytest.approx(8e-6 * 370e9, rel=1e-6)  # n1/2 = 2.96 MB; busbw factor 1 at n = 2
    assert c["best_busbw_bytes_per_s"] == (recs[-1].collective or {})["busbw_bytes_per_s"]
    doc = Document(device={"name": "NVIDIA H200", "spec_id": "h200-sxm"}, records=recs,
                   extra={"collectives": {"world_size": 2, "backend": "nccl", "dtype": "bf16"}})
    chart = comm_chart([doc])
    assert [v for _, v in chart.ceilings] == [450e9]
    (line,) = chart.lines
    # at the knee busbw is half the asymptote: 185 GB/s, interpolated between 2 MiB and 4 MiB on the chart
    assert knee_busbw(line) == pytest.approx(185e9, rel=0.05)
    assert save_comm_chart([doc], tmp_path / "c.png").stat().st_size > 10_000


def test_a_merged_document_charts_each_gpu() -> None:
    from roofline.report.chart.model import chart_model

    rec = dataclasses.replace(_collective_record("all_reduce", 2**20, [1e-3] * 5), collective=None,
                              achieved_flops_per_s=1e9, arithmetic_intensity=0.5)
    doc = merge_devices([(i, Document(device={"kind": "gpu", "name": "NVIDIA H200"}, records=[rec]))
                         for i in (0, 1)], "serial")
    assert [p.label for p in chart_model([doc], roof="datasheet").points] == \
        ["all_reduce bf16 [GPU 0]", "all_reduce bf16 [GPU 1]"]


def test_the_collectives_table_reads_its_rates_in_one_unit_that_fits_them() -> None:
    """New-user pass (issue 30): two CPU ranks over gloo move a few MB/s, which the table printed as 0.000585
    GB/s. The H200 pair's run (docs/results/collectives) reads in GB/s (its all_reduce at 4 GiB: busbw 346 GB/s);
    the same records at 1/10,000 of those rates read in MB/s (34.6, not 0.0346 GB/s)."""
    from roofline.report.comm import collectives_table

    doc = read_document(ROOT / "docs" / "results" / "collectives" / "comm.json.gz")
    text = rendered(collectives_table(doc), 80)
    assert "busbw\nGB/s" not in text and "GB/s" in text.splitlines()[2] and "346" in text
    rates = ("algbw_bytes_per_s", "busbw_bytes_per_s")
    slow = [dataclasses.replace(r, collective={k: v / 1e4 if k in rates else v for k, v in r.collective.items()})
            for r in doc.records]
    text = rendered(collectives_table(dataclasses.replace(doc, records=slow)), 80)
    header, body = text.split("─" * 10, 1)
    assert "MB/s" in header and "GB/s" not in header and "34.6" in body  # the 4 GiB all_reduce, as 346 GB/s was
