"""Single op: embedding lookup, a 32000 x 512 table, (4 x SCALE, 128) token ids."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

VOCAB, DIM, BATCH, SEQ = 32000, 512, 4 * SCALE, 128


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids)


def get_inputs() -> list:
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs() -> list:
    return [VOCAB, DIM]
