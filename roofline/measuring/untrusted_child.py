"""The timing harness of `roofline sol --time`, and the child process that runs a candidate under it
(`python -m roofline.measuring.untrusted_child READ_FD WRITE_FD`, started by `measuring/untrusted.py`).

The harness binds everything it uses (the clock, the device synchronisation, the marker kernel, the CUPTI
session's C entry points and the accessors of its records, clone, save, the pipe's read and write) before the
candidate's file is imported, and notes who each guarded name (GUARDED) is; after the calls it says which of
them the candidate replaced. It never times with CUDA events or time.perf_counter as the candidate sees them.

One run (`Harness.run`), all on fresh inputs made from seeds the parent chose (`problem.make_inputs`):
1. checks: one call per check seed; the output saved for the parent to compare with the reference's.
2. warm-up: calls on one input set, sized to a time budget.
3. timed calls, each on its own fresh inputs. On a GPU inside one CUPTI session: per call the inputs are made,
   the L2 flushed, a marker kernel (`torch.cuda._sleep`) launched on the caller's stream, the call made, a
   second marker launched, the whole device synchronised and (for the calls kept) the output cloned. The
   parent cuts the session's device activities at the markers (`untrusted.split_calls`). On the CPU the
   bound clock brackets each call and the output is cloned the moment the call returns.
4. `later`: after each check and after the timed calls, a short wait and the end of the threads started since
   the harness was built (2 s at most), then the outputs are cloned again: an output that was wrong when its call
   returned and right later was computed by work deferred past the return.
Every output goes to the parent over the pipe, as raw bytes (measuring/wire.py: no file is written): the parent,
which holds the reference, the tolerances and the verdict, compares them.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# Bound at import, before any candidate code runs in this process.
_read, _write, _dumps, _loads = os.read, os.write, json.dumps, json.loads
_clock_ns, _sleep, _monotonic = time.perf_counter_ns, time.sleep, time.monotonic
_threads, _current_thread = threading.enumerate, threading.current_thread
_system_random = random.SystemRandom()

# The later look waits for the candidate's threads to end, at most this long (a pool that never ends).
SETTLE_MAX_S = 2.0
# The marker kernel: torch.cuda._sleep's spin, for this many cycles (~0.5 us at 2 GHz): short beside any call.
MARKER_CYCLES = 1000
MARKER_NAME = "spin_kernel"
# Device activities that are work: kernels, copies and memsets (not synchronisations or annotations).
WORK_KINDS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
# cuCtxGetLimit/cuCtxSetLimit's CU_LIMIT_PERSISTING_L2_CACHE_SIZE (cuda.h): the L2 set aside for persisting
# accesses (an access-policy window); the harness sets it to 0 and reads it after every timed call.
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
# The names whose replacement by the candidate is refused: what a timer in its process would use.
GUARDED: tuple[tuple[str, str], ...] = (
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("time", "time"), ("time", "time_ns"), ("time", "process_time"), ("time", "sleep"),
    ("torch", "manual_seed"), ("torch", "randn"), ("torch", "rand"), ("torch", "randint"), ("torch", "save"),
    ("torch.Tensor", "clone"), ("torch.Tensor", "cpu"), ("torch.Tensor", "to"), ("torch.Tensor", "detach"),
    ("torch.cuda", "Event"), ("torch.cuda", "synchronize"), ("torch.cuda", "Stream"), ("torch.cuda", "_sleep"),
    ("torch.cuda", "current_stream"), ("torch.cuda.Event", "record"), ("torch.cuda.Event", "elapsed_time"),
    ("torch.cuda.Event", "synchronize"), ("torch.cuda.Event", "query"), ("torch.cuda.Stream", "synchronize"),
    ("torch._C", "_cuda_synchronize"), ("torch._C", "_cuda_sleep"),
    ("torch.profiler", "profile"), ("torch.autograd.profiler", "profile"),
    ("torch.autograd", "_enable_profiler"), ("torch.autograd", "_disable_profiler"),
    ("torch.autograd", "_prepare_profiler"), ("torch._C._autograd", "_ProfilerResult"),
    ("torch._C._autograd._ProfilerResult", "events"), ("torch._C._autograd._KinetoEvent", "duration_ns"),
    ("torch._C._autograd._KinetoEvent", "start_ns"), ("torch._C._autograd._KinetoEvent", "name"),
    ("torch._C._autograd._KinetoEvent", "device_resource_id"), ("torch._C._autograd._KinetoEvent", "device_type"),
    ("torch._C._autograd._KinetoEvent", "is_user_annotation"), ("torch._C._autograd._KinetoEvent", "activity_type"),
)


def _resolve(dotted: str) -> Any:
    """The object a dotted name points at (None when it does not exist)."""
    parts = dotted.split(".")
    obj = sys.modules.get(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
    return obj


def _raw(obj: Any, name: str) -> Any:
    """The attribute as stored: a class's from the first class of its MRO that defines it (a classmethod read
    through the class is a new bound method each time), a module's as it is."""
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
    return getattr(obj, name)


# The modules of the harness itself: a candidate that rebinds or adds a name in them (`_clock_ns`, a method of
# Harness, the wire's `send`) is refused. `__main__` is the child's own module when it runs as one.
HARNESS_MODULES = ("roofline.measuring.untrusted_child", "roofline.measuring.wire")
CHILD_MODULE = "roofline.measuring.untrusted_child"


def _harness_modules() -> dict[str, Any]:
    """{label: namespace} of the harness's modules and classes as loaded now (the child's `__main__` too)."""
    found: dict[str, Any] = {}
    for name in HARNESS_MODULES:
        if name in sys.modules:
            found[name] = vars(sys.modules[name])
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) == CHILD_MODULE:
        found["__main__"] = vars(main)
    for label, space in list(found.items()):
        if isinstance(space.get("Harness"), type):
            found[f"{label}.Harness"] = space["Harness"].__dict__
    return found


def guard_snapshot() -> dict[str, Any]:
    """{"time.perf_counter": the object} of every GUARDED name that exists now (the objects themselves: an id
    could be reused by a replacement once the original is freed)."""
    out = {}
    for owner, name in GUARDED:
        obj = _resolve(owner)
        if obj is not None and hasattr(obj, name):
            out[f"{owner}.{name}"] = _raw(obj, name)
    for label, space in _harness_modules().items():
        for key, value in list(space.items()):
            if not key.startswith("__"):
                out[f"{label}.{key}"] = value
    return out


def activity_kind(event_type: Any) -> Callable[[Any], str]:
    """A Kineto record's activity kind ('kernel', 'gpu_memcpy', 'cpu_op', ...), bound now. torch before 2.12 has
    no `activity_type` accessor: there a device record that is no annotation counts as device work ('kernel':
    kernels, copies and memsets alike), a CPU one as 'cpu_op'."""
    kind = getattr(event_type, "activity_type", None)
    if kind is not None:
        return kind
    device, annotation = event_type.device_type, event_type.is_user_annotation

    def derived(e: Any) -> str:
        if annotation(e):
            return "gpu_user_annotation"
        return "cpu_op" if str(device(e)).endswith("CPU") else "kernel"

    return derived


class Harness:
    """The timer's side of a run on `device` ('cpu' or 'cuda:N'): built (and bound) before the candidate is
    imported."""

    def __init__(self, device: str, sink: Callable[[str, Any], None], flush: bool = True) -> None:
        import torch

        self.device = device
        self._sink = sink  # where each kept output goes (measuring/wire.py in the child)
        self._clock, self._pause, self._now = _clock_ns, _sleep, _monotonic
        self.cuda = device.startswith("cuda")
        self._torch = torch
        self._clone, self._detach, self._cpu = torch.Tensor.clone, torch.Tensor.detach, torch.Tensor.cpu
        self._tensor = torch.Tensor
        self._snapshot, self._modules = guard_snapshot, _harness_modules
        self.guards = guard_snapshot()
        self._threads_before = set(_threads())  # the later look waits only for threads started after this
        self.kinds = WORK_KINDS
        self._persisting: Callable[[], int] | None = None
        if self.cuda:
            from torch.autograd import ProfilerActivity

            from roofline.measuring.timing import FLUSH_L2_MULTIPLE
            from roofline.measuring.timing_cuda import DEFAULT_L2_BYTES, L2Flush

            torch.cuda.set_device(device)
            self._sync, self._spin = torch._C._cuda_synchronize, torch._C._cuda_sleep
            self.bind_profiler(ProfilerActivity.CUDA)
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or DEFAULT_L2_BYTES
            self.flush = L2Flush(device, int(FLUSH_L2_MULTIPLE * l2) if flush else 0)
            self._sync()
            self._persisting = persisting_l2()

    def bind_profiler(self, activity: Any) -> None:
        """Bind the CUPTI session's C entry points and its records' accessors (Kineto's, which torch.profiler
        wraps in Python the candidate could patch) for `activity` (ProfilerActivity.CUDA)."""
        from torch._C._autograd import _KinetoEvent, _ProfilerResult
        from torch._C._profiler import _ExperimentalConfig
        from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler, _enable_profiler, _prepare_profiler

        self._config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
        self._activities = {activity}
        self._prof = (_prepare_profiler, _enable_profiler, _disable_profiler, _ProfilerResult.events)
        self._ev = (_KinetoEvent.name, _KinetoEvent.device_resource_id, _KinetoEvent.start_ns,
                    _KinetoEvent.duration_ns, activity_kind(_KinetoEvent))

    # -- what the candidate may have replaced
    def patched(self) -> list[str]:
        """The GUARDED names, and the names of the harness's own modules, that are no longer what they were when
        the harness was built, or were added since."""
        now = self._snapshot()
        changed = {k for k, v in self.guards.items() if now.get(k) is not v}
        prefixes = tuple(f"{label}." for label in self._modules())
        added = {k for k in now if k not in self.guards and k.startswith(prefixes)}
        return sorted(changed | added)

    # -- device work
    def _session(self, fn: Callable[[], Any]) -> list[list[Any]]:
        """Run `fn` inside one CUPTI session: its device work activities as [name, stream, start ns, end ns]."""
        prepare, enable, disable, events = self._prof
        name, stream, start, duration, kind = self._ev
        self._sync()
        prepare(self._config, self._activities)
        enable(self._config, self._activities)
        try:
            fn()
            self._sync()
        finally:
            result = disable()
        out: list[list[Any]] = []  # [name, stream, start ns, end ns]
        for e in events(result):
            if kind(e) in self.kinds:
                s = int(start(e))
                out.append([name(e), int(stream(e)), s, s + int(duration(e))])
        out.sort(key=lambda a: a[2])
        return out

    def _names(self, fn: Callable[[], Any]) -> list[str]:
        return [a[0] for a in self._session(fn)]

    def _mark(self) -> None:
        self._spin(MARKER_CYCLES)

    # -- outputs
    def snapshot(self, value: Any) -> Any:
        """A copy of the output's tensors (same nesting)."""
        if isinstance(value, self._tensor):
            return self._clone(self._detach(value))
        if isinstance(value, dict):
            return {k: self.snapshot(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.snapshot(v) for v in value]
        return value

    def _host(self, value: Any) -> Any:
        if isinstance(value, self._tensor):
            return self._cpu(value)
        if isinstance(value, dict):
            return {k: self._host(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._host(v) for v in value]
        return value

    def _keep(self, value: Any, name: str) -> str:
        """Hand a copy of an output to the sink (the parent's pipe, or the caller's dict); its name."""
        self._sink(name, self._host(value))
        return name

    # -- one run
    def run(self, call: Callable[[list[Any]], Any], inputs_for: Callable[[int], list[Any]],
            plan: dict[str, Any]) -> dict[str, Any]:
        """Checks, warm-up, timed calls and the later look (module docstring); `plan`: checks, keep, warmup_s,
        rep_s, min_reps, max_reps, later_s, seeds (checks, warmup, timed: each call's own, drawn independently by
        the parent, so that a seed seen tells nothing of the next one). Returns what the parent needs, as JSON
        data; the outputs go to the sink, named as the result says."""
        seeds = plan["seeds"]
        check_seeds, timed_seeds = [int(x) for x in seeds["checks"]], [int(x) for x in seeds["timed"]]
        result: dict[str, Any] = {"device": self.device, "checks": []}
        for j in range(int(plan["checks"])):
            s = check_seeds[j % len(check_seeds)]
            out = call(inputs_for(s))
            self._wait()
            at_return = self._keep(self.snapshot(out), f"check{j}")
            self._settle(float(plan["later_s"]))
            result["checks"].append({"seed": s, "output": at_return,
                                     "later": self._keep(self.snapshot(out), f"check{j}-later")})
        xs = inputs_for(int(seeds["warmup"]))
        t0 = self._clock()
        sample = call(xs)  # its structure tells the snapshot's device work apart (_timed_cuda)
        self._wait()
        first_s = (self._clock() - t0) * 1e-9
        warm = max(1, min(1000, int(float(plan["warmup_s"]) / max(first_s, 1e-7))))
        for _ in range(warm):
            call(xs)
        self._wait()
        reps = max(int(plan["min_reps"]), min(int(plan["max_reps"]), int(float(plan["rep_s"]) / max(first_s, 1e-7))))
        reps = min(reps, len(timed_seeds))
        keep = sorted({reps - 1, *_system_random.sample(range(reps), min(int(plan["keep"]), reps))})
        result.update(first_call_s=first_s, warmup_calls=warm + 1, reps=reps)
        kept: dict[int, tuple[Any, Any]] = {}
        timed = self._timed_cuda if self.cuda else self._timed_cpu
        result["timed"] = timed(call, inputs_for, timed_seeds[:reps], set(keep), kept, sample)
        self._settle(float(plan["later_s"]))
        result["kept"] = [{"rep": i, "seed": timed_seeds[i],
                           "output": self._keep(snap, f"rep{i}"),
                           "later": self._keep(self.snapshot(live), f"rep{i}-later")}
                          for i, (snap, live) in sorted(kept.items())]
        result["patched"] = self.patched()
        return result

    def _wait(self) -> None:
        if self.cuda:
            self._sync()

    def _settle(self, seconds: float) -> None:
        """Before the later look: `seconds`, then the end of every thread started since the harness was built
        (the candidate's: work deferred past a return runs on one), SETTLE_MAX_S at most, then the device."""
        self._pause(seconds)
        deadline = self._now() + SETTLE_MAX_S
        me = _current_thread()
        for t in _threads():
            if t is not me and t not in self._threads_before and t.is_alive():
                t.join(max(0.0, deadline - self._now()))
        self._wait()

    def _timed_cpu(self, call: Callable[[list[Any]], Any], inputs_for: Callable[[int], list[Any]], seeds: list[int],
                   keep: set[int], kept: dict[int, tuple[Any, Any]], _: Any) -> dict[str, Any]:
        samples = []
        for i, seed in enumerate(seeds):
            xs = inputs_for(seed)
            t0 = self._clock()
            out = call(xs)
            t1 = self._clock()
            if i in keep:
                kept[i] = (self.snapshot(out), out)
            samples.append(t1 - t0)
        return {"method": "cpu", "samples_ns": samples}

    def _timed_cuda(self, call: Callable[[list[Any]], Any], inputs_for: Callable[[int], list[Any]], seeds: list[int],
                    keep: set[int], kept: dict[int, tuple[Any, Any]], sample_out: Any) -> dict[str, Any]:
        # each piece of the harness's own work between calls, as the session will see it
        layout = {"inputs": self._names(lambda: inputs_for(seeds[0])), "flush": self._names(self.flush),
                  "snapshot": self._names(lambda: self.snapshot(sample_out))}
        marker = self._session(self._mark)
        stream = marker[0][1] if marker else -1

        persisting: list[int] = []  # the persisting-L2 limit after each call, before the next flush
        read = self._persisting

        def loop() -> None:
            for i, seed in enumerate(seeds):
                xs = inputs_for(seed)
                self.flush()
                self._mark()
                out = call(xs)
                self._mark()
                self._sync()
                if read is not None:
                    persisting.append(read())
                if i in keep:
                    kept[i] = (self.snapshot(out), out)

        acts = self._session(loop)
        return {"method": "cupti", "persisting_l2_bytes": max(persisting, default=0), "activities": acts,
                "marker": MARKER_NAME, "marker_stream": stream,
                "layout": layout, "keep": sorted(keep)}


def persisting_l2() -> Callable[[], int] | None:
    """Set the current context's persisting-L2 limit to 0 and return a reader of it (the driver's entry points,
    bound now); None where the driver cannot be loaded or has no such limit. A candidate that sets an
    access-policy window needs the limit above 0 for its lines to persist through the L2 flush between calls."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        get, put = lib.cuCtxGetLimit, lib.cuCtxSetLimit
    except (OSError, AttributeError):
        return None
    get.argtypes, put.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int], [ctypes.c_int, ctypes.c_size_t]
    if put(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0) != 0:
        return None
    value = ctypes.c_size_t(0)

    def read() -> int:
        value.value = 0
        return int(value.value) if get(ctypes.byref(value), CU_LIMIT_PERSISTING_L2_CACHE_SIZE) == 0 else 0

    return read


# -- the child process
class Channel:
    """JSON lines over two pipe descriptors (not stdin/stdout: the candidate may print)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._r, self._w, self._buf = read_fd, write_fd, b""
        self.write_fd = write_fd

    def receive(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            chunk = _read(self._r, 1 << 16)
            if not chunk:
                raise EOFError("the parent closed the pipe")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return _loads(line)

    def send(self, message: dict[str, Any]) -> None:
        data = (_dumps(message) + "\n").encode()
        while data:
            data = data[_write(self._w, data):]


def _error(exc: BaseException) -> str:
    from roofline.core.errors import RooflineError

    if isinstance(exc, RooflineError):
        return str(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else '(no message)'}"


def main(argv: list[str]) -> int:
    """The child: bind the harness, then import and build the candidate, then run what the parent asks."""
    os.dup2(2, 1)  # the candidate's prints go to stderr: the protocol has its own pipes
    chan = Channel(int(argv[0]), int(argv[1]))
    setup = chan.receive()
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False  # the precision asked for: fp32 is fp32
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = False
        torch.set_grad_enabled(False)
        import roofline.measuring.untrusted_child  # noqa: F401  both copies of the harness guarded from the start
        from roofline.measuring.wire import send

        write, fd = _write, chan.write_fd
        harness = Harness(setup["device"], lambda name, value: send(write, fd, name, value),
                          flush=setup.get("flush", True))
        from roofline.measuring.problem import build_model, load_problem, make_inputs

        problem = load_problem(setup["problem"], setup.get("candidate"))  # the candidate's code runs from here
        model = build_model(problem, int(setup["init_seed"]), setup["device"], setup.get("dtype"),
                            candidate=setup.get("candidate") is not None)
    except BaseException as exc:  # whatever the candidate raised goes to the parent as one line
        chan.send({"error": _error(exc), "stage": "build"})
        return 1
    chan.send({"ok": True, "patched": harness.patched()})
    plan = chan.receive()
    device, dtype = setup["device"], setup.get("dtype")
    try:
        result = harness.run(lambda xs: model(*xs), lambda s: make_inputs(problem, s, device, dtype), plan)
    except BaseException as exc:  # as one line too
        chan.send({"error": _error(exc), "stage": "run", "patched": harness.patched()})
        return 1
    chan.send({"ok": True, **result})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no teardown: the candidate's atexit handlers and threads have nothing more to say
