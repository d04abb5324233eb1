"""Operator names as torch writes them, and the functions that take them apart (pure: no torch).

An overload's name is 'NAMESPACE::NAME.OVERLOAD': 'aten::add_.Tensor' is the overload 'Tensor' of the op
'add_' in the namespace 'aten'. One word per part, in torch's sense:
- namespace: 'aten', 'c10d', '_c10d_functional', a library's own ('mylib');
- op name: the name without namespace and overload, 'add_' (torch's `OpOverload._opname`);
- overload: 'Tensor'; '' for an op written without one ('aten::mm': torch's 'default' overload);
- packet: the qualified name of torch's OpOverloadPacket, namespace and op name without the overload:
  'aten::add_' (what torch's flop registry is keyed by, and what a formula may be registered for);
- base name: the op name of the out-of-place form, 'add' for the in-place 'add_' (torch's convention: a
  trailing '_'); a dunder ('__and__', the in-place '__iand__') keeps its underscores;
- short name: what a view shows: an aten op's op name, the longest abbreviated ('sdpa_flash', 'conv'); an op
  of another namespace keeps its whole name.
A torch.compile'd kernel's record is named 'fused: add+mul' (FUSED_PREFIX, then the aten op names it fused,
joined by FUSED_SEP): not an overload's name; every function above reads it as an op name of its own.
"""

from __future__ import annotations

import re

NAMESPACE_SEP = "::"
OVERLOAD_SEP = "."
ATEN = "aten"
INPLACE_SUFFIX = "_"
DUNDER = "__"
# The op of a torch.compile'd kernel's call: "fused: mul+silu" (its fused aten ops; capture/inductor.py).
FUSED_PREFIX = "fused: "
FUSED_SEP = "+"

# Short names: the longest aten op names, abbreviated (pattern, replacement; applied in order).
ABBREVIATIONS = ((re.compile(r"^_?scaled_dot_product_attention$"), "sdpa"),
                 (re.compile(r"^_?scaled_dot_product_(\w+?)_attention"), r"sdpa_\1"),
                 (re.compile(r"^_native_batch_norm_legit(_no_training)?$"), "batch_norm"),
                 (re.compile(r"^native_(batch|layer|group)_norm$"), r"\1_norm"),
                 (re.compile(r"^_?convolution$"), "conv"))


def _parts(op: str) -> tuple[str, str, str]:
    """(namespace, op name, overload); '' for a part the name leaves out."""
    ns, _, rest = op.rpartition(NAMESPACE_SEP)
    name, _, overload = rest.partition(OVERLOAD_SEP)
    return ns, name, overload


def namespace(op: str) -> str:
    """'aten::add_.Tensor' -> 'aten'; 'add' -> ''."""
    return _parts(op)[0]


def op_name(op: str) -> str:
    """'aten::add_.Tensor' -> 'add_': without namespace and overload."""
    return _parts(op)[1]


def overload(op: str) -> str:
    """'aten::add_.Tensor' -> 'Tensor'; 'aten::mm' -> '' (torch's 'default' overload)."""
    return _parts(op)[2]


def packet(op: str) -> str:
    """'aten::add_.Tensor' -> 'aten::add_': the qualified name of torch's OpOverloadPacket."""
    ns, name, _ = _parts(op)
    return f"{ns}{NAMESPACE_SEP}{name}" if ns else name


def is_aten(op: str) -> bool:
    """An op of torch's own namespace: 'aten::mm' yes, 'c10d::allreduce_' and 'fused: add+mul' no."""
    return namespace(op) == ATEN


def base_name(op: str) -> str:
    """'aten::add_.Tensor' -> 'add': the op name of the out-of-place form; '__and__', '__iand__' and '_'
    as they are."""
    name = op_name(op)
    inplace = name.endswith(INPLACE_SUFFIX) and not name.endswith(DUNDER) and len(name) > len(INPLACE_SUFFIX)
    return name[:-len(INPLACE_SUFFIX)] if inplace else name


def is_inplace(op: str) -> bool:
    """'aten::add_.Tensor' yes, 'aten::add.Tensor' and 'aten::__iand__.Tensor' no (torch's trailing '_')."""
    return base_name(op) != op_name(op)


def abbreviate(name: str) -> str:
    """An aten op name as views show it: 'scaled_dot_product_attention' -> 'sdpa', '_convolution' -> 'conv'."""
    for pattern, repl in ABBREVIATIONS:
        name = pattern.sub(repl, name)
    return name


def short_name(op: str) -> str:
    """'aten::addmm' -> 'addmm', 'aten::add_.Tensor' -> 'add_', 'aten::_scaled_dot_product_flash_attention'
    -> 'sdpa_flash', 'aten::convolution' -> 'conv'; an op of another namespace whole ('c10d::allreduce_')."""
    return abbreviate(op_name(op) if is_aten(op) else op)


def short_base_name(op: str) -> str:
    """The short name of an op's out-of-place form, which a roll-up by op type groups by: 'aten::add_.Tensor'
    and 'aten::add.Tensor' -> 'add'; an op of another namespace whole."""
    return abbreviate(base_name(op) if is_aten(op) else op)


def fused_name(ops: tuple[str, ...] | list[str]) -> str:
    """The op of a torch.compile'd kernel that fused these aten op names: ('mul', 'silu') -> 'fused: mul+silu'."""
    return FUSED_PREFIX + FUSED_SEP.join(ops)


def is_fused(op: str) -> bool:
    """A torch.compile'd kernel's op ('fused: mul+silu')."""
    return op.startswith(FUSED_PREFIX)


def fused_ops(op: str) -> tuple[str, ...]:
    """'fused: mul+silu' -> ('mul', 'silu'): the aten op names a compiled kernel fused; () for another op."""
    return tuple(op.removeprefix(FUSED_PREFIX).split(FUSED_SEP)) if is_fused(op) else ()


__all__ = ["ABBREVIATIONS", "ATEN", "FUSED_PREFIX", "FUSED_SEP", "abbreviate", "base_name", "fused_name",
           "fused_ops", "is_aten", "is_fused", "is_inplace", "namespace", "op_name", "overload", "packet",
           "short_base_name", "short_name"]
