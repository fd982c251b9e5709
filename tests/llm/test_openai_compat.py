"""OpenAICompatibleEngine against a real local HTTP server answering like vLLM (tests/llm/fake_vllm.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from coding_framework.llm.base import (
    BatchRequestsFailed,
    EngineError,
    RequestFailed,
    SamplingParams,
    TokenEngine,
)
from coding_framework.llm.openai_compat import (
    OpenAICompatibleEngine,
    map_stop_reason,
    row_seeds,
    split_base_url,
)
from coding_framework.llm.server_tokenizer import ServerTokenizer
from tests.llm.fake_vllm import EOS, SCRIPT, FakeTokenizer, FakeVLLM, FakeVLLMServer

GREEDY = SamplingParams(max_new_tokens=64, temperature=0.0)


@pytest.fixture
def server() -> Iterator[tuple[str, FakeVLLM]]:
    with FakeVLLMServer() as (url, fake):
        yield url, fake


@pytest.fixture
def engine(server: tuple[str, FakeVLLM]) -> Iterator[OpenAICompatibleEngine]:
    eng = OpenAICompatibleEngine(f"{server[0]}/v1", "tiny", FakeTokenizer(), backoff_s=0.01)
    yield eng
    eng.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_generate_is_token_in_token_out(engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]) -> None:
    assert isinstance(engine, TokenEngine)
    gen = engine.generate(
        [1, 12, 7, 14], SamplingParams(max_new_tokens=64, temperature=0.7, top_p=0.9, seed=5)
    )
    assert gen.token_ids == SCRIPT  # EOS included: training must see it
    assert gen.logprobs == [-0.25 * (k + 1) for k in range(len(SCRIPT))]
    assert gen.text == "def add(a, b):\n    return a + b"
    assert gen.stop_reason == "eos"
    assert gen.policy_version == "tiny"
    path, body, _ = server[1].requests[-1]
    assert path == "/v1/completions"
    assert body["prompt"] == [1, 12, 7, 14]
    assert body["return_token_ids"] is True and body["logprobs"] == 0
    assert (body["temperature"], body["top_p"], body["seed"], body["max_tokens"]) == (0.7, 0.9, 5, 64)


def test_length_stop(engine: OpenAICompatibleEngine) -> None:
    gen = engine.generate([14], SamplingParams(max_new_tokens=3))
    assert gen.token_ids == SCRIPT[:3] and gen.stop_reason == "length" and gen.text == "def add(a, b"


def test_stop_string_keeps_the_whole_last_token(
    engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]
) -> None:
    gen = engine.generate([14], SamplingParams(max_new_tokens=64, stop=("(a",)))
    # The server cut its text right after "(a"; tokens cannot be cut, so the text is decoded from the ids.
    assert gen.token_ids == SCRIPT[:3]
    assert gen.stop_reason == "stop"
    assert gen.text == FakeTokenizer().decode(gen.token_ids) == "def add(a, b"
    assert server[1].requests[-1][1]["stop"] == ["(a"]


@pytest.mark.parametrize(
    ("finish", "stop", "expected"),
    [
        ("length", None, "length"),
        ("stop", None, "eos"),
        ("stop", 151643, "eos"),
        ("stop", "```", "stop"),
    ],
)
def test_map_stop_reason(finish: str, stop: str | int | None, expected: str) -> None:
    assert map_stop_reason(finish, stop) == expected


def test_map_stop_reason_rejects_aborted_generations() -> None:
    with pytest.raises(EngineError, match="finish_reason='abort'"):
        map_stop_reason("abort", None)


def test_generate_batch_is_concurrent_ordered_and_seeds_rows_apart(
    engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]
) -> None:
    fake = server[1]
    fake.delay_s = 0.2
    prompts = [[14], [14, 7], [14, 7, 14], [14]]
    gens = engine.generate_batch(prompts, SamplingParams(max_new_tokens=4, seed=11))
    assert [g.token_ids for g in gens] == [SCRIPT[:4]] * 4
    by_prompt = {tuple(b["prompt"]): b["seed"] for _, b, _ in fake.requests}
    assert by_prompt[(14, 7)] != by_prompt[(14, 7, 14)]
    seeds = sorted(b["seed"] for _, b, _ in fake.requests)
    assert len(set(seeds)) == 4 and 11 in seeds
    assert fake.max_in_flight > 1


def test_row_seeds() -> None:
    assert row_seeds(None, 3) == [None, None, None]
    seeds = row_seeds(7, 5)
    assert seeds[0] == 7 and len(set(seeds)) == 5 and row_seeds(7, 5) == seeds


async def test_agenerate_from_the_test_event_loop(engine: OpenAICompatibleEngine) -> None:
    first = await engine.agenerate([14], SamplingParams(max_new_tokens=2))
    second = await engine.agenerate([14], SamplingParams(max_new_tokens=5))
    assert first.token_ids == SCRIPT[:2] and second.token_ids == SCRIPT[:5]


def test_chat_returns_ids_and_logprobs_from_vllm(
    engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]
) -> None:
    messages = [{"role": "user", "content": "hi"}]
    gen = engine.chat(messages, SamplingParams(max_new_tokens=64))
    assert gen.text == "def add(a, b):\n    return a + b" and gen.stop_reason == "eos"
    assert gen.token_ids == SCRIPT and gen.logprobs == [-0.5] * len(SCRIPT)
    assert gen.extra["prompt_token_ids"] == [1, 12, 7, 14, EOS, 7, 1, 13, 7]
    path, body, _ = server[1].requests[-1]
    assert (
        path == "/v1/chat/completions" and body["messages"] == messages and body["return_token_ids"] is True
    )


def test_chat_without_token_ids_gives_text_only(
    engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]
) -> None:
    server[1].token_ids = False
    gen = engine.chat([{"role": "user", "content": "hi"}], SamplingParams(max_new_tokens=2))
    assert gen.text == "def add" and gen.token_ids == [] and gen.logprobs == []


def test_generate_without_token_ids_names_the_needed_vllm(
    engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]
) -> None:
    server[1].token_ids = False
    with pytest.raises(EngineError, match=r"returned no token ids: .*vLLM >= 0\.10\.2.*return_token_ids"):
        engine.generate([14], GREEDY)


def test_retries_5xx_with_backoff(engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]) -> None:
    server[1].fail_next = 2
    assert engine.generate([14], GREEDY).token_ids == SCRIPT
    assert len(server[1].requests) == 3


def test_gives_up_after_max_retries(server: tuple[str, FakeVLLM]) -> None:
    server[1].fail_next = 10
    eng = OpenAICompatibleEngine(server[0], "tiny", FakeTokenizer(), max_retries=2, backoff_s=0.01)
    with (
        eng,
        pytest.raises(
            EngineError, match=r"failed POST /completions with 503 after 3 attempts: engine overloaded"
        ),
    ):
        eng.generate([14], GREEDY)
    assert len(server[1].requests) == 3


def test_unreachable_server() -> None:
    port = _free_port()
    with OpenAICompatibleEngine(
        f"http://127.0.0.1:{port}/v1", "tiny", FakeTokenizer(), max_retries=1, backoff_s=0.01
    ) as eng:
        with pytest.raises(
            EngineError, match=rf"could not reach vLLM at http://127.0.0.1:{port}: is the server running"
        ):
            eng.generate([14], GREEDY)
        assert eng.health() is False


def test_a_server_that_went_away_is_named_with_its_log(tmp_path: Path) -> None:
    class DeadServer:
        log_path = tmp_path / "vllm.log"
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    eng = OpenAICompatibleEngine(
        f"http://127.0.0.1:{_free_port()}/v1", "tiny", FakeTokenizer(), max_retries=0, backoff_s=0.01
    )
    eng.launcher = launcher = DeadServer()
    with eng, pytest.raises(EngineError, match=rf"the server's output is in {tmp_path}/vllm.log$"):
        eng.generate([14], GREEDY)
    assert launcher.stopped


def test_wrong_model_lists_the_served_ones(server: tuple[str, FakeVLLM]) -> None:
    server[1].models = ["tiny", "coder-7b"]
    with OpenAICompatibleEngine(server[0], "tinny", FakeTokenizer()) as eng:
        with pytest.raises(EngineError, match=r"does not serve model 'tinny'; it serves 'tiny', 'coder-7b'"):
            eng.generate([14], GREEDY)
        assert eng.served_models() == ["tiny", "coder-7b"]


def test_timeout_fails_fast_without_retrying(server: tuple[str, FakeVLLM]) -> None:
    server[1].delay_s = 2.0
    eng = OpenAICompatibleEngine(server[0], "tiny", FakeTokenizer(), timeout_s=0.2, max_retries=3)
    with eng, pytest.raises(RequestFailed, match=r"did not answer POST /completions within 0.2 s"):
        eng.generate([14], GREEDY)
    assert len(server[1].requests) == 1


def test_a_prompt_past_the_context_fails_that_request_alone(engine, server: tuple[str, FakeVLLM]) -> None:
    server[1].max_model_len = 3
    with pytest.raises(RequestFailed, match=r"rejected POST /completions \(400\): .*maximum context length"):
        engine.generate([14, 15, 16, 17], GREEDY)
    assert engine.generate([14], GREEDY).token_ids == SCRIPT  # the engine goes on


def test_a_batch_returns_its_answers_beside_the_request_that_failed_alone(
    engine: OpenAICompatibleEngine, server: tuple[str, FakeVLLM]
) -> None:
    server[1].max_model_len = 3
    with pytest.raises(BatchRequestsFailed, match="1 of 3 requests failed") as failed:
        engine.generate_batch([[14], [14, 15, 16, 17], [14]], GREEDY)
    first, refused, last = failed.value.outcomes
    assert isinstance(refused, RequestFailed) and "maximum context length" in str(refused)
    assert first.token_ids == last.token_ids == SCRIPT  # type: ignore[union-attr]


def test_empty_prompt_is_rejected(engine: OpenAICompatibleEngine) -> None:
    with pytest.raises(EngineError, match="empty prompt"):
        engine.generate([], GREEDY)


def test_api_key_is_sent_as_bearer(server: tuple[str, FakeVLLM]) -> None:
    with OpenAICompatibleEngine(server[0], "tiny", FakeTokenizer(), api_key="sk-test") as eng:
        eng.generate([14], GREEDY)
    headers = {k.lower(): v for k, v in server[1].requests[-1][2].items()}
    assert headers["authorization"] == "Bearer sk-test"


def test_policy_version_is_model_plus_tag(engine: OpenAICompatibleEngine) -> None:
    assert engine.policy_version == "tiny"
    engine.set_policy_version("step-40")
    assert engine.policy_version == "tiny@step-40"
    assert engine.generate([14], GREEDY).policy_version == "tiny@step-40"


@pytest.mark.parametrize(
    "given", ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"]
)
def test_base_url_may_be_root_or_api_root(given: str) -> None:
    assert split_base_url(given) == ("http://h:8000", "http://h:8000/v1")


def test_base_url_needs_a_scheme() -> None:
    with pytest.raises(EngineError, match="must start with http"):
        split_base_url("localhost:8000")


def test_server_tokenizer_is_the_fallback(server: tuple[str, FakeVLLM]) -> None:
    with OpenAICompatibleEngine(server[0], "tiny") as eng:
        tok = eng.tokenizer
        assert isinstance(tok, ServerTokenizer)
        assert tok.encode("def add") == [3, 4]
        assert tok("hi")["input_ids"] == [14]
        assert tok.decode([1, 14, EOS]) == "<|im_start|>hi<|im_end|>"
        assert tok.convert_ids_to_tokens(EOS) == "<|im_end|>"
        messages = [{"role": "user", "content": "hi"}]
        assert tok.apply_chat_template(messages, add_generation_prompt=True)["input_ids"][-3:] == [1, 13, 7]
        assert tok.apply_chat_template(messages, tokenize=False) == "<|im_start|>user\nhi<|im_end|>\n"
        gen = eng.generate([14], SamplingParams(max_new_tokens=64, stop=("(a",)))
        assert gen.text == "def add(a, b"  # re-decoded through /detokenize


def test_server_without_tokenizer_endpoints_says_to_pass_a_path(server: tuple[str, FakeVLLM]) -> None:
    server[1].tokenizer_endpoints = False
    eng = OpenAICompatibleEngine(server[0], "tiny")
    with eng, pytest.raises(EngineError, match="no tokenizer endpoints: pass tokenizer_path"):
        eng.tokenizer.encode("hi")


def test_tokenizer_path_loads_a_local_tokenizer(tmp_path: Path, server: tuple[str, FakeVLLM]) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "hi": 1, "there": 2}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(tmp_path)
    with OpenAICompatibleEngine(server[0], "tiny", tokenizer_path=tmp_path) as eng:
        assert eng.tokenizer.encode("hi there") == [1, 2]
    with pytest.raises(EngineError, match="does not exist"):
        OpenAICompatibleEngine(server[0], "tiny", tokenizer_path=tmp_path / "missing")


def test_close_stops_the_loop_thread_and_a_later_call_restarts_it(engine: OpenAICompatibleEngine) -> None:
    assert engine.health() is True
    thread = engine._loop_thread
    engine.close()
    assert thread is not None and (thread.join(timeout=5) or not thread.is_alive())
    assert engine.generate([14], GREEDY).token_ids == SCRIPT
