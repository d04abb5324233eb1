"""Attack (GPU): launch the work on a side stream and return without joining it to the caller's stream, so a
timer that records events on the caller's stream sees almost nothing. On the CPU it computes as usual."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.side = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            return torch.relu(self.fc(x))
        if self.side is None:
            self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())  # the inputs are ready...
        with torch.cuda.stream(self.side):
            y = torch.relu(self.fc(x))
        return y  # ...but the caller's stream is never made to wait for y
