"""Benchmark (issue 28): how long an analytic profile (no data, another GPU's spec) of an RNN over a long sequence
takes, forward and a training step, for LSTM and GRU, one- and bidirectional. The target: under 2 s for 1000 steps
(before each nn.LSTM/GRU was recorded as one cuDNN call, a GRU over a long sequence took 33 s, a bidirectional one
over 60 s). Figures go to docs/measurements.md. Run: python3 scripts/bench_analytic_rnn.py [STEPS]."""

from __future__ import annotations

import statistics
import sys
import time

import torch
import torch.nn as nn

import roofline

REPEATS = 3  # the median of three fresh profiles (the first pays imports and caches: reported apart)


def case(kind: type[nn.Module], bidirectional: bool, train: bool, steps: int) -> tuple[float, float, int]:
    times: list[float] = []
    calls = 0
    for _ in range(REPEATS + 1):
        t0 = time.perf_counter()
        with roofline.profile(name="rnn", time=False, gpu="h200") as prof:
            rnn = kind(256, 512, num_layers=2, batch_first=True, bidirectional=bidirectional)
            x = torch.randn(16, steps, 256)
            out, _ = rnn(x)
            if train:
                out.sum().backward()
        times.append(time.perf_counter() - t0)
        calls = len(prof.records)
    return times[0], statistics.median(times[1:]), calls


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print(f"analytic RNN profiles, batch 16, 2 layers, 256 -> 512, {steps} steps, gpu=h200 "
          f"(torch {torch.__version__}, {torch.get_num_threads()} threads): seconds for the whole profile (the "
          "model's build, its run and the records), the first profile and the median of the next three")
    for kind in (nn.LSTM, nn.GRU):
        for bi in (False, True):
            for train in (False, True):
                first, med, calls = case(kind, bi, train, steps)
                print(f"  {kind.__name__:4s} {'bi ' if bi else 'uni'} {'train' if train else 'fwd  '}  "
                      f"first {first:6.3f} s  median {med:6.3f} s  records {calls}")


if __name__ == "__main__":
    main()
