"""ToolGate domains: one folder each, found by name. Adding a domain is adding a folder.

A domain folder ``domains/<name>/`` holds:

- ``domain.json``: ``{"title": str, "extra": str, "modules": {"import_name": "pip distribution", ...}}`` -
  the libraries its scripts need (installed with ``pip install 'toolgauge[<extra>]'``);
- ``guide.md``: the domain guide for the generator model;
- ``seeds.jsonl``: expert-written seed items in the candidate format;
- optionally a semantic check script, declared in ``domain.json`` as
  ``"semantic_check": {"name": ..., "script": "<file>.py"}``, run after gate 1 (:mod:`..semantic`).

The import check looks the modules up in the harness's interpreter, which is also the sandbox's
(:func:`toolgauge.sandbox.sandbox_python`), and says ``domain not installed: pip install 'toolgauge[fem]'``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolgauge.benchmarks.toolgate.loader import load_candidates
from toolgauge.benchmarks.toolgate.records import Candidate
from toolgauge.errors import DataError, UsageError
from toolgauge.jsonl import read_json_file, read_text
from toolgauge.unknown_fields import reported_error, unknown_field

DOMAINS_DIR = Path(__file__).resolve().parent
_NAME = re.compile(r"[a-z][a-z0-9_-]*")


class SemanticCheckInfo(BaseModel):
    """A domain's executable semantic check (:mod:`toolgauge.benchmarks.toolgate.semantic`): its name and script."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    script: str = Field(pattern=r"^[A-Za-z0-9_]+\.py$")


class DomainInfo(BaseModel):
    """The contents of a domain's ``domain.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    extra: str = Field(min_length=1)
    modules: dict[str, str] = Field(min_length=1)
    semantic_check: SemanticCheckInfo | None = None


class Domain(BaseModel):
    """A domain: its name, folder and declared libraries."""

    model_config = ConfigDict(frozen=True)

    name: str
    folder: Path
    info: DomainInfo

    @property
    def guide_path(self) -> Path:
        """The generator's domain guide (markdown)."""
        return self.folder / "guide.md"

    @property
    def seeds_path(self) -> Path:
        """The seed items (candidate JSONL)."""
        return self.folder / "seeds.jsonl"

    @property
    def semantic_script(self) -> Path | None:
        """The semantic check's script, when the domain declares one."""
        check = self.info.semantic_check
        return self.folder / check.script if check is not None else None

    def guide(self) -> str:
        """The text of the domain guide."""
        return read_text(self.guide_path)

    def seeds(self) -> list[Candidate]:
        """The seed items, validated like any ``--candidates`` file (their domain must be this one)."""
        return load_candidates(self.seeds_path, domain=self.name)

    def missing_modules(self) -> list[str]:
        """The declared modules that the harness's interpreter cannot find."""
        missing = []
        for module in self.info.modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module)
        return missing

    def install_hint(self) -> str:
        """The one line saying how to install the domain's libraries."""
        return f"domain not installed: pip install 'toolgauge[{self.info.extra}]'"

    def require_installed(self) -> None:
        """Raise UsageError (``domain not installed: pip install 'toolgauge[fem]'``) when a module is missing."""
        missing = self.missing_modules()
        if missing:
            raise UsageError(f"{self.install_hint()} (missing: {', '.join(missing)})")

    def versions(self) -> dict[str, str | None]:
        """The installed version of each declared distribution (None when it is not installed), for the records."""
        found: dict[str, str | None] = {}
        for distribution in self.info.modules.values():
            try:
                found[distribution] = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                found[distribution] = None
        return found


def domain_names() -> list[str]:
    """The names of the domain folders (each holding a ``domain.json``), sorted."""
    return sorted(p.parent.name for p in DOMAINS_DIR.glob("*/domain.json") if _NAME.fullmatch(p.parent.name))


@cache
def _load(name: str) -> Domain:
    folder = DOMAINS_DIR / name
    path = folder / "domain.json"
    data = read_json_file(path, what="domain description")
    try:
        info = DomainInfo.model_validate(data)
    except ValidationError as exc:
        error = reported_error(exc)
        field = ".".join(str(part) for part in error["loc"]) or None
        message = str(error["msg"])
        if error["type"] == "extra_forbidden":
            message = unknown_field(str(error["loc"][-1]), DomainInfo.model_fields)
        raise DataError(str(path), message, field=field) from None
    return Domain(name=name, folder=folder, info=info)


def get_domain(name: str) -> Domain:
    """The domain called ``name``.

    Raises:
        UsageError: no such domain (the message lists the known ones).
        DataError: its ``domain.json`` is malformed.
    """
    if name not in domain_names():
        raise UsageError(f"unknown domain {name!r} (known: {', '.join(domain_names()) or 'none'})")
    return _load(name)
