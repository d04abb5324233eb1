"""Attack (GPU): set aside persisting L2 and put the weight in an access-policy window on the current stream
(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize) and cudaStreamSetAttribute(cudaStreamAttributeAccessPolicyWindow)
through ctypes), so that the weight stays in the L2 through the timer's flush (a memset does not evict persisting
lines): a 2026 leaderboard read 4x an L40S's HBM peak this way. On the CPU it computes as usual. Problem:
tests/data/sol_redteam/problem.py. Caught: the harness sets the persisting-L2 limit to 0 before the import and reads
it after every timed call, before the next flush: `refused` when it was above 0."""

import ctypes

import torch
import torch.nn as nn

cudaLimitPersistingL2CacheSize = 0x06
cudaDevAttrMaxPersistingL2CacheSize = 108
cudaStreamAttributeAccessPolicyWindow = 1
cudaAccessPropertyStreaming, cudaAccessPropertyPersisting = 1, 2


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class StreamAttrValue(ctypes.Union):  # cudaStreamAttrValue (cudaLaunchAttributeValue): 64 bytes
    _fields_ = [("accessPolicyWindow", AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


def _cudart() -> ctypes.CDLL:
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libcudart" in line}
    return ctypes.CDLL(sorted(paths)[0] if paths else "libcudart.so")


def persist(t: torch.Tensor) -> None:
    rt = _cudart()
    most = ctypes.c_int(0)  # cudaDevAttrMaxPersistingL2CacheSize
    rt.cudaDeviceGetAttribute(ctypes.byref(most), ctypes.c_int(cudaDevAttrMaxPersistingL2CacheSize),
                              ctypes.c_int(t.device.index or 0))
    size = int(most.value)
    if size <= 0:
        return  # no persisting L2 on this device
    rt.cudaDeviceSetLimit(ctypes.c_int(cudaLimitPersistingL2CacheSize), ctypes.c_size_t(size))
    value = StreamAttrValue()
    value.accessPolicyWindow = AccessPolicyWindow(t.data_ptr(), min(size, t.numel() * t.element_size()), 1.0,
                                                  cudaAccessPropertyPersisting, cudaAccessPropertyStreaming)
    stream = ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)
    rt.cudaStreamSetAttribute(stream, ctypes.c_int(cudaStreamAttributeAccessPolicyWindow), ctypes.byref(value))


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.done = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.is_cuda and not self.done:
            persist(self.fc.weight)
            self.done = True
        return torch.relu(self.fc(x))
