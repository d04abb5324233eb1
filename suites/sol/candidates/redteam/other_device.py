"""Attack (GPU): do the work on another device (the host) and hand back a copy, so the GPU's device time holds
only two copies. On the CPU it computes as usual. Problem: tests/data/sol_redteam/problem.py. Caught: the call's
stream time (marker to marker) far above its device time is refused: the work was done off the device."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.host: nn.Linear | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            return torch.relu(self.fc(x))
        if self.host is None:
            self.host = nn.Linear(self.fc.in_features, self.fc.out_features).to("cpu")
            self.host.load_state_dict({k: v.cpu() for k, v in self.fc.state_dict().items()})
        return torch.relu(self.host(x.cpu())).to(x.device)
