"""The typed record: schema v1 in and out. Documents under tests/data (written by earlier versions of the
tool) read and written back give the same JSON, key order included; records built here serialise with the
field set and order the README lists."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from helpers import DATA

from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.document import Document, dumps, read_document, validate_document
from roofline.core.dtypes import get_dtype
from roofline.core.errors import RooflineError
from roofline.core.record import Clocks, Record, Timing, analytic_record, canonical_params, with_time
from roofline.ops import make

DOCS = sorted(DATA.glob("*.json"))


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_documents_round_trip_exactly(path) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(path.read_text())
    again = json.loads(dumps(read_document(path)))
    assert again == raw
    assert [list(r) for r in again["records"]] == [list(r) for r in raw["records"]]  # key order too


def test_the_data_documents_cover_timed_and_analytic_records() -> None:
    records = [r for p in DOCS for r in read_document(p).records]
    assert any(r.timed for r in records) and any(not r.timed for r in records)
    timed = next(r for r in records if r.timed)
    assert isinstance(timed.timing, Timing) and timed.timing.method
    assert timed.clocks is None or isinstance(timed.clocks, Clocks)


def _gemm() -> Record:
    return analytic_record(make("gemm", m=4096), get_dtype("bf16"), gpu_ceilings(resolve("h200")))


def test_an_analytic_record_writes_the_schema_fields_in_order() -> None:
    d = _gemm().to_dict()
    assert list(d)[:8] == ["op", "variant", "params", "dtype", "flops", "bytes_read", "bytes_written", "bytes"]
    assert d["variant"] is None and "time_s" not in d and "clocks" not in d  # untimed: no timed fields at all
    # 2 x 4096^3 FLOPs; three 4096 x 4096 bf16 matrices = 3 x 32 MiB
    assert d["flops"] == 2 * 4096**3 and d["bytes"] == 3 * 4096 * 4096 * 2


def test_a_timed_record_round_trips_and_unknown_keys_survive() -> None:
    rec = dataclasses.replace(with_time(_gemm(), 200e-6), timing=Timing(method="graph", stats={"n": 3}))
    d = rec.to_dict()
    assert d["roofline_fraction"] == pytest.approx(rec.roofline_time_s / 200e-6)
    assert d["timing"]["after_compute_s"] is None  # the timers always wrote this key
    d["from_a_newer_tool"] = {"x": 1}
    back = Record.from_dict(d)
    assert back == rec and back.extra == {"from_a_newer_tool": {"x": 1}}
    assert back.to_dict() == d


def test_records_are_values() -> None:
    rec = _gemm()
    timed = with_time(rec, 1e-3)
    assert rec.time_s is None and timed.time_s == 1e-3  # with_time returns a new record
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.op = "other"  # type: ignore[misc]


def test_matching_key_treats_integral_floats_as_ints() -> None:
    assert canonical_params({"m": 4096.0, "n": 1}) == canonical_params({"n": 1, "m": 4096})
    a = _gemm()
    assert dataclasses.replace(a, params={**a.params, "m": 4096.0}).key() == a.key()
    assert dataclasses.replace(a, params={**a.params, "m": 4097}).key() != a.key()


def test_a_document_refuses_a_record_without_its_fields() -> None:
    with pytest.raises(RooflineError, match="record 0 lacks"):
        validate_document({"schema_version": 1, "records": [{"op": "gemm"}]}, "x.json")
    doc = validate_document({"schema_version": 1, "records": [], "device": {}, "note": "kept"}, "x.json")
    assert isinstance(doc, Document) and json.loads(dumps(doc))["note"] == "kept"


# ---------------------------------------------------------------- numbers that are no measurement (issue 50)
def _timed() -> dict:
    return with_time(_gemm(), 200e-6).to_dict() | {"time_samples_s": [190e-6, 200e-6, 210e-6]}


@pytest.mark.parametrize(("edit", "said"), [
    # JSON has no Infinity or NaN (dumps writes them as null); Python's reader takes both, and 1e999 as inf
    (lambda r: r["time_samples_s"].__setitem__(1, float("inf")), "record 0 (gemm): time_samples_s[1] is Infinity"),
    (lambda r: r["time_samples_s"].__setitem__(2, float("nan")), "record 0 (gemm): time_samples_s[2] is NaN"),
    (lambda r: r.update(time_s=float("-inf")), "record 0 (gemm): time_s is -Infinity"),
    (lambda r: r.update(roofline_time_s=float("nan")), "record 0 (gemm): roofline_time_s is NaN"),
    (lambda r: r.update(run_noise={"relative_sd": {"median": float("inf")}}),
     "record 0 (gemm): run_noise.relative_sd.median is Infinity"),
    (lambda r: r.update(kernel_times_s=[[1e-6, float("inf")]]), "record 0 (gemm): kernel_times_s[0][1] is Infinity"),
    (lambda r: r.update(time_s=0.0), "record 0 (gemm): time_s must be a positive number (seconds), got 0.0"),
    (lambda r: r.update(time_s=-2e-4), "record 0 (gemm): time_s must be a positive number"),
    (lambda r: r.update(time_s="2e-4"), "record 0 (gemm): time_s must be a positive number (seconds), got '2e-4'"),
    (lambda r: r.update(time_s=True), "record 0 (gemm): time_s must be a positive number"),
    (lambda r: r.update(time_samples_s=[True, 1e-4]), "record 0 (gemm): time_samples_s must be positive numbers"),
    (lambda r: r.update(energy={"samples_j": [0.1, -0.1]}), "record 0 (gemm): energy.samples_j must be positive"),
    (lambda r: r.update(energy={"samples_j": ["0.1"]}), "record 0 (gemm): energy.samples_j must be positive"),
])
def test_a_record_whose_numbers_are_no_measurement_is_refused(edit, said) -> None:  # type: ignore[no-untyped-def]
    rec = _timed()
    edit(rec)
    text = json.dumps({"schema_version": 1, "device": {}, "records": [rec]})  # Infinity and NaN, as a file has them
    with pytest.raises(RooflineError, match=re.escape(f"x.json: {said}")) as exc:
        validate_document(json.loads(text), "x.json")
    assert exc.value.exit_code == 2 and "\n" not in str(exc.value)


def test_a_huge_literal_and_a_non_finite_region_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rec = json.dumps(_timed()).replace("0.00021", "1e999")  # a literal past the largest double reads as inf
    path = tmp_path / "r.json"
    path.write_text(f'{{"schema_version": 1, "device": {{}}, "records": [{rec}]}}')
    with pytest.raises(RooflineError, match=re.escape("record 0 (gemm): time_samples_s[2] is Infinity")):
        read_document(path)
    # outside the records too: a profile's regions are judged on their times
    doc = {"schema_version": 1, "device": {}, "records": [_timed()],
           "profile": {"regions": {"step": {"time_s": float("nan")}}}}
    with pytest.raises(RooflineError, match=re.escape("x.json: profile.regions.step.time_s is NaN")):
        validate_document(json.loads(json.dumps(doc)), "x.json")


def test_a_measurement_reads_as_before() -> None:
    rec = _timed() | {"energy": {"energy_j": 0.1, "samples_j": [0.1, 0.11]}}
    doc = validate_document({"schema_version": 1, "device": {}, "records": [rec]}, "x.json")
    assert doc.records[0].time_samples_s == [190e-6, 200e-6, 210e-6] and doc.records[0].time_s == 200e-6
