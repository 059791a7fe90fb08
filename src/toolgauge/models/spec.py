"""Parse ``--model`` specs into clients.

Specs:
- ``openai:MODEL``: OpenAI (or ``$OPENAI_BASE_URL``) with ``$OPENAI_API_KEY``.
- ``openai:MODEL@URL`` or ``URL#MODEL`` (URL starting with http:// or https://): any
  OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp server...); the key comes from
  ``$TOOLGAUGE_API_KEY``, then ``$OPENAI_API_KEY``, else a placeholder.
- ``anthropic:MODEL`` (or ``anthropic:MODEL@URL``): Anthropic's Messages API with ``$ANTHROPIC_API_KEY``
  (base URL from the spec, else ``$ANTHROPIC_BASE_URL``, else Anthropic's).
- ``google:MODEL`` (or ``google:MODEL@URL``): the Gemini API with ``$GEMINI_API_KEY`` or ``$GOOGLE_API_KEY``
  (base URL from the spec, else ``$GOOGLE_GEMINI_BASE_URL``, else Google's).
- ``azure:DEPLOYMENT@ENDPOINT?api-version=V``: an Azure OpenAI deployment with ``$AZURE_OPENAI_API_KEY``
  (``api-version`` from the spec, else ``$OPENAI_API_VERSION``).
- ``openrouter:MODEL``: OpenRouter's OpenAI-compatible endpoint with ``$OPENROUTER_API_KEY``
  (base URL ``$OPENROUTER_BASE_URL``, else https://openrouter.ai/api/v1).
- ``local``: the embedded SmolLM2-135M model behind a private llama-cpp-python server.
- ``gold``: the reference answers (the ceiling).
- ``replay:PATH``: recorded outputs (the protocol reads PATH in its own format).
- ``scripted:PATH``: a JSON list (or JSONL) of outputs, each a string or
  ``{"content", "tool_calls": [{"name", "arguments"}]}``, served in order (for tests and demos).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from toolgauge.errors import DataError, UsageError
from toolgauge.models.base import ModelClient
from toolgauge.models.offline import GoldClient, ReplayClient, ScriptedClient, ScriptItem
from toolgauge.records import AssistantTurn
from toolgauge.redact import redact_url

ReplayLoader = Callable[[Path], Mapping[str, Sequence[AssistantTurn]]]


def resolve_model(spec: str, *, replay_loader: ReplayLoader | None = None, timeout: float = 120.0) -> ModelClient:
    """Return the client a ``--model`` spec names, or raise ``UsageError``.

    The HTTP clients' modules (and the openai SDK, about 1 s of CPU and 40 MB to import) are loaded only
    for a spec that needs them, never for gold, replay or scripted models.
    """
    spec = spec.strip()
    if spec == "local":
        from toolgauge.models.local_server import LocalServerClient

        return LocalServerClient(timeout=timeout)
    if spec == "gold":
        return GoldClient()
    if spec.startswith("replay:"):
        if replay_loader is None:
            raise UsageError("this command cannot replay recorded outputs")
        path = Path(spec.removeprefix("replay:"))
        if not path.exists():
            raise UsageError(f"replay file not found: {path}")
        return ReplayClient(replay_loader(path), name=f"replay:{path}")
    if spec.startswith("scripted:"):
        path = Path(spec.removeprefix("scripted:"))
        return ScriptedClient(_read_script(path), name=f"scripted:{path}")
    shown = display_spec(spec)
    if spec.startswith(("http://", "https://", "openai-compatible:", "openai:")):
        from toolgauge.models.openai_compat import OpenAICompatClient
    if spec.startswith(("http://", "https://")) or spec.startswith("openai-compatible:"):
        url, _, model = spec.removeprefix("openai-compatible:").partition("#")
        check_endpoint_url(url, spec)
        if not model:
            raise UsageError(f"model spec {shown!r}: give the model name after '#', e.g. {display_spec(url)}#my-model")
        return OpenAICompatClient(model, base_url=url, api_key=_compatible_key(), timeout=timeout, name=shown)
    if spec.startswith("openai:"):
        rest = spec.removeprefix("openai:")
        model, _, url = rest.partition("@")
        if not model:
            raise UsageError(f"model spec {shown!r}: missing model name, e.g. openai:gpt-4o")
        if url:
            check_endpoint_url(url, spec)
            return OpenAICompatClient(model, base_url=url, api_key=_compatible_key(), timeout=timeout, name=shown)
        if not os.environ.get("OPENAI_API_KEY"):
            raise UsageError("openai:... needs OPENAI_API_KEY in the environment")
        return OpenAICompatClient(model, base_url=os.environ.get("OPENAI_BASE_URL"), timeout=timeout, name=shown)
    if spec.startswith(PROVIDER_PREFIXES):
        return _provider_client(spec, timeout)
    raise UsageError(
        f"unknown model spec {shown!r}; use local, gold, replay:PATH, scripted:PATH, openai:MODEL, "
        "openai:MODEL@URL, URL#MODEL, anthropic:MODEL, google:MODEL, azure:DEPLOYMENT@ENDPOINT?api-version=V "
        "or openrouter:MODEL"
    )


PROVIDER_PREFIXES = ("anthropic:", "google:", "azure:", "openrouter:")
OPENROUTER_URL = "https://openrouter.ai/api/v1"


def _provider_client(spec: str, timeout: float) -> ModelClient:
    """The client of a named provider's spec; its SDK is imported here, only when such a spec is used."""
    shown = display_spec(spec)
    provider, _, rest = spec.partition(":")
    model, _, url = rest.partition("@")
    if not model:
        raise UsageError(f"model spec {shown!r}: missing model name, e.g. {_EXAMPLES[provider]}")
    if url and provider != "azure":
        check_endpoint_url(url, spec)
    if provider == "anthropic":
        _require_sdk("anthropic", "anthropic", "anthropic")
        from toolgauge.models.anthropic_client import AnthropicClient

        return AnthropicClient(
            model,
            api_key=_required_key(spec, "ANTHROPIC_API_KEY"),
            base_url=url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            timeout=timeout,
            name=shown,
        )
    if provider == "google":
        _require_sdk("google", "google.genai", "google-genai")
        from toolgauge.models.google_client import GoogleClient

        return GoogleClient(
            model,
            api_key=_required_key(spec, "GEMINI_API_KEY", "GOOGLE_API_KEY"),
            base_url=url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or None,
            timeout=timeout,
            name=shown,
        )
    if provider == "azure":
        endpoint, version = _azure_endpoint(url, spec)
        from toolgauge.models.azure import AzureOpenAIClient

        return AzureOpenAIClient(
            model,
            endpoint=endpoint,
            api_version=version,
            api_key=_required_key(spec, "AZURE_OPENAI_API_KEY"),
            timeout=timeout,
            name=shown,
        )
    from toolgauge.models.openai_compat import OpenAICompatClient

    base = url or os.environ.get("OPENROUTER_BASE_URL") or OPENROUTER_URL
    return OpenAICompatClient(
        model, base_url=base, api_key=_required_key(spec, "OPENROUTER_API_KEY"), timeout=timeout, name=shown
    )


_EXAMPLES = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "google": "google:gemini-2.5-flash",
    "azure": "azure:my-gpt-4o@https://my-resource.openai.azure.com?api-version=2024-10-21",
    "openrouter": "openrouter:meta-llama/llama-3.3-70b-instruct",
}


def _require_sdk(provider: str, module: str, package: str) -> None:
    """UsageError with the install line when a provider's SDK (an optional extra) is missing."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package (google) missing
        found = False
    if not found:
        raise UsageError(f"{provider}:... needs the {package} SDK: pip install 'toolgauge[{provider}]'")


def _required_key(spec: str, *names: str) -> str:
    """The first of the environment variables ``names`` that is set; UsageError naming them when none is."""
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    provider = spec.partition(":")[0]
    raise UsageError(f"{provider}:... needs {' or '.join(names)} in the environment")


def _azure_endpoint(url: str, spec: str) -> tuple[str, str]:
    """The endpoint (without its query) and the api-version of an ``azure:`` spec."""
    shown = display_spec(spec)
    if not url:
        raise UsageError(f"model spec {shown!r}: give the endpoint after '@', e.g. {_EXAMPLES['azure']}")
    check_endpoint_url(url, spec)
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    version = (query.pop("api-version", None) or [os.environ.get("OPENAI_API_VERSION", "")])[0]
    if not version:
        raise UsageError(
            f"model spec {shown!r}: add ?api-version=... (or set OPENAI_API_VERSION), e.g. {_EXAMPLES['azure']}"
        )
    endpoint = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, doseq=True), ""))
    return endpoint, version


def display_spec(spec: str) -> str:
    """The spec as it may be shown and stored: a password in its URL masked.

    ``http://user:pw@host/v1#m`` becomes ``http://user:***@host/v1#m``; every other spec is unchanged.
    Runs, progress bars and messages use this form; only :func:`resolve_model` sees the real one.
    """
    return redact_url(spec.strip())


def check_endpoint_url(url: str, spec: str) -> None:
    """Reject an endpoint URL the HTTP client would choke on later (bad scheme, host or port).

    Raises:
        UsageError: naming the spec (password masked) and what is wrong.
    """
    shown = display_spec(spec)
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number in 0..65535
    except ValueError as exc:
        raise UsageError(f"model spec {shown!r}: invalid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"model spec {shown!r}: the URL must start with http:// or https://")
    if not parts.hostname:
        raise UsageError(f"model spec {shown!r}: the URL has no host name")
    if port == 0:
        raise UsageError(f"model spec {shown!r}: port 0 is not a port a server listens on")


def _compatible_key() -> str:
    return os.environ.get("TOOLGAUGE_API_KEY") or os.environ.get("OPENAI_API_KEY") or "sk-no-key"


# The keys of one scripted output object (what ``as_turn`` reads).
SCRIPT_KEYS = frozenset({"content", "tool_calls", "finish_reason"})


def _one_multiline_object(text: str) -> bool:
    """Whether ``text`` is one JSON object over several lines (a one-line object is a JSON-lines script)."""
    from toolgauge.jsonl import JsonProblem, parse_json, text_lines

    if not text.lstrip().startswith("{") or sum(1 for line in text_lines(text) if line.strip()) < 2:
        return False
    try:
        return isinstance(parse_json(text), dict)
    except JsonProblem:
        return False


def _read_script(path: Path) -> list[ScriptItem]:
    from toolgauge.jsonl import JsonProblem, jsonl_values, parse_json, read_text

    text = read_text(path)
    items: list[object]
    if _one_multiline_object(text):
        raise DataError(str(path), "expected a JSON array of outputs (or one output per line), got a JSON object")
    if text.lstrip().startswith("["):
        try:
            items = list(parse_json(text))
        except JsonProblem as problem:
            raise DataError(str(path), problem.message, line=problem.line) from None
    else:
        items = [value for _, value in jsonl_values(text, path)]
    if not items:
        raise DataError(str(path), "no outputs: the file is empty")
    out: list[ScriptItem] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            unknown = sorted(set(item) - SCRIPT_KEYS)
            if unknown:
                raise DataError(
                    str(path),
                    f"output {i}: unknown key {unknown[0]!r} (an output has {', '.join(sorted(SCRIPT_KEYS))})",
                )
            try:
                from toolgauge.models.offline import as_turn

                out.append(as_turn(item))
            except ValueError as exc:
                raise DataError(str(path), f"output {i}: {exc}".splitlines()[0]) from exc
        else:
            raise DataError(str(path), f"output {i} must be a string or an object")
    return out
