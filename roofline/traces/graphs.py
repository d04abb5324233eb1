"""CUDA graphs in a trace: each replayed kernel tied to the launch that captured it, where the trace links them.

What a trace holds (CUPTI through Kineto): a replay is one `cudaGraphLaunch`, and every kernel it runs carries
that launch's correlation id, with `graph id` and `graph node id` args (the graph and its node). The ops that
captured the graph ran earlier, under `cudaStreamBeginCapture` .. `cudaStreamEndCapture` on their thread: their
launches are in the trace (with their ops) when the profile covered the capture, and ran no kernel (captured, not
run). Nothing names a captured launch's node, so the link is by order: a stream capture adds one node per launch,
in the order of the launches, and the nodes' ids follow their creation. A graph is linked to a capture when the
graph's distinct node ids are exactly as many as the capture's launches (captures paired with graphs in order:
the earliest unpaired capture of that size with the lowest graph id); its k-th node is then the capture's k-th
launch. A graph with no such capture (captured before the profile began, or nodes the launches do not account
for) is not linked: its kernels are graph time, said so (traces/calls.py).
"""

from __future__ import annotations

from collections import defaultdict

from roofline.traces.model import NONE, RankTrace


def captures(trace: RankTrace) -> list[list[int]]:
    """Each stream capture's launches (correlation ids) in order, the captures in time order: the launches between
    a begin and an end on one thread that ran no kernel of their own."""
    ran = {k.correlation for k in trace.kernels}
    marks = sorted(trace.capture_marks, key=lambda m: m.ts)
    spans: list[tuple[int, float, float]] = []  # (thread, begin, end)
    open_at: dict[int, float] = {}
    for m in marks:
        if m.begin:
            open_at[m.thread] = m.ts
        elif m.thread in open_at:
            spans.append((m.thread, open_at.pop(m.thread), m.ts))
    by_thread: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for corr, launch in trace.launches.items():
        if not launch.graph and corr not in ran:
            by_thread[launch.thread].append((launch.ts, corr))
    out = []
    for thread, begin, end in sorted(spans, key=lambda s: s[1]):
        inside = sorted((ts, corr) for ts, corr in by_thread.get(thread, []) if begin <= ts <= end)
        if inside:
            out.append([corr for _, corr in inside])
    return out


def graph_nodes(trace: RankTrace) -> dict[int, list[int]]:
    """Each replayed graph's distinct node ids, in order."""
    nodes: dict[int, set[int]] = defaultdict(set)
    for k in trace.kernels:
        if k.graph != NONE and k.node != NONE:
            nodes[k.graph].add(k.node)
    return {g: sorted(n) for g, n in nodes.items()}


def links(trace: RankTrace) -> dict[tuple[int, int], int]:
    """(graph id, node id) -> the correlation id of the launch that captured the node (module docstring)."""
    caps = captures(trace)
    used: set[int] = set()
    out: dict[tuple[int, int], int] = {}
    for graph, nodes in sorted(graph_nodes(trace).items()):
        match = next((i for i, c in enumerate(caps) if i not in used and len(c) == len(nodes)), None)
        if match is None:
            continue
        used.add(match)
        out.update({(graph, node): corr for node, corr in zip(nodes, caps[match], strict=True)})
    return out
