"""FLOPs per element of the elementwise functions, shared by the elementwise family, GEMM epilogues and the
fused norms (here, so that `gemm` does not import the elementwise operators to read five numbers).

NB: transcendental functions (exp, erf, tanh) count as one FLOP each although they run on the SFU.
"""

# FLOPs per output element, by function. Counting convention: one FLOP per add, mul, compare, and
# per transcendental call (see the module note).
FLOPS_PER_ELEMENT: dict[str, int] = {
    "relu": 1,  # max(x, 0)
    "add": 1,  # a + b
    "mul": 1,  # a * b
    "gelu": 5,  # 0.5 * x * (1 + erf(x / sqrt 2)): div, erf, add, mul, mul
    "silu": 4,  # x / (1 + exp(-x)): neg, exp, add, div
    "copy": 0,  # y = x, moved only
}
