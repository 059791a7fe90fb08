"""Model specs of the named providers (anthropic:, google:, azure:, openrouter:) and the Azure wire details."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from helpers.chat_stub import ChatStub, completion
from helpers.provider_servers import ProviderServer
from toolgauge.errors import UsageError
from toolgauge.models.anthropic_client import AnthropicClient
from toolgauge.models.azure import AzureOpenAIClient
from toolgauge.models.google_client import GoogleClient
from toolgauge.models.openai_compat import OpenAICompatClient
from toolgauge.models.spec import OPENROUTER_URL, resolve_model
from toolgauge.records import GenerateOptions, Message, ModelRequest

ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-spec-0123456789abcdef",
    "GEMINI_API_KEY": "AIzaSpecKey0123456789",
    "AZURE_OPENAI_API_KEY": "azure-spec-key-0123456789",
    "OPENROUTER_API_KEY": "sk-or-spec-0123456789abcdef",
}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ENV, "GOOGLE_API_KEY", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "OPENROUTER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


def test_each_provider_spec_names_its_client(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = resolve_model("anthropic:claude-x")
    assert isinstance(claude, AnthropicClient) and claude.base_url is None and claude.name == "anthropic:claude-x"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1234")
    assert resolve_model("anthropic:claude-x").cache_id == "anthropic:claude-x@http://127.0.0.1:1234"
    gemini = resolve_model("google:gemini-x@http://127.0.0.1:9/")
    assert isinstance(gemini, GoogleClient) and gemini.base_url == "http://127.0.0.1:9/"
    azure = resolve_model("azure:dep@https://res.openai.azure.com?api-version=2024-10-21")
    assert isinstance(azure, AzureOpenAIClient) and azure.api_version == "2024-10-21"
    assert azure.base_url == "https://res.openai.azure.com" and azure.model == "dep"
    router = resolve_model("openrouter:meta-llama/llama-3.3-70b-instruct")
    assert isinstance(router, OpenAICompatClient) and router.base_url == OPENROUTER_URL
    assert router.model == "meta-llama/llama-3.3-70b-instruct"


def test_the_gemini_key_may_come_from_google_api_key(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaOtherKey0123456789")
    assert isinstance(resolve_model("google:g"), GoogleClient)


@pytest.mark.parametrize(
    ("spec", "unset", "said"),
    [
        ("anthropic:claude-x", "ANTHROPIC_API_KEY", "anthropic:... needs ANTHROPIC_API_KEY in the environment"),
        ("google:g", "GEMINI_API_KEY", "google:... needs GEMINI_API_KEY or GOOGLE_API_KEY in the environment"),
        ("openrouter:m", "OPENROUTER_API_KEY", "openrouter:... needs OPENROUTER_API_KEY in the environment"),
        ("azure:d@https://r.openai.azure.com?api-version=1", "AZURE_OPENAI_API_KEY", "needs AZURE_OPENAI_API_KEY"),
        ("anthropic:", None, "missing model name, e.g. anthropic:"),
        ("azure:dep", None, "give the endpoint after '@'"),
        ("azure:dep@https://r.openai.azure.com", None, "add ?api-version="),
        ("google:g@ftp://host", None, "the URL must start with http:// or https://"),
    ],
)
def test_a_bad_provider_spec_is_one_clear_line(
    keys: None, monkeypatch: pytest.MonkeyPatch, spec: str, unset: str | None, said: str
) -> None:
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    if unset:
        monkeypatch.delenv(unset)
    with pytest.raises(UsageError, match=said.replace("?", r"\?").replace(".", r"\.")):
        resolve_model(spec)


async def test_azure_calls_the_deployment_path_with_the_api_version_and_key(keys: None) -> None:
    with ProviderServer("azure") as server:
        model = resolve_model(server.spec("my-dep"), timeout=10)
        turn = await model.generate(ModelRequest(messages=[Message(role="user", content="hi")]))
        await model.close()
    seen = server.requests[-1]
    assert seen.path == "/openai/deployments/my-dep/chat/completions?api-version=2024-10-21"
    assert seen.headers["api-key"] == ENV["AZURE_OPENAI_API_KEY"]
    assert turn.content and turn.content.startswith("Done")


async def test_openrouter_is_an_openai_compatible_endpoint_with_its_own_key(
    keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[dict[str, object], str]] = []

    def respond(request: dict[str, object], headers: Mapping[str, str]) -> tuple[int, bytes]:
        seen.append((request, headers.get("authorization", "")))
        return 200, completion()

    with ChatStub(respond) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", f"http://127.0.0.1:{stub.port}/v1")
        model = resolve_model("openrouter:vendor/model", timeout=10)
        options = GenerateOptions(extra_body={"provider": {"order": ["x"]}})
        turn = await model.generate(ModelRequest(messages=[Message(role="user", content="hi")], options=options))
        await model.close()
    body, authorization = seen[-1]
    assert body["model"] == "vendor/model" and body["provider"] == {"order": ["x"]}
    assert authorization == f"Bearer {ENV['OPENROUTER_API_KEY']}"
    assert turn.content == "ok"


async def test_openai_compatible_servers_get_every_option_and_extra_body_merged(keys: None) -> None:
    seen: list[dict[str, object]] = []

    def respond(request: dict[str, object], headers: object) -> tuple[int, bytes]:
        seen.append(request)
        return 200, completion()

    with ChatStub(respond) as stub:
        model = resolve_model(stub.model("m"), timeout=10)
        options = GenerateOptions(
            temperature=0.2,
            top_p=0.9,
            seed=3,
            stop=("END", "STOP"),
            reasoning_effort="high",
            extra_body={"chat_template_kwargs": {"enable_thinking": False}},
        )
        await model.generate(ModelRequest(messages=[Message(role="user", content="hi")], options=options))
        await model.close()
    body = seen[-1]
    assert (body["temperature"], body["top_p"], body["seed"], body["stop"]) == (0.2, 0.9, 3, ["END", "STOP"])
    assert body["reasoning_effort"] == "high"
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert isinstance(model, OpenAICompatClient)
    assert model.unsupported(options) == []
    assert model.unsupported(GenerateOptions(thinking_budget=100))[0].startswith("thinking_budget (")


@pytest.mark.parametrize(("spec", "extra"), [("anthropic:claude-x", "anthropic"), ("google:g", "google")])
def test_a_missing_sdk_is_the_install_line(keys: None, monkeypatch: pytest.MonkeyPatch, spec: str, extra: str) -> None:
    import importlib.util

    real = importlib.util.find_spec
    hidden = {"anthropic", "google.genai"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a))
    with pytest.raises(UsageError, match=rf"pip install 'toolgauge\[{extra}\]'"):
        resolve_model(spec)


def test_a_sweep_limits_each_providers_endpoint() -> None:
    from toolgauge.sweep.limits import endpoint_of

    assert endpoint_of("anthropic:claude-x") == "anthropic"
    assert endpoint_of("google:g@http://127.0.0.1:9/x") == "http://127.0.0.1:9"
    assert endpoint_of("azure:dep@https://r.openai.azure.com?api-version=1") == "https://r.openai.azure.com:443"
    assert endpoint_of("openrouter:vendor/model") == "openrouter"
