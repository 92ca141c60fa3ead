"""A model's thread asked to stop (`kalma.progress.stop_at_next_step`, what Inspect's `kalma/`
provider asks on Ctrl-C besides the exception it sends) stops at its next decoding step, on every
decoding path; a request that came after the thread's last step is forgotten, never stopping the
next call that the pool runs on that thread."""

from __future__ import annotations

import threading
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


def _in_thread(llm: HFCausalLM, params: GenParams, stop: bool) -> BaseException | list[str]:
    """Decode in a thread of its own, asked to stop before it begins when `stop`: what it raised, or its replies."""
    got: list[BaseException | list[str]] = []

    def work() -> None:
        if stop:
            stop_at_next_step(threading.get_ident())
        try:
            got.append([g.text for g in llm.chat_many([CHAT, CHAT], params)])
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
    assert isinstance(_in_thread(llm, params, stop=True), KeyboardInterrupt)
    assert not _stopping  # the request is used up
    replies = _in_thread(llm, params, stop=False)
    assert isinstance(replies, list) and len(replies) == 2


def test_a_request_after_the_last_step_is_forgotten():
    me = threading.get_ident()
    stop_at_next_step(me)
    forget_stop(me)
    assert me not in _stopping
