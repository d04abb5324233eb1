"""Profile a whole PyTorch program: every aten op it runs, on the roofline.

    with roofline.profile(name="llama-prefill") as prof:    # the block, once
        model(x)
    prof = roofline.profile(lambda: model(x), warmup=3)     # warm-up calls, then one profiled call
    prof.records, prof.summary, prof.save("llama.json")   # the table: roofline.report.profile.top_table

Timed (the default): the program runs for real under torch.profiler and the trace's dispatch mode; each op
call's device time is the sum of the kernels it launched (capture/kernels.py). Ops inside
`with roofline.region("step"):` are marked with the region's name; once any region is entered, only the
ops inside regions are kept, and ops outside regions are no longer recorded (the whole run is one region when
none is marked).

Analytic (`time=False`, or `gpu=` a GPU this machine does not have): the program runs under torch's
FakeTensorMode: shapes flow and tensors hold no data; the same records without times, placed on the spec's
roofs; the summary's roofline_time_s is the predicted step time. The run leaves the program as it found it
(what the step, or a `with` block's variables, reach is saved and put back: capture/isolate.py), never writes
or computes on a real tensor, and computes nothing but small constants (capture/fake.py, capture/build.py;
docs/profile.md "What an analytic run guarantees"). Recipe for a model too large for this machine:

    from roofline.capture import fake_mode
    with fake_mode():                        # parameters are fake tensors: no memory
        model = build_model(config)          # on the CPU device; dtype as it will run (bf16)
        x = torch.randint(0, vocab, (1, 4096))
    prof = roofline.profile(lambda: model(x), time=False, gpu="b200")

A model built normally (real weights) works too: its tensors are faked as they are used; so does one built on
the meta device, and one built inside the profile (capture/build.py: small constants keep their values, an
initialiser's check reads a stand-in, the build's calls are left out: summary `build_calls`). The summary's
`analytic_coverage` says what share of the prediction ops with a formula hold; `lower_bound` when it is below
LOWER_BOUND_COVERAGE (capture/profile_summary.py builds the summary, core/summary.py's ProfileSummary). Each
`F.scaled_dot_product_attention` is recorded as one fused attention op (aten::scaled_dot_product_attention),
as a GPU runs it, even where torch runs its math decomposition for want of data; each nn.LSTM / GRU / RNN call
as one cuDNN call (aten::_cudnn_rnn, and _cudnn_rnn_backward for its gradient: capture/whole_rnn.py), not step
by step.

A program that calls torch.distributed collectives (each rank profiling itself) gets one record per
collective on the interconnect, with its algbw and busbw, and the summary's `communication` share
(capture/comm.py). Profiles of a single process are unchanged.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import torch

from roofline.analysis.predict import predicted, predictor_for
from roofline.analysis.predict_step import step_prediction
from roofline.capture import kernels as kernel_times
from roofline.capture.build import CONSTANT_NUMEL, build_calls, constants_kept, fake_swaps
from roofline.capture.fake import fake_errors, without_data
from roofline.capture.gpu_autocast import cuda_autocast
from roofline.capture.gpu_terms import calls_in_gpu_terms
from roofline.capture.hf_masks import builders_known
from roofline.capture.inductor import with_launches
from roofline.capture.isolate import frame_roots
from roofline.capture.modules import StepTracker
from roofline.capture.profile_summary import Run, compiled_code, profile_summary
from roofline.capture.records import Edge, ProfiledCall, build_records, dataflow, profiled_calls
from roofline.capture.trace import Tracer, WholeAttention, strip_root
from roofline.capture.wall import Wall, current_cuda_device
from roofline.capture.whole_rnn import WholeRNN
from roofline.ceilings.opdb import WARM
from roofline.ceilings.specs import gpu_ceilings
from roofline.core import validate
from roofline.core.document import Document, write_document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import Ceilings
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import Record
from roofline.core.stats import busy_marked
from roofline.core.summary import ProfileSummary
from roofline.core.validate import whole
from roofline.measuring.machine_load import load_between, read_cpu_times
from roofline.measuring.target import RoofChoice, Target, resolve_target

# Profiles now running, innermost last: region() marks the innermost one's ops.
_ACTIVE: list[Profile] = []
# Told of every region entry and exit (`enter(name)`, `exit(name)`), profiled or not: the gate of a run under
# Nsight Compute (ncu/target_profile.py) profiles the entries `profile --counters` chose.
REGION_HOOKS: list[Any] = []
class Profile:
    """One profiled run: `records` (one per aggregated op), `summary`, `calls` (every op call with its
    FLOPs, bytes, time and record index), `edges` (the dataflow between calls). Use as a context manager,
    or through `profile(fn)`."""

    def __init__(self, name: str = "profile", *, gpu: str | None = None, device: str | None = None,
                 time: bool = True, roof: RoofChoice | None = None, regions: Sequence[str] = (),
                 tokens: int | None = None, db: str | Path | None = None, progress: Reporter = QUIET) -> None:
        if tokens is not None:
            whole("profile", "tokens", tokens, minimum=1)
        validate.boolean("profile", "time", time)
        if isinstance(regions, str):  # a string is a sequence too: 'fwd' read as regions 'f', 'w', 'd'
            raise UsageError(f"profile: regions is a list of region names, e.g. regions=[{regions!r}], got {regions!r}")
        for r in regions:
            validate.name_arg("profile", "regions", r, example="['forward']")
        self.name = name
        self.tokens = tokens
        self.only_regions = tuple(regions)  # keep only these regions (each must be entered)
        self.records: list[Record] = []
        self.summary = ProfileSummary.from_dict({})  # the typed summary (core/summary.py), once run
        self.calls: list[ProfiledCall] = []
        self.edges: list[Edge] = []
        self.target: Target | None = None
        self._gpu, self._device, self._time, self._roof = gpu, device, time, roof  # where it runs (`resolve`)
        self._stack: contextlib.ExitStack | None = None
        self._tracer: Tracer | None = None
        self._tracker: StepTracker | None = None
        self._torch_prof: Any = None
        self._wall: Wall | None = None
        self._wall_plain: float | None = None
        self._load_start: Any = None  # the machine's CPU times as a CPU-timed run starts (measuring/machine_load.py)
        self._load: Any = None  # how busy the machine was over that run: its records say so (core.stats.busy_marked)
        self._regions: list[str] = []
        self._region_entries: Counter[str] = Counter()
        self._region_walls: dict[str, list[Wall]] = {}
        # Each entry's op calls, by call index [first, end): `profile --counters` joins one entry's kernels.
        self.region_spans: dict[str, list[tuple[int, int]]] = {}
        self._done = False
        self._phases: dict[str, float] = {}  # host seconds: warm-up, the profiled run, the analysis
        self._compiled: list[tuple[str, str | None]] = []  # compiled modules run: (module path, region)
        self._regions_kept: set[str] | None = None  # the regions the records keep (None: the whole run)
        # Triton launches (their regions), and why those left unattributed were
        self._launches: tuple[list[str | None], list[tuple[str | None, str]]] = ([], [])
        self._entered = 0.0
        self._db = db  # the operator database for predicted times (analysis/predict.py; None: this device's)
        self._predictor: Any = None
        self._built = 0  # calls of the model's build left out (build.py)
        self._froze = False  # whether this profile froze the garbage collector's objects (`_freeze`)
        self._progress = progress  # hears the analysis after the run (the command line's status line)
        self._ok = True  # whether the profiled block ended without an exception (`_analysing`)

    # -- where it runs
    def resolve(self) -> Target:
        """The roof and the timing device (resolved once). Without `device`, a timed profile times the GPU torch
        is set to (`torch.cuda.set_device`: each rank's own in a distributed job), the first one by default."""
        if self.target is None:
            device = self._device if self._device is not None or not self._time else current_cuda_device()
            self.target = resolve_target(gpu=self._gpu, device=device, time=self._time, roof=self._roof)
        if self._predictor is None:  # a bad database file is refused here, before a script starts (`roofline
            self._predictor = predictor_for(self.target.ceilings.device_id, self._db, WARM,  # profile` resolves
                                            in_sequence=True)
            # first); a model's ops read what the op before them left in the L2: its warm points
        return self.target

    @property
    def timed(self) -> bool:
        return self.resolve().time_device is not None

    @property
    def _time_device(self) -> str | None:
        return self.resolve().time_device

    # -- running
    def run(self, fn: Callable[[], Any], warmup: int = 3) -> Profile:
        """`warmup` plain calls (timed: the last one gives wall_uninstrumented_s), then the profiled call.
        An analytic profile runs no warm-up (it would compute for real)."""
        if warmup < 0:
            raise RooflineError(f"profile: warmup must be >= 0, got {warmup}")
        start = time.perf_counter()
        if self.timed and warmup:
            for _ in range(warmup - 1):
                fn()
            wall = Wall(self._time_device)
            if wall.cuda:
                torch.cuda.synchronize(wall.device)
            wall.start()
            fn()
            wall.stop(sync=True)
            self._wall_plain = wall.elapsed_s()
        self._phases["warmup"] = time.perf_counter() - start
        with self:
            fn()
        return self

    def __enter__(self) -> Profile:
        if self._stack is not None or self._done:
            raise RooflineError("profile: a Profile runs once; make a new one")
        self._entered = time.perf_counter()
        target = self.resolve()  # and the predictor: a bad database file is refused before the run
        stack = contextlib.ExitStack()
        self._freeze()
        try:
            if target.time_device is None:
                # without data, the program left as found: what the caller's variables reach (Profile.run's: the
                # step) saved and put back; real tensors never written nor computed on (capture/fake.py)
                stack.enter_context(without_data(frame_roots(sys._getframe(1))))
                # torch.compile'd code runs eager: compiled kernels would read fake tensors' data (Inductor's C++
                # kernels crashed the process on the CPU with a segmentation fault)
                from torch import _dynamo  # not `import torch._dynamo`: that makes `torch` local to this method

                stack.enter_context(_dynamo.config.patch(disable=True))
                if target.ceilings.kind == "gpu":  # autocast as on CUDA, whatever the host (gpu_autocast.py)
                    stack.enter_context(cuda_autocast())
            on_gpu = bool(target.time_device and target.time_device.startswith("cuda"))
            if on_gpu:  # device kernels need the profiler; on the CPU the tracer times each op itself
                from roofline.measuring.cupti import device_profiler

                # shapes: the launch arguments of torch.compile'd Triton kernels (capture/inductor.py)
                self._torch_prof = stack.enter_context(device_profiler(cuda=True, cpu=True, record_shapes=True))
                torch.cuda.synchronize(target.time_device)
            stack.callback(self._analysing)  # after the trace and the wall clock stop, before the profiler does
            self._wall = Wall(target.time_device)
            self._wall.start()
            if target.time_device == "cpu":  # each op on the host clock: other work on the machine slows it
                self._load_start = read_cpu_times()
            stack.callback(self._wall.stop, True)  # after the trace stops, before the profiler does
            # the tracker steps aside in compiled modules (compiled.py): torch's warning about global hooks and
            # torch.compile(module) does not apply
            stack.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
            tracker = stack.enter_context(StepTracker(
                ranges=on_gpu, region=lambda: self._regions[-1] if self._regions else None))
            self._tracker = tracker
            self._tracer = stack.enter_context(Tracer(tracker.module,
                                                      lambda: self._regions[-1] if self._regions else None,
                                                      ranges=on_gpu, clock=target.time_device == "cpu",
                                                      phase_of=tracker.phase,
                                                      stand_in_scalars=target.time_device is None))
            tracker.on_module = self._tracer.note_module
            if target.time_device is None:  # analytic: small factories are constants (build.py), fake parameters
                stack.enter_context(constants_kept())  # convert (model.to(torch.bfloat16)), and SDPA is the fused
                stack.enter_context(fake_swaps())  # kernel a GPU runs (trace.py)
                stack.enter_context(WholeAttention(self._tracer))  # and HF's masks known without data (hf_masks.py)
                stack.enter_context(builders_known(self._tracer.unrecorded))
                stack.enter_context(WholeRNN(self._tracer))  # each nn.LSTM/GRU/RNN as one cuDNN call (whole_rnn.py)
            _ACTIVE.append(self)
            stack.callback(_ACTIVE.remove, self)
        except BaseException:
            stack.close()
            self._unfreeze()
            raise
        self._stack = stack
        return self

    def _freeze(self) -> None:
        """Move the objects alive now out of the garbage collector's reach until the analysis is done
        (`gc.freeze`): the trace allocates a few objects per op, which sets off full collections, and a full
        collection walks every object of the process (torch, a model library: 300-400 thousand objects, 0.1-0.3 s
        each on the CPU; a tiny Llama's training step paid 0.27 s of 0.61 s in one). Frozen, a collection walks
        only what the profile made. Not when the program froze objects itself (a server before it forks): its
        `gc.unfreeze()` is its own to call."""
        if gc.isenabled() and gc.get_freeze_count() == 0:
            gc.freeze()
            self._froze = True

    def _unfreeze(self) -> None:
        if self._froze:
            self._froze = False
            gc.unfreeze()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        stack, self._stack = self._stack, None
        self._done, self._ok = True, exc is None
        if stack is not None:
            stack.close()
        if self._load_start is not None:  # the program's own workers (a DataLoader's) count as other processes
            self._load = load_between(self._load_start, read_cpu_times())
        self._phases["profiled"] = time.perf_counter() - self._entered
        try:
            if exc is not None:
                if not self.timed and isinstance(exc, fake_errors()):
                    raise RooflineError(f"analytic profile: the program needs tensor values, which a run without "
                                        f"data does not have ({type(exc).__name__}: {exc}); compute the value before "
                                        f"the profile starts (only constants of up to {CONSTANT_NUMEL} elements have "
                                        f"values inside it), or profile it timed on the GPU") from exc
                return False
            self._build()
        finally:
            self._unfreeze()
        return False

    @contextlib.contextmanager
    def _region(self, name: str) -> Iterator[None]:
        if not self._region_entries and self._tracer is not None:
            self._tracer.keep_regions_only()
        self._regions.append(name)
        self._region_entries[name] += 1
        wall = Wall(self._time_device)
        self._region_walls.setdefault(name, []).append(wall)
        wall.start()
        first = self._tracer._next if self._tracer is not None else 0
        spans = self.region_spans.setdefault(name, [])
        entry = len(spans)  # numbered as entered (a region nested in itself closes before its parent)
        spans.append((first, first))
        marker = (torch.profiler.record_function(kernel_times.REGION_PREFIX + name)
                  if self._torch_prof is not None else None)
        try:
            if marker is not None:
                with marker:
                    yield
            else:
                yield
        finally:
            wall.stop()
            self._regions.pop()
            end = self._tracer._next if self._tracer is not None else 0
            spans[entry] = (first, end)

    # -- results
    def _analysing(self, step: str = "stopping the profiler") -> None:
        """Say which step of the analysis runs (after the run: on a GPU the profiler's trace takes seconds to
        stop and parse; a status line's clock moves meanwhile); nothing after a run that raised."""
        if self._ok:
            calls = self._tracer._next if self._tracer is not None else 0
            self._progress.status(f"analysing {calls} op calls: {step}")

    def _build(self) -> None:
        assert self._tracer is not None and self.target is not None
        tracer, target = self._tracer, self.target
        start = time.perf_counter()
        timeline = None
        if self._torch_prof is not None:
            self._analysing("reading the profiler's kernels")
            timeline = kernel_times.timeline(self._torch_prof)
        elif target.time_device is not None:
            timeline = kernel_times.cpu_timeline(tracer.calls)
        calls = tracer.calls
        if timeline is not None and timeline.launches:
            calls, fused, failed = with_launches(calls, timeline.launches, tracer._next)
            for call, launch in fused:
                timeline.calls[call.index] = kernel_times.CallTime(list(launch.kernels))
            timeline.unattributed += [(k, t, launch.region) for launch, _ in failed for k, t in launch.kernels]
            self._launches = ([launch.region for launch in timeline.launches],
                              [(launch.region, why) for launch, why in failed])
        compiled = list(self._tracker.compiled) if self._tracker is not None else []
        names, root = strip_root([c.module for c in calls] + compiled)
        for c in calls:
            c.module = names[c.module]
        self._compiled = [(names[m], r) for m, r in self._tracker.runs] if self._tracker else []
        on_gpu_roof = target.ceilings.kind == "gpu"
        if on_gpu_roof and target.time_device is None:  # a GPU's prediction names the GPU's kernels (gpu_terms.py)
            calls = calls_in_gpu_terms(calls)
        self._analysing("FLOPs, bytes and time of each call")
        items = profiled_calls(calls, timeline,
                               tf32_matmul=on_gpu_roof and torch.backends.cuda.matmul.allow_tf32,
                               tf32_conv=on_gpu_roof and torch.backends.cudnn.allow_tf32)
        built = build_calls(items, tracer.first_forward, tracer.state | tracer._params, tracer.constant_calls)
        if built:  # the model's construction: outside the step (build.py)
            items = [p for p in items if p.call.index not in built]
        self._built = len(built)
        edges = dataflow(items)
        regions = set(self._region_entries) or None
        missing = [r for r in self.only_regions if r not in self._region_entries]
        if missing:
            seen = ", ".join(sorted(self._region_entries)) or "none"
            raise UsageError(f"region {missing[0]!r} was never entered (regions entered: {seen})")
        if self.only_regions:
            regions = set(self.only_regions)
            items = [p for p in items if p.call.region in regions]
        elif regions:  # the program marked regions: keep only what ran inside them
            items = [p for p in items if p.call.region is not None]
            kept = {p.call.index for p in items}
            edges = [e for e in edges if e.producer in kept and e.consumer in kept]
        self.calls, self.edges = items, edges
        self._analysing("the records and the summary")
        self.records = build_records(items, target.ceilings, timeline.method if timeline else None)
        if self._load is not None:
            self.records = busy_marked(self.records, self._load.reasons)
        predictor = self._predictor
        self.records = predicted(self.records, predictor)
        self._regions_kept = regions
        summary = self._summary(timeline, root, regions)
        measured = summary.kernel_time_s if timeline is not None else None
        summary = replace(summary, prediction=step_prediction(self.records, predictor, measured or None))
        self._phases["analysis"] = time.perf_counter() - start
        self.summary = replace(summary, phases_s=dict(self._phases))

    def _summary(self, timeline: kernel_times.Timeline | None, root: str | None,
                 regions: set[str] | None) -> ProfileSummary:
        assert self._tracer is not None and self.target is not None
        kept = self._regions_kept
        compiled = compiled_code(self._compiled, self._launches[0], self._launches[1], kept)
        return profile_summary(Run(
            self.name, self.target, timeline, self.calls, self.edges, self.records, regions,
            dict(self._region_entries),
            {name: [w.elapsed_s() or 0.0 for w in self._region_walls[name]] for name in regions or ()},
            self._wall.elapsed_s() if self._wall else None, self._wall_plain, root, self._built,
            dict(self._tracer.skipped), dict(self._tracer.stood_in), self._roofs(), self.tokens, compiled))

    def _roofs(self) -> dict[str, Ceilings | None]:
        """The roofs MFU and MBU are stated against: the spec's datasheet and this machine's measured ceilings
        (a CPU has only measured ones)."""
        assert self.target is not None
        t = self.target
        if t.ceilings.kind == "cpu":
            return {"datasheet": None, "measured": t.ceilings}
        return {"datasheet": gpu_ceilings(t.spec) if t.spec is not None else None, "measured": t.measured}

    def require_ops(self, what: str) -> None:
        """A RooflineError when the run recorded no op (inside its regions): an empty profile would read as a
        result, and a CI step should not pass on nothing. `what` names the program: 'train.py'."""
        if not self.records:
            inside = " inside its regions" if self.only_regions or self.summary.regions else ""
            raise RooflineError(f"{what} ran no torch operator{inside}: nothing to profile")

    def _require(self) -> None:
        if not self._done or self._stack is not None:
            raise RooflineError("profile: nothing profiled yet (run the block or pass a callable)")

    def document(self) -> Document:
        """The results document: the device and roofs, the records, the summary under extra['profile']."""
        self._require()
        assert self.target is not None
        return self.target.document(self.records, extra={"profile": self.summary.to_dict()})

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Write the document; an existing file is kept unless `force`."""
        return write_document(self.document(), path, force=force)


def profile(fn: Callable[[], Any] | None = None, *, name: str | None = None, warmup: int = 3,
            gpu: str | None = None, device: str | None = None, time: bool = True,
            roof: RoofChoice | None = None, regions: Sequence[str] = (), tokens: int | None = None,
            db: str | Path | None = None, energy: bool = False) -> Profile:
    """Profile every aten op of a program on the roofline.

    `profile(fn)`: `warmup` calls of the zero-argument `fn`, then one profiled call; returns the Profile.
    `with profile(name=...) as prof:` profiles the block. `time=False` (or `gpu=` a GPU this machine does not
    have) runs it without data under FakeTensorMode (see the module docstring). `tokens`: the tokens the step
    processes (batch x sequence for a prefill or a training step, the batch for a decode step), for tokens/s and
    FLOPs per token beside MFU. `db`: the operator database the records' and the summary's predicted times
    come from (default: this device's, from `roofline calibrate ops`; docs/prediction.md). `energy` (with
    `fn`): the step's joules on the GPU's NVML energy counter, `fn` run back to back, and each op's share
    (`analysis.energy_profile`; docs/energy.md). An `fn` that ran no torch operator (inside `regions`) raises
    RooflineError, as the command does; a `with` block that ran none gives an empty Profile."""
    validate.boolean("profile", "energy", energy)
    if energy and fn is None:
        raise UsageError("profile: energy=True needs the step as a callable (it runs back to back to be measured)")
    if fn is not None:
        validate.callable_arg("profile", "fn", fn, hint="a zero-argument callable: lambda: model(x)")
    if name is not None:
        validate.name_arg("profile", "name", name)
    validate.whole("profile", "warmup", warmup, minimum=0)
    label = name or (getattr(fn, "__name__", None) if fn is not None else None) or "profile"
    if label == "<lambda>":
        label = "profile"
    prof = Profile(label, gpu=gpu, device=device, time=time, roof=roof, regions=regions, tokens=tokens, db=db)
    if energy:
        from roofline.measuring.energy import require_counter

        require_counter(prof.resolve().time_device)  # the CPU, or no counter: one line before anything runs
    if fn is None:
        return prof
    prof.run(fn, warmup)
    prof.require_ops("profile: fn")  # as `roofline profile` says of a script
    if energy:
        from roofline.capture.energy import measure_profile_energy

        measure_profile_energy(prof, fn)
    return prof


@contextlib.contextmanager
def region(name: str) -> Iterator[None]:
    """Mark the ops of a block as region `name` in the running profile. On a CUDA machine the block is also
    an NVTX range of that name, profiled or not, so Nsight Compute and Nsight Systems see the same regions
    (`ncu --nvtx --nvtx-include "NAME/"`)."""
    validate.name_arg("region", "name", name, example="'forward'")
    prof = _ACTIVE[-1] if _ACTIVE else None
    nvtx = torch.cuda.is_available()
    if nvtx:
        torch.cuda.nvtx.range_push(name)
    try:
        for hook in REGION_HOOKS:
            hook.enter(name)
        if prof is None:
            yield
        else:
            with prof._region(name):
                yield
    finally:
        for hook in reversed(REGION_HOOKS):
            hook.exit(name)
        if nvtx:
            torch.cuda.nvtx.range_pop()
