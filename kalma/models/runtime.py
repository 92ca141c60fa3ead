"""Where every device decision of the transformers backends is made: one place, once per backend.

- **The device** (`device()`): every question to CUDA (is it there, its name, free memory, the
  peak of a batch, an out-of-memory error, where a loaded model's modules sit) goes through one
  `Device`. Tests install a stand-in (`using`) that answers like an 80 GB card, so that every
  branch a GPU takes runs in CI on the CPU; the tensors then stay on the CPU.
- **The runtime** (`Runtime`, resolved when a backend loads its model): device, dtype, TF32,
  attention, the memory model and the byte budget every batch is planned against, each with
  where it came from. Reports (`runs_as`), provenance (`as_dict`) and the cache identity read it.
- **dtype**: bf16 on CUDA, fp32 on the CPU, unless the spec asks (`@fp32`, `@bf16`, `@fp16`,
  `@tf32`). fp32 means fp32: TF32 matmuls only with `@tf32`, switched on around the backend's
  own passes through whichever API the process uses (torch's `fp32_precision` where it has one:
  reading the legacy flag after the new one was set fails every later pass).
- **attention**: as asked, else eager for T5 on CUDA (its position bias reaches SDPA as an fp32
  mask no fused kernel takes; the fallback measured 1.58x slower than eager on an H100).
- **the budget**: bytes a batch may hold beyond the weights: `MEMORY_SHARE` of the memory free
  when a call is planned, the GPU's on CUDA and the host's (MemAvailable) on the CPU;
  `token_budget=` or KALMA_TOKEN_BUDGET give it in tokens. Each path plans its batches by
  `MemoryModel`'s prediction against it. After an out-of-memory error the budget is halved for
  the rest of the run and the call re-planned; on CUDA the first batch's measured peak corrects
  the model's overhead factor.
- **the pass width** (`pass_tokens`): memory says what a batch may hold, not how wide a pass
  pays. On the CPU a pass past the knee of the model's throughput curve gains nothing and pays
  padding and attention, so the passes that compute many positions at once (scoring rows, a
  runner's leaf rows, a prompt's prefill) are cut at the knee, measured once per machine and
  model (`calibration`); decoding, one position a row, is bounded by memory alone. On CUDA
  memory alone decides. `pass_tokens=` or KALMA_PASS_TOKENS set it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from .memory import MemoryModel, Shape

DTYPES = ("fp32", "tf32", "bf16", "fp16")
ATTENTIONS = ("eager", "sdpa", "flex_attention")
PAD_MULTIPLE = 8
MEMORY_SHARE = 0.5  # of the free memory at planning time: the rest absorbs what the model does not count
# The caching allocator rounds and keeps blocks: an H100 measured T5-11B at 1.7 MB a token where
# the live tensors were 0.68 (issue 35). Corrected per backend by the first batch it measures.
GPU_OVERHEAD = 2.5
UNKNOWN_HOST_MEMORY = 4 << 30  # where neither /proc, sysconf nor psutil can say: a small laptop's share


@dataclass
class Peak:
    peak: int = 0


class Device:
    """The accelerator as this process sees it, asked through torch; see the module docstring."""

    def available(self) -> bool:
        import torch

        return bool(torch.cuda.is_available())

    def torch_device(self) -> str:
        """Where tensors go: `cuda` on a real GPU, `cpu` otherwise (a stand-in GPU included)."""
        return "cuda" if self.available() else "cpu"

    def name(self) -> str:
        """What runs the models: `CPU`, or the GPU's name (and how many there are)."""
        if not self.available():
            return "CPU"
        import torch

        n = torch.cuda.device_count()
        return torch.cuda.get_device_name(0) + (f" (x{n}, split by device_map)" if n > 1 else "")

    def names(self) -> list[str]:
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if self.available() else []

    def cuda_version(self) -> str | None:
        import torch

        return torch.version.cuda if self.available() else None

    def free(self) -> int:
        """Bytes free for new tensors. On CUDA the driver's free memory plus what torch's allocator
        holds cached but unused (`mem_get_info` counts those blocks as used); on the CPU the
        host's available memory."""
        if not self.available():
            return self.host_available()
        free, _, reserved, allocated = self.cuda_memory()
        return int(free + reserved - allocated)

    def total(self) -> int:
        return self.cuda_memory()[1] if self.available() else self.host_total()

    def cuda_memory(self) -> tuple[int, int, int, int]:
        """(free, total, reserved, allocated) bytes, as the driver and torch's allocator say."""
        import torch

        free, total = torch.cuda.mem_get_info()
        return int(free), int(total), int(torch.cuda.memory_reserved()), int(torch.cuda.memory_allocated())

    def host_available(self) -> int:
        """The host's available memory (Linux's MemAvailable: free plus reclaimable caches)."""
        return _meminfo("MemAvailable")

    def host_total(self) -> int:
        return _meminfo("MemTotal")

    def empty_cache(self) -> None:
        if self.available():
            import torch

            torch.cuda.empty_cache()

    @contextmanager
    def batch(self) -> Iterator[Peak]:
        """Around one batch: `.peak` is then the most it held at once beyond what was allocated
        before it (0 where nothing measures it: the CPU)."""
        found = Peak()
        if not self.available():
            yield found
            return
        import torch

        torch.cuda.reset_peak_memory_stats()
        before = int(torch.cuda.memory_allocated())
        yield found
        found.peak = int(torch.cuda.max_memory_allocated()) - before

    def peak(self) -> int:
        """The most allocated at once since the last batch began (for benchmark rows)."""
        import torch

        return int(torch.cuda.max_memory_allocated()) if self.available() else 0

    def reset_peak(self) -> None:
        if self.available():
            import torch

            torch.cuda.reset_peak_memory_stats()

    def is_oom(self, exc: BaseException) -> bool:
        import torch

        return isinstance(exc, torch.cuda.OutOfMemoryError)

    def load_kwargs(self) -> dict[str, Any]:
        """How `from_pretrained` places weights: straight to the GPU(s), split when one is not enough."""
        return {"device_map": "auto"} if self.available() else {}

    def placement(self, model: Any) -> dict[str, str]:
        """Where each module of a loaded model sits (`hf_device_map`), by module name."""
        found = getattr(model, "hf_device_map", None) or {"": str(getattr(model, "device", "cpu"))}
        return {k: str(v) for k, v in found.items()}


def _meminfo(field: str) -> int:
    """A field of /proc/meminfo in bytes; where there is none (macOS, Windows), what the OS's
    page counts say (os.sysconf), else psutil's reading."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES" if field == "MemAvailable" else "SC_PHYS_PAGES")
        return int(pages * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import psutil
    except ImportError:
        return UNKNOWN_HOST_MEMORY
    memory = psutil.virtual_memory()
    return int(memory.available if field == "MemAvailable" else memory.total)


_device: Device = Device()


def device() -> Device:
    return _device


@contextmanager
def using(stand_in: Device) -> Iterator[Device]:
    """Run the block against `stand_in` (the tests' 80 GB card)."""
    global _device
    before, _device = _device, stand_in
    try:
        yield stand_in
    finally:
        _device = before


def resolve_dtype(requested: str | None) -> str:
    """The dtype to run in: as asked, else bf16 on CUDA and fp32 on the CPU."""
    from ..errors import ConfigError

    if requested is not None and requested not in DTYPES:
        raise ConfigError(f"dtype {requested!r}: one of {', '.join(DTYPES)}")
    return requested or ("bf16" if device().available() else "fp32")


def resolve_attention(kind: str, model_type: Callable[[], str], requested: str | None) -> str | None:
    """The attention implementation to load with: as asked, else eager for T5 on CUDA (see the
    module docstring), else transformers' own choice (None). `model_type` is asked only then."""
    from ..errors import ConfigError

    if requested is not None:
        if requested not in ATTENTIONS:
            raise ConfigError(f"attention {requested!r}: one of {', '.join(ATTENTIONS)}")
        return requested
    if kind not in {"seq2seq", "token-classifier"} or not device().available():
        return None
    return "eager" if model_type() in {"t5", "mt5", "umt5"} else None


@contextmanager
def matmul_precision(dtype: str) -> Iterator[None]:
    """TF32 matmuls for `tf32` only, for the passes inside; the process's own settings after,
    through the API it uses: `fp32_precision` (torch 2.9 and later), else the legacy flags."""
    import torch

    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    if hasattr(matmul, "fp32_precision"):
        before_new = (matmul.fp32_precision, cudnn.fp32_precision)
        matmul.fp32_precision = cudnn.fp32_precision = "tf32" if dtype == "tf32" else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision, cudnn.fp32_precision = before_new
        return
    before = (matmul.allow_tf32, cudnn.allow_tf32)
    matmul.allow_tf32 = cudnn.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = before


def tf32_on() -> bool:
    """Whether TF32 matmuls are on now, read through the API the process uses."""
    import torch

    matmul = torch.backends.cuda.matmul
    return matmul.fp32_precision == "tf32" if hasattr(matmul, "fp32_precision") else bool(matmul.allow_tf32)


@dataclass
class Runtime:
    """Every device decision of one backend, resolved at load time (see the module docstring)."""

    device: str
    cuda: bool
    dtype: str
    attention: str | None
    memory: MemoryModel
    budget_from: str  # "token_budget=", "KALMA_TOKEN_BUDGET", "the free memory"
    fixed_budget: int | None = None  # bytes, when not read from the free memory at each call
    pass_tokens: int | None = None  # the most positions one pass should compute (None: memory alone decides)
    pass_from: str = ""  # where `pass_tokens` came from: "pass_tokens=", "KALMA_PASS_TOKENS", a calibration
    cap: int | None = None  # bytes, after running out of memory: never planned above it again
    placement: str = ""  # where the weights sit, when not all on the GPU
    measured: str = ""  # the first batch's measured peak against the prediction, on CUDA
    notes: list[str] = field(default_factory=list)  # what changed during the run (a halved budget)
    paths: dict[str, int] = field(default_factory=dict)  # scoring or decoding path -> calls that took it
    replan: bool = False  # the budget shrank since the call was planned: plan what is left again
    _budget_now: int = 0

    def budget(self) -> int:
        """Bytes one batch may hold beyond the weights, for the call being planned now."""
        if self.fixed_budget is not None:
            found = self.fixed_budget
        else:
            found = int(device().free() * MEMORY_SHARE)
        self._budget_now = min(found, self.cap) if self.cap is not None else found
        return self._budget_now

    def halve(self, rows: int) -> None:
        """After an out-of-memory error on `rows` rows: half the budget (of the last halving, if
        any), for good; the note is one, kept up to date."""
        self.cap = max(1, (self.cap if self.cap is not None else self._budget_now or self.budget()) // 2)
        self._budget_now = min(self._budget_now or self.cap, self.cap)
        self.replan = True
        note = f"halved the batch budget to {self.cap / 2**20:.0f} MiB after running out of GPU memory on {rows} rows"
        if not self.notes or not self.notes[-1].startswith("halved"):
            self.notes.append(note)
        else:
            self.notes[-1] = note

    def took(self, path: str) -> None:
        self.paths[path] = self.paths.get(path, 0) + 1

    def runs_as(self) -> str:
        """How the backend runs, as every report names it: `@bf16 on NVIDIA H100 80GB HBM3`."""
        tf32 = (", TF32 matmuls" if self.dtype == "tf32" else ", TF32 off") if self.cuda and self.dtype in {"fp32", "tf32"} else ""
        attention = f", {self.attention} attention" if self.attention else ""
        placed = f", {self.placement}" if self.placement else ""
        return f"@{self.dtype} on {self.device}{tf32}{attention}{placed}"

    def as_dict(self) -> dict[str, Any]:
        """Every decision, for provenance and benchmark rows."""
        out: dict[str, Any] = {"device": self.device, "dtype": self.dtype, "tf32": self.dtype == "tf32" and self.cuda}
        out["attention"] = self.attention or "transformers' default"
        out["budget_bytes"] = self._budget_now or self.budget()
        out["budget_from"] = self.budget_from + (f"; {self.notes[-1]}" if self.notes else "")
        if self.pass_tokens is not None:
            out["pass_tokens"], out["pass_from"] = self.pass_tokens, self.pass_from
        out["memory_overhead"] = round(self.memory.overhead, 3)
        for key in ("placement", "measured"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.paths:
            out["paths"] = dict(self.paths)
        return out

    def numerics(self) -> Any:
        """The context every forward pass runs in: no autograd, TF32 as asked."""
        import torch

        stack = ExitStack()
        stack.enter_context(torch.no_grad())
        stack.enter_context(matmul_precision(self.dtype))
        return stack

    def calibrate(self, predicted: int, measured: int) -> None:
        """Correct the memory model's overhead by a measured peak (CUDA's first batch of a call),
        never below the live bytes it counts."""
        if predicted <= 0 or measured <= 0:
            return
        live = predicted / self.memory.overhead
        self.memory.overhead = max(1.0, measured / live)
        self.measured = f"first batch peaked at {measured / 2**30:.2f} GiB against {predicted / 2**30:.2f} predicted: overhead now {self.memory.overhead:.2f}"


def resolve(config: Any, dtype: str, attention: str | None, token_budget: int | None, pass_tokens: int | None = None) -> Runtime:
    """The runtime of a loaded model (`config` its transformers config). The CPU's pass width,
    when neither given nor set, is measured by the backend once its model is loaded (`calibration`)."""
    on_gpu = device().available()
    memory = MemoryModel(Shape.of(config), dtype, attention, overhead=GPU_OVERHEAD if on_gpu else 1.0)
    env = os.environ.get("KALMA_TOKEN_BUDGET")
    tokens, source = (token_budget, "token_budget=") if token_budget else (int(env), "KALMA_TOKEN_BUDGET") if env else (None, "")
    fixed = memory.tokens(max(PAD_MULTIPLE, tokens)) if tokens is not None else None
    where = "free memory" if on_gpu else "host's available memory"
    from_ = f"{source} ({tokens:,} tokens of a padded pass)" if tokens is not None else f"{MEMORY_SHARE:.0%} of the {where} when each call is planned"
    rt = Runtime(device().name(), on_gpu, dtype, attention, memory, from_, fixed)
    width = os.environ.get("KALMA_PASS_TOKENS")
    if pass_tokens or width:
        rt.pass_tokens, rt.pass_from = (pass_tokens, "pass_tokens=") if pass_tokens else (int(width or 0), "KALMA_PASS_TOKENS")
    return rt


def plan_batches(
    sizes: Sequence[tuple[int, ...]],
    cost: Callable[..., int],
    budget: int,
    max_rows: int = 1024,
    pass_tokens: int | None = None,
    work: Callable[..., int] | None = None,
) -> list[list[int]]:
    """Indices grouped into batches, shortest first, each as large as `cost(rows, *widest)` allows
    within `budget` bytes, where `sizes[i]` is item i's (padded width, …) and a batch takes the
    largest of each; with `pass_tokens`, also while the positions its pass computes (`work`, by
    default rows x width) stay within it. A single item over either still runs (alone).

    >>> plan_batches([(8,), (96,), (8,), (16,), (96,)], lambda rows, width: rows * width, budget=64)
    [[0, 2, 3], [1], [4]]
    >>> plan_batches([(8,), (96,), (8,), (16,), (96,)], lambda rows, width: 0, budget=64, pass_tokens=32)
    [[0, 2], [3], [1], [4]]
    """
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    positions = work or (lambda rows, width, *_: rows * width)
    batches: list[list[int]] = []
    cur: list[int] = []
    widest: tuple[int, ...] = ()
    for i in order:
        grown = tuple(max(a, b) for a, b in zip(widest, sizes[i])) if cur else sizes[i]
        wide = pass_tokens is not None and positions(len(cur) + 1, *grown) > pass_tokens
        if cur and (len(cur) >= max_rows or wide or cost(len(cur) + 1, *grown) > budget):
            batches.append(cur)
            cur, grown = [], sizes[i]
        cur.append(i)
        widest = grown
    return batches + ([cur] if cur else [])


def prefix_plan(seqs: Sequence[tuple[int, ...]], kv: Callable[[int], int], budget: int, max_rows: int, decode: bool = False) -> list[list[int]]:
    """Batches for the shared-prefix runner: sequences in token order, so that those sharing a
    prefix meet in one batch, cut when the caches the runner holds through the batch (`kv`: the
    bytes of a cache of so many tokens) pass half of `budget`, or at `max_rows`: one per shared
    prefix (a node, holding its whole prefix), and with `decode` each sequence's own, kept from its
    prompt's pass until decoding. The runner fits its passes in the rest. Memory alone cuts them:
    the runner cuts its own passes to the pass width, and its decoding gains from every row it
    holds.

    >>> seqs = [(1, 2, 3, 4), (9, 9), (1, 2, 3, 5), (1, 2, 7)]
    >>> prefix_plan(seqs, lambda tokens: tokens, budget=30, max_rows=8)  # one node (1, 2, 3): 3 tokens held
    [[0, 2, 3, 1]]
    >>> prefix_plan(seqs, lambda tokens: tokens, budget=30, max_rows=8, decode=True)  # and each one's own, to decode
    [[0, 2, 3], [1]]
    """
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    held = deepest = 0
    prev: tuple[int, ...] = ()
    for i in order:
        ids = seqs[i]
        shared = next((k for k, (a, b) in enumerate(zip(prev, ids)) if a != b), min(len(prev), len(ids)))
        adds = (shared if shared > deepest else 0) + (len(ids) if decode else 0)  # a deeper shared prefix is a new node
        if cur and (len(cur) >= max_rows or kv(held + adds) > budget // 2):
            batches.append(cur)
            cur, held, deepest = [], 0, 0
            adds = len(ids) if decode else 0
        cur.append(i)
        held += adds
        deepest = shared if cur[1:] else 0
        prev = ids
    return batches + ([cur] if cur else [])


def padded(n: int) -> int:
    """`n` tokens rounded up to the padding multiple."""
    return -(-max(n, 1) // PAD_MULTIPLE) * PAD_MULTIPLE
