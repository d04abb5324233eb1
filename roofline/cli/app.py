"""The `roofline` command line: a thin typer app; every command hands off to the library.

Bad input is one line on stderr and a non-zero exit (2 for usage errors), never a traceback.
torch and matplotlib are imported only by the commands that time or draw.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from roofline.core.errors import RooflineError, UsageError
from roofline.measuring.timing import DEFAULT_POWER, POWER_MODES

app = typer.Typer(rich_markup_mode="rich", no_args_is_help=True, add_completion=False,
                  help="How fast each deep-learning operator could run on a GPU, how fast it does, and why.")
specs_app = typer.Typer(no_args_is_help=True, help="GPU spec tables (dense peaks, with sources).")
ops_app = typer.Typer(no_args_is_help=True, help="The operator catalog.")
analyze_app = typer.Typer(no_args_is_help=True, help="Place one operator on the roofline (timed when a device is "
                          "there; --no-time for the model alone). `roofline ops list` shows every operator.")
app.add_typer(specs_app, name="specs")
app.add_typer(ops_app, name="ops")
app.add_typer(analyze_app, name="analyze")


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _note(msg: str) -> None:
    from roofline.report.text import console

    console(stderr=True).print(f"[yellow]note:[/yellow] {msg}")


# ---------------------------------------------------------------- specs
@specs_app.command("list")
def specs_list(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List every GPU spec file."""
    from roofline.ceilings.specs import load_all

    specs = sorted(load_all().values(), key=lambda s: s.id)
    if json_:
        _out(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    from roofline.report.text import console, specs_table

    console().print(specs_table(specs))


@specs_app.command("show")
def specs_show(gpu: Annotated[str, typer.Argument(help="Spec id, alias or NVML name.")],
               json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show one GPU's spec, every number with its source."""
    from roofline.ceilings.specs import resolve

    spec = resolve(gpu)
    if json_:
        _out(json.dumps(spec.to_dict(), indent=2))
        return
    from roofline.report.text import console, spec_table

    console().print(spec_table(spec))


@app.command("device")
def device_cmd(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the local GPUs (through NVML, no torch) and the spec each maps to."""
    from roofline.measuring.device import cpu_description, detect_gpus

    gpus = detect_gpus()
    doc = {"gpus": [{"index": g.index, "nvml_name": g.nvml_name, "driver": g.driver_version,
                     "spec": g.spec.id if g.spec else None} for g in gpus], "cpu": cpu_description()}
    if json_:
        _out(json.dumps(doc, indent=2))
        return
    if not gpus:
        _out(f"no NVIDIA GPU found: CPU-only machine ({doc['cpu']['name']}, {doc['cpu']['cores']} cores)")
    for g in gpus:
        spec = f"spec {g.spec.id}" if g.spec else "no spec file for this GPU: add one under specs/ or pass --gpu"
        _out(f"cuda:{g.index}  {g.nvml_name}  driver {g.driver_version}  ->  {spec}")


# ---------------------------------------------------------------- ops
@ops_app.command("list")
def ops_list(json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List every operator with its parameters, defaults and variants."""
    from roofline.ops import OPERATORS

    if json_:
        doc = {name: {"family": cls.family, "summary": cls.summary, "ignores": cls.ignores, "dtypes": cls.dtypes,
                      "params": {f.name: {"default": f.default, **{k: v for k, v in f.metadata.items()}}
                                 for f in dataclasses.fields(cls)}}
               for name, cls in sorted(OPERATORS.items())}
        _out(json.dumps(doc, indent=2, default=list))
        return
    from roofline.report.text import console, ops_table

    console().print(ops_table(OPERATORS))


# ---------------------------------------------------------------- analyze
_COMMON = [
    ("dtype", Optional[str], typer.Option(None, "--dtype", help="fp64, fp32, tf32, fp16, bf16, fp8, int8 "
                                          "(default: fp16 on a GPU, fp32 on the CPU).")),
    ("gpu", Optional[str], typer.Option(None, "--gpu", help="Spec id or alias for the roof (default: the local "
                                        "GPU; another GPU's spec means analytic only).")),
    ("device", Optional[str], typer.Option(None, "--device", help="Where to time: cpu, cuda, cuda:N "
                                           "(default: the GPU if there is one, else the CPU).")),
    ("no_time", bool, typer.Option(False, "--no-time", help="The analytic model only; time nothing.")),
    ("no_tensor_cores", bool, typer.Option(False, "--no-tensor-cores", help="Use the CUDA-core (plain) ceiling.")),
    ("warm_l2", bool, typer.Option(False, "--warm-l2", help="Do not flush the L2 between samples (cache-hot).")),
    ("timer", str, typer.Option("auto", "--timer", help="auto, graph, graph-loop or events.")),
    ("power", str, typer.Option(DEFAULT_POWER, "--power", help="burst (default: a low-power gap before each "
                                "sample of a compute-bound operator, the kernel as in isolation and under Nsight "
                                "Compute) or sustained (back to back after a warm-up: the steady state, power cap "
                                "included).")),
    ("kernels", bool, typer.Option(True, "--kernels/--no-kernels", help="Record the kernel names (torch "
                                   "profiler; its first use costs ~3 s).")),
    ("roof", Optional[str], typer.Option(None, "--roof", help="datasheet, measured or both (default both when a "
                                         "calibration exists).")),
    ("json_", bool, typer.Option(False, "--json", help="Print the results document as JSON.")),
    ("output", Optional[Path], typer.Option(None, "-o", "--output", help="Write the results document here.")),
    ("force", bool, typer.Option(False, "--force", help="Overwrite --output if it exists.")),
    ("plot", Optional[str], typer.Option(None, "--plot", help="Also draw a roofline chart (a .png/.svg/.pdf path, "
                                         "or - for the terminal).")),
]


TIMERS = ("auto", "graph", "graph-loop", "events")
ROOFS = ("datasheet", "measured", "both")
POWERS = POWER_MODES


def check_choice(flag: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise UsageError(f"{flag} must be one of {', '.join(choices)}, got {value!r}")


def _op_option(f: dataclasses.Field[Any]) -> tuple[Any, Any]:
    meta, flag = f.metadata, f"--{f.name.replace('_', '-')}"
    kind = meta.get("kind")
    if kind == "int":
        return Optional[int], typer.Option(f.default, flag, help=meta.get("help", ""))
    if kind == "choice":
        return str, typer.Option(f.default, flag, help=f"{meta.get('help', '')} ({'|'.join(meta['choices'])})")
    if kind == "flag":
        return bool, typer.Option(f.default, f"{flag}/--no-{f.name.replace('_', '-')}", help=meta.get("help", ""))
    raise RuntimeError(f"field {f.name} has no CLI kind")


def _op_command(cls: type, common: list[tuple[str, Any, Any]], body: Any, name: str, doc: str) -> Any:
    """A typer command with one option per field of the operator `cls` plus the `common` options; `body`
    gets the shape (field values) and the other options."""
    op_fields = dataclasses.fields(cls)

    def command(**kwargs: Any) -> None:
        shape = {f.name: kwargs.pop(f.name) for f in op_fields}
        body(shape, **kwargs)

    params = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=ann)
              for f in op_fields for ann, opt in [_op_option(f)]]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=ann)
               for n, ann, opt in common]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__name__ = name
    command.__doc__ = doc
    return command


def _make_analyze(cls: type) -> Any:
    return _op_command(cls, _COMMON, lambda shape, **kw: run_analyze(cls.name, shape, **kw), cls.name,
                       f"{cls.summary}\n\n{cls.ignores}")


def run_analyze(op_name: str, shape: dict[str, Any], *, dtype: str | None, gpu: str | None, device: str | None,
                no_time: bool, no_tensor_cores: bool, warm_l2: bool, timer: str, power: str, kernels: bool,
                roof: str | None, json_: bool, output: Path | None, force: bool, plot: str | None) -> None:
    from roofline.core.document import dumps, new_document, write_document
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record, ceilings_dict
    from roofline.measuring.target import resolve_target
    from roofline.ops import make

    op = make(op_name, **shape)
    check_choice("--timer", timer, TIMERS)
    check_choice("--roof", roof, ROOFS)
    check_choice("--power", power, POWERS)
    if output is not None and output.exists() and not force:
        raise RooflineError(f"{output} exists: not overwriting it (pass --force to replace it)")
    target = resolve_target(gpu=gpu, device=device, time=not no_time, roof=roof)  # type: ignore[arg-type]
    dt = get_dtype(dtype or ("fp32" if target.is_cpu else "fp16"))
    for msg in target.messages:
        _note(msg)
    if target.time_device is None:
        record = analytic_record(op, dt, target.ceilings, not no_tensor_cores)
    else:
        from roofline.measuring.runner import measure_op

        record = measure_op(op, dt, target, warm_l2=warm_l2, method=timer, tensor_cores=not no_tensor_cores,
                            power=power, kernels=kernels)
    from roofline.analysis.advice import advise

    record["advice"] = advise(record, target.spec)
    device_info = {**target.device_info, "ceilings": ceilings_dict(target.ceilings)}
    if target.measured is not None:
        device_info["measured_ceilings"] = ceilings_dict(target.measured)
    if target.time_device:
        device_info.update(_runtime_info(target.time_device))
    doc = new_document(device_info, [record])
    if output is not None:
        write_document(doc, output, force=force)
    if json_:
        _out(dumps(doc))
    else:
        from roofline.report.text import console, record_table

        console().print(record_table(record))
        if target.is_cpu and target.time_device:
            _note(f"timed on the CPU ({target.device_info['name']}): no GPU on this machine")
    if plot:
        _draw(doc, plot, force)


def _runtime_info(device: str) -> dict[str, Any]:
    """torch and CUDA versions (torch is already imported when something was timed)."""
    import torch

    info: dict[str, Any] = {"torch_version": torch.__version__, "time_device": device}
    if device.startswith("cuda"):
        info["cuda_version"] = torch.version.cuda
        from roofline.measuring.nvml import snapshot

        info["state_after"] = snapshot(torch.device(device).index or 0)
    return info


def _draw(doc: dict[str, Any], where: str, force: bool) -> None:
    if where == "-":
        from roofline.report.terminal import render_terminal

        _out(render_terminal([doc]))
        return
    from roofline.report.chart import save_chart

    if Path(where).exists() and not force:
        raise RooflineError(f"{where} exists: not overwriting it (pass --force to replace it)")
    path = save_chart([doc], Path(where))
    _note(f"chart written to {path}")


def _register_op_commands(sub_app: typer.Typer, make: Any, help: Any) -> None:
    """One sub-command of `sub_app` per registered operator, built by `make(cls)`, with `help(cls)`."""
    from roofline.ops import OPERATORS

    for name, cls in sorted(OPERATORS.items()):
        sub_app.command(name, help=help(cls))(make(cls))


_register_op_commands(analyze_app, _make_analyze, lambda cls: f"{cls.summary}. {cls.ignores}")


# ---------------------------------------------------------------- calibrate
@app.command("calibrate")
def calibrate_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="Fewer shapes and no L2 sweep (about 10 s).")] = False,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: the GPU, "
                                                  "else the CPU).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the measured ceilings as JSON.")] = False,
) -> None:
    """Measure this machine's ceilings (HBM, L2, shared memory, matmul per dtype, FP32 FMA) and store them;
    `analyze` and `plot` then draw measured roofs beside the datasheet's."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from roofline.ceilings.calibrate import calibrate
    from roofline.ceilings.store import store_path
    from roofline.report.text import calibration_table, console, l2_sweep_table

    if device is not None and device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"unknown device '{device}' (use cpu, cuda or cuda:N)")
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("calibrating", total=None)

        def say(msg: str) -> None:
            bar.update(task, description=msg)
            bar.refresh()

        ceilings, details = calibrate(device, quick, say)
    if json_:
        _out(json.dumps({"compute_flops_per_s": ceilings.compute, "memory_bytes_per_s": ceilings.memory,
                         "details": details}, indent=2, default=str))
        return
    console().print(calibration_table(ceilings, details))
    if details.get("l2_sweep"):
        console().print(l2_sweep_table(details["l2_sweep"]))
    _note(f"stored in {store_path()}")


# ---------------------------------------------------------------- suites
@app.command("run")
def run_cmd(
    suite: Annotated[Path, typer.Argument(help="Suite file (TOML), e.g. suites/smoke.toml.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Spec for the roof (another GPU: analytic only).")] = None,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N.")] = None,
    no_time: Annotated[bool, typer.Option("--no-time", help="The analytic model only.")] = False,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Do not flush the L2 between samples.")] = False,
    timer: Annotated[str, typer.Option("--timer", help="auto, graph, graph-loop or events.")] = "auto",
    power: Annotated[str, typer.Option("--power", help="burst or sustained (see analyze --help).")] = DEFAULT_POWER,
    kernels: Annotated[bool, typer.Option("--kernels/--no-kernels", help="Record kernel names (torch "
                                          "profiler; ~3 s the first time).")] = True,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    inject_slowdown: Annotated[str | None, typer.Option("--inject-slowdown", hidden=True,
                                                           help="TEST ONLY: ENTRY=FRACTION, e.g. 2=0.07.")] = None,
) -> None:
    """Run every entry of a suite (timed when a device is there) into one results document."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from roofline.analysis.suite import load_suite, run_suite
    from roofline.core.document import dumps, new_document, write_document
    from roofline.core.record import ceilings_dict
    from roofline.measuring.target import resolve_target
    from roofline.report.text import console, records_table

    check_choice("--timer", timer, TIMERS)
    check_choice("--power", power, POWERS)
    spec = load_suite(suite)
    if output is not None and output.exists() and not force:
        raise RooflineError(f"{output} exists: not overwriting it (pass --force to replace it)")
    slow: dict[int, float] = {}
    if inject_slowdown:
        try:
            k, v = inject_slowdown.split("=")
            slow[int(k)] = float(v)
        except ValueError:
            raise UsageError("--inject-slowdown takes ENTRY=FRACTION, e.g. 2=0.07") from None
    target = resolve_target(gpu=gpu, device=device, time=not no_time)
    for msg in target.messages:
        _note(msg)
    # No auto-refresh thread: on a small CPU a refreshing thread steals a core from torch's thread pool
    # and the timed kernels stall; the bar is redrawn between entries instead.
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task(spec.name, total=len(spec.entries))

        def tick(i: int, n: int, what: str) -> None:
            bar.update(task, completed=i - 1, description=f"{spec.name}: {what}")
            bar.refresh()

        records = run_suite(spec, target, warm_l2=warm_l2, timer=timer, slowdown=slow, progress=tick,
                            kernels=kernels, power=power)
    info = {**target.device_info, "ceilings": ceilings_dict(target.ceilings), "suite": spec.name}
    if target.measured is not None:
        info["measured_ceilings"] = ceilings_dict(target.measured)
    if target.time_device:
        info.update(_runtime_info(target.time_device))
    doc = new_document(info, records)
    if output is not None:
        write_document(doc, output, force=force)
    if json_:
        _out(dumps(doc))
    else:
        console().print(records_table(records, title=f"{spec.name} on {target.ceilings.device_name}"))
        if output is not None:
            _note(f"results written to {output}")


# ---------------------------------------------------------------- regression check
baseline_app = typer.Typer(no_args_is_help=True, help="Baselines for `roofline check` (written only when asked).")
app.add_typer(baseline_app, name="baseline")


@app.command("check")
def check_cmd(
    results: Annotated[Path, typer.Argument(help="Results document of this run.")],
    baseline: Annotated[Path, typer.Option("--baseline", help="Baseline results document (never modified).")],
    fail_on: Annotated[str, typer.Option("--fail-on", help="Rules, e.g. median:5% or median:5%,p90:10%.")]
    = "median:5%",
    metric: Annotated[str, typer.Option("--metric", help="time (same device) or fraction (fraction of the "
                                        "roofline, for comparing across devices).")] = "time",
    fail_on_missing: Annotated[bool, typer.Option("--fail-on-missing", help="A baseline record missing from "
                                                  "the results fails the check.")] = False,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Append a markdown report (e.g. "
                                                     "$GITHUB_STEP_SUMMARY).")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write a JUnit XML report.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON.")] = None,
) -> None:
    """Compare a run with a baseline; exit 1 only on a regression that is past the threshold AND
    statistically significant on the raw samples (Mann-Whitney U); 2 on bad input."""
    from roofline.ci.judge import render_table, run_check, write_outputs
    from roofline.report.text import console

    check_choice("--metric", metric, ("time", "fraction"))
    report = run_check(results, baseline, fail_on, metric=metric, fail_on_missing=fail_on_missing)
    console().print(render_table(report))
    write_outputs(report, markdown=markdown, junit=junit, json_path=json_path)
    raise typer.Exit(report.exit_code)


@baseline_app.command("update")
def baseline_update_cmd(
    results: Annotated[Path, typer.Argument(help="Results document to make the baseline.")],
    baseline: Annotated[Path, typer.Option("--baseline", help="Baseline file to create or replace.")],
    force: Annotated[bool, typer.Option("--force", help="Also replace a baseline from another GPU, or an "
                                        "unreadable one.")] = False,
) -> None:
    """Create or replace a baseline from a results document (the only command that writes baselines)."""
    from roofline.ci.judge import update_baseline

    for line in update_baseline(results, baseline, force=force).lines():
        _out(line)


# ---------------------------------------------------------------- plot
@app.command("plot")
def plot_cmd(
    results: Annotated[list[Path], typer.Argument(help="One or more results documents.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Chart file: .png, .svg or .pdf.")]
    = None,
    terminal: Annotated[bool, typer.Option("--terminal", help="Draw the chart in the terminal.")] = False,
    label: Annotated[list[str] | None, typer.Option("--label", help="Legend label per results file.")] = None,
    roof: Annotated[str, typer.Option("--roof", help="datasheet, measured or both.")] = "both",
    title: Annotated[str | None, typer.Option("--title", help="Chart title.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the chart file if it exists.")] = False,
) -> None:
    """Draw achieved performance against every ceiling (log-log roofline chart)."""
    check_choice("--roof", roof, ROOFS)
    if output is None and not terminal:
        raise UsageError("give -o chart.png|svg|pdf or --terminal")
    if label and len(label) != len(results):
        raise UsageError(f"--label given {len(label)} times for {len(results)} results files")
    from roofline.report.chart import load_documents

    docs = load_documents(results)
    if terminal:
        from roofline.report.terminal import render_terminal

        _out(render_terminal(docs, roof=roof, labels=label))
    if output is not None:
        if output.exists() and not force:
            raise RooflineError(f"{output} exists: not overwriting it (pass --force to replace it)")
        from roofline.report.chart import save_chart

        path = save_chart(docs, output, labels=label, roof=roof, title=title)
        _note(f"chart written to {path}")


# ---------------------------------------------------------------- compare
compare_app = typer.Typer(no_args_is_help=True, help="Which GPU for my operators? Rank GPU specs by roofline time "
                          "(and cost per call, with --prices). `roofline compare suite FILE` for a whole suite.")
app.add_typer(compare_app, name="compare")

_COMPARE_COMMON = [
    ("gpu", Optional[list[str]], typer.Option(None, "--gpu", "--gpus", help="GPU id or alias; repeat it or "
                                              "comma-separate (default: every spec).")),
    ("prices", Optional[Path], typer.Option(None, "--prices", help="Prices per GPU-hour (TOML), e.g. "
                                            "examples/prices.toml: adds cost per call and per million calls.")),
    ("measured", Optional[Path], typer.Option(None, "--measured", help="Results document timed on a local GPU: "
                                              "its measured times beside the prediction for that GPU.")),
    ("datasheet", bool, typer.Option(False, "--datasheet", help="Ignore stored calibrations: datasheet roofs only.")),
    ("json_", bool, typer.Option(False, "--json", help="Print the comparison as JSON.")),
    ("plot", Optional[Path], typer.Option(None, "--plot", help="Also write a bar chart (.png, .svg or .pdf).")),
    ("force", bool, typer.Option(False, "--force", help="Overwrite the --plot file if it exists.")),
]


def _show_comparison(result: Any, json_: bool, plot: Optional[Path], force: bool) -> None:
    from roofline.analysis.compare import compare_to_json, plot_compare, render_compare
    from roofline.report.text import console

    if plot is not None and plot.exists() and not force:
        raise RooflineError(f"{plot} exists: not overwriting it (pass --force to replace it)")
    if json_:
        _out(json.dumps(compare_to_json(result), indent=2))
    else:
        console().print(render_compare(result))
    if plot is not None:
        _note(f"chart written to {plot_compare(result, plot)}")


_COMPARE_OP = [
    ("dtype", str, typer.Option("fp16", "--dtype", help="fp64, fp32, tf32, fp16, bf16, fp8, int8.")),
    ("no_tensor_cores", bool, typer.Option(False, "--no-tensor-cores", help="Use the CUDA-core ceiling.")),
]


def _make_compare(cls: type) -> Any:
    def body(shape: dict[str, Any], *, dtype: str, no_tensor_cores: bool, gpu: list[str] | None,
             prices: Path | None, measured: Path | None, datasheet: bool, json_: bool, plot: Path | None,
             force: bool) -> None:
        from roofline.analysis.compare import compare_op, load_prices
        from roofline.ops import make

        result = compare_op(make(cls.name, **shape), dtype, gpu, load_prices(prices) if prices else None,
                            not no_tensor_cores, measured=measured, use_measured=not datasheet)
        _show_comparison(result, json_, plot, force)

    return _op_command(cls, _COMPARE_OP + _COMPARE_COMMON, body, f"compare_{cls.name}",
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
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also write a stacked bar chart.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --plot file if it exists.")] = False,
) -> None:
    """Total roofline time of a suite per GPU, broken down by operator; cost per run with --prices."""
    from roofline.analysis.compare import compare_suite, load_prices

    result = compare_suite(suite, gpu, load_prices(prices) if prices else None, measured=measured,
                           use_measured=not datasheet)
    _show_comparison(result, json_, plot, force)


_register_op_commands(compare_app, _make_compare, lambda cls: f"Compare GPUs on {cls.name}: {cls.summary}.")


# ---------------------------------------------------------------- occupancy
@app.command("occupancy")
def occupancy_cmd(
    threads: Annotated[int, typer.Option("--threads-per-block", "-T", help="Threads per block.")] = 256,
    registers: Annotated[int, typer.Option("--registers-per-thread", "-R", help="Registers per thread "
                                           "(ptxas -v).")] = 32,
    smem: Annotated[str, typer.Option("--shared-memory-per-block", "-S", help="Shared memory per block (static + "
                                      "dynamic): bytes, 48KB or 100KiB (KB = KiB = 1024, as CUDA counts).")] = "0",
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="Spec id or alias (default: the local GPU).")] = None,
    carveout: Annotated[Optional[int], typer.Option("--carveout", help="Carve-out preference, KiB (default: none; "
                                                    "the API then counts with the largest).")] = None,
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="registers, shared-memory or threads.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="With --sweep: the curve (.png/.svg/.pdf).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --plot.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Theoretical occupancy of a launch configuration, with the arithmetic shown
    (as cudaOccupancyMaxActiveBlocksPerMultiprocessor computes it)."""
    from roofline.analysis.occupancy import (
        SWEEP_KINDS,
        occupancy,
        parse_bytes,
        plot_sweep,
        render_occupancy,
        render_sweep,
    )
    from roofline.analysis.occupancy import sweep as run_sweep
    from roofline.measuring.target import resolve_target
    from roofline.report.text import console

    check_choice("--sweep", sweep, tuple(SWEEP_KINDS))
    if plot is not None and sweep is None:
        raise UsageError("--plot draws a sweep: add --sweep registers|shared-memory|threads")
    spec = resolve_target(gpu=gpu, time=False).spec
    if spec is None:
        raise UsageError("no GPU here: pass --gpu ID")
    s = parse_bytes(smem)
    o = occupancy(spec, threads, registers, s, carveout)
    points = run_sweep(spec, sweep, threads, registers, s, carveout) if sweep else []
    if json_:
        _out(json.dumps({"occupancy": o.to_dict(), "sweep": [{k: v for k, v in p.to_dict().items()
                         if k not in ("working", "reasons")} for p in points]}, indent=2))
        return
    console().print(render_occupancy(o))
    for line in o.working:
        _out(line)
    if points:
        console().print(render_sweep(points))
    if plot is not None:
        if plot.exists() and not force:
            raise RooflineError(f"{plot} exists: not overwriting it (pass --force to replace it)")
        _note(f"chart written to {plot_sweep(points, plot, mark=o)}")


# ---------------------------------------------------------------- entry point
def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status. Domain and usage errors are one line on stderr."""
    try:
        rv = app(args=argv, prog_name="roofline", standalone_mode=False)
    except RooflineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except (typer.Exit, typer.Abort) as exc:
        return int(getattr(exc, "exit_code", 130))
    except Exception as exc:
        # click's exceptions (typer may vendor its own click): usage errors are one line, exit 2.
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stdout.write(exc.format_message() + "\n")  # type: ignore[attr-defined]
            return 0
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            msg = " ".join(exc.format_message().split())
            sys.stderr.write(f"error: {msg}\n")
            return int(exc.exit_code)
        raise
    return rv if isinstance(rv, int) else 0


def run() -> None:
    exit_now(main())


def exit_now(code: int) -> None:
    """Exit with `code`. After GPU work the interpreter's own teardown is skipped: finalising ~1200 torch
    modules and destroying the CUDA context with its cached allocations took 0.58-0.71 s after a 16-kernel
    `run` on the H200 (2026-11-29), a tenth of the command, and the driver reclaims all of it at process exit
    anyway (clang skips freeing its memory at exit for the same reason). The atexit handlers still run and
    both streams are flushed first; results files are closed before a command returns."""
    import atexit
    import os

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe (`roofline run ... | head`) or stream
                pass
        os._exit(code)
    sys.exit(code)

