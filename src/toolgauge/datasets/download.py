"""One HTTP download into a file, with every way it can fail turned into one clear :class:`FetchError`."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import httpx

from toolgauge.datasets.errors import REFUSED, TRANSIENT, FetchError, Start
from toolgauge.redact import redact_url

_CHUNK = 1 << 16


def download(client: httpx.Client, url: str, dest: Path, *, label: str, start: Start) -> None:
    """GET ``url`` into ``dest``, flushed to disk; ``start(label, total)`` gives the progress callback.

    Raises:
        FetchError: any failure: HTTP status, timeout, a connection lost or cut short, a full disk.
    """
    shown = redact_url(url)
    try:
        with client.stream("GET", url) as response:
            if response.status_code != 200:
                code = REFUSED if 400 <= response.status_code < 500 else TRANSIENT
                raise FetchError(f"{label}: GET {shown}: HTTP {response.status_code} {response.reason_phrase}", code)
            length = response.headers.get("content-length")
            advance = start(label, int(length) if length and length.isdigit() else None)
            with dest.open("wb") as handle:
                for chunk in response.iter_bytes(_CHUNK):
                    handle.write(chunk)
                    advance(len(chunk))
                handle.flush()
                os.fsync(handle.fileno())
    except httpx.TimeoutException as exc:
        timeout = client.timeout.read
        raise FetchError(
            f"{label}: {shown}: no answer for {timeout:g} s ({type(exc).__name__}); try again later or set "
            "TOOLGAUGE_DATA_MIRROR",
            TRANSIENT,
        ) from None
    except httpx.RemoteProtocolError as exc:
        raise FetchError(
            f"{label}: {shown}: the connection closed before the whole file arrived ({exc})", TRANSIENT
        ) from None
    except httpx.TransportError as exc:
        raise FetchError(f"{label}: cannot reach {shown}: {exc or type(exc).__name__}", TRANSIENT) from None
    except OSError as exc:
        raise disk_error(exc, dest.parent) from None


def disk_error(exc: OSError, folder: Path) -> FetchError:
    """The one line for a failed write into the cache (a full disk says so)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return FetchError(f"no space left on the device of the data cache {folder.parent}; nothing was kept", TRANSIENT)
    return FetchError(f"cannot write into the data cache {folder.parent}: {exc.strerror or exc}", TRANSIENT)
