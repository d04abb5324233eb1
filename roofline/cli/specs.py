"""`roofline specs`, `roofline ops` and `roofline device`: what the tool knows (GPU specs, operators) and
what this machine has."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from roofline.cli.common import out
from roofline.cli.listings import list_ops, list_specs

specs_app = typer.Typer(no_args_is_help=True, help="GPU spec tables (dense peaks, with sources).")
ops_app = typer.Typer(no_args_is_help=True, help="The operator catalog.")


@specs_app.command("list")
def specs_list(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
               wide: Annotated[bool, typer.Option("--wide", help="Every column (name, aliases, boost clock), "
                                                  "at full width.")] = False) -> None:
    """List every GPU spec file."""
    list_specs(json_=json_, wide=wide)


@specs_app.command("show")
def specs_show(gpu: Annotated[str, typer.Argument(help="Spec id, alias or NVML name.")],
               json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show one GPU's spec, every number with its source."""
    from roofline.ceilings.specs import resolve

    spec = resolve(gpu)
    if json_:
        out(json.dumps(spec.to_dict(), indent=2))
        return
    from roofline.report.text import show, spec_table

    show(spec_table(spec))


@ops_app.command("list")
def ops_list(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List every operator with its parameters, defaults and variants."""
    list_ops(json_=json_)


def device_cmd(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the local GPUs (through NVML, no torch) and the spec each maps to."""
    from roofline.measuring.device import cpu_description, detect_gpus

    gpus = detect_gpus()
    cpu = cpu_description()
    if json_:
        out(json.dumps({"gpus": [{"index": g.index, "nvml_name": g.nvml_name, "driver": g.driver_version,
                                  "spec": g.spec.id if g.spec else None} for g in gpus], "cpu": cpu}, indent=2))
        return
    if not gpus:
        out(f"no NVIDIA GPU found: CPU-only machine ({cpu['name']}, {cpu['cores']} cores)")
    for g in gpus:
        spec = f"spec {g.spec.id}" if g.spec else "no spec file for this GPU: add one under specs/ or pass --gpu"
        out(f"cuda:{g.index}  {g.nvml_name}  driver {g.driver_version}  ->  {spec}")
