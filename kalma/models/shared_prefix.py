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
import functools
import inspect
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..progress import token_done
from .memory import MemoryModel
from .runtime import plan_batches

Ids = tuple[int, ...]


def cache_arg(model: Any, cache: Any) -> dict[str, Any]:
    """The KV cache as the model's forward takes it: `cache` in transformers 5.x (which warns at
    every call given the old name), `past_key_values` before."""
    new: bool = _new_cache_api(type(model))  # type: ignore[arg-type]
    return {"cache" if new else "past_key_values": cache}


def cache_of(out: Any) -> Any:
    """The KV cache a forward pass returned, read by its current name where it has one."""
    return out["cache"] if "cache" in out.keys() else out.past_key_values


@functools.cache
def _new_cache_api(cls: Any) -> bool:
    return "cache" in inspect.signature(cls.forward).parameters


@dataclass(frozen=True)
class Request:
    """One sequence: `ids` (BOS included); the tokens from `start` on are scored; `top` > 0 also
    asks for the `top` most likely tokens after the last one; `decode` > 0 continues the
    sequence greedily for up to that many tokens, stopping after one of `stop`."""

    ids: Ids
    start: int
    top: int = 0
    decode: int = 0
    stop: tuple[int, ...] = ()


@dataclass(frozen=True)
class Step:
    """One greedily decoded token: its id, its log-prob, and the `top` alternatives."""

    token: int
    logprob: float
    top: list[tuple[int, float]]


@dataclass
class Result:
    logprobs: list[float]  # of ids[start:], each given everything before it
    next_top: list[tuple[int, float]] = field(default_factory=list)  # (token id, log-prob) after the sequence
    generated: list[Step] = field(default_factory=list)  # the greedy continuation, when asked


class StepLog:
    """Per decoding step, on the device: each row's chosen token, its log-prob and the top
    alternatives; moved to the host once, at the end (a `float()` per row and step would wait for
    the device each time). Each step is told to the open progress (of at most `most`): a batch of
    long replies on a CPU otherwise says nothing for many minutes."""

    def __init__(self, top: int, most: int):
        self.top, self.most, self.tokens, self.chosen, self.values, self.indices = top, most, [], [], [], []  # type: ignore[var-annotated]

    def add(self, logp: Any, token: Any) -> None:
        import torch

        self.tokens.append(token)
        self.chosen.append(logp.gather(1, token[:, None])[:, 0])
        if self.top:
            found = torch.topk(logp, self.top)
            self.values.append(found.values)
            self.indices.append(found.indices)
        token_done(len(self.tokens), self.most, len(token))

    def rows(self) -> list[list[tuple[int, float, dict[int, float]]]]:
        import torch

        if not self.tokens:
            return []
        tokens, chosen = torch.stack(self.tokens, 1).tolist(), torch.stack(self.chosen, 1).tolist()
        values = torch.stack(self.values, 1).tolist() if self.top else None
        indices = torch.stack(self.indices, 1).tolist() if self.top else None
        return [
            [(t, lp, dict(zip(indices[r][n], values[r][n])) if values is not None and indices is not None else {}) for n, (t, lp) in enumerate(zip(toks, lps))]
            for r, (toks, lps) in enumerate(zip(tokens, chosen))
        ]


@dataclass
class _Row:
    """A leaf row waiting for its pass: the request, where its own tokens begin, and the state
    of the prefix before them (None: no prefix)."""

    i: int
    end: int
    state: _State | None


@dataclass
class _Pending:
    """Rows whose prompts have run, waiting to be decoded: their cache, their attention mask so
    far (own tokens 1, padding 0), the position of each row's next token, and what follows."""

    which: list[int]
    cache: Any
    mask: Any
    position: Any
    logp: Any


@dataclass
class _Found:
    """What one run has found so far, per request: scored log-probs by position, the next-token
    alternatives, the greedy continuation; and the rows still to run and to decode."""

    values: list[dict[int, float]]
    tops: list[list[tuple[int, float]]]
    generated: list[list[Step]]
    rows: list[_Row] = field(default_factory=list)
    pending: list[_Pending] = field(default_factory=list)


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


def _kept(req: Request, end: int) -> int:
    """Positions of a leaf row (its own tokens after a prefix ending at `end`) whose logits are
    computed: those whose next token is scored, and its last when it is continued."""
    own = len(req.ids) - end
    scored = sum(1 for q in range(own - 1) if end + q + 1 >= req.start)
    return max(1, scored + (1 if req.top or req.decode else 0))


def _node_kept(reqs: Sequence[Request], node: _Node) -> int:
    """Positions of a node's pass whose logits are computed (`_extend`'s `keep`)."""
    first = min(reqs[i].start for i in node.members)
    return 1 + max(0, (node.end - 1) - max(node.begin, first - 1))


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


def saved_share(reqs: Sequence[Request], min_saved: int) -> float:
    """The share of the token positions of `reqs` that their prefix tree runs once for several
    sequences instead of once each: what the shared-prefix runner saves over padded rows.

    >>> ctx = tuple(range(1, 101))
    >>> saved_share([Request(ctx + (200 + i,), 100) for i in range(4)], 64)  # one 100-token context, four texts
    0.7425742574257426
    >>> saved_share([Request((1, 2, 3), 1), Request((4, 5, 6), 1)], 64)
    0.0
    """
    total = sum(len(r.ids) for r in reqs)
    if not total:
        return 0.0

    def saved(node: _Node) -> int:
        return (len(node.members) - 1) * (node.end - node.begin) + sum(saved(c) for c in node.children)

    return saved(plan_tree(reqs, min_saved)) / total


def _cut(reqs: Sequence[Request], members: list[int], begin: int, end: int) -> int:
    """`end`, or the start of the members' scored text when that lies inside (begin, end); and
    never past the last token but one of a sequence to decode, which its own row must run."""
    first_scored = min(reqs[i].start for i in members)
    end = first_scored if begin < first_scored < end else end
    return min([end] + [len(reqs[i].ids) - 1 for i in members if reqs[i].decode])


def _grow(reqs: Sequence[Request], node: _Node, min_saved: int) -> int:
    """Split `node`'s members into child nodes and leaves; returns the token positions its
    children save. A child is kept when its whole subtree saves `min_saved`: two answers whose
    questions open alike share little, but each answer's own criteria share much below them."""
    groups: dict[int, list[int]] = {}
    for i in node.members:
        ids = reqs[i].ids
        if len(ids) > node.end:
            groups.setdefault(ids[node.end], []).append(i)
        else:
            node.leaves.append(i)  # ends with the node: its next-token row is the node's
    saved = 0
    for group in groups.values():
        if len(group) >= 2:
            end = _cut(reqs, group, node.end, _lcp([reqs[i].ids for i in group], node.end))
            if end > node.end:
                child = _Node(node.end, end, group)
                worth = (len(group) - 1) * (end - node.end) + _grow(reqs, child, min_saved)
                if worth >= min_saved:
                    node.children.append(child)
                    saved += worth
                    continue
        for i in group:
            r = reqs[i]
            if node.end + min_saved <= r.start < len(r.ids):
                # A long context of its own: a node, so that a later call scoring other texts under it
                # (another model's answer to the same question) finds it in memory.
                node.children.append(_Node(node.end, r.start, [i], leaves=[i]))
            else:
                node.leaves.append(i)
    return saved


class PrefixMemory:
    """Recent pure-context states, by their token ids, within a byte budget (least recently used
    first out): KALMA_PREFIX_MEMORY_MB, default 1024. Two evaluations of one dataset (two models'
    answers) then share the knowledge and questions they both read."""

    def __init__(self, megabytes: float | None = None):
        self.budget = int((megabytes if megabytes is not None else float(os.environ.get("KALMA_PREFIX_MEMORY_MB") or 1024)) * 2**20)
        self._states: OrderedDict[Ids, tuple[_State, int]] = OrderedDict()
        self._bytes = 0

    def longest(self, ids: Ids, lo: int, hi: int) -> tuple[int, _State] | None:
        """The longest remembered prefix of `ids` whose length lies in (lo, hi]."""
        best: tuple[int, _State] | None = None
        for key, (state, _) in self._states.items():
            n = len(key)
            if lo < n <= hi and (best is None or n > best[0]) and ids[:n] == key:
                best = (n, state)
        if best is not None:
            self._states.move_to_end(ids[: best[0]])
        return best

    def keep(self, ids: Ids, state: _State) -> None:
        size = _nbytes(state)
        if size > self.budget:
            return
        if ids in self._states:
            self._bytes -= self._states.pop(ids)[1]
        self._states[ids] = (state, size)
        self._bytes += size
        while self._bytes > self.budget:
            self._bytes -= self._states.popitem(last=False)[1][1]

    def keys(self) -> list[Ids]:
        return list(self._states)


def _nbytes(state: _State) -> int:
    """What a state holds in memory: its key/value tensors and its row."""
    return _cache_bytes(state.cache) + state.row.numel() * 4


def _cache_bytes(cache: Any) -> int:
    layers = getattr(cache, "layers", [])
    return sum(t.numel() * t.element_size() for layer in layers for t in (layer.keys, layer.values) if t is not None)


class SharedPrefixRunner:
    """Runs `plan_tree` nodes through a causal LM with a key/value cache. Its batches (leaf rows
    over copied prefix caches, then decoding) are planned by `memory`'s prediction against
    `budget()` bytes, less the prefix states it holds: the owning backend's budget, so that one
    halved after running out of memory reaches the runner too. Leaf passes also stay within
    `pass_tokens` positions (the pass width); decoding batches every row memory allows, and asks
    the device whether all have stopped every `sync_every` steps."""

    def __init__(
        self,
        model: Any,
        *,
        pad_id: int,
        memory: MemoryModel,
        budget: Callable[[], int],
        min_saved: int = 64,
        remembered: PrefixMemory | None = None,
        pass_tokens: int | None = None,
        max_rows: int = 1024,
        sync_every: int = 1,
    ):
        self.model, self.pad_id, self.cost, self.budget, self.min_saved = model, pad_id, memory, budget, min_saved
        self.memory = remembered if remembered is not None else PrefixMemory()
        self.pass_tokens, self.max_rows, self.sync_every = pass_tokens, max_rows, sync_every

    def run(self, reqs: Sequence[Request]) -> list[Result]:
        import torch

        if any(len(r.ids) < 2 and (r.top or r.decode) for r in reqs):
            raise ValueError("a sequence to continue needs at least two tokens (BOS and one more)")
        live = [r for r in reqs if len(r.ids) >= 2]  # BOS alone: nothing to score
        found = _Found([{} for _ in live], [[] for _ in live], [[] for _ in live])
        if live:
            with torch.no_grad():
                self._node(live, plan_tree(live, self.min_saved), None, found)
                room = self._room(found.rows)
                for batch in self._leaf_batches(live, found.rows, room):
                    self._leaves(live, batch, found)
                pending = sum(_cache_bytes(p.cache) for p in found.pending)  # every prompt's cache, until decoded
                self._decode_all(live, found, room - pending)
        results = iter([Result([found.values[i][j] for j in range(r.start, len(r.ids))], found.tops[i], found.generated[i]) for i, r in enumerate(live)])
        return [next(results) if len(r.ids) >= 2 else Result([]) for r in reqs]

    # ------------------------------------------------------------ the tree, depth first

    def _node(self, reqs: Sequence[Request], node: _Node, parent: _State | None, found: _Found) -> None:
        import torch

        ids = reqs[node.members[0]].ids
        first_scored = min(reqs[i].start for i in node.members)
        begin, state = node.begin, parent
        context = node.end <= first_scored  # nothing scored inside: worth remembering across calls
        remembered = self.memory.longest(ids, begin, min(node.end, first_scored))
        if remembered is not None:
            begin, state = remembered
        if begin < node.end:
            state = self._extend(ids, begin, node.end, state, node.members, reqs, found.values)
            if context:
                self.memory.keep(ids[: node.end], state)
        # An empty root (sequences sharing not even a first token) has no state: the first token
        # of a sequence is never scored, and its children and rows start from nothing.
        if state is not None:
            # the first token after the node, for those that score it: one transfer for all of them
            after = [i for i in node.members if len(reqs[i].ids) > node.end and node.end >= reqs[i].start]
            if after:
                picked = state.row[torch.tensor([reqs[i].ids[node.end] for i in after], device=state.row.device)].tolist()
                for i, lp in zip(after, picked):
                    found.values[i][node.end] = lp
            for i in node.leaves:
                if len(reqs[i].ids) == node.end and reqs[i].top:
                    found.tops[i] = _top(state.row, reqs[i].top)
        for child in node.children:
            self._node(reqs, child, state, found)
        found.rows += [
            _Row(i, node.end, state)
            for i in node.leaves
            if len(reqs[i].ids) > node.end + 1 or (len(reqs[i].ids) > node.end and (reqs[i].top or reqs[i].decode))
        ]

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
            **cache_arg(self.model, cache),
            use_cache=True,
            logits_to_keep=torch.tensor([p - begin for p in keep], device=self.model.device),
        )
        logp = torch.log_softmax(out.logits[0].float(), dim=-1)
        if keep[:-1]:  # the scored tokens inside, in one transfer
            targets = torch.tensor([ids[p + 1] for p in keep[:-1]], device=logp.device)
            picked = logp[: len(keep) - 1].gather(1, targets[:, None])[:, 0].tolist()
            for p, lp in zip(keep, picked):
                for i in members:
                    if p + 1 >= reqs[i].start:
                        values[i][p + 1] = lp
        if parent is not None and begin >= 1:  # the node's first token, from what preceded it
            for i in members:
                if begin >= reqs[i].start:
                    values[i][begin] = float(parent.row[ids[begin]])
        return _State(cache_of(out), logp[-1])

    def _leaf_batches(self, reqs: Sequence[Request], rows: list[_Row], room: int) -> list[list[_Row]]:
        """Rows of every node, by prefix length then own length, in batches whose predicted peak
        (each row's copy of its prefix cache, the pass over the rows' own tokens and their logits)
        stays within `room` bytes, and whose pass stays within the pass width."""
        sizes = [(r.end, len(reqs[r.i].ids) - r.end, _kept(reqs[r.i], r.end)) for r in rows]
        batches = self._leaf_plan(sizes, room)
        return [[rows[i] for i in b] for b in batches]

    def _leaf_plan(self, sizes: Sequence[tuple[int, int, int]], room: int) -> list[list[int]]:
        """Leaf batches of rows sized (prefix, own tokens, positions whose logits they need): rows
        end in one column, so a batch computes logits at its widest row's positions."""
        return plan_batches(
            sizes,
            lambda n, prefix, width, kept: self.cost.leaves(n, prefix, width, kept),
            room,
            max_rows=self.max_rows,
            pass_tokens=self.pass_tokens,
            work=lambda n, prefix, width, kept: n * width,
        )

    def _room(self, rows: list[_Row]) -> int:
        """The budget less the prefix states this run holds (each node's cache until its rows have run)."""
        held = {id(r.state): r.state for r in rows if r.state is not None}
        return self.budget() - sum(_nbytes(s) for s in held.values())

    def predict(self, reqs: Sequence[Request]) -> int:
        """The peak bytes `run(reqs)` will hold beyond the weights, as planned: every node's state
        (a cache of its whole prefix) and, on top, its largest pass (a node's, a leaf batch's, or
        a decoding batch's)."""
        live = [r for r in reqs if len(r.ids) >= 2]
        if not live:
            return 0
        tree = plan_tree(live, self.min_saved)
        nodes: list[_Node] = []

        def walk(node: _Node) -> None:
            nodes.append(node)
            for child in node.children:
                walk(child)

        walk(tree)
        # each node's state: its cache and the log-softmax row of what follows it (fp32)
        states = sum(self.cost.kv(1, n.end) + self.cost.shape.vocab * 4 for n in nodes if n.end > n.begin)
        passes = [self.cost.forward(1, n.end - n.begin, _node_kept(live, n), n.begin) for n in nodes if n.end > n.begin]
        leaves = [(n.end, len(live[i].ids) - n.end, i) for n in nodes for i in n.leaves if len(live[i].ids) > n.end]
        rows = [(prefix, width, _kept(live[i], prefix)) for prefix, width, i in leaves]
        room = self.budget() - states
        pending = 0  # the caches of prompts to decode, kept from their leaf batch until decoding
        for batch in self._leaf_plan(rows, room):
            prefix, width, kept = (max(rows[i][k] for i in batch) for k in range(3))
            passes.append(pending + self.cost.leaves(len(batch), prefix, width, kept))
            pending += self.cost.kv(sum(1 for i in batch if live[leaves[i][2]].decode), prefix + width)
        decode = [(len(r.ids), r.decode, r.top) for r in live if r.decode]
        top = max((t for _, _, t in decode), default=0)
        cost = lambda k, w, s: self.cost.decoding(k, w, s, top)  # noqa: E731
        for batch in plan_batches([(w, s) for w, s, _ in decode], cost, room - pending, max_rows=self.max_rows):
            passes.append(pending + self.cost.decoding(len(batch), max(decode[i][0] for i in batch), max(decode[i][1] for i in batch), top))
        return states + max(passes, default=0)

    def _leaves(self, reqs: Sequence[Request], batch: list[_Row], found: _Found) -> None:
        """Each row's own tokens after its prefix, as one batch over the rows' prefix caches
        (copied, padded to the longest and masked). Own tokens are left-padded, so that every row
        ends in the last column: the positions whose logits are computed are then the widest row's
        own, not the union of every row's."""
        import torch

        device = self.model.device
        suffixes = [reqs[r.i].ids[r.end :] for r in batch]
        width, prefix = max(len(s) for s in suffixes), max(r.end for r in batch)
        pad = [width - len(s) for s in suffixes]  # columns before a row's own tokens
        needed: set[int] = set()
        for r, s, p in zip(batch, suffixes, pad):
            needed |= {p + q for q in range(len(s) - 1) if r.end + q + 1 >= reqs[r.i].start}
            if reqs[r.i].top or reqs[r.i].decode:
                needed.add(width - 1)
        keep = sorted(needed)
        if not keep:
            return
        cache = _batch_cache([r.state for r in batch], prefix)
        mask = torch.tensor([[1] * r.end + [0] * (prefix - r.end + p) + [1] * len(s) for r, s, p in zip(batch, suffixes, pad)], device=device)
        out = self.model(
            input_ids=torch.tensor([[self.pad_id] * p + list(s) for s, p in zip(suffixes, pad)], device=device),
            attention_mask=mask,
            position_ids=torch.stack([torch.arange(r.end - p, r.end + len(s), device=device).clamp(min=0) for r, s, p in zip(batch, suffixes, pad)]),
            **cache_arg(self.model, cache),
            use_cache=True,
            logits_to_keep=torch.tensor(keep, device=device),
        )
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        column = {c: k for k, c in enumerate(keep)}
        wanted = [(row, q) for row, (r, s) in enumerate(zip(batch, suffixes)) for q in range(len(s) - 1) if r.end + q + 1 >= reqs[r.i].start]
        if wanted:  # every scored token of the batch in one transfer
            at = torch.tensor([[row, column[pad[row] + q], suffixes[row][q + 1]] for row, q in wanted], device=device)
            for (row, q), lp in zip(wanted, logp[at[:, 0], at[:, 1], at[:, 2]].tolist()):
                found.values[batch[row].i][batch[row].end + q + 1] = lp
        last = logp[:, column[width - 1]] if width - 1 in column else None
        topped = [row for row, r in enumerate(batch) if reqs[r.i].top]
        if topped and last is not None:  # what follows each sequence, for every row that asks: one transfer
            k = max(reqs[batch[row].i].top for row in topped)
            found_k = torch.topk(last[torch.tensor(topped, device=device)], k)
            for row, ids, values in zip(topped, found_k.indices.tolist(), found_k.values.tolist()):
                found.tops[batch[row].i] = list(zip(ids, values))[: reqs[batch[row].i].top]
        rows = [row for row, r in enumerate(batch) if reqs[r.i].decode]
        if rows and last is not None:  # decoded later, with every other prompt's rows: one decoding step serves them all
            decoding = cache_of(out)
            picked = torch.tensor(rows, device=device)
            decoding.batch_select_indices(picked)
            position = torch.tensor([batch[row].end + len(suffixes[row]) for row in rows], device=device)
            # every row decoding and one column kept (the usual case): the view, not a copy beside the logits
            kept_rows = last if len(rows) == len(batch) and len(keep) == 1 else last[picked]
            found.pending.append(_Pending([batch[row].i for row in rows], decoding, mask[picked], position, kept_rows))

    def _decode_all(self, reqs: Sequence[Request], found: _Found, room: int) -> None:
        """Greedy decoding of every pending row, merged into as few batches as `room` allows (each
        row's cache padded to the batch's width and masked, grown by the tokens to come), one
        token per row and step."""
        batches: list[list[_Pending]] = []
        for p in sorted(found.pending, key=lambda p: p.mask.shape[1]):
            steps = max(reqs[i].decode for i in p.which)
            top = max(reqs[i].top for i in p.which)
            cur = batches[-1] if batches else []
            rows = sum(len(q.which) for q in cur) + len(p.which)
            if not cur or rows > self.max_rows or self.cost.decoding(rows, p.mask.shape[1], steps, top) > room:
                batches.append([p])
            else:
                cur.append(p)
        for group in batches:
            self._decode(reqs, group, found.generated)

    def _decode(self, reqs: Sequence[Request], group: list[_Pending], generated: list[list[Step]]) -> None:
        import torch

        device = self.model.device
        which = [i for p in group for i in p.which]
        width = max(p.mask.shape[1] for p in group)
        steps = max(reqs[i].decode for i in which)
        cache = _static(group[0].cache if len(group) == 1 else merge_caches([p.cache for p in group], width), self.model, width, steps)
        # every row's next token goes in the same column: its own tokens, padding (masked), then new tokens
        mask = torch.cat([torch.nn.functional.pad(p.mask, (0, width - p.mask.shape[1] + steps)) for p in group])
        position = torch.cat([p.position for p in group])
        logp = group[0].logp if len(group) == 1 else torch.cat([p.logp for p in group])
        for p in group:  # their caches now live in `cache`, their last rows in `logp`
            p.cache = p.logp = None
        top = max(reqs[i].top for i in which)
        limit = torch.tensor([reqs[i].decode for i in which], device=device)
        stops = [sorted(reqs[i].stop) or [-1] for i in which]
        stop = torch.tensor([s + [s[0]] * (max(map(len, stops)) - len(s)) for s in stops], device=device)
        done = torch.zeros(len(which), dtype=torch.bool, device=device)
        log = StepLog(top, steps)
        for step in range(steps):
            chosen = logp.argmax(-1)
            log.add(logp, chosen)
            # a row is done after a stop token or its own limit; its later steps are dropped below
            done |= (chosen[:, None] == stop).any(-1) | (limit <= step + 1)
            if step + 1 == steps or ((step + 1) % self.sync_every == 0 and bool(done.all())):
                break
            logp = None  # recorded: not held beside the next step's logits
            mask[:, width + step] = 1
            out = self.model(
                input_ids=chosen[:, None],
                attention_mask=mask if cache.__class__.__name__ == "StaticCache" else mask[:, : width + step + 1],
                position_ids=(position + step)[:, None],
                **cache_arg(self.model, cache),
                cache_position=torch.tensor([width + step], device=device),
                use_cache=True,
                logits_to_keep=1,
            )
            cache = cache_of(out)
            logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        for i, row in zip(which, log.rows()):
            req = reqs[i]
            for token, lp, alternatives in row[: req.decode]:
                generated[i].append(Step(token, lp, sorted(alternatives.items(), key=lambda kv: -kv[1])[: req.top]))
                if token in req.stop:
                    break


def _static(cache: Any, model: Any, width: int, steps: int) -> Any:
    """The cache moved into one preallocated for `steps` more tokens, so decoding writes each new
    token in place instead of copying the whole cache at every step (two thirds of a step's time
    on a CPU); the dynamic cache as it is for models that will not take a static one."""
    import torch
    from transformers import StaticCache

    try:
        static = StaticCache(config=model.config, max_cache_len=width + steps)
        positions = torch.arange(width, device=model.device)
        for i, layer in enumerate(cache.layers):
            static.update(layer.keys, layer.values, i, {"cache_position": positions})
        return static
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return cache


def _batch_cache(states: list[_State | None], width: int) -> Any:
    """One cache for rows whose prefixes are `states`: the one state repeated when they share it,
    else each padded on the right to `width` (None: no prefix at all)."""
    if all(s is None for s in states):
        return None
    if all(s is states[0] for s in states):
        cache = copy.deepcopy(states[0].cache)  # type: ignore[union-attr]
        cache.batch_repeat_interleave(len(states))
        return cache
    return merge_caches([s.cache if s is not None else None for s in states], width)


def merge_caches(caches: list[Any], width: int, left: bool = False) -> Any:
    """One key/value cache of the rows of several (None: a row with no prefix), each padded on
    the right to `width` (on the left with `left`: rows that end together); the attention mask
    hides the padding, and positions were applied when the keys were made."""
    import torch
    from transformers import DynamicCache

    model = next(c for c in caches if c is not None)
    merged = DynamicCache()
    for layer in range(len(model.layers)):
        shape = model.layers[layer].keys.shape
        keys, values = [], []
        for c in caches:
            if c is None:
                k = v = model.layers[layer].keys.new_zeros((1, shape[1], 0, shape[3]))
            else:
                k, v = c.layers[layer].keys, c.layers[layer].values
            pad = (0, 0, width - k.shape[-2], 0) if left else (0, 0, 0, width - k.shape[-2])
            keys.append(torch.nn.functional.pad(k, pad))
            values.append(torch.nn.functional.pad(v, pad))
        merged.update(torch.cat(keys), torch.cat(values), layer)
    return merged


def _top(row: Any, k: int) -> list[tuple[int, float]]:
    import torch

    found = torch.topk(row, k)
    return [(int(t), float(v)) for v, t in zip(found.values, found.indices)]
