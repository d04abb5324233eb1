"""`roofline compare`: ranking GPUs by roofline time, unsupported dtypes, prices and costs (ceilings.prices),
measured ceilings from the calibration store, measured times from a results document, suites, JSON, and the
table and chart (report.compare).

Datasheet figures used below (`roofline specs show ID`; dense peaks):
    HBM GB/s:       a100 (a100-sxm4-80gb) 2039, h100 (h100-sxm) 3352, h200 (h200-sxm) 4800, l40s 864, b200 7700
    BF16 tensor:    a100 312, h100 989.4, h200 989.4, l40s 366.4, b200 2250 TFLOP/s
    FP8 tensor:     h100 1978.9 TFLOP/s; the A100 has none
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers import DATA, ROOT, SUITES, write
from rich.console import Console

from roofline.analysis.compare import NO_PRICE, compare_op, compare_suite, compare_to_json, resolve_gpus
from roofline.ceilings import store
from roofline.ceilings.prices import load_prices
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import Ceilings
from roofline.ops import make
from roofline.report.compare import plot_compare, render_compare

H200_RESULTS = DATA / "results_h200.json"
DECODE = SUITES / "llm-decode.toml"
FIVE = ["a100", "h100", "h200", "l40s", "b200"]

# gemv m=1, n=k=8192, bf16: W (8192 x 8192 x 2 B) + x (8192 x 2 B) read, y (8192 x 2 B) written
GEMV_BYTES = 8192 * 8192 * 2 + 8192 * 2 + 8192 * 2  # = 134,250,496 B
GEMV_FLOPS = 2 * 8192 * 8192  # = 134,217,728: AI ~ 1 FLOP/B, far below every ridge point -> memory-bound
# gemm 8192^3 bf16: 2 x 8192^3 FLOPs, three 8192 x 8192 x 2 B matrices
GEMM_FLOPS = 2 * 8192**3  # = 1,099,511,627,776: AI = 2 x 8192^3 / (3 x 8192^2 x 2) = 2731 FLOP/B -> compute-bound
GEMM_BYTES = 3 * 8192 * 8192 * 2  # = 402,653,184 B


def gemv() -> object:
    return make("gemv", m=1, n=8192, k=8192)


def gemm(m: int = 8192) -> object:
    return make("gemm", m=m)


def text(table: object) -> str:
    c = Console(width=220, record=True)
    c.print(table)
    return c.export_text()


PRICES = """
[meta]
currency = "USD"
date = "2026-11-01"
source = "test prices"

[prices]
h100 = 3.0
h200-sxm = 3.6
"""


# ---------------------------------------------------------------- ranking
def test_memory_bound_op_ranks_by_bandwidth() -> None:
    c = compare_op(gemv(), "bf16", ["l40s", "a100", "h200", "h100"], None)
    assert [r.gpu for r in c.rows] == ["h200-sxm", "h100-sxm", "a100-sxm4-80gb", "l40s"]  # 4800 > 3352 > 2039 > 864
    assert all(r.bound == "memory" for r in c.rows)
    assert c.bytes == GEMV_BYTES and c.flops == GEMV_FLOPS
    # 134,250,496 B / 4800e9 B/s = 27.97 µs on the H200; / 864e9 = 155.4 µs on the L40S
    assert c.row("h200").time_s == pytest.approx(GEMV_BYTES / 4800e9)
    assert c.row("l40s").time_s == pytest.approx(GEMV_BYTES / 864e9)
    # attainable = AI x bandwidth = 134,217,728 / 134,250,496 x 4800e9 = 4.799 TFLOP/s
    assert c.row("h200").attainable_flops_per_s == pytest.approx(GEMV_FLOPS / GEMV_BYTES * 4800e9)


def test_compute_bound_op_ranks_by_peak() -> None:
    c = compare_op(gemm(), "bf16", ["a100", "l40s", "h100", "b200"], None)
    # 1.0995e12 FLOP / 2250e12 = 0.489 ms (B200) < / 989.4e12 = 1.111 ms (H100) < / 366.4e12 = 3.001 ms (L40S)
    # < / 312e12 = 3.524 ms (A100): the L40S beats the A100 here with 42% of its bandwidth
    assert [r.gpu for r in c.rows] == ["b200", "h100-sxm", "l40s", "a100-sxm4-80gb"]
    assert all(r.bound == "compute" for r in c.rows)
    assert c.row("l40s").time_s == pytest.approx(GEMM_FLOPS / 366.4e12)
    assert c.row("l40s").time_s > GEMM_BYTES / 864e9  # 3.0 ms of arithmetic vs 0.47 ms of traffic
    assert c.row("b200").attainable_flops_per_s == pytest.approx(2250e12)


def test_ratio_to_fastest_is_one_for_the_best() -> None:
    c = compare_op(gemv(), "bf16", FIVE, None)
    best = c.fastest
    assert best is not None and best.gpu == "b200" and best.rank == 1 and best.vs_fastest == 1.0
    assert [r.rank for r in c.rows] == [1, 2, 3, 4, 5]
    # the L40S: (bytes / 864e9) / (bytes / 7700e9) = 7700 / 864 = 8.91x
    assert c.row("l40s").vs_fastest == pytest.approx(7700 / 864)
    assert all(r.vs_fastest >= 1.0 for r in c.rows)  # type: ignore[operator]


def test_default_gpu_list_is_every_spec() -> None:
    from roofline.ceilings.specs import load_all

    c = compare_op(gemv(), "fp16", None, None)
    assert {r.gpu for r in c.rows} == set(load_all())


def test_gpu_names_aliases_commas_and_duplicates() -> None:
    assert [s.id for s in resolve_gpus(["h100,h200", "h100-sxm", " a100 "])] == \
        ["h100-sxm", "h200-sxm", "a100-sxm4-80gb"]
    with pytest.raises(UsageError, match="unknown GPU 'h300'"):
        resolve_gpus(["h300"])
    with pytest.raises(UsageError, match="no GPU to compare"):
        resolve_gpus([","])


# ---------------------------------------------------------------- unsupported
def test_fp8_gemm_on_a100_is_unsupported_not_an_error() -> None:
    c = compare_op(gemm(4096), "fp8", ["a100", "h100"], None)
    a100, h100 = c.row("a100"), c.row("h100")
    assert a100.status == "unsupported" and "fp8" in a100.reason
    assert a100.time_s is None and a100.rank is None and a100.vs_fastest is None  # not zero, not ranked
    assert h100.status == "ok" and h100.rank == 1 and h100.vs_fastest == 1.0
    assert c.rows[-1] is a100  # unsupported rows come last
    assert "unsupported" in text(render_compare(c))
    doc = compare_to_json(c)
    assert [g["status"] for g in doc["gpus"]] == ["ok", "unsupported"]
    assert doc["gpus"][1]["roofline_time_s"] is None


def test_bf16_on_v100_and_t4_is_unsupported() -> None:
    c = compare_op(gemv(), "bf16", ["v100", "t4", "h100"], None)
    assert [r.status for r in c.rows] == ["ok", "unsupported", "unsupported"]
    assert [r.gpu for r in c.ranked] == ["h100-sxm"]


def test_a_dtype_the_operator_lacks_is_an_error() -> None:
    with pytest.raises(UsageError, match="decode_attention does not support dtype fp8"):
        compare_op(make("decode_attention"), "fp8", FIVE, None)


# ---------------------------------------------------------------- prices
def test_prices_cost_per_call_and_per_million(tmp_path: Path) -> None:
    prices = load_prices(write(tmp_path / "prices.toml", PRICES))
    assert prices.currency == "USD" and prices.date == "2026-11-01"
    assert prices.per_hour == {"h100-sxm": 3.0, "h200-sxm": 3.6}  # aliases resolved to spec ids
    c = compare_op(gemv(), "bf16", ["h100", "h200"], prices, dbs={})  # the roofline time: no database
    h200 = c.row("h200")
    # 27.97 µs x 3.6 USD/h / 3600 s/h = 2.797e-8 USD per call; x 1e6 = 0.02797 USD per million calls
    per_call = GEMV_BYTES / 4800e9 * 3.6 / 3600
    assert h200.cost_per_call == pytest.approx(per_call)
    assert h200.cost_per_million == pytest.approx(per_call * 1e6)
    # H100: (bytes / 3352e9) x 3.0 / 3600; its cost over the H200's = (3.0 / 3352) / (3.6 / 4800) = 1.193
    assert c.row("h100").cost_vs_cheapest == pytest.approx((3.0 / 3352) / (3.6 / 4800))
    assert h200.cost_vs_cheapest == 1.0


def test_missing_price_shows_no_price(tmp_path: Path) -> None:
    prices = load_prices(write(tmp_path / "prices.toml", PRICES))
    c = compare_op(gemv(), "bf16", ["h100", "l40s"], prices)
    l40s = c.row("l40s")
    assert l40s.status == "ok" and l40s.price_per_hour is None and l40s.cost_per_million is None
    assert NO_PRICE in text(render_compare(c))
    row = next(g for g in compare_to_json(c)["gpus"] if g["gpu"] == "l40s")
    assert row["price_note"] == "no price" and row["cost_per_million_calls"] is None


@pytest.mark.parametrize(("body", "key", "what"), [
    (PRICES.replace("h100 = 3.0", "h100 = -3.0"), "prices.h100", "positive"),
    (PRICES.replace("h100 = 3.0", "h100 = 0"), "prices.h100", "positive"),
    (PRICES.replace("h100 = 3.0", 'h100 = "3"'), "prices.h100", "must be a number"),
    (PRICES.replace("h100 = 3.0", "h300 = 3.0"), "prices.h300", "unknown GPU"),
    (PRICES.replace("h200-sxm = 3.6", "h100-sxm = 3.6"), "prices.h100-sxm", "already priced by 'h100'"),
    (PRICES.replace('currency = "USD"\n', ""), "meta.currency", "missing"),
    (PRICES.replace('date = "2026-11-01"\n', ""), "meta.date", "missing"),
    (PRICES.replace('"2026-11-01"', '"November 2026"'), "meta.date", "YYYY-MM-DD"),
    (PRICES.replace("[meta]", "[metadata]"), "metadata", "unknown top-level key"),
    (PRICES.split("[prices]")[0], "prices", "missing or empty [prices]"),
    (PRICES.replace("h100 = 3.0", "h100 = "), "malformed TOML", ""),
])
def test_prices_file_validation(tmp_path: Path, body: str, key: str, what: str) -> None:
    path = write(tmp_path / "prices.toml", body)
    with pytest.raises(UsageError) as info:
        load_prices(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: {key}") and what in msg and "\n" not in msg


def test_prices_file_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such prices file"):
        load_prices(tmp_path / "nope.toml")


def test_toml_date_accepted(tmp_path: Path) -> None:
    path = write(tmp_path / "prices.toml", PRICES.replace('"2026-11-01"', "2026-11-01"))
    assert load_prices(path).date == "2026-11-01"


def test_example_prices_file_is_valid_and_marked_illustrative() -> None:
    path = ROOT / "examples" / "prices.toml"
    prices = load_prices(path)
    assert prices.currency and prices.date and "illustrative" in prices.source
    assert "ILLUSTRATIVE" in path.read_text()


# ---------------------------------------------------------------- measured ceilings (the calibration store)
def _calibration(driver: str, dram: float, compute: dict[str, float]) -> None:
    store.save(store.gpu_key("NVIDIA H100 80GB HBM3", driver),
               Ceilings(device_id="h100-sxm", device_name="NVIDIA H100 80GB HBM3", kind="gpu", source="measured",
                        compute=compute, memory={"dram": dram, "l2": 9e12}), {"seeded_by": "test_compare"})


def test_measured_ceilings_are_used_and_marked() -> None:
    _calibration("580.1", 3.0e12, {"bf16_tensor_dense_tflops": 700e12})
    assert set(store.newest_gpu_ceilings()) == {"h100-sxm"}  # the CPU entry conftest seeds is not a GPU
    c = compare_op(gemv(), "bf16", ["h100", "h200"], None, dbs={})  # the roofline time: no database
    h100, h200 = c.row("h100"), c.row("h200")
    assert h100.roof == "measured" and h200.roof == "datasheet"
    assert h100.time_s == pytest.approx(GEMV_BYTES / 3.0e12)  # the measured 3.0 TB/s, not the datasheet 3352 GB/s
    assert h100.record is not None and h100.record.roof_source == "measured"
    assert compare_to_json(c)["gpus"][1]["roof"] == "measured"
    assert "measured" in text(render_compare(c))
    assert compare_op(gemv(), "bf16", ["h100"], None, use_measured=False).row("h100").roof == "datasheet"


def test_newest_calibration_per_gpu_wins() -> None:
    _calibration("580.1", 2.5e12, {"bf16_tensor_dense_tflops": 700e12})
    _calibration("590.2", 3.1e12, {"bf16_tensor_dense_tflops": 720e12})  # saved later: newer
    assert store.newest_gpu_ceilings()["h100-sxm"].dram_bytes_per_s == 3.1e12
    assert compare_op(gemv(), "bf16", ["h100"], None, dbs={}).row("h100").time_s == pytest.approx(GEMV_BYTES / 3.1e12)


def test_calibration_without_the_pipe_is_mixed() -> None:
    _calibration("580.1", 3.0e12, {"bf16_tensor_dense_tflops": 700e12})
    c = compare_op(gemm(), "fp16", ["h100"], None)  # FP16 tensor not measured: the datasheet's 989.4 TFLOP/s
    row = c.row("h100")
    assert row.roof == "mixed" and row.time_s == pytest.approx(GEMM_FLOPS / 989.4e12)
    assert any("datasheet FP16 tensor" in n for n in c.notes)


# ---------------------------------------------------------------- --measured results
def test_measured_time_beside_the_prediction() -> None:
    c = compare_op(make("gemm", m=4096), "bf16", ["h100", "h200"], None, measured=H200_RESULTS)
    h200 = c.row("h200")
    assert h200.measured_time_s == pytest.approx(193e-6)  # the record's time_s in results_h200.json
    # roofline: 2 x 4096^3 / 989.4e12 = 138.9 µs; fraction = 138.9 / 193 = 72%
    assert h200.roofline_fraction == pytest.approx(2 * 4096**3 / 989.4e12 / 193e-6)
    assert c.row("h100").measured_time_s is None  # measured on the H200 only
    out = text(render_compare(c))
    assert "193 µs" in out and "72%" in out
    assert compare_to_json(c)["measured"] == str(H200_RESULTS)


def test_measured_matches_dtype_and_params() -> None:
    # the document holds gemm 2048^3 in fp32 only: the bf16 one does not match
    c = compare_op(make("gemm", m=2048), "bf16", ["h200"], None, measured=H200_RESULTS)
    assert c.row("h200").measured_time_s is None
    assert any("no timed record matches gemm" in n for n in c.notes)
    c = compare_op(make("gemm", m=2048), "fp32", ["h200"], None, measured=H200_RESULTS)
    assert c.row("h200").measured_time_s == pytest.approx(3.349e-4)


def test_measured_params_written_as_floats_match() -> None:
    # A results document written by another tool may hold m=4096.0: the same shape as the operator's m=4096
    # (Record.key compares canonical params), so the H200's 193 µs is still found.
    doc = json.loads(H200_RESULTS.read_text())
    for rec in doc["records"]:
        rec["params"] = {k: float(v) if isinstance(v, int) else v for k, v in rec["params"].items()}
    assert any(rec["params"].get("m") == 4096.0 for rec in doc["records"])
    c = compare_op(make("gemm", m=4096), "bf16", ["h200"], None, measured=doc)
    assert c.row("h200").measured_time_s == pytest.approx(193e-6)
    assert not any("no timed record matches" in n for n in c.notes)


def test_measured_on_a_gpu_not_compared_is_noted() -> None:
    doc = json.loads(H200_RESULTS.read_text())
    c = compare_op(make("gemm", m=4096), "bf16", ["h100"], None, measured=doc)
    assert any("not among the compared GPUs" in n for n in c.notes)


def test_measured_without_timed_records_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RooflineError, match="no timed records"):
        compare_op(gemv(), "bf16", ["h200"], None, measured=DATA / "results_analytic.json")


# ---------------------------------------------------------------- suites
def test_suite_totals_are_the_sum_of_entries(tmp_path: Path) -> None:
    prices = load_prices(write(tmp_path / "prices.toml", PRICES))
    s = compare_suite(DECODE, FIVE, prices)
    assert len(s.entries) == 19
    for row in s.ranked:
        entry_times = [e.row(row.gpu).time_s for e in s.entries]
        assert row.time_s == pytest.approx(sum(entry_times))  # type: ignore[arg-type]
        assert sum(row.by_op.values()) == pytest.approx(row.time_s)
        assert row.memory_bound_share == pytest.approx(1.0)  # decode at batch 16: every entry memory-bound
    assert [r.gpu for r in s.rows] == ["b200", "h200-sxm", "h100-sxm", "a100-sxm4-80gb", "l40s"]
    assert s.fastest is not None and s.fastest.vs_fastest == 1.0
    h200 = s.row("h200")
    assert h200.cost_per_million == pytest.approx(h200.time_s * 3.6 / 3600 * 1e6)  # type: ignore[operator]
    assert s.row("a100").cost_per_million is None  # no price in this file
    doc = json.loads(json.dumps(compare_to_json(s)))
    assert doc["kind"] == "suite" and len(doc["entries"]) == 19
    assert doc["gpus"][0]["roofline_time_s"] == pytest.approx(s.rows[0].time_s)
    out = text(render_compare(s))
    assert "decode_" in out and NO_PRICE in out


def test_suite_with_an_unsupported_gpu() -> None:
    s = compare_suite(DECODE, ["h100", "v100"], None)
    v100 = s.row("v100")
    assert v100.status == "unsupported" and v100.time_s is None and v100.rank is None
    assert "19 of 19 entries unsupported" in v100.reason
    assert [r.gpu for r in s.ranked] == ["h100-sxm"]


def test_suite_measured_counts_matched_entries() -> None:
    # results_h200.json holds gemm 4096^3 bf16 and rmsnorm 4096 x 4096 bf16: two llm-prefill entries
    s = compare_suite(SUITES / "llm-prefill.toml", ["h200"], None, measured=H200_RESULTS)
    row = s.row("h200")
    assert row.measured_entries == 2 and row.measured_time_s == pytest.approx(193e-6 + 1.968e-5)
    assert "2/18" in text(render_compare(s))


# ---------------------------------------------------------------- JSON and chart
def test_json_is_serialisable_and_ranked(tmp_path: Path) -> None:
    c = compare_op(gemv(), "bf16", ["a100", "h200", "v100"], load_prices(write(tmp_path / "prices.toml", PRICES)))
    doc = json.loads(json.dumps(compare_to_json(c)))
    assert doc["kind"] == "op" and doc["compare_version"] == 1 and doc["prices"]["currency"] == "USD"
    assert [g["gpu"] for g in doc["gpus"]] == ["h200-sxm", "a100-sxm4-80gb", "v100-sxm2"]
    assert [g["rank"] for g in doc["gpus"]] == [1, 2, None]
    assert math.isclose(doc["gpus"][0]["vs_fastest"], 1.0)


def test_plot_writes_a_png(tmp_path: Path) -> None:
    prices = load_prices(write(tmp_path / "prices.toml", PRICES))
    c = compare_op(make("gemm", m=4096), "bf16", ["h100", "h200", "l40s", "v100"], prices, measured=H200_RESULTS)
    path = plot_compare(c, tmp_path / "op.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    s = compare_suite(DECODE, FIVE, prices)
    svg = plot_compare(s, tmp_path / "suite.svg").read_text()
    assert "bar:op:decode_attention:h200-sxm" in svg and "bar:cost:h200-sxm" in svg


def test_plot_rejects_an_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot tell the chart format"):
        plot_compare(compare_op(gemv(), "bf16", ["h100"], None), tmp_path / "chart.gif")

