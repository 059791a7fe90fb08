"""Azure OpenAI deployments through the openai SDK's Azure client (``azure:DEPLOYMENT@ENDPOINT?api-version=V``)."""

from __future__ import annotations

from openai import AsyncAzureOpenAI

from toolgauge.models.openai_compat import OpenAICompatClient
from toolgauge.redact import redact_url


class AzureOpenAIClient(OpenAICompatClient):
    """A chat-completions deployment on Azure: the deployment's path, the ``api-version`` query, the ``api-key`` header.

    Everything else (messages, tools, options, errors, the probe) is the OpenAI-compatible client's.
    """

    provider = "azure"

    def __init__(
        self, deployment: str, *, endpoint: str, api_version: str, api_key: str, timeout: float = 120.0, name: str
    ):
        super().__init__(deployment, base_url=endpoint, api_key=api_key, timeout=timeout, name=name)
        self.api_version = api_version

    @property
    def cache_id(self) -> str:
        """Deployment, endpoint and API version (a new API version may answer differently)."""
        return f"azure:{self.model}@{redact_url(self.base_url or '')}?api-version={self.api_version}"

    def _new_client(self) -> AsyncAzureOpenAI:
        """The Azure SDK client: the deployment's path, the ``api-version`` query, the ``api-key`` header."""
        return AsyncAzureOpenAI(
            azure_endpoint=self.base_url or "",
            api_version=self.api_version,
            api_key=self._api_key,
            timeout=self._timeout,
            max_retries=0,
        )
