"""`roofline compare OP` and `roofline compare suite FILE`: which GPU for my operators, ranked by roofline time
(and cost, with prices)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from roofline.cli.common import OptionSpec, check_outputs, note, op_command, out, register_op_commands
from roofline.core.dtypes import DTYPES

if TYPE_CHECKING:
    from roofline.analysis.compare import Comparison, SuiteComparison
    from roofline.ops.base import Operator

compare_app = typer.Typer(no_args_is_help=True, help="Which GPU for my operators? Rank GPU specs by roofline time "
                          "(and cost per call, with --prices). `roofline compare suite FILE` for a whole suite.")

# The options of every `compare OP` command beside the operator's own.
COMMON: list[OptionSpec] = [
    ("gpu", Optional[list[str]], typer.Option(None, "--gpu", "--gpus", help="GPU id or alias; repeat it or "
                                              "comma-separate (default: every spec).")),
    ("prices", Optional[Path], typer.Option(None, "--prices", help="Prices per GPU-hour (TOML), e.g. "
                                            "examples/prices.toml: adds cost per call and per million calls.")),
    ("measured", Optional[Path], typer.Option(None, "--measured", help="Results document timed on a local GPU: "
                                              "its measured times beside the prediction for that GPU.")),
    ("tokens_per_call", Optional[int], typer.Option(None, "--tokens-per-call", help="Tokens one call processes "
                                                    "(e.g. batch x sequence): J per token beside the measured J "
                                                    "per call.")),
    ("datasheet", bool, typer.Option(False, "--datasheet", help="Ignore stored calibrations: datasheet roofs only.")),
    ("db", Optional[Path], typer.Option(None, "--db", help="An operator database (`calibrate ops`): its GPU is "
                                        "ranked by predicted time (each GPU's own database is used by default).")),
    ("json_", bool, typer.Option(False, "--json", help="Print the comparison as JSON.")),
    ("wide", bool, typer.Option(False, "--wide", help="Every column of the table, at full width.")),
    ("plot", Optional[Path], typer.Option(None, "--plot", help="Also write a bar chart (.png, .svg or .pdf).")),
    ("force", bool, typer.Option(False, "--force", help="Overwrite the --plot file if it exists.")),
]
OP_OPTIONS: list[OptionSpec] = [
    ("dtype", str, typer.Option("fp16", "--dtype", help=f"{', '.join(DTYPES)}.")),
    ("no_tensor_cores", bool, typer.Option(False, "--no-tensor-cores", help="Use the CUDA-core ceiling.")),
]


def show_comparison(result: Comparison | SuiteComparison, json_: bool, plot: Path | None, wide: bool = False
                    ) -> None:
    """Print the ranking (a table, or JSON) and draw its chart when asked (the path was checked beforehand)."""
    from roofline.analysis.compare import compare_to_json
    from roofline.report.compare import plot_compare, render_compare
    from roofline.report.text import show

    if json_:
        out(json.dumps(compare_to_json(result), indent=2))
    else:
        show(render_compare(result, wide=wide), wide=wide)
    if plot is not None:
        note(f"chart written to {plot_compare(result, plot)}")


def _make_compare(cls: type[Operator]) -> Any:
    def body(shape: dict[str, Any], *, dtype: str, no_tensor_cores: bool, gpu: list[str] | None,
             prices: Path | None, measured: Path | None, datasheet: bool, json_: bool, wide: bool,
             plot: Path | None, force: bool, db: Path | None = None,
             tokens_per_call: int | None = None) -> None:
        from roofline.analysis.compare import compare_op, databases, resolve_gpus
        from roofline.ceilings.prices import load_prices
        from roofline.ops import make

        op = make(cls.name, **shape)
        price_list = load_prices(prices) if prices else None
        check_outputs(force, charts=(plot,))
        result = compare_op(op, dtype, gpu, price_list, not no_tensor_cores, measured=measured,
                            use_measured=not datasheet, dbs=databases(resolve_gpus(gpu), db),
                            tokens=tokens_per_call)
        show_comparison(result, json_, plot, wide)

    return op_command(cls, OP_OPTIONS + COMMON, body, f"compare_{cls.name}",
                      f"Compare GPUs on {cls.name}: {cls.summary}.")


@compare_app.command("suite")
def compare_suite_cmd(
    suite: Annotated[Path, typer.Argument(help="Suite file (TOML): its GPU shapes and dtypes are compared.")],
    gpu: Annotated[Optional[list[str]], typer.Option("--gpu", "--gpus", help="GPU id or alias; repeat it or "
                                                     "comma-separate (default: every spec).")] = None,
    prices: Annotated[Optional[Path], typer.Option("--prices", help="Prices per GPU-hour (TOML).")] = None,
    measured: Annotated[Optional[Path], typer.Option("--measured", help="Results of `roofline run` of this suite "
                                                     "on a local GPU.")] = None,
    datasheet: Annotated[bool, typer.Option("--datasheet", help="Ignore stored calibrations.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column of the table (one per operator), at full "
                                       "width.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also write a stacked bar chart.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --plot file if it exists.")] = False,
    db: Annotated[Optional[Path], typer.Option("--db", help="An operator database: its GPU ranked by predicted "
                                               "time (each GPU's own is used by default).")] = None,
) -> None:
    """Total roofline time of a suite per GPU, broken down by operator (predicted where a GPU has an operator
    database); cost per run with --prices."""
    from roofline.analysis.compare import compare_suite, databases, resolve_gpus
    from roofline.ceilings.prices import load_prices

    price_list = load_prices(prices) if prices else None
    check_outputs(force, charts=(plot,))
    result = compare_suite(suite, gpu, price_list, measured=measured, use_measured=not datasheet,
                           dbs=databases(resolve_gpus(gpu), db))
    show_comparison(result, json_, plot, wide)


register_op_commands(compare_app, _make_compare, lambda cls: f"Compare GPUs on {cls.name}: {cls.summary}.",
                     short=lambda cls: f"Compare GPUs on {cls.name}: {cls.summary}.")
