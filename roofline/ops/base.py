"""The operator registry: frozen shape dataclasses with pure `flops()` and `traffic()`.

An operator's fields are its shape parameters; `param()` / `choice()` / `flag()` attach the help text
and limits the CLI generates its options from. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from roofline.core import validate
from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError

# Kinds of bytes, as LLM-Viewer's analyzer splits them.
WEIGHTS = "weights"
ACTIVATIONS = "activations"
KV_CACHE = "kv_cache"
INTERMEDIATES = "intermediates"  # temporaries an unfused form writes and reads back
INDEX = "index"  # block tables and other metadata

FLOAT_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")
HALF_AND_WIDER = ("fp64", "fp32", "fp16", "bf16")


def param(default: int | None = None, help: str = "", minimum: int = 1) -> Any:
    """An integer shape parameter (>= minimum); None means 'derived from another field'."""
    return field(default=default, metadata={"help": help, "minimum": minimum, "kind": "int"})


def choice(default: str, choices: tuple[str, ...], help: str = "") -> Any:
    return field(default=default, metadata={"help": help, "choices": choices, "kind": "choice"})


def flag(default: bool = False, help: str = "") -> Any:
    return field(default=default, metadata={"help": help, "kind": "flag"})


@dataclass(frozen=True)
class Traffic:
    """Minimum bytes moved through device memory, split by kind and by direction."""

    read: dict[str, float] = field(default_factory=dict)
    written: dict[str, float] = field(default_factory=dict)

    @property
    def bytes_read(self) -> float:
        return float(sum(self.read.values()))

    @property
    def bytes_written(self) -> float:
        return float(sum(self.written.values()))

    @property
    def total(self) -> float:
        return self.bytes_read + self.bytes_written

    def by_kind(self) -> dict[str, float]:
        kinds: dict[str, float] = {}
        for part in (self.read, self.written):
            for k, v in part.items():
                kinds[k] = kinds.get(k, 0) + v
        return kinds

    def __add__(self, other: Traffic) -> Traffic:
        def merge(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, 0) + v
            return out

        return Traffic(merge(self.read, other.read), merge(self.written, other.written))


def rw(read: dict[str, float] | None = None, written: dict[str, float] | None = None) -> Traffic:
    """Build a Traffic, dropping zero entries."""
    return Traffic({k: v for k, v in (read or {}).items() if v},
                   {k: v for k, v in (written or {}).items() if v})


@dataclass(frozen=True)
class Operator:
    """Base of every operator. Subclasses are frozen dataclasses registered with `@operator(name)`."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    ignores: ClassVar[str] = ""  # NB: what the model leaves out, one line
    dtypes: ClassVar[tuple[str, ...]] = FLOAT_DTYPES
    uses_tensor_cores: ClassVar[bool] = False
    # Parameters added after records and database points were stored: left out of `params()` at their default,
    # so an older point's key and a record's label read as before (a dense add is `numel=N`, not `numel=N run=0`).
    added_later: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            meta = f.metadata
            value = getattr(self, f.name)
            # None is the value of a parameter whose default is None (gemm's n: "= m"), not of one with a number
            if meta.get("kind") == "int" and (value is not None or f.default is not None):
                validate.whole(self.name, f.name, value, minimum=meta["minimum"])
            if meta.get("kind") == "choice":
                validate.choice(self.name, f.name, value, meta["choices"])
            if meta.get("kind") == "flag":  # causal="yes" was kept as a string, and read as True
                self._set(f.name, validate.boolean(self.name, f.name, value))
        self.resolve()
        self.check()

    # -- hooks for subclasses
    def resolve(self) -> None:
        """Fill derived defaults (e.g. gemm's n and k default to m). Use `self._set`."""

    def check(self) -> None:
        """Reject impossible shapes with a UsageError."""

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    # -- the model
    def flops(self) -> float:
        raise NotImplementedError

    def traffic(self, dtype: DType) -> Traffic:
        raise NotImplementedError

    def extra_flops(self) -> float:
        """Elementwise FLOPs beside the matrix products of a tensor-core operator (attention's softmax, an
        epilogue), kept out of `flops()`: `flops()` counts the matrix products alone, as FlashAttention's papers
        and torch's flop counter do, so achieved FLOP/s compare with published figures, and the elementwise
        part is not placed on the tensor-core roof. 0 for every operator without such a part."""
        return 0.0

    def variant_name(self) -> str | None:
        """The algorithmic variant, for operators that have one."""
        return getattr(self, "variant", None)

    def params(self) -> dict[str, Any]:
        """The shape parameters as stored in a result record (variant excluded: it has its own field; `added_later`
        ones at their default left out)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "variant"
                and not (f.name in self.added_later and getattr(self, f.name) == f.default)}

    def placed(self, record: Any) -> Any:
        """The record `analytic_record` built, moved onto another roof where the operator's work is not the
        device's memory and compute (a collective runs on its links); the record itself for every other."""
        return record

    def check_dtype(self, dtype: DType) -> None:
        if dtype.name not in self.dtypes:
            raise UsageError(f"{self.name} does not support dtype {dtype.name} (supported: {', '.join(self.dtypes)})")


OPERATORS: dict[str, type[Operator]] = {}

# Where each operator is defined, in catalog order: `get_operator` imports the one module a name needs, not
# the whole catalog (whose ~23 dataclasses were 30-50 ms of a ~0.35 s `analyze --no-time` on a 2-core machine).
# A new operator is added here too (tests/test_startup.py checks this against the registrations).
CATALOG: dict[str, str] = {
    "softmax": "roofline.ops.softmax",
    "reduce": "roofline.ops.reduce",
    **dict.fromkeys(("attention", "decode_attention"), "roofline.ops.attention"),
    **dict.fromkeys(("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"),
                    "roofline.ops.collectives"),
    "conv2d": "roofline.ops.conv",
    **dict.fromkeys(("relu", "add", "mul", "gelu", "silu", "copy", "swiglu", "chain", "cat", "cast"),
                    "roofline.ops.elementwise"),
    **dict.fromkeys(("gemm", "gemv", "grouped_gemm"), "roofline.ops.gemm"),
    **dict.fromkeys(("layernorm", "rmsnorm", "add_layernorm", "add_rmsnorm", "batchnorm"), "roofline.ops.norm"),
    "rope": "roofline.ops.rope",
    "pool2d": "roofline.ops.pool",
    "embedding": "roofline.ops.embedding",
    "adamw": "roofline.ops.optimizer",
}


def operator(name: str, family: str):
    """Register an operator class under `name`; registering a name twice is a bug."""

    def wrap(cls: type[Operator]) -> type[Operator]:
        if name in OPERATORS:
            raise RuntimeError(f"operator {name!r} registered twice")
        cls.name = name
        cls.family = family
        OPERATORS[name] = cls
        return cls

    return wrap


def cli_name(field_name: str) -> str:
    return field_name.replace("_", "-")


def load_catalog() -> dict[str, type[Operator]]:
    """Import every operator family; `OPERATORS` in catalog order (whichever family was imported first)."""
    import importlib

    if any(name not in OPERATORS for name in CATALOG):
        for module in dict.fromkeys(CATALOG.values()):
            importlib.import_module(module)
        order = {name: i for i, name in enumerate(CATALOG)}
        ordered = sorted(OPERATORS.items(), key=lambda kv: order.get(kv[0], len(order)))
        OPERATORS.clear()
        OPERATORS.update(ordered)
    return OPERATORS


# Suggest an operator whose similarity (difflib's ratio, 0..1) is at least this: "gemmm" finds gemm, "rms" nothing.
CLOSE_CUTOFF = 0.6
CLOSE_COUNT = 3


def operator_name(name: str) -> str:
    """The registered name `name` means: itself, or the one operator it spells case-insensitively (`GEMM`); an
    unknown name is one UsageError naming the closest operators (difflib)."""
    if name in OPERATORS or name in CATALOG:
        return name
    known = list(dict.fromkeys([*CATALOG, *OPERATORS]))
    same = [k for k in known if k.lower() == str(name).strip().lower()]
    if len(same) == 1:
        return same[0]
    import difflib

    known = list(dict.fromkeys([*CATALOG, *load_catalog()]))  # with any registered outside the catalog
    close = difflib.get_close_matches(str(name).strip().lower(), known, n=CLOSE_COUNT, cutoff=CLOSE_CUTOFF)
    hint = f"closest: {', '.join(close)}; " if close else ""
    raise UsageError(f"unknown operator '{name}' ({hint}`roofline ops list` shows all {len(known)})")


def get_operator(name: str) -> type[Operator]:
    """The operator class registered as `name` (or spelt so case-insensitively); only its own family's module
    is imported."""
    name = operator_name(name)
    if name not in OPERATORS and name in CATALOG:
        import importlib

        importlib.import_module(CATALOG[name])
    if name not in OPERATORS:
        load_catalog()
    try:
        return OPERATORS[name]
    except KeyError:
        raise UsageError(f"unknown operator '{name}' (`roofline ops list` shows all {len(OPERATORS)})") from None


def make(name: str, dtype: str | None = None, **params: Any) -> Operator:
    """Build an operator from keyword parameters, as a suite file or the Python API gives them."""
    cls = get_operator(name)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(params) - names
    if unknown:
        raise UsageError(f"{cls.name}: unknown parameter(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(names))})")
    op = cls(**params)
    if dtype is not None:
        op.check_dtype(get_dtype(dtype))
    return op
