"""Nsight Compute's kernels joined to a profile's kernels (CUPTI, per op call), for `profile --counters`.

Both lists are one profiled stretch of the same program in launch order: ncu's by kernel ID, the profile's
by op call. ncu's list is cut into each call's kernels by position and each call checked by name. The
two tools spell a name differently (ncu: `void at::vectorized_elementwise_kernel<8, ...>(int, T2, T3)`,
`at::<unnamed>::`; CUPTI via torch: `void at::native::vectorized_elementwise_kernel<8, ...>(int, at::native::
CUDAFunctor_add<...>, std::array<char*, 3ul>)`, `(anonymous namespace)::`, sometimes still mangled), so the
check compares the function's own name (`kernel_key`): `vectorized_elementwise_kernel`. A count or name
mismatch joins nothing (a `JoinError` saying where): a wrong join would put one kernel's bytes on another
op, which is worse than no counters. Pure: no torch, no ncu.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from roofline.core.counters import combined, scaled
from roofline.core.record import Counters
from roofline.ncu.read_csv import NcuKernel, counters_from_kernel

# Device work that CUPTI lists among an op's kernels but ncu does not profile (it profiles kernels only).
COPY_PREFIXES = ("Memcpy", "Memset")
_ANONYMOUS = re.compile(r"\(anonymous namespace\)|<unnamed>|\{anonymous\}")
_MANGLED_PART = re.compile(r"(\d+)")


class JoinError(Exception):
    """The two kernel lists do not pair up; the message says where (one line)."""


def is_copy(name: str) -> bool:
    """A memcpy or memset as CUPTI names them ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)")."""
    return name.startswith(COPY_PREFIXES)


def _demangled_base(name: str) -> str:
    """The last name component of an Itanium-mangled name: `_ZN2at6native13foo_kernelIfEEvT_` -> foo_kernel
    (`_Z3fooPf` -> foo). Enough for a key; not a demangler."""
    i = 2
    nested = name.startswith("_ZN")
    if nested:
        i = 3
    last = ""
    while i < len(name) and name[i].isdigit():
        m = _MANGLED_PART.match(name, i)
        assert m is not None
        n, i = int(m.group(1)), m.end()
        last, i = name[i:i + n], i + n
        if not nested:
            break
    return last or name


def kernel_key(name: str) -> str:
    """The function's own name, without return type, namespaces, template arguments and parameters:
    'void at::<unnamed>::max_pool_forward_nhwc<c10::BFloat16, int>(const T1 *, ...)' -> 'max_pool_forward_nhwc';
    'sm90_xmma_fprop_..._cudnn' stays whole; a name with nothing left after that stays whole too. It is also
    the name `import-ncu` gives a kernel's record (`ncu.records`)."""
    n = name.strip()
    if n.startswith("_Z"):
        return _demangled_base(n)
    n = _ANONYMOUS.sub("", n)
    n = n.split("<", 1)[0].split("(", 1)[0].strip()
    n = n.rsplit(" ", 1)[-1]  # the return type ("void")
    return n.rsplit("::", 1)[-1] or name.strip()


@dataclass(frozen=True)
class Launches:
    """One op call's kernels in launch order (CUPTI names, copies included), with the record it belongs to."""

    record: int
    kernels: tuple[str, ...]


def pair(calls: Sequence[Launches], kernels: Sequence[NcuKernel]) -> list[list[NcuKernel]]:
    """ncu's kernels of each call: its list cut into consecutive slices, one per call, as long as the call's
    kernel count; each slice checked against the call's kernels by `kernel_key` as a multiset (the order of
    kernels inside one call can differ between the two lists: CUPTI's comes from the profiler's events, not
    from the launches; only the call's sum is used). A JoinError when the counts or a name differ."""
    wanted = [[name for name in c.kernels if not is_copy(name)] for c in calls]
    total = sum(len(w) for w in wanted)
    if total != len(kernels):
        raise JoinError(f"ncu profiled {len(kernels)} kernels where the profile saw {total}")
    out: list[list[NcuKernel]] = []
    pos = 0
    for names in wanted:
        got = list(kernels[pos:pos + len(names)])
        ours, theirs = sorted(map(kernel_key, names)), sorted(kernel_key(k.name) for k in got)
        if ours != theirs:
            first = next(i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b)
            where = (f"kernel {pos + 1} of {len(kernels)} differs" if len(names) == 1
                     else f"kernels {pos + 1}-{pos + len(names)} of {len(kernels)} differ")
            raise JoinError(f"{where}: the profile ran {ours[first]!r}, ncu profiled "
                            f"{theirs[first]!r}")
        out.append(got)
        pos += len(names)
    return out


def record_counters(calls: Sequence[Launches], kernels: Sequence[NcuKernel],
                    source: str | None = None) -> dict[int, Counters]:
    """Each record's counters per call: its calls' kernels summed (`core.counters.combined`), divided by the
    number of its calls among `calls` (a record's FLOPs, bytes and time are per call). Records whose calls
    launched no kernel get none. Raises JoinError as `pair`."""
    paired = pair(calls, kernels)
    parts: dict[int, list[Counters]] = {}
    ncalls: dict[int, int] = {}
    for c, ks in zip(calls, paired, strict=True):
        ncalls[c.record] = ncalls.get(c.record, 0) + 1
        parts.setdefault(c.record, []).extend(counters_from_kernel(k) for k in ks)
    return {r: scaled(combined(p, source=source), 1 / ncalls[r]) for r, p in parts.items() if p}
