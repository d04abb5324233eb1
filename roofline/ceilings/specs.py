"""GPU spec tables: the field registry, loading and validation of `specs/*.toml`, aliases, NVML names.

Spec files are data (one TOML file per GPU, units in the key names, a source for every number);
this module only knows which fields exist, what unit each carries and how to check a file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from roofline.core import validate
from roofline.core.errors import RooflineError, UsageError
from roofline.core.files import data_dir
from roofline.core.model import Ceilings
from roofline.core.tomlfile import read_toml

SPEC_SCHEMA_VERSION = 1


# Which specs must give a field: every spec, NVIDIA specs only (the CUDA occupancy and shared-memory facts,
# which AMD's CDNA documents in other terms: LDS per CU, wavefronts, VGPR files), or none.
ALL, NVIDIA_ONLY, OPTIONAL = "all", "nvidia", ""


@dataclass(frozen=True)
class SpecField:
    """One number a spec file may hold: its key is `stem + "_" + unit`."""

    stem: str
    unit: str
    required: str  # ALL, NVIDIA_ONLY or OPTIONAL
    help: str
    integer: bool = False

    @property
    def key(self) -> str:
        return f"{self.stem}_{self.unit}" if self.unit else self.stem

    def required_for(self, vendor: str) -> bool:
        return self.required == ALL or (self.required == NVIDIA_ONLY and vendor == "NVIDIA")


def _f(stem: str, unit: str, required: str, help: str, integer: bool = False) -> SpecField:
    return SpecField(stem, unit, required, help, integer)


REQ, NV, OPT = ALL, NVIDIA_ONLY, OPTIONAL
# The registry of spec fields. Peak rates are always *dense* (no 2:4 sparsity). On AMD Instinct parts an
# "SM" is a compute unit (CU) and a "tensor core" a matrix core; per-clock rates are then per CU.
FIELDS: tuple[SpecField, ...] = (
    # -- the chip
    _f("sm_count", "", REQ, "streaming multiprocessors (AMD: compute units)", integer=True),
    _f("boost_clock", "mhz", REQ, "maximum boost SM clock (AMD: peak engine clock)"),
    _f("base_clock", "mhz", OPT, "base SM clock"),
    _f("tensor_peak_clock", "mhz", OPT,
       "SM clock the datasheet's tensor-core peaks assume, where it differs from the boost clock"),
    _f("tdp", "w", REQ, "board power (TDP / TGP)"),
    # -- dense peak rates, CUDA-core pipes
    _f("fp64_dense", "tflops", REQ, "FP64 on CUDA cores (AMD: vector FP64)"),
    _f("fp32_dense", "tflops", REQ, "FP32 on CUDA cores, FMA = 2 FLOP (AMD: vector FP32)"),
    _f("fp16_dense", "tflops", OPT, "FP16 on CUDA cores (non-tensor), where it exists"),
    _f("bf16_dense", "tflops", OPT, "BF16 on CUDA cores (non-tensor), where it exists"),
    # -- dense peak rates, tensor-core (AMD: matrix-core) pipes
    _f("fp64_tensor_dense", "tflops", OPT, "FP64 tensor core"),
    _f("tf32_tensor_dense", "tflops", OPT, "TF32 tensor core, dense"),
    _f("fp16_tensor_dense", "tflops", REQ, "FP16 tensor core with FP32 accumulate, dense"),
    _f("bf16_tensor_dense", "tflops", OPT, "BF16 tensor core with FP32 accumulate, dense"),
    _f("fp8_tensor_dense", "tflops", OPT, "FP8 tensor core with FP32 accumulate, dense"),
    _f("fp6_tensor_dense", "tflops", OPT, "FP6 tensor core (FP6 and MXFP6 operands), dense"),
    _f("fp4_tensor_dense", "tflops", OPT, "FP4 tensor core (block-scaled NVFP4/MXFP4 operands), dense"),
    _f("int8_tensor_dense", "tops", OPT, "INT8 tensor core, dense"),
    # -- per-clock rates (per SM), so a peak can be scaled to an observed clock
    _f("fp64_flops_per_clock_per_sm", "", OPT, "FP64 CUDA-core FLOP per clock per SM", True),
    _f("fp32_flops_per_clock_per_sm", "", OPT, "FP32 CUDA-core FLOP per clock per SM", True),
    _f("fp16_flops_per_clock_per_sm", "", OPT, "FP16 CUDA-core FLOP per clock per SM", True),
    _f("fp64_tensor_flops_per_clock_per_sm", "", OPT, "FP64 tensor FLOP per clock per SM", True),
    _f("tf32_tensor_flops_per_clock_per_sm", "", OPT, "TF32 tensor FLOP per clock per SM", True),
    _f("fp16_tensor_flops_per_clock_per_sm", "", OPT, "FP16 tensor FLOP per clock per SM", True),
    _f("bf16_tensor_flops_per_clock_per_sm", "", OPT, "BF16 tensor FLOP per clock per SM", True),
    _f("fp8_tensor_flops_per_clock_per_sm", "", OPT, "FP8 tensor FLOP per clock per SM", True),
    _f("fp6_tensor_flops_per_clock_per_sm", "", OPT, "FP6 tensor FLOP per clock per SM", True),
    _f("fp4_tensor_flops_per_clock_per_sm", "", OPT, "FP4 tensor FLOP per clock per SM", True),
    _f("int8_tensor_ops_per_clock_per_sm", "", OPT, "INT8 tensor OP per clock per SM", True),
    # -- memory
    _f("memory_size", "gb", REQ, "device memory, as the datasheet states it"),
    _f("memory_bandwidth", "gbps", REQ, "device memory (HBM / GDDR) bandwidth, GB/s"),
    _f("memory_bus_width", "bits", OPT, "memory interface width", True),
    _f("memory_clock", "mhz", OPT, "memory clock as NVML reports it (bandwidth = 2 x clock x width / 8)"),
    _f("l2_cache", "kib", REQ, "L2 cache size", True),
    _f("shared_memory_per_sm", "kib", NV, "shared memory per SM, maximum carve-out (AMD: LDS per CU)", True),
    _f("shared_memory_per_block_max", "kib", NV, "maximum shared memory per block (opt-in)", True),
    _f("shared_memory_bytes_per_clock_per_sm", "", OPT, "shared-memory bytes per clock per SM", True),
    _f("shared_memory_bandwidth", "gbps", NV,
       "aggregate shared-memory bandwidth at boost clock (bytes/clk/SM x SMs x clock)"),
    # -- per-SM limits and allocation granularities (compute-capability facts, for occupancy)
    _f("registers_per_sm", "", NV, "32-bit registers per SM", True),
    _f("max_registers_per_block", "", OPT, "32-bit registers per block", True),
    _f("max_registers_per_thread", "", OPT, "32-bit registers per thread", True),
    _f("register_allocation_unit_size", "", OPT, "registers are allocated per warp in units of this", True),
    _f("warp_allocation_granularity", "", OPT, "warps are allocated to register files in groups of this", True),
    _f("max_warps_per_sm", "", NV, "resident warps per SM", True),
    _f("max_blocks_per_sm", "", NV, "resident blocks per SM", True),
    _f("max_threads_per_block", "", NV, "threads per block", True),
    _f("shared_memory_allocation_unit", "bytes", OPT, "shared memory is allocated per block in units of this", True),
    _f("reserved_shared_memory_per_block", "bytes", OPT, "shared memory the system reserves per block", True),
    # -- interconnect (the roof of a collective is the link, not HBM). NVIDIA quotes NVLink totals with both
    # directions added (H100 SXM: 900 GB/s); the field holds one direction, what a ring step can use.
    _f("nvlink_generation", "", OPT, "NVLink generation (4: Hopper, 5: Blackwell)", True),
    _f("nvlink_links", "", OPT, "NVLink links per GPU", True),
    _f("nvlink_bandwidth_per_direction", "gbps", OPT,
       "NVLink bandwidth per GPU, all links together, ONE direction (half the datasheet's bidirectional total)"),
    _f("pcie_generation", "", OPT, "PCIe generation of the host interface", True),
    _f("pcie_lanes", "", OPT, "PCIe lanes of the host interface", True),
)

FIELDS_BY_KEY: dict[str, SpecField] = {f.key: f for f in FIELDS}
_STEMS: dict[str, SpecField] = {f.stem: f for f in FIELDS if f.unit}
# Non-numeric list fields allowed in [specs].
LIST_FIELDS: dict[str, str] = {
    "shared_memory_carveout_kib": "shared-memory carve-out sizes per SM the hardware supports, KiB",
}
# Every number of a spec is in human units (MHz, W, GB, GB/s, KiB, TFLOPS, counts): the smallest today is a T4's
# 0.254 FP64 TFLOPS, the largest a GB200's L2 of 129,536 KiB. A number outside this range (NaN, inf, 1e308,
# 1e-300 were accepted: "ridge point nan", a GEMM called memory-bound) is no GPU's.
VALUE_RANGE = (1e-3, 1e7)
HEADER_KEYS_REQUIRED = ("id", "name", "vendor", "architecture", "compute_capability", "aliases", "nvml_names",
                        "memory_type")
HEADER_KEYS_OPTIONAL = ("schema_version", "form_factor")
SECTIONS = ("specs", "sources", "notes")
# `compute_capability` is CUDA's "major.minor" on NVIDIA parts and the LLVM target ("gfx942") on AMD parts,
# which have no CUDA compute capability; NVML (and so `nvml_names`) exists on NVIDIA parts only.
VENDORS: dict[str, re.Pattern[str]] = {"NVIDIA": re.compile(r"\d+\.\d+"), "AMD": re.compile(r"gfx[0-9a-f]+")}


@dataclass(frozen=True)
class GPUSpec:
    """A validated spec file. `values` holds every number by key; `sources` a source per key."""

    id: str
    name: str
    vendor: str
    architecture: str
    compute_capability: str
    aliases: tuple[str, ...]
    nvml_names: tuple[str, ...]
    memory_type: str
    values: dict[str, float]
    sources: dict[str, str]
    notes: dict[str, str]
    lists: dict[str, tuple[int, ...]] = field(default_factory=dict)
    path: str = ""

    def get(self, key: str) -> float | None:
        return self.values.get(key)

    @property
    def is_nvidia(self) -> bool:
        """CUDA facts (compute capability, occupancy limits, NVML) apply; timing is tested on NVIDIA only."""
        return self.vendor == "NVIDIA"

    def __getitem__(self, key: str) -> float:
        try:
            return self.values[key]
        except KeyError:
            raise RooflineError(f"spec {self.id} has no {key}") from None

    def reference_clock_mhz(self, key: str) -> float:
        """The SM clock a peak is quoted at: `tensor_peak_clock_mhz` for the low-precision tensor pipes where
        the spec gives one (NVIDIA quotes Hopper's FP16/BF16/FP8/INT8/TF32 peaks at 1830 MHz, FP64 tensor at
        the boost clock), else `boost_clock_mhz`."""
        tensor_clock = self.values.get("tensor_peak_clock_mhz")
        if tensor_clock and "_tensor_" in key and not key.startswith("fp64"):
            return tensor_clock
        return self["boost_clock_mhz"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "vendor": self.vendor, "architecture": self.architecture,
            "compute_capability": self.compute_capability, "aliases": list(self.aliases),
            "nvml_names": list(self.nvml_names), "memory_type": self.memory_type,
            "specs": {**self.values, **{k: list(v) for k, v in self.lists.items()}},
            "sources": self.sources, "notes": self.notes,
        }


def _err(path: str, key: str, msg: str) -> RooflineError:
    return RooflineError(f"{path}: {key}: {msg}")


def _unit_hint(key: str) -> str | None:
    """For an unknown key whose stem is known but whose unit is wrong, say which unit is expected."""
    for stem, f in _STEMS.items():
        if key.startswith(stem + "_") and key != f.key:
            return f"bad unit '{key[len(stem) + 1:]}' (expected {f.key})"
    return None


def parse_spec(data: dict[str, Any], path: str) -> GPUSpec:
    """Validate one parsed spec document; every problem is a one-line RooflineError naming file and key."""
    for key in data:
        if key not in HEADER_KEYS_REQUIRED + HEADER_KEYS_OPTIONAL + SECTIONS:
            raise _err(path, key, "unknown top-level key")
    for key in HEADER_KEYS_REQUIRED:
        if key not in data:
            raise _err(path, key, "missing")
    version = data.get("schema_version", SPEC_SCHEMA_VERSION)
    if version != SPEC_SCHEMA_VERSION:
        raise _err(path, "schema_version",
                   f"unsupported spec schema {version!r} (this tool reads {SPEC_SCHEMA_VERSION})")
    for key in ("id", "name", "vendor", "architecture", "compute_capability", "memory_type"):
        if not isinstance(data[key], str) or not data[key]:
            raise _err(path, key, "must be a non-empty string")
    for key in ("aliases", "nvml_names"):
        if not isinstance(data[key], list) or not all(isinstance(x, str) and x for x in data[key]):
            raise _err(path, key, "must be a list of non-empty strings")
    vendor = data["vendor"]
    if vendor not in VENDORS:
        raise _err(path, "vendor", f"unknown vendor {vendor!r} (known: {', '.join(VENDORS)})")
    if not VENDORS[vendor].fullmatch(data["compute_capability"]):
        want = "'major.minor', e.g. '9.0'" if vendor == "NVIDIA" else "the LLVM target, e.g. 'gfx942'"
        raise _err(path, "compute_capability", f"{data['compute_capability']!r} is not {want}")
    if vendor != "NVIDIA" and data["nvml_names"]:
        raise _err(path, "nvml_names", f"NVML names only exist on NVIDIA GPUs, not on {vendor}")
    specs = data.get("specs")
    sources = data.get("sources")
    notes = data.get("notes", {})
    if not isinstance(specs, dict):
        raise _err(path, "specs", "missing [specs] table")
    if not isinstance(sources, dict):
        raise _err(path, "sources", "missing [sources] table")
    if not isinstance(notes, dict):
        raise _err(path, "notes", "must be a table")

    values: dict[str, float] = {}
    lists: dict[str, tuple[int, ...]] = {}
    for key, value in specs.items():
        if key in LIST_FIELDS:
            if not isinstance(value, list) or not all(isinstance(x, int) and x >= 0 for x in value):
                raise _err(path, f"specs.{key}", "must be a list of non-negative integers")
            lists[key] = tuple(value)
            continue
        f = FIELDS_BY_KEY.get(key)
        if f is None:
            raise _err(path, f"specs.{key}", _unit_hint(key) or "unknown field")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _err(path, f"specs.{key}", f"must be a number, got {validate.brief(value)}")
        if f.integer and not isinstance(value, int):
            raise _err(path, f"specs.{key}", f"must be an integer, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # NaN read as "ridge point nan"
            raise _err(path, f"specs.{key}", f"must be a finite number, got {value!r}")
        if value <= 0:
            raise _err(path, f"specs.{key}", f"must be positive, got {validate.brief(value)}")
        if not VALUE_RANGE[0] <= value <= VALUE_RANGE[1]:
            raise _err(path, f"specs.{key}", f"must be from {VALUE_RANGE[0]:g} to {VALUE_RANGE[1]:g} "
                       f"{f.unit or '(a count)'}, got {validate.brief(value)}: no GPU's (a typo, or another unit)")
        values[key] = value
    for f in FIELDS:
        if f.required_for(vendor) and f.key not in values:
            raise _err(path, f"specs.{f.key}", "missing required field")
    for key in list(values) + list(lists):
        src = sources.get(key)
        if not isinstance(src, str) or not src.strip():
            raise _err(path, f"sources.{key}", "every number needs a source (document + section, or URL)")
    for key in sources:
        if key not in values and key not in lists:
            raise _err(path, f"sources.{key}", "source for a field that is not in [specs]")
    for key, note in notes.items():
        if key not in values and key not in lists and key != "general":
            raise _err(path, f"notes.{key}", "note for a field that is not in [specs]")
        if not isinstance(note, str):
            raise _err(path, f"notes.{key}", "must be a string")
    return GPUSpec(
        id=data["id"], name=data["name"], vendor=data["vendor"], architecture=data["architecture"],
        compute_capability=data["compute_capability"], aliases=tuple(data["aliases"]),
        nvml_names=tuple(data["nvml_names"]), memory_type=data["memory_type"],
        values=values, sources=dict(sources), notes=dict(notes), lists=lists, path=path,
    )


def load_spec_file(path: Path, data: dict[str, Any] | None = None) -> GPUSpec:
    """The spec in `path` (its parsed TOML `data` when the caller has it, e.g. from `_parsed`)."""
    spec = parse_spec(read_toml(path, "spec file") if data is None else data, str(path))
    if spec.id != path.stem:
        raise _err(str(path), "id", f"'{spec.id}' must equal the file name '{path.stem}'")
    return spec


def specs_dir() -> Path:
    """The spec files: `roofline/_specdata` inside an installed wheel, `specs/` in a checkout."""
    return data_dir("_specdata", "specs")


@cache
def load_all(directory: str | None = None) -> dict[str, GPUSpec]:
    """Every spec by id; ids, aliases and NVML names must be unique across files."""
    root = Path(directory) if directory else specs_dir()
    files = sorted(root.glob("*.toml"))
    if not files:
        raise RooflineError(f"no spec files found in {root}")
    specs: dict[str, GPUSpec] = {}
    seen: dict[str, str] = {}
    parsed = _parsed(files) if directory is None else {}
    for p in files:
        spec = load_spec_file(p, parsed.get(p.name))
        for name in (spec.id, *spec.aliases, *(n.lower() for n in spec.nvml_names)):
            key = name.lower()
            if key in seen and seen[key] != spec.id:
                raise _err(str(p), "aliases", f"'{name}' is also used by {seen[key]}")
            seen[key] = spec.id
        specs[spec.id] = spec
    return specs


# The spec files' parsed TOML, kept in the cache folder: parsing all 31 files is ~100 ms of every analytic
# command's ~0.3 s; reading this back is ~3 ms. A file is parsed again when its size or mtime changed, and the
# whole cache when what it holds is not what was written (an edited cache made an H100 read 1 GB/s): its first
# line holds the stamps and the SHA-256 of the second, the data's JSON (hashing that text costs ~0.5 ms, where
# hashing the data re-serialised would cost 5).
SPEC_CACHE = "specs-parsed.json"


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _parsed(files: list[Path]) -> dict[str, dict[str, Any]]:
    """The parsed TOML of the packaged spec files by file name, from the cache where it is current. The cache
    is best effort: unreadable, stale or unwritable, the files are parsed as before (their errors included)."""
    import json

    from roofline.ceilings.store import cache_dir

    path = cache_dir() / SPEC_CACHE
    stamps = {}
    for p in files:
        st = p.stat()
        stamps[p.name] = [str(p), st.st_mtime_ns, st.st_size]  # specs_dir() is absolute, links resolved
    try:
        head, _, body = path.read_text().partition("\n")
        header = json.loads(head)
        if header.get("stamps") == stamps and header.get("digest") == _digest(body):
            cached = json.loads(body)
            if isinstance(cached, dict):
                return cached
    except (OSError, ValueError, AttributeError):
        pass
    data = {p.name: read_toml(p, "spec file") for p in files}  # a malformed file raises here, as before
    try:
        from roofline.core.files import atomic_write

        body = json.dumps(data)  # one line: no indent
        atomic_write(path, json.dumps({"stamps": stamps, "digest": _digest(body)}) + "\n" + body, make_parents=True)
    except (RooflineError, TypeError, ValueError):  # a read-only cache folder; a value JSON cannot hold
        pass
    return data


def resolve(name: str, directory: str | None = None) -> GPUSpec:
    """A spec by id, alias or NVML device name (case-insensitive); an unknown name is one short UsageError
    naming the closest ids and aliases."""
    specs = load_all(directory)
    key = name.strip().lower()
    for spec in specs.values():
        if key == spec.id or key in (a.lower() for a in spec.aliases) \
                or key in (n.lower() for n in spec.nvml_names):
            return spec
    close = closest_names(key, specs)
    hint = f"closest: {', '.join(close)}; " if close else ""
    shown = name.strip() if len(name.strip()) <= 40 else name.strip()[:37] + "..."
    raise UsageError(f"unknown GPU '{shown}' ({hint}`roofline specs list` shows all {len(specs)})")


# Suggest a name whose similarity (difflib's ratio, 0..1) is at least this: "h10" finds h100, "a100x" a100,
# "nosuch" nothing. At most this many suggestions, one per GPU, so the error stays one short line.
CLOSE_CUTOFF = 0.5
CLOSE_COUNT = 3


def closest_names(key: str, specs: dict[str, GPUSpec]) -> list[str]:
    """Up to CLOSE_COUNT ids or aliases nearest to `key`, most similar first, one per GPU."""
    import difflib  # for an unknown name only, not every start

    owner = {n.lower(): s.id for s in specs.values() for n in (s.id, *s.aliases)}
    # Ties go to names that start as `key` does ("h300": h100 and h200 before 3080), then to shorter names.
    ranked = sorted(owner, key=lambda n: (-difflib.SequenceMatcher(None, key, n).ratio(), n[:1] != key[:1],
                                          len(n), n))
    picked: dict[str, str] = {}  # spec id -> the name shown for it
    for n in ranked:
        if difflib.SequenceMatcher(None, key, n).ratio() < CLOSE_CUTOFF or len(picked) == CLOSE_COUNT:
            break
        picked.setdefault(owner[n], n)
    return list(picked.values())


def as_spec(spec: GPUSpec | str) -> GPUSpec:
    """A GPUSpec given as itself or by id, alias or NVML name: what every public function taking a spec
    accepts (`occupancy("h100", ...)`)."""
    if isinstance(spec, GPUSpec):
        return spec
    if isinstance(spec, str) and spec.strip():
        return resolve(spec)
    return validate.name_arg("", "gpu", spec, also=(GPUSpec,), example="'h100'")  # refuses anything else


def match_nvml_name(nvml_name: str, directory: str | None = None) -> GPUSpec | None:
    """The spec whose NVML names include this device name, or None."""
    key = nvml_name.strip().lower()
    for spec in load_all(directory).values():
        if key in (n.lower() for n in spec.nvml_names):
            return spec
    return None


def gpu_ceilings(spec: GPUSpec | str, sm_clock_mhz: float | None = None) -> Ceilings:
    """Datasheet ceilings of a GPU (a spec, or its id or alias), optionally scaled to an observed SM clock.

    NB: scaling is linear in the SM clock for compute and shared memory; DRAM bandwidth is not scaled.
    """
    spec = as_spec(spec)
    compute: dict[str, float] = {}
    notes: list[str] = []
    for key, value in spec.values.items():
        if key.endswith("_dense_tflops") or key.endswith("_dense_tops"):
            rate = value * 1e12
            if sm_clock_mhz is not None:
                rate *= sm_clock_mhz / spec.reference_clock_mhz(key)
            compute[key] = rate
    memory = {"dram": spec["memory_bandwidth_gbps"] * 1e9}
    smem = spec.get("shared_memory_bandwidth_gbps")  # not given for AMD parts (LDS rates are not in their specs)
    if sm_clock_mhz is not None:
        notes.append(f"compute peaks scaled to the observed SM clock {sm_clock_mhz:.0f} MHz "
                     f"(spec boost {spec['boost_clock_mhz']:.0f} MHz)")
    if smem is not None:
        memory["smem"] = smem * 1e9 * (sm_clock_mhz / spec["boost_clock_mhz"] if sm_clock_mhz else 1.0)
    return Ceilings(
        device_id=spec.id, device_name=spec.name, kind="gpu", source="datasheet", compute=compute,
        memory=memory, sm_clock_mhz=sm_clock_mhz or spec["boost_clock_mhz"], notes=tuple(notes),
    )


def link_bytes_per_s(spec: GPUSpec | str) -> float | None:
    """NVLink bandwidth of one GPU in ONE direction, bytes/s (None where the spec gives none): the roof of a
    collective, whose every GPU sends and receives at once."""
    gbps = as_spec(spec).get("nvlink_bandwidth_per_direction_gbps")
    return None if gbps is None else gbps * 1e9
