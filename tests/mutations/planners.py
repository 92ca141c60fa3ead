"""The GPU and CPU planning logic (kalma/models): a test that checks a planner against its own
model cannot catch these."""

from __future__ import annotations

from . import Mutation

MUTATIONS = (
    Mutation(
        "the KV cache left out of the memory model",
        "kalma/models/memory.py",
        "        return self._scaled(2 * s.layers * s.kv_heads",
        "        return 0 * self._scaled(2 * s.layers * s.kv_heads",
        ("tests/unit/test_memory.py",),
    ),
    Mutation(
        "DeBERTa's disentangled attention left out of the memory model",
        "kalma/models/memory.py",
        "        if s.span:  # DeBERTa",
        "        if False:  # DeBERTa",
        ("tests/unit/test_memory.py::test_deberta_nli_with_its_disentangled_attention",),
    ),
    Mutation(
        "an out-of-memory retry inside the except block (the failed attempt's tensors alive)",
        "kalma/models/hf.py",
        "            out = None\n        if out is None:",
        "            device().empty_cache()\n            rt.halve(len(batch))\n            return self._in_parts(batch, run, split)\n        if out is None:",
        ("tests/unit/test_gpu.py::test_scoring_recovers_from_running_out_of_memory",),
    ),
    Mutation(
        "no re-planning after the budget is halved",
        "kalma/models/runtime.py",
        "        self.replan = True\n",
        "        self.replan = False\n",
        ("tests/unit/test_gpu.py::test_scoring_recovers_from_running_out_of_memory",),
    ),
    Mutation(
        "the allocator's cache not emptied after running out of memory",
        "kalma/models/hf.py",
        "            device().empty_cache()\n            rt.halve(len(batch))",
        "            rt.halve(len(batch))",
        ("tests/unit/test_gpu.py::test_scoring_recovers_from_running_out_of_memory",),
    ),
    Mutation(
        "the legacy TF32 branch raising",
        "kalma/models/runtime.py",
        "    before = (matmul.allow_tf32, cudnn.allow_tf32)",
        "    raise RuntimeError('legacy TF32')",
        ("tests/unit/test_gpu.py::test_tf32_through_the_legacy_flags",),
    ),
    Mutation(
        "the device's free memory read as 0",
        "kalma/models/runtime.py",
        "        return int(free + reserved - allocated)",
        "        return 0",
        ("tests/unit/test_gpu.py::test_the_card_decides_dtype_attention_budget_and_every_report",),
    ),
    Mutation(
        "the host's free memory read as 0",
        "kalma/models/runtime.py",
        '        return _meminfo("MemAvailable")',
        "        return 0",
        ("tests/unit/test_cpu_policy.py::test_the_real_host_reading",),
    ),
    Mutation(
        "static-cache rows not padded up to a power of two",
        "kalma/models/hf.py",
        "    return 1 << (max(n, 1) - 1).bit_length()",
        "    return n",
        ("tests/unit/test_gpu.py::test_static_generation_at_release_scale_is_one_call_a_batch_in_few_shapes",),
    ),
    Mutation(
        "the runner waiting on the device at every decoding step",
        "kalma/models/shared_prefix.py",
        "((step + 1) % self.sync_every == 0 and bool(done.all()))",
        "bool(done.all())",
        ("tests/unit/test_gpu.py::test_the_runner_decodes_without_waiting_on_the_device_each_step",),
    ),
    Mutation(
        "the runner's leaves counted as keeping every position",
        "kalma/models/shared_prefix.py",
        "            lambda n, prefix, width, kept: self.cost.leaves(n, prefix, width, kept),",
        "            lambda n, prefix, width, kept: self.cost.leaves(n, prefix, width, width),",
        ("tests/unit/test_cpu_policy.py::test_the_demos_six_prompts_are_one_batch_with_memory_to_spare",),
    ),
    Mutation(
        "a compute figure (the pass width) splitting decoding",
        "kalma/models/shared_prefix.py",
        "            if not cur or rows > self.max_rows or",
        "            if not cur or rows * p.mask.shape[1] > (self.pass_tokens or 1 << 62) or rows > self.max_rows or",
        ("tests/unit/test_cpu_policy.py::test_decoding_is_one_batch_and_prefill_is_cut_at_the_pass_width",),
    ),
    Mutation(
        "memory as the CPU's only limit (no pass width)",
        "kalma/models/runtime.py",
        "        wide = pass_tokens is not None and positions(len(cur) + 1, *grown) > pass_tokens",
        "        wide = False",
        ("tests/unit/test_cpu_policy.py",),
    ),
    Mutation(
        "the CPU's budget back to a token count in bytes",
        "kalma/models/runtime.py",
        "    fixed = memory.tokens(max(PAD_MULTIPLE, tokens)) if tokens is not None else None",
        "    fixed = memory.tokens(max(PAD_MULTIPLE, tokens or 1024)) if tokens is not None or not on_gpu else None",
        ("tests/unit/test_cpu_policy.py",),
    ),
)
