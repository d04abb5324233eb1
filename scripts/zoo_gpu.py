"""The zoo's GPU half (issue 29, stage `zoo` of scripts/gpu_check.sh): one mixture-of-experts model (Mixtral, 8
experts, top-2) and one sliding-window model (Mistral, a window of 512 over 2048 tokens), built from config in
bf16 with random weights, one forward each, profiled timed:

    roofline profile scripts/zoo_gpu.py -o mixtral.json -- --model mixtral     # the profiled program
    python scripts/zoo_gpu.py --model mixtral --check mixtral.json             # FLOPs vs the closed form

`--check` prints the profile's matrix-product FLOPs against the closed form of scripts/zoo_validation.py
(2 x tokens x (matrix weights + top_k / experts of the expert weights) + attention as masked), the coverage
(share of kernel time in ops with a formula) and the ops without formula, as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

SEQ = 2048
SIZES = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2048, num_hidden_layers=4,
             num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096)
MODELS = {"mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(num_local_experts=8, num_experts_per_tok=2)),
          "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=512))}


def config(name: str) -> Any:
    import transformers

    cfg_cls, _, extra = MODELS[name]
    cfg = getattr(transformers, cfg_cls)(**SIZES, **extra)
    cfg._attn_implementation = "sdpa"
    return cfg


def build(name: str, device: str) -> torch.nn.Module:
    import transformers

    with torch.device(device):
        return getattr(transformers, MODELS[name][1])(config(name)).to(torch.bfloat16).eval()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--check", type=Path, help="a saved profile of this model: compare its FLOPs")
    a = p.parse_args()
    if a.check is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = build(a.model, device)
        ids = torch.randint(0, SIZES["vocab_size"], (1, SEQ), device=device)
        import roofline

        with torch.no_grad(), roofline.region("forward"):
            model(ids)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from zoo_validation import closed_form

    s = json.loads(a.check.read_text())["profile"]
    ref = closed_form(build(a.model, "meta"), config(a.model), 1, SEQ)
    print(json.dumps({"model": a.model, "flops_matmul": s["flops_matmul"], "closed_form": ref,
                      "ratio": s["flops_matmul"] / ref, "coverage": s.get("coverage"),
                      "kernel_time_s": s.get("kernel_time_s"),
                      "without_formula": [m["op"] for m in s.get("without_formula") or []]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
