"""Builder for embedding: F.embedding's gather, or with --backward aten's embedding_dense_backward (the kernels
autograd runs for an nn.Embedding's weight), on indices drawn uniformly from the vocabulary."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.embedding import Embedding


@builder("embedding")
def build_embedding(op: Embedding, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    tokens, vocab, dim = op.tokens, op.vocab, op.dim
    idx = torch.randint(0, vocab, (tokens,), device=device)
    if op.backward:
        grad = rand((tokens, dim), dtype, device)
        return Built(lambda: torch.ops.aten.embedding_dense_backward(grad, idx, vocab, -1, False),
                     "aten.embedding_dense_backward (nn.Embedding's weight gradient)", [grad, idx])
    w = rand((vocab, dim), dtype, device)
    return Built(lambda: F.embedding(idx, w), "F.embedding", [w, idx])
