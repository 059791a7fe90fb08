"""Find a wheel's download URL on a package index (the simple API, PEP 503 HTML or PEP 691 JSON).

The index is ``$TOOLGAUGE_DATA_MIRROR/simple`` when a mirror is set, else pip's own configured index
(``PIP_INDEX_URL`` or ``index-url`` in pip's config files), else PyPI: a machine that reaches PyPI only
through a mirror fetches from it just as ``pip download`` would.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import httpx

from toolgauge.datasets.errors import REFUSED, TRANSIENT, FetchError
from toolgauge.redact import redact_url

PYPI = "https://pypi.org/simple"
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


def mirror_base() -> str | None:
    """``$TOOLGAUGE_DATA_MIRROR`` without a trailing slash, or None."""
    base = os.environ.get("TOOLGAUGE_DATA_MIRROR", "").strip()
    return base.rstrip("/") or None


def pip_config_files() -> list[Path]:
    """The config files of pip, lowest precedence first (global, user, site, then ``PIP_CONFIG_FILE``)."""
    dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep)
    files = [Path(d) / "pip" / "pip.conf" for d in reversed(dirs) if d] + [Path("/etc/pip.conf")]
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    files += [Path.home() / ".pip" / "pip.conf", config_home / "pip" / "pip.conf", Path(sys.prefix) / "pip.conf"]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def index_url() -> str:
    """The simple index to ask for a wheel (see the module docstring)."""
    mirror = mirror_base()
    if mirror:
        return f"{mirror}/simple"
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].rstrip("/")
    found = PYPI
    for path in pip_config_files():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        for section in ("global", "download"):
            if parser.has_option(section, "index-url"):
                found = parser.get(section, "index-url").strip().rstrip("/")
    return found


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((data.strip(), self._href))
            self._href = None


def wheel_url(client: httpx.Client, project: str, filename: str, *, label: str) -> tuple[str, str | None]:
    """The URL of ``filename`` on the index and the sha256 the index states for it (None if it states none).

    Raises:
        FetchError: the index cannot be reached or does not list the file.
    """
    index = index_url()
    page = f"{index}/{re.sub(r'[-_.]+', '-', project).lower()}/"
    try:
        response = client.get(page, headers={"Accept": _ACCEPT}, follow_redirects=True)
    except httpx.TransportError as exc:
        raise FetchError(
            f"{label}: cannot reach the package index {redact_url(page)}: {exc or type(exc).__name__}", TRANSIENT
        ) from None
    if response.status_code != 200:
        code = REFUSED if 400 <= response.status_code < 500 else TRANSIENT
        raise FetchError(f"{label}: GET {redact_url(page)}: HTTP {response.status_code} {response.reason_phrase}", code)
    links: list[tuple[str, str, str | None]] = []  # (filename, url, sha256)
    if "json" in response.headers.get("content-type", ""):
        try:
            for item in json.loads(response.text).get("files", []):
                links.append((item["filename"], item["url"], (item.get("hashes") or {}).get("sha256")))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise FetchError(f"{label}: {redact_url(page)}: not a simple-index JSON page") from None
    else:
        anchors = _Anchors()
        anchors.feed(response.text)
        for text, href in anchors.links:
            stated = re.search(r"#sha256=([0-9a-f]{64})", href)
            links.append((text, href.split("#", 1)[0], stated.group(1) if stated else None))
    for name, url, sha256 in links:
        if name == filename:
            return str(response.url.join(url)), sha256
    raise FetchError(f"{label}: the package index {redact_url(index)} has no {filename}")
