"""Gemini's generateContent through the official ``google-genai`` SDK (``google:MODEL``).

Our messages become ``Content`` turns (``user`` and ``model``); system messages become the system
instruction; tools become function declarations in the schema subset Gemini accepts (a tool whose
schema it cannot express fails its call with one line naming the tool and the place). Thoughts come
back into ``AssistantTurn.thinking``; the signatures Gemini puts on its function calls are kept there
too and sent back with those calls, as the API asks.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import ValidationError

from toolgauge.errors import ConnectionFailed, ModelError, TransientModelError
from toolgauge.models.gemini_schema import SchemaNotExpressible, gemini_schema
from toolgauge.models.wire import HostedModel, ReplyParts, merged_turns, one_line, probe_until_answered, status_error
from toolgauge.records import (
    AssistantTurn,
    GenerateOptions,
    Message,
    ModelRequest,
    ProviderExchange,
    ThinkingBlock,
    ToolCall,
    ToolSpec,
    Usage,
)

PROVIDER = "google"
# Gemini's finish reasons in ours; a function call that stops the turn is "tool_calls" (set where seen).
FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "MALFORMED_FUNCTION_CALL": "malformed_function_call",
}
# reasoning_effort in Gemini's thinking levels.
THINKING_LEVEL = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}


class GoogleClient(HostedModel[genai.Client, str]):
    """Gemini through the Gemini API (or any server speaking generateContent at ``base_url``).

    The signatures of the calls it received are kept by :func:`_call_key` (``_keep``).
    """

    provider = PROVIDER

    async def start(self) -> None:
        """Create the SDK client with its retries off: retries are the engine's job.

        One attempt must be said explicitly: with no retry options the SDK retries a failed connection
        itself after 1-10 s, so a dead port would take seconds to be reported.
        """
        if self._client is None:
            options = types.HttpOptions(
                base_url=self.base_url,
                timeout=int(self._timeout * 1000),
                retry_options=types.HttpRetryOptions(attempts=1),
            )
            try:
                self._client = genai.Client(api_key=self._api_key, vertexai=False, http_options=options)
            except (genai_errors.APIError, ValueError) as exc:
                raise ModelError(one_line(str(exc))) from exc

    async def close(self) -> None:
        """Close the HTTP sessions."""
        if self._client is not None:
            await self._client.aio.aclose()
            self._client.close()
            self._client = None

    async def probe(self) -> None:
        """One one-token request before the run: a wrong model name, key or URL fails before any sample."""
        config = types.GenerateContentConfig(max_output_tokens=1)
        contents = [types.Content(role="user", parts=[types.Part(text="Say OK.")])]
        await probe_until_answered(lambda: self._send(contents, config))

    def unsupported(self, options: GenerateOptions) -> list[str]:
        """Every option has a Gemini field: nothing to warn about."""
        return []

    def request_config(self, request: ModelRequest) -> tuple[list[types.Content], types.GenerateContentConfig]:
        """The contents and config of the generateContent request for one of ours.

        Raises:
            ModelError: a tool's schema has no Gemini form (naming the tool and where).
        """
        opts = request.options
        system, contents = convert_messages(request.messages, self._kept)
        config: dict[str, Any] = {
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        if system:
            config["system_instruction"] = system
        if request.tools:
            config["tools"] = [types.Tool(function_declarations=[function_declaration(t) for t in request.tools])]
            mode = function_calling_config(opts.tool_choice)
            if mode is not None:
                config["tool_config"] = types.ToolConfig(function_calling_config=mode)
        for ours, theirs in (
            ("temperature", "temperature"),
            ("top_p", "top_p"),
            ("seed", "seed"),
            ("max_tokens", "max_output_tokens"),
        ):
            if getattr(opts, ours) is not None:
                config[theirs] = getattr(opts, ours)
        if opts.stop is not None:
            config["stop_sequences"] = list(opts.stop)
        if opts.thinking_budget is not None or opts.reasoning_effort is not None:
            config["thinking_config"] = types.ThinkingConfig(
                include_thoughts=True,
                thinking_budget=opts.thinking_budget,
                thinking_level=THINKING_LEVEL.get(opts.reasoning_effort or "")
                if opts.thinking_budget is None
                else None,
            )
        if opts.extra_body:
            config["http_options"] = types.HttpOptions(extra_body=opts.extra_body)
        return contents, types.GenerateContentConfig(**config)

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Send one generateContent request and convert the reply."""
        contents, config = self.request_config(request)
        response = await self._send(contents, config)
        raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"})
        sent = config.model_dump(mode="json", exclude_none=True, exclude={"tools", "system_instruction"})
        exchange = ProviderExchange(provider=PROVIDER, request=sent, response=raw)
        usage = Usage()
        if response.usage_metadata is not None:
            meta = response.usage_metadata
            usage = Usage(
                input_tokens=meta.prompt_token_count or 0,
                output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
            )
        if not response.candidates:
            # A prompt blocked before any answer is a refusal, recorded as such; a reply with neither candidates
            # nor a block reason ({} from a proxy) is a transport fault, retried, never scored as an empty reply.
            blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
            if not blocked:
                raise TransientModelError("malformed response: no candidates and no block reason")
            return AssistantTurn(
                finish_reason="content_filter" if blocked else "stop",
                usage=usage,
                model=response.model_version,
                exchange=exchange,
            )
        candidate = response.candidates[0]
        got = ReplyParts()
        for part in candidate.content.parts or [] if candidate.content else []:
            if part.function_call is not None:
                fc = part.function_call
                call_id = fc.id or f"call_{len(got.calls)}"
                args = fc.args or {}
                got.calls.append(ToolCall(name=fc.name or "", arguments=args, id=call_id, raw=json.dumps(args)))
                if part.thought_signature:
                    signature = base64.b64encode(part.thought_signature).decode()
                    got.thinking.append(ThinkingBlock(provider=PROVIDER, signature=signature, call_id=call_id))
                    self._keep(_call_key(got.calls[-1]), signature)
            elif part.thought and part.text:
                got.thinking.append(ThinkingBlock(provider=PROVIDER, text=part.text))
            elif part.text:
                got.texts.append(part.text)
        reason = str(candidate.finish_reason.value) if candidate.finish_reason is not None else None
        finish = FINISH_REASONS.get(reason or "", reason.lower() if reason else None)
        if got.calls and finish == "stop":
            finish = "tool_calls"
        return got.turn(finish_reason=finish, usage=usage, model=response.model_version, exchange=exchange)

    async def _send(self, contents: list[types.Content], config: types.GenerateContentConfig) -> Any:
        """One generateContent call; every failure becomes a ``ModelError`` (or its transient subclasses)."""
        client = await self._started()
        try:
            return await client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        except genai_errors.APIError as exc:
            headers = getattr(exc.response, "headers", None) or {}
            message = exc.message or (json.dumps(exc.details) if exc.details else str(exc))
            raise status_error(exc.code, str(message), retry_after=headers.get("retry-after")) from exc
        except TimeoutError as exc:
            raise TransientModelError(f"timed out after {self._timeout:g} s") from exc
        except (ValueError, ValidationError) as exc:  # a 200 body that is not JSON, or not a response
            raise TransientModelError(f"malformed response: {one_line(str(exc))}") from exc
        except OSError as exc:  # refused, reset, cut short (aiohttp's and httpx's errors are OSErrors or wrap one)
            raise ConnectionFailed(f"{exc.__class__.__name__}: {one_line(str(exc))}") from exc
        except Exception as exc:
            if _is_transport_error(exc):
                raise ConnectionFailed(f"{exc.__class__.__name__}: {one_line(str(exc))}") from exc
            raise


def _is_transport_error(exc: BaseException) -> bool:
    """An HTTP library's connection failure (aiohttp's ``ClientError``, httpx's ``TransportError``), by module."""
    module = type(exc).__module__
    return module.startswith(("aiohttp", "httpx"))


def function_declaration(tool: ToolSpec) -> types.FunctionDeclaration:
    """One tool as a Gemini function declaration.

    Raises:
        ModelError: the tool's parameters have no Gemini form (naming the tool and where).
    """
    try:
        schema = gemini_schema(tool.parameters)
        parameters = types.Schema.model_validate(schema) if schema.get("properties") or schema.get("type") else None
    except (SchemaNotExpressible, ValidationError) as exc:
        detail = str(exc).splitlines()[0] if isinstance(exc, SchemaNotExpressible) else one_line(str(exc), 200)
        raise ModelError(f"tool {tool.name!r}: cannot be declared to Gemini: {detail}") from None
    if parameters is not None and parameters.type == types.Type.OBJECT and not parameters.properties:
        parameters = None  # Gemini rejects an object with no properties; a tool without arguments has none
    return types.FunctionDeclaration(name=tool.name, description=tool.description, parameters=parameters)


def function_calling_config(choice: str | None) -> types.FunctionCallingConfig | None:
    """Our tool_choice (None, "auto", "none", "required"/"any", or a tool name) as Gemini's calling mode."""
    if choice is None:
        return None
    if choice in ("auto", "none", "any"):
        return types.FunctionCallingConfig(mode=choice.upper())
    if choice == "required":
        return types.FunctionCallingConfig(mode="ANY")
    return types.FunctionCallingConfig(mode="ANY", allowed_function_names=[choice])


def _call_key(call: ToolCall) -> str:
    """A call by id, name and arguments (ids alone repeat: Gemini often sends none, so they are numbered per turn)."""
    return f"{call.id}|{call.name}|{json.dumps(call.arguments, sort_keys=True)}"


def convert_messages(
    messages: list[Message], remembered: Mapping[str, str] | None = None
) -> tuple[str, list[types.Content]]:
    """System instruction and Gemini turns (consecutive turns of one role merged).

    A call's thought signature comes from its message's thinking blocks, else from ``remembered`` (by
    :func:`_call_key`), for a model turn rebuilt without them.
    """
    names: dict[str, str] = {}  # tool-call id -> function name, for results that do not say it

    def parts_of(_: int, message: Message) -> tuple[str, list[types.Part]]:
        if message.role == "assistant":
            signatures = {
                b.call_id: b.signature
                for b in message.thinking or []
                if b.provider == PROVIDER and b.call_id and b.signature
            }
            parts = [types.Part(text=message.content)] if message.content else []
            for call in message.tool_calls:
                if call.id:
                    names[call.id] = call.name
                signature = signatures.get(call.id or "") or (remembered or {}).get(_call_key(call))
                parts.append(
                    types.Part(
                        function_call=types.FunctionCall(name=call.name, args=call.arguments),
                        thought_signature=base64.b64decode(signature) if signature else None,
                    )
                )
            return "model", parts
        if message.role == "tool":
            name = message.name or names.get(message.tool_call_id or "", "") or "tool"
            response = types.FunctionResponse(name=name, response=_result(message.content))
            return "user", [types.Part(function_response=response)]
        return "user", [types.Part(text=message.content)] if message.content else []

    system, turns = merged_turns(messages, parts_of)
    return system, [types.Content(role=role, parts=parts) for role, parts in turns]


def _result(content: str | None) -> dict[str, Any]:
    """A tool result as a function response: a JSON object as it is, anything else under "result"."""
    text = content or ""
    try:
        decoded = json.loads(text)
    except ValueError:
        return {"result": text}
    return decoded if isinstance(decoded, dict) else {"result": decoded}
