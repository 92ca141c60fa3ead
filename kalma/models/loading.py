"""Loading a transformers model: from a hub id or a folder, once per process, where the runtime
says, and never silently anywhere else.

- A model that cannot be loaded (no such folder, no hub access, not a model) is one line naming
  it. A hub id missing from the local cache fails in seconds when the hub cannot be reached.
- On CUDA the weights go straight to the GPU(s) with `device_map="auto"`, split across GPUs when
  one is not enough. `device_map="auto"` sizes itself from the free memory of the moment: a model
  that does not fit would land partly on the CPU or disk, many times slower, and nothing would
  say so. The allocator's cache is emptied before each load (a process loading three models, as
  CONNER does, keeps none of the first's blocks), and the placement is checked after: modules
  off the GPU refuse the load in one line, unless the spec asks for it (`offload=true`), and then
  every report says so.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import BackendError
from .runtime import DTYPES, device

OFF_GPU = ("cpu", "disk", "meta")


@contextmanager
def loading(path: str) -> Iterator[None]:
    """A model that cannot be loaded (no such path, no hub access, not a model) is a
    BackendError naming it, not a traceback; and no weight-loading bar."""
    import transformers

    from ..errors import one_line

    # a bar that fills in a second ("Loading weights") says nothing a user can act on
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        yield
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot load the model {path!r} ({one_line(exc)})") from None
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()


def model_ref(path: str) -> str:
    """`path` if it can name a model: an existing local folder, or a hub id (`name` or
    `org/name`). A filesystem path that does not exist is refused at once, before any work."""
    looks_local = path.startswith(("/", "./", "../", "~")) or path.count("/") > 1 or os.sep != "/" and os.sep in path
    if looks_local and not os.path.isdir(os.path.expanduser(path)):
        raise BackendError(f"cannot load the model {path!r} (no such folder)")
    return path


def hub_ready(ref: str) -> None:
    """For a hub id not in the local cache: fail in seconds, not after the hub client's rounds of
    retries, when the hub cannot be reached (HF_HUB_OFFLINE set, or no answer from HF_ENDPOINT
    within 3 s), saying how to point the backend at a local copy."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants, try_to_load_from_cache

    if os.path.isdir(os.path.expanduser(ref)) or isinstance(try_to_load_from_cache(ref, "config.json"), str):
        return
    from ..errors import HubMissing

    if constants.HF_HUB_OFFLINE:
        raise HubMissing(ref, "it is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
    endpoint = urlsplit(constants.ENDPOINT)
    try:
        socket.create_connection((endpoint.hostname or "", endpoint.port or (443 if endpoint.scheme == "https" else 80)), timeout=3).close()
    except OSError as exc:
        raise HubMissing(
            ref,
            f"it is not in the local Hugging Face cache and {constants.ENDPOINT} cannot be reached ({exc.strerror or type(exc).__name__}) "
            "(set HF_HUB_OFFLINE=1 to skip the hub)",
        ) from None


def split_dtype(ref: str) -> tuple[str, str | None]:
    """`ID@bf16` -> (`ID`, `bf16`); a ref without a known suffix has none.

    >>> split_dtype("google/t5_xxl_true_nli_mixture@bf16"), split_dtype("/models/x")
    (('google/t5_xxl_true_nli_mixture', 'bf16'), ('/models/x', None))
    """
    head, sep, tail = ref.rpartition("@")
    return (head, tail) if sep and tail in DTYPES else (ref, None)


def model_type(path: str) -> str:
    import transformers

    with loading(path):
        return str(transformers.AutoConfig.from_pretrained(path).model_type)


@functools.lru_cache(maxsize=4)
def load(kind: str, path: str, dtype: str, identity: str | None = None, attention: str | None = None, offload: bool = False) -> tuple[Any, Any, str]:
    """(tokenizer, model, where the weights sit when not all on the GPU) of `kind` (causal,
    seq2seq, classifier, token-classifier, encoder), loaded once per process and `identity` (a local folder's content):
    weights written over the folder load again."""
    import torch
    import transformers

    auto = {
        "causal": transformers.AutoModelForCausalLM,
        "seq2seq": transformers.AutoModelForSeq2SeqLM,
        "classifier": transformers.AutoModelForSequenceClassification,
        "token-classifier": transformers.AutoModelForTokenClassification,  # read at one position (HHEM reads the first)
        "encoder": transformers.AutoModel,  # sentence embeddings: the last hidden states, pooled by the backend
    }[kind]
    kwargs: dict[str, Any] = {"dtype": {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]}
    kwargs |= device().load_kwargs()
    if attention:
        kwargs["attn_implementation"] = attention
    device().empty_cache()  # blocks the last model's passes left cached would read as used memory
    with loading(path):
        tok = transformers.AutoTokenizer.from_pretrained(path)
        model = auto.from_pretrained(path, **kwargs).eval()
    if kind == "causal" and tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, model, placed(path, model, offload)


def converted(name: str, write: Callable[[Path], None]) -> Path:
    """A model folder converted once from weights no transformers class reads as published (a GGUF
    file, a checkpoint of the authors' own module): `write(folder)` fills it on first use, under
    KALMA_MODEL_DIR (default ~/.cache/kalma/models), not the call cache's folder, so that clearing
    the cache costs no reconversion. A file lock keeps two processes from converting at once; a
    conversion that failed midway leaves nothing behind."""
    root = os.environ.get("KALMA_MODEL_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kalma", "models")
    target = Path(root) / name
    if (target / "config.json").exists():
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "config.json").exists():
            return target
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            write(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        tmp.rename(target)
    return target


def placed(path: str, model: Any, offload: bool) -> str:
    """ "" when every module is on the GPU (or there is none); else what sits off it, said or refused."""
    if not device().available():
        return ""
    where = device().placement(model)
    off = sorted({k for k, v in where.items() if v.split(":")[0] in OFF_GPU})
    if not off:
        return ""
    sits = sorted({where[k] for k in off})
    said = f"{len(off)} of {len(where)} modules on {' and '.join(sits)} (device_map='auto' found too little GPU memory)"
    if not offload:
        raise BackendError(
            f"cannot load the model {path!r} on the GPU: {said}, which runs many times slower. Free the GPU (another model "
            "or process holds it), pick a 16-bit dtype (@bf16), or accept it with the spec option offload=true"
        )
    return said
