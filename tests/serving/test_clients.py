"""The official `openai` client and LangChain's `ChatOpenAI` work unchanged against the server."""

from __future__ import annotations

import openai
import pytest
from langchain_openai import ChatOpenAI

from tests.serving.conftest import API_KEY

PROMPT = [{"role": "user", "content": "Write a function add(a, b)."}]


def test_openai_client_chat_and_stream(server) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused-without-keys")
    models = [m.id for m in client.models.list()]
    completion = client.chat.completions.create(model="default", messages=PROMPT, max_tokens=8)
    assert completion.model in models and isinstance(completion.choices[0].message.content, str)
    assert completion.usage is not None and completion.usage.completion_tokens >= 1
    raw = client.chat.completions.with_raw_response.create(model="default", messages=PROMPT, max_tokens=4)
    assert raw.headers["x-model-version"] in models
    stream = client.chat.completions.create(
        model="default", messages=PROMPT, max_tokens=8, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert isinstance(text, str) and chunks[-1].usage is not None


def test_openai_client_sees_errors_as_its_exceptions(keyed_server) -> None:
    bad = openai.OpenAI(base_url=f"{keyed_server.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="default", messages=PROMPT)
    good = openai.OpenAI(base_url=f"{keyed_server.url}/v1", api_key=API_KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        good.chat.completions.create(model="no-such-model", messages=PROMPT)
    with pytest.raises(openai.BadRequestError):
        good.chat.completions.create(model="default", messages=PROMPT, temperature=7)


async def test_chat_openai_invoke_and_stream(keyed_server) -> None:
    llm = ChatOpenAI(base_url=f"{keyed_server.url}/v1", api_key=API_KEY, model="default", max_tokens=8)
    message = llm.invoke("Write a function add(a, b).")
    assert isinstance(message.content, str)
    assert message.response_metadata["model_name"].startswith("embedded@")
    parts = [chunk async for chunk in llm.astream("Write a function add(a, b).")]
    assert parts and all(isinstance(p.content, str) for p in parts)
