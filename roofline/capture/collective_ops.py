"""torch.distributed's collective ops by their aten names (a leaf: the tracer asks which calls are collectives,
capture/comm.py counts them)."""

from __future__ import annotations

# NCCL's kernels are named ncclKernel_*, ncclDevKernel_* (a kernel of no op whose name holds this is
# communication)
NCCL_KERNEL = "nccl"
OUTPUTS = "(outputs)"  # S is the call's outputs (a functional all_gather's gathered tensor)
# torch op -> (the collective, the argument holding S as nccl-tests defines it, or OUTPUTS)
COLLECTIVES: dict[str, tuple[str, str]] = {
    "c10d::allreduce_": ("all_reduce", "tensors"),
    "c10d::allreduce_coalesced_": ("all_reduce", "tensors"),
    "c10d::broadcast_": ("broadcast", "tensors"),
    "c10d::_allgather_base_": ("all_gather", "output_tensor"),
    "c10d::allgather_": ("all_gather", "output_tensors"),
    "c10d::allgather_coalesced_": ("all_gather", "output_lists"),
    "c10d::allgather_into_tensor_coalesced_": ("all_gather", "outputs"),
    "c10d::_reduce_scatter_base_": ("reduce_scatter", "input_tensor"),
    "c10d::reduce_scatter_": ("reduce_scatter", "input_tensors"),
    "c10d::reduce_scatter_tensor_coalesced_": ("reduce_scatter", "inputs"),
    "c10d::alltoall_base_": ("all_to_all", "input"),
    "c10d::alltoall_": ("all_to_all", "input_tensors"),
    "_c10d_functional::all_reduce": ("all_reduce", "input"),
    "_c10d_functional::all_reduce_": ("all_reduce", "input"),
    "_c10d_functional::all_reduce_coalesced": ("all_reduce", "inputs"),
    "_c10d_functional::all_reduce_coalesced_": ("all_reduce", "inputs"),
    "_c10d_functional::all_gather_into_tensor": ("all_gather", OUTPUTS),
    "_c10d_functional::all_gather_into_tensor_out": ("all_gather", "out"),
    "_c10d_functional::all_gather_into_tensor_coalesced": ("all_gather", OUTPUTS),
    "_c10d_functional::reduce_scatter_tensor": ("reduce_scatter", "input"),
    "_c10d_functional::reduce_scatter_tensor_out": ("reduce_scatter", "input"),
    "_c10d_functional::reduce_scatter_tensor_coalesced": ("reduce_scatter", "inputs"),
    "_c10d_functional::all_to_all_single": ("all_to_all", "input"),
    "_c10d_functional::broadcast": ("broadcast", "input"),
    "_c10d_functional::broadcast_": ("broadcast", "input"),
    # the legacy functional ops (torch < 2.3 names, still registered)
    "c10d_functional::all_reduce": ("all_reduce", "self"),
    "c10d_functional::all_reduce_coalesced": ("all_reduce", "self"),
    "c10d_functional::all_gather_into_tensor": ("all_gather", OUTPUTS),
    "c10d_functional::all_gather_into_tensor_coalesced": ("all_gather", OUTPUTS),
    "c10d_functional::reduce_scatter_tensor": ("reduce_scatter", "input"),
    "c10d_functional::reduce_scatter_tensor_coalesced": ("reduce_scatter", "inputs"),
    "c10d_functional::all_to_all_single": ("all_to_all", "input"),
    "c10d_functional::broadcast": ("broadcast", "self"),
}
