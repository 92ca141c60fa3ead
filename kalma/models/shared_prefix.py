"""Token log-probs of many sequences that share prefixes, each shared prefix run once.

The builder scores about twenty candidate sentences after one paragraph; a G-Eval judge reads
one answer under four criteria; LM metrics score texts under knowledge that other items repeat.
Run one sequence at a time (or as padded rows), every sequence pays for its whole prefix. Here
the sequences of one call form a prefix tree: a prefix that enough sequences share runs through
the model once, and its key/value cache is copied to what follows it, so each sequence then
pays only for its own tokens.

A prefix that is pure context (nothing scored inside it) is also remembered across calls
(`PrefixMemory`, a few states, least recently used first out): a paragraph that grows by one
sentence per round then costs one sentence per round.

Logits are computed only at positions whose next token is scored (`logits_to_keep`), and the
log-probs equal the plain padded path within float rounding (tests compare them to 1e-4).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Ids = tuple[int, ...]


@dataclass(frozen=True)
class Request:
    """One sequence: `ids` (BOS included); the tokens from `start` on are scored; `top` > 0 also
    asks for the `top` most likely tokens after the last one."""

    ids: Ids
    start: int
    top: int = 0


@dataclass
class Result:
    logprobs: list[float]  # of ids[start:], each given everything before it
    next_top: list[tuple[int, float]] = field(default_factory=list)  # (token id, log-prob) after the sequence


@dataclass
class _State:
    """The model's state after a prefix: its key/value cache and the log-softmax row at its last position."""

    cache: Any
    row: Any  # 1-D tensor over the vocabulary: what follows the prefix


@dataclass
class _Node:
    """A prefix shared by `members`: their tokens [begin, end) run once, for all of them."""

    begin: int
    end: int
    members: list[int]
    children: list[_Node] = field(default_factory=list)
    leaves: list[int] = field(default_factory=list)  # members whose own tokens, from `end` on, run as rows


def _lcp(seqs: Sequence[Ids], start: int) -> int:
    """Length of the common prefix of `seqs` (they agree before `start`)."""
    shortest = min(len(s) for s in seqs)
    end = start
    first = seqs[0]
    while end < shortest and all(s[end] == first[end] for s in seqs):
        end += 1
    return end


def plan_tree(reqs: Sequence[Request], min_saved: int) -> _Node:
    """The prefix tree of `reqs`. A shared prefix becomes a node of its own when running it once
    saves at least `min_saved` token positions ((members - 1) x its length); a node ends where
    its members' scored text begins, so that the context before it can be remembered."""
    everyone = list(range(len(reqs)))
    root_end = _cut(reqs, everyone, 0, _lcp([reqs[i].ids for i in everyone], 0))
    root = _Node(0, root_end, everyone)
    _grow(reqs, root, min_saved)
    return root


def _cut(reqs: Sequence[Request], members: list[int], begin: int, end: int) -> int:
    """`end`, or the start of the members' scored text when that lies inside (begin, end)."""
    first_scored = min(reqs[i].start for i in members)
    return first_scored if begin < first_scored < end else end


def _grow(reqs: Sequence[Request], node: _Node, min_saved: int) -> None:
    groups: dict[int, list[int]] = {}
    for i in node.members:
        ids = reqs[i].ids
        if len(ids) > node.end:
            groups.setdefault(ids[node.end], []).append(i)
        else:
            node.leaves.append(i)  # ends with the node: its next-token row is the node's
    for group in groups.values():
        if len(group) >= 2:
            end = _cut(reqs, group, node.end, _lcp([reqs[i].ids for i in group], node.end))
            if (len(group) - 1) * (end - node.end) >= min_saved:
                child = _Node(node.end, end, group)
                _grow(reqs, child, min_saved)
                node.children.append(child)
                continue
        node.leaves.extend(group)


class PrefixMemory:
    """The last few pure-context states, by their token ids (least recently used first out)."""

    def __init__(self, size: int = 8):
        self.size = size
        self._states: OrderedDict[Ids, _State] = OrderedDict()

    def longest(self, ids: Ids, lo: int, hi: int) -> tuple[int, _State] | None:
        """The longest remembered prefix of `ids` whose length lies in (lo, hi]."""
        best: tuple[int, _State] | None = None
        for key, state in self._states.items():
            n = len(key)
            if lo < n <= hi and (best is None or n > best[0]) and ids[:n] == key:
                best = (n, state)
        if best is not None:
            self._states.move_to_end(ids[: best[0]])
        return best

    def keep(self, ids: Ids, state: _State) -> None:
        if self.size <= 0:
            return
        self._states[ids] = state
        self._states.move_to_end(ids)
        while len(self._states) > self.size:
            self._states.popitem(last=False)


class SharedPrefixRunner:
    """Runs `plan_tree` nodes through a causal LM with a key/value cache."""

    def __init__(self, model: Any, *, pad_id: int, token_budget: int, min_saved: int = 64, memory: PrefixMemory | None = None):
        self.model, self.pad_id, self.token_budget, self.min_saved = model, pad_id, token_budget, min_saved
        self.memory = memory if memory is not None else PrefixMemory()

    def run(self, reqs: Sequence[Request]) -> list[Result]:
        import torch

        if not reqs:
            return []
        values: list[dict[int, float]] = [{} for _ in reqs]  # token position -> log-prob
        tops: list[list[tuple[int, float]]] = [[] for _ in reqs]
        root = plan_tree(reqs, self.min_saved)
        with torch.no_grad():
            self._node(reqs, root, None, values, tops)
        return [Result([values[i][j] for j in range(r.start, len(r.ids))], tops[i]) for i, r in enumerate(reqs)]

    # ------------------------------------------------------------ the tree, depth first

    def _node(self, reqs: Sequence[Request], node: _Node, parent: _State | None, values: list[dict[int, float]], tops: list[list[tuple[int, float]]]) -> None:
        ids = reqs[node.members[0]].ids
        first_scored = min(reqs[i].start for i in node.members)
        begin, state = node.begin, parent
        context = node.end <= first_scored  # nothing scored inside: worth remembering across calls
        remembered = self.memory.longest(ids, begin, min(node.end, first_scored))
        if remembered is not None:
            begin, state = remembered
        if begin < node.end:
            state = self._extend(ids, begin, node.end, state, node.members, reqs, values)
            if context:
                self.memory.keep(ids[: node.end], state)
        assert state is not None
        for i in node.members:  # the first token after the node, for those that score it or stop there
            r = reqs[i]
            if len(r.ids) > node.end and node.end >= r.start:
                values[i][node.end] = float(state.row[r.ids[node.end]])
        for i in node.leaves:
            if len(reqs[i].ids) == node.end and reqs[i].top:
                tops[i] = _top(state.row, reqs[i].top)
        for child in node.children:
            self._node(reqs, child, state, values, tops)
        rows = [i for i in node.leaves if len(reqs[i].ids) > node.end + 1 or (len(reqs[i].ids) > node.end and reqs[i].top)]
        for batch in self._leaf_batches(reqs, rows, node.end):
            self._leaves(reqs, batch, node.end, state, values, tops)

    def _extend(
        self, ids: Ids, begin: int, end: int, parent: _State | None, members: list[int], reqs: Sequence[Request], values: list[dict[int, float]]
    ) -> _State:
        """Run ids[begin:end] after `parent`; record the log-probs of the scored tokens inside."""
        import torch

        cache = copy.deepcopy(parent.cache) if parent is not None else None
        # positions whose next token some member scores, plus the last one (what follows the node)
        keep = sorted({p for p in range(begin, end - 1) if any(p + 1 >= reqs[i].start for i in members)} | {end - 1})
        out = self.model(
            input_ids=torch.tensor([ids[begin:end]], device=self.model.device),
            position_ids=torch.arange(begin, end, device=self.model.device).unsqueeze(0),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.tensor([p - begin for p in keep], device=self.model.device),
        )
        logp = torch.log_softmax(out.logits[0].float(), dim=-1)
        for k, p in enumerate(keep[:-1]):
            lp = float(logp[k, ids[p + 1]])
            for i in members:
                if p + 1 >= reqs[i].start:
                    values[i][p + 1] = lp
        if parent is not None and begin >= 1:  # the node's first token, from what preceded it
            for i in members:
                if begin >= reqs[i].start:
                    values[i][begin] = float(parent.row[ids[begin]])
        return _State(out.past_key_values, logp[-1])

    def _leaf_batches(self, reqs: Sequence[Request], rows: list[int], end: int) -> list[list[int]]:
        """Rows sorted by length, each batch within the token budget, the copied prefix counted too."""
        order = sorted(rows, key=lambda i: len(reqs[i].ids))
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            width = len(reqs[i].ids) - end
            if cur and ((len(cur) + 1) * (width + end) > self.token_budget * 4 or (len(cur) + 1) * width > self.token_budget):
                batches.append(cur)
                cur = []
            cur.append(i)
        return batches + ([cur] if cur else [])

    def _leaves(
        self, reqs: Sequence[Request], batch: list[int], end: int, state: _State, values: list[dict[int, float]], tops: list[list[tuple[int, float]]]
    ) -> None:
        """Each row's own tokens after the shared prefix, as right-padded rows over a copy of its cache."""
        import torch

        device = self.model.device
        suffixes = [reqs[i].ids[end:] for i in batch]
        width = max(len(s) for s in suffixes)
        needed: set[int] = set()
        for i, s in zip(batch, suffixes):
            needed |= {q for q in range(len(s) - 1) if end + q + 1 >= reqs[i].start}
            if reqs[i].top:
                needed.add(len(s) - 1)
        keep = sorted(needed)
        if not keep:
            return
        cache = copy.deepcopy(state.cache)
        cache.batch_repeat_interleave(len(batch))
        out = self.model(
            input_ids=torch.tensor([list(s) + [self.pad_id] * (width - len(s)) for s in suffixes], device=device),
            attention_mask=torch.tensor([[1] * (end + len(s)) + [0] * (width - len(s)) for s in suffixes], device=device),
            position_ids=torch.arange(end, end + width, device=device).unsqueeze(0).expand(len(batch), -1),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.tensor(keep, device=device),
        )
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        column = {q: k for k, q in enumerate(keep)}
        for row, (i, s) in enumerate(zip(batch, suffixes)):
            for q in range(len(s) - 1):
                if end + q + 1 >= reqs[i].start:
                    values[i][end + q + 1] = float(logp[row, column[q], s[q + 1]])
            if reqs[i].top:
                tops[i] = _top(logp[row, column[len(s) - 1]], reqs[i].top)


def _top(row: Any, k: int) -> list[tuple[int, float]]:
    import torch

    found = torch.topk(row, k)
    return [(int(t), float(v)) for v, t in zip(found.values, found.indices)]
