"""A model's thread asked to stop (`kalma.progress.stop_at_next_step`, what Inspect's `kalma/`
provider asks on Ctrl-C) stops at its next decoding step, on every decoding path, and a backend
that takes no decoding steps at the end of its batch, with that batch's answers handed on; a
request that came after the thread's last step is forgotten, never stopping the next call that the
pool runs on that thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kalma.models import GenParams
from kalma.models.hf import HFCausalLM
from kalma.progress import _stopping, forget_stop, stop_at_next_step
from perf.random_models import build_causal

CHAT = [{"role": "user", "content": "who wrote Bring the Jubilee"}]


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> HFCausalLM:
    return HFCausalLM(f"{build_causal(Path(tmp_path_factory.mktemp('m')), 'llama')}@fp32")


def _in_thread(call: Callable[[], object], stop: bool = True) -> object:
    """`call()` in a thread of its own, asked to stop before it begins when `stop`: what it raised, or returned."""
    got: list[object] = []

    def work() -> None:
        if stop:
            stop_at_next_step(threading.get_ident())
        try:
            got.append(call())
        except BaseException as exc:  # noqa: BLE001 - the outcome under test
            got.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive()
    return got[0]


@pytest.mark.parametrize("temperature", [0.0, 0.8], ids=["greedy", "sampled"])
def test_a_thread_asked_to_stop_stops_at_its_next_decoding_step(llm, temperature):
    params = GenParams(max_tokens=40, temperature=temperature, seed=1)

    def replies() -> list[str]:
        return [g.text for g in llm.chat_many([CHAT, CHAT], params)]

    assert isinstance(_in_thread(replies), KeyboardInterrupt)
    assert not _stopping  # the request is used up
    answered = _in_thread(replies, stop=False)
    assert isinstance(answered, list) and len(answered) == 2


def test_a_request_after_the_last_step_is_forgotten():
    me = threading.get_ident()
    stop_at_next_step(me)
    forget_stop(me)
    assert me not in _stopping


def test_a_backend_without_decoding_steps_stops_at_the_end_of_its_batch():
    """The template backend (a server's backend is the same here) answers in batches of 64: asked
    to stop, it hands on its first batch whole and stops before the second."""
    from kalma.models import get_llm

    llm = get_llm("template")
    chats = [[{"role": "user", "content": f"question {i}"}] for i in range(3 * llm.batch_size)]
    got: list[int] = []
    assert isinstance(_in_thread(lambda: got.extend(i for i, _ in llm.chat_stream(chats, GenParams()))), KeyboardInterrupt)
    assert sorted(got) == list(range(llm.batch_size)) and not _stopping


def test_a_thread_asked_to_stop_stops_inside_one_forward_and_the_hook_goes(llm):
    """A prefill over long prompts is one forward of many layers: the request is taken at the start
    of a module's forward, and the module hook that takes it is there only while a request waits."""
    import torch
    from torch.nn.modules.module import _global_forward_pre_hooks

    _, model = llm.model()
    calls: list[str] = []
    seen = model.register_forward_pre_hook(lambda module, args: calls.append("model"))  # the outermost module's own start

    def prefill() -> None:
        with torch.no_grad():
            model(input_ids=torch.tensor([[1, 2, 3, 4]]))

    try:
        raised = _in_thread(prefill)
    finally:
        seen.remove()
    assert isinstance(raised, KeyboardInterrupt) and not calls  # stopped before the model's own hook ran
    assert not _stopping and not _global_forward_pre_hooks
    stop_at_next_step(12345)  # a request for another thread: the hook is on, and off once it is forgotten
    assert _global_forward_pre_hooks
    forget_stop(12345)
    assert not _global_forward_pre_hooks


def test_a_thread_asked_to_stop_while_its_model_loads_stops_once_it_is_loaded(llm):
    """A load cannot be cut safely (imports, files): the request is taken as soon as it ends, before
    the pass width is calibrated on it or a prompt is read."""
    assert isinstance(_in_thread(llm.model), KeyboardInterrupt) and not _stopping
