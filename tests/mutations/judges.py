"""The grounding checkers (kalma/models/checkers.py), the judge's meta-evaluation
(evaluation/judge_quality.py), and the memory and calibration steps that plan their batches: each
format, read-out, chunking rule and figure broken on purpose."""

from __future__ import annotations

from . import Mutation

MUTATIONS = (
    Mutation(
        "DeBERTa v1's max_relative_positions of -1 read as the span",
        "kalma/models/memory.py",
        "    return span if span >= 1 else int(",
        "    return span if span else int(",
        ("tests/unit/test_memory.py::test_deberta_nli_with_its_disentangled_attention",),
    ),
    Mutation(
        "a DeBERTa v1 pass counted over every relative position, not at most its width",
        "kalma/models/memory.py",
        "            span = min(s.span, attended) if s.span_by_width else s.span",
        "            span = s.span",
        ("tests/unit/test_memory.py::test_deberta_nli_with_its_disentangled_attention",),
    ),
    Mutation(
        "calibration not stopping at its slowest size",
        "kalma/models/calibration.py",
        "        if took >= slowest:\n            break",
        "        if took < 0:\n            break",
        ("tests/unit/test_cpu_policy.py::test_the_calibration_stops_at_its_slowest_pass",),
    ),
    Mutation(
        "calibration as a side effect of loading",
        "kalma/models/hf.py",
        "        tok, model, _ = self._loaded()\n        return tok, model",
        "        tok, model, _ = self._loaded()\n        self.rt\n        return tok, model",
        ("tests/unit/test_cpu_policy.py::test_the_calibration_measures_once_per_machine_and_model",),
    ),
)
CHECKERS = ("tests/unit/test_checkers.py",)
MUTATIONS += (
    Mutation(
        "checker inputs run outside the memory guard (no split, no halved budget after running out of memory)",
        "kalma/models/hf.py",
        "            out.update(zip(batch, self._run([texts[i] for i in batch], each)))",
        "            out.update(zip(batch, each([texts[i] for i in batch])))",
        ("tests/unit/test_gpu.py::test_a_checker_recovers_from_running_out_of_memory",),
    ),
    Mutation(
        "MiniCheck-Flan-T5's prefix without its space",
        "kalma/models/checkers.py",
        'return "predict: ", str(tok.eos_token), ""',
        'return "predict:", str(tok.eos_token), ""',
        CHECKERS,
    ),
    Mutation("MiniCheck-Flan-T5 read out from another id", "kalma/models/checkers.py", "T5_NO, T5_YES = 3, 209", "T5_NO, T5_YES = 3, 208", CHECKERS),
    Mutation(
        "MiniCheck-Flan-T5's first decoder input not id 0",
        "kalma/models/checkers.py",
        "start = torch.zeros((len(batch), 1), dtype=torch.long",
        "start = torch.ones((len(batch), 1), dtype=torch.long",
        CHECKERS,
    ),
    Mutation(
        "MiniCheck's separator a space, not the eos token", "kalma/models/checkers.py", 'return "", str(tok.eos_token), ""', 'return "", " ", ""', CHECKERS
    ),
    Mutation("FactCG's template changed", "kalma/models/checkers.py", "I think the answer is '", "I think the answer is: '", CHECKERS),
    Mutation("HHEM's prompt without its leading <pad>", "kalma/models/checkers.py", 'HHEM_HEAD = "<pad> Determine', 'HHEM_HEAD = "Determine', CHECKERS),
    Mutation(
        "HHEM read at the last position",
        "kalma/models/checkers.py",
        "logits = model(**self._tensors(batch)).logits[:, 0, :]",
        "logits = model(**self._tensors(batch)).logits[:, -1, :]",
        CHECKERS,
    ),
    Mutation(
        "AlignScore read from its second class",
        "kalma/models/checkers.py",
        'head has 3 classes, this one {model.config.num_labels}")\n        return 0',
        'head has 3 classes, this one {model.config.num_labels}")\n        return 1',
        CHECKERS,
    ),
    Mutation(
        "AlignScore's claim not split into sentences",
        "kalma/models/checkers.py",
        "        return sentences(claim, self.language) or [claim]",
        "        return [claim]",
        CHECKERS,
    ),
    Mutation(
        "a pair's score its first chunk's",
        "kalma/models/checkers.py",
        "            best[(x.pair, x.claim)] = max(best.get((x.pair, x.claim), -math.inf), p)",
        "            best.setdefault((x.pair, x.claim), p)",
        CHECKERS,
    ),
    Mutation(
        "a pair's score its last chunk's",
        "kalma/models/checkers.py",
        "            best[(x.pair, x.claim)] = max(best.get((x.pair, x.claim), -math.inf), p)",
        "            best[(x.pair, x.claim)] = p",
        CHECKERS,
    ),
    Mutation(
        "MiniCheck's last chunk dropped",
        "kalma/models/checkers.py",
        '    if cur:\n        chunks.append(" ".join(cur))',
        '    if not cur:\n        chunks.append(" ".join(cur))',
        CHECKERS,
    ),
    Mutation("a sentence over the chunk left whole", "kalma/models/checkers.py", "        if count(unit) <= limit:", "        if True:", CHECKERS),
    Mutation(
        "an input over the maximum cut by the tokenizer (the claim first)",
        "kalma/models/checkers.py",
        "            if not mine:\n                break",
        "            if mine:\n                break",
        CHECKERS,
    ),
    Mutation("the direction ignored", "kalma/models/checkers.py", 'return pair if self.document == "premise" else', "return pair if True else", CHECKERS),
    Mutation("the served judge's yes read in its case", "kalma/models/checkers.py", 'if k.lower() == "yes")', 'if k == "Yes")', CHECKERS),
    Mutation(
        "the served judge renormalising yes against no",
        "kalma/models/checkers.py",
        '        return sum(math.exp(v) for k, v in top.items() if k.lower() == "yes")',
        "        return super()._p_yes(top)",
        CHECKERS,
    ),
)
JUDGE = ("tests/unit/test_judge_quality.py",)
MUTATIONS += (
    Mutation(
        "accuracy in place of balanced accuracy",
        "evaluation/judge_quality.py",
        'return lambda s: 0.5 * (s[f"tp:{d}"] / s[f"pos:{d}"] + s[f"tn:{d}"] / s[f"neg:{d}"])',
        'return lambda s: (s[f"tp:{d}"] + s[f"tn:{d}"]) / (s[f"pos:{d}"] + s[f"neg:{d}"])',
        JUDGE,
    ),
    Mutation(
        "overall as the last dataset's, not the mean over datasets",
        "evaluation/judge_quality.py",
        '"overall": lambda s: sum(f(s) for f in per.values()) / len(per)}',
        '"overall": lambda s: list(per.values())[-1](s)}',
        JUDGE,
    ),
    Mutation(
        "the decision P > threshold",
        "evaluation/judge_quality.py",
        "ba = balanced_accuracy(labels, [int(p >= t) for p in probs])",
        "ba = balanced_accuracy(labels, [int(p > t) for p in probs])",
        JUDGE,
    ),
    Mutation(
        "the last best threshold, not the first",
        "evaluation/judge_quality.py",
        "if ba is not None and ba > best_ba:",
        "if ba is not None and ba >= best_ba:",
        JUDGE,
    ),
    Mutation(
        "development pairs scored",
        "evaluation/judge_quality.py",
        '    test = [i for i, p in enumerate(pairs) if p.split != "dev"]',
        "    test = list(range(len(pairs)))",
        JUDGE,
    ),
    Mutation(
        "the bootstrap drawing pairs, not documents",
        "evaluation/judge_quality.py",
        "    key = {i: (pairs[i].dataset, pairs[i].entry or pairs[i].premise) for i in scored}",
        "    key = {i: (pairs[i].dataset, str(i)) for i in scored}",
        JUDGE,
    ),
    Mutation(
        "labels outside 0 and 1 accepted",
        "evaluation/judge_quality.py",
        "    if text not in _YES | _NO:",
        "    if text not in _YES | _NO | {'2', 'maybe'}:",
        JUDGE,
    ),
)
PAIRS_CLI = ("tests/unit/test_judge_quality.py",)
MUTATIONS += (
    Mutation(
        "rows without a dataset named after their file (a --dev file never matches its --pairs)",
        "evaluation/judge_quality.py",
        'dataset = _field(path, line, row, ("dataset",), required=False) or NO_DATASET',
        'dataset = _field(path, line, row, ("dataset",), required=False) or path.stem',
        PAIRS_CLI,
    ),
    Mutation(
        "--dev given the --pairs file accepted",
        "evaluation/judge_cli.py",
        "if dev and os.path.exists(source) and os.path.samefile(dev, source):",
        "if dev and os.path.exists(source) and dev == source + '?':",
        PAIRS_CLI,
    ),
    Mutation(
        "a pairs file's byte-order mark read as part of its first column",
        "evaluation/judge_quality.py",
        '        return data.decode("utf-8-sig")',
        '        return data.decode("utf-8")',
        PAIRS_CLI,
    ),
    Mutation(
        "a null field said to be missing",
        "evaluation/judge_quality.py",
        "        null = next((n for n in names if n in row), None)",
        "        null = None",
        PAIRS_CLI,
    ),
    Mutation(
        "--all-errors stopping at the first bad row",
        "evaluation/judge_quality.py",
        "        except PairsError as exc:\n            errors.append(str(exc))",
        "        except PairsError as exc:\n            errors.append(str(exc))\n            break",
        PAIRS_CLI,
    ),
    Mutation(
        "an unjudged pair (table:…,unjudged=skip) scored as a no",
        "evaluation/judge_quality.py",
        "    scored = [i for i in test if judged.judged(i)]",
        "    scored = test",
        PAIRS_CLI,
    ),
    Mutation(
        "NaN written into a JSON file",
        "kalma/jsonl.py",
        "    return json.dumps(finite(value), allow_nan=False, **options)",
        "    return json.dumps(value, **options)",
        (*PAIRS_CLI, "kalma/jsonl.py::kalma.jsonl.dumps"),
    ),
    Mutation(
        "a served judge's empty top_logprobs read as P = 0, not by its reply",
        "kalma/models/checkers.py",
        "        if not top:  # a server that lists",
        "        if top is None:  # a server that lists",
        ("tests/unit/test_checkers.py::test_a_served_judge_without_alternatives_is_read_by_its_reply",),
    ),
)
MUTATIONS += (
    Mutation(
        "overall as the pooled balanced accuracy, not the mean over datasets",
        "evaluation/judge_quality.py",
        '"overall": lambda s: sum(f(s) for f in per.values()) / len(per)}',
        '"overall": lambda s: 0.5 * (sum(s[f"tp:{d}"] for d in per) / sum(s[f"pos:{d}"] for d in per) '
        '+ sum(s[f"tn:{d}"] for d in per) / sum(s[f"neg:{d}"] for d in per))}',
        JUDGE,
    ),
    Mutation(
        "a pair at the threshold scored unsupported (P > threshold)",
        "evaluation/judge_quality.py",
        "verdicts = [int(judged.probs[i] >= judged.thresholds[pairs[i].dataset]) for i in scored]",
        "verdicts = [int(judged.probs[i] > judged.thresholds[pairs[i].dataset]) for i in scored]",
        JUDGE,
    ),
    Mutation(
        "the label entailment (majority.jsonl's) not read as 1",
        "evaluation/judge_quality.py",
        '_YES = {"1", "true", "entailment", "entailed", "supported", "yes"}',
        '_YES = {"1", "true", "entailed", "supported", "yes"}',
        JUDGE,
    ),
    Mutation(
        "a label read in its case",
        "evaluation/judge_quality.py",
        "text = str(raw).strip().lower() if not isinstance(raw, float)",
        "text = str(raw).strip() if not isinstance(raw, float)",
        JUDGE,
    ),
    Mutation(
        "--dev FILE's pairs not development pairs",
        "evaluation/judge_cli.py",
        'rows = [replace(p, split="dev") for p in read_pairs(dev)] + rows',
        "rows = read_pairs(dev) + rows",
        JUDGE,
    ),
    Mutation(
        "the tuning grid without its first hundredth",
        "evaluation/judge_quality.py",
        "GRID = [i / 100 for i in range(1, 100)]",
        "GRID = [i / 100 for i in range(2, 100)]",
        JUDGE,
    ),
    Mutation(
        "the tuning grid without its last hundredth",
        "evaluation/judge_quality.py",
        "GRID = [i / 100 for i in range(1, 100)]",
        "GRID = [i / 100 for i in range(1, 99)]",
        JUDGE,
    ),
    Mutation(
        "the tuning grid in twentieths",
        "evaluation/judge_quality.py",
        "GRID = [i / 100 for i in range(1, 100)]",
        "GRID = [i / 100 for i in range(5, 100, 5)]",
        JUDGE,
    ),
    Mutation(
        "accuracy by kind counting supported verdicts, not right ones",
        "evaluation/judge_quality.py",
        "            kinds[pairs[i].kind] = (c + int(v == pairs[i].label), n + 1)",
        "            kinds[pairs[i].kind] = (c + int(v), n + 1)",
        JUDGE,
    ),
    Mutation(
        "the bootstrap's accuracy by kind counting supported verdicts",
        "evaluation/judge_quality.py",
        '            sums[f"ok@{p.kind}"][k] += v == p.label',
        '            sums[f"ok@{p.kind}"][k] += v',
        JUDGE,
    ),
)
SIZES = ("tests/unit/test_checkers.py::test_each_checker_chunks_and_cuts_at_its_authors_sizes",)
MUTATIONS += (
    Mutation(
        "MiniCheck-Flan-T5's chunks of 400 words", "kalma/models/checkers.py", "max_length, chunk_size = 2048, 500", "max_length, chunk_size = 2048, 400", SIZES
    ),
    Mutation(
        "MiniCheck-Flan-T5's maximum of 512 tokens",
        "kalma/models/checkers.py",
        "max_length, chunk_size = 2048, 500",
        "max_length, chunk_size = 512, 500",
        SIZES,
    ),
    Mutation("FactCG's chunks of 400 tokens", "kalma/models/checkers.py", "max_length, chunk_size = 2048, 550", "max_length, chunk_size = 2048, 400", SIZES),
    Mutation("FactCG's maximum of 512 tokens", "kalma/models/checkers.py", "max_length, chunk_size = 2048, 550", "max_length, chunk_size = 512, 550", SIZES),
    Mutation("AlignScore's chunks of 500 words", "kalma/models/checkers.py", "max_length, chunk_size = 512, 350", "max_length, chunk_size = 512, 500", SIZES),
    Mutation(
        "AlignScore's maximum of 2048 tokens", "kalma/models/checkers.py", "max_length, chunk_size = 512, 350", "max_length, chunk_size = 2048, 350", SIZES
    ),
    Mutation(
        "MiniCheck-RoBERTa's chunks of 550 tokens",
        "kalma/models/checkers.py",
        'kind, prefix, name = "classifier", "minicheck", "MiniCheck"\n    chunk_size = 400',
        'kind, prefix, name = "classifier", "minicheck", "MiniCheck"\n    chunk_size = 550',
        SIZES,
    ),
    Mutation(
        "the served judge's direction ignored",
        "kalma/models/checkers.py",
        '            document, claim = pair if self.document == "premise" else (pair[1], pair[0])',
        "            document, claim = pair",
        ("tests/unit/test_checkers.py::test_the_served_judge_sends_the_direction_its_spec_says_and_keys_its_cache_by_it",),
    ),
    Mutation(
        "the served judge's cache key without its direction",
        "kalma/models/checkers.py",
        'return f"served-judge:{inner}|document={self.document}" if inner is not None else None',
        'return f"served-judge:{inner}" if inner is not None else None',
        ("tests/unit/test_checkers.py::test_the_served_judge_sends_the_direction_its_spec_says_and_keys_its_cache_by_it",),
    ),
    Mutation(
        "a conversion with weights missing accepted (only unexpected ones refused)",
        "kalma/models/checkers.py",
        "    if unset or unexpected:",
        "    if unexpected:",
        ("tests/unit/test_checkers.py::test_a_conversion_with_a_weight_missing_is_refused",),
    ),
    Mutation(
        "the llm: judge's yes read without its leading space",
        "kalma/models/judge.py",
        'yes = sum(math.exp(v) for k, v in top.items() if k.strip().lower() == "yes")',
        'yes = sum(math.exp(v) for k, v in top.items() if k.lower() == "yes")',
        ("tests/unit/test_checkers.py::test_the_llm_judge_reads_yes_and_no_tokens_with_their_leading_space",),
    ),
    Mutation(
        "the llm: judge's no read without its leading space",
        "kalma/models/judge.py",
        'no = sum(math.exp(v) for k, v in top.items() if k.strip().lower() == "no")',
        'no = sum(math.exp(v) for k, v in top.items() if k.lower() == "no")',
        ("tests/unit/test_checkers.py::test_the_llm_judge_reads_yes_and_no_tokens_with_their_leading_space",),
    ),
)
MUTATIONS += (
    Mutation(
        "judge evaluate's missing-judgement error suggesting kalma evaluate's --metrics alignment",
        "evaluation/judge_quality.py",
        'raise PairsError(f"{exc.missing}; to measure the judge on the pairs its table holds, give `--nli {spec},unjudged=skip`") from None',
        "raise PairsError(str(exc)) from None",
        JUDGE,
    ),
)
# issue 65 §1
MUTATIONS += (
    Mutation(
        "AlignScore's chunks of 300 words (a document of 300-349 words in two chunks)",
        "kalma/models/checkers.py",
        "max_length, chunk_size = 512, 350",
        "max_length, chunk_size = 512, 300",
        ("tests/unit/test_checkers.py::test_alignscore_keeps_a_document_under_350_words_in_one_chunk",),
    ),
    Mutation(
        "the tuning grid in steps of 0.02",
        "evaluation/judge_quality.py",
        "GRID = [i / 100 for i in range(1, 100)]",
        "GRID = [i / 100 for i in range(1, 100, 2)]",
        ("tests/unit/test_judge_quality.py::test_the_tuning_grid_is_every_hundredth_from_001_to_099",),
    ),
)
