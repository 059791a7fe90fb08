"""The viewer's web app (starlette): JSON endpoints over :class:`~toolgauge.view.data.ViewData` and the front end.

Every answer carries a strict Content-Security-Policy (scripts and styles only from this server, no inline
code), so text from models and tool servers can never run even if a page showed it as markup (the front end
shows it as text). With a token every request must carry it: ``?token=`` (the first page; the answer sets a
same-site cookie), the cookie, or ``Authorization: Bearer``. Requests naming another host than the one served
are refused (a DNS-rebinding page cannot read the store through a browser on this machine).
"""

from __future__ import annotations

import hmac
import json
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolgauge.errors import UsageError
from toolgauge.store.verdicts import UnitFilter
from toolgauge.view.charts import ERROR_CLASSES, ChartSpec, render_svg, run_charts
from toolgauge.view.data import ViewData

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
TOKEN_COOKIE = "toolgauge_token"
# Rendered chart SVGs kept (run, state, chart) -> text.
CACHED_CHARTS = 64


def static_dir() -> Path:
    """The front end's files, shipped in the package."""
    return Path(str(resources.files("toolgauge.view") / "static"))


class _Guard:
    """Adds the security headers to every answer and, with a token, refuses requests without it."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        set_cookie = False
        if self.token is not None:
            given = _given_token(request)
            if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
                await _with_headers(PlainTextResponse("a valid token is required", status_code=401))(
                    scope, receive, send
                )
                return
            set_cookie = request.query_params.get("token") is not None

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in SECURITY_HEADERS]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                if set_cookie and self.token is not None:
                    cookie = f"{TOKEN_COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                    headers.append((b"set-cookie", cookie.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _given_token(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE)


def _with_headers(response: Response) -> Response:
    for key, value in SECURITY_HEADERS.items():
        response.headers[key] = value
    return response


class BadQuery(UsageError):
    """A malformed request parameter (a page that is no number, a bad date): answered 400, not 404."""


def _day(text: str | None, *, end: bool = False) -> float | None:
    """``YYYY-MM-DD`` (UTC) as seconds since the epoch; with ``end``, the start of the next day."""
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError as exc:
        raise BadQuery(f"date {text!r}: expected YYYY-MM-DD") from exc
    return day.timestamp() + (86400 if end else 0)


def _int(text: str | None, default: int, name: str) -> int:
    """A positive whole-number query parameter (``page``, ``per_page``), ``default`` when absent."""
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError as exc:
        raise BadQuery(f"{name} {text!r}: expected a whole number") from exc
    if value < 1:
        raise BadQuery(f"{name} {text!r}: expected a number from 1")
    return value


def create_app(data: ViewData, *, token: str | None = None, allowed_hosts: list[str] | None = None) -> Starlette:
    """The viewer app over ``data``; ``token`` (when given) is required on every request."""
    charts: OrderedDict[tuple[str, ...], str] = OrderedDict()
    charts_lock = threading.Lock()

    def run_chart_specs(run_id: str) -> tuple[tuple[str, ...], list[ChartSpec]]:
        run = data.run_info(run_id)
        if run.results is None:
            return (run.id, run.status), []
        key = (run.id, run.status, str(run.finished_at))
        return key, run_charts(run.results, data.benchmarks.headline(run.benchmark))

    def runs(request: Request) -> Response:
        q = request.query_params
        rows = data.runs(
            benchmark=q.get("benchmark") or None,
            model=q.get("model") or None,
            status=q.get("status") or None,
            since=_day(q.get("since")),
            until=_day(q.get("until"), end=True),
        )
        every = data.runs()
        return JSONResponse(
            {
                "runs": [r.model_dump(mode="json") for r in rows],
                "benchmarks": sorted({r.benchmark for r in every}),
                "statuses": sorted({r.status for r in every}),
            }
        )

    def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        page = data.run(run_id)
        data.prepare(run_id)
        _key, specs = run_chart_specs(run_id)
        page["charts"] = [{"name": c.name, "title": c.title} for c in specs]
        return JSONResponse(page)

    def units(request: Request) -> Response:
        q = request.query_params
        found = data.units(
            request.path_params["run_id"],
            verdict=q.get("verdict") or None,
            error_class=q.get("error_class") or None,
            query=q.get("q") or None,
            page=_int(q.get("page"), 1, "page"),
            per_page=_int(q.get("per_page"), 50, "per_page"),
            wait=q.get("wait") == "1",
        )
        return JSONResponse(found.model_dump(mode="json"))

    def sample(request: Request) -> Response:
        run_id, key, q = request.path_params["run_id"], request.path_params["sample_key"], request.query_params
        epoch = _int(q.get("epoch"), 0, "epoch") or None
        # The sample list's filters, for the previous and next sample in it.
        chosen = UnitFilter(verdict=q.get("verdict") or None, error_class=q.get("error_class") or None,
                            query=q.get("q") or None)  # fmt: skip
        return JSONResponse(data.sample(run_id, key, wait=q.get("wait") == "1", epoch=epoch, chosen=chosen))

    def chart(request: Request) -> Response:
        run_id, name = request.path_params["run_id"], request.path_params["name"]
        if name == ERROR_CLASSES:  # drawn with the verdicts (the sample list asks for it once they are ready)
            svg = data.error_chart(run_id)
            if svg is None:
                raise UsageError(f"run {run_id} has no chart {name!r}: no unit failed")
            return Response(svg, media_type="image/svg+xml")
        key, specs = run_chart_specs(run_id)
        wanted = next((c for c in specs if c.name == name), None)
        if wanted is None:
            raise UsageError(f"run {run_id} has no chart {name!r}")
        return cached_svg((*key, name), wanted, f"chart {name!r}")

    def cached_svg(key: tuple[str, ...], made: ChartSpec | None, what: str) -> Response:
        if made is None:
            raise UsageError(f"{what} has nothing to draw")
        with charts_lock:
            svg = charts.get(key)
        if svg is None:
            svg = render_svg(made.spec)
            with charts_lock:
                charts[key] = svg
                while len(charts) > CACHED_CHARTS:
                    charts.popitem(last=False)
        return Response(svg, media_type="image/svg+xml")

    def sweep_chart(request: Request) -> Response:
        sweep_id, benchmark = request.path_params["sweep_id"], request.path_params["benchmark"]
        made = data.sweep_chart(sweep_id, benchmark)
        key = ("sweep", sweep_id, benchmark, json.dumps(made.spec if made else None, sort_keys=True))
        return cached_svg(key, made, f"sweep {sweep_id}'s {benchmark} board")

    def compare_chart(request: Request) -> Response:
        chosen = [run for run in request.query_params.getlist("run") if run]
        made = data.compare_chart(chosen)
        key = ("compare", *chosen, json.dumps(made.spec if made else None, sort_keys=True))
        return cached_svg(key, made, "the comparison")

    def panels(request: Request) -> Response:
        return JSONResponse(data.run_panels(request.path_params["run_id"]))

    def compare(request: Request) -> Response:
        q = request.query_params
        chosen = [run for run in q.getlist("run") if run]
        if chosen:  # two or more runs, the first the baseline
            page, per_page = _int(q.get("page"), 1, "page"), _int(q.get("per_page"), 100, "per_page")
            return JSONResponse(data.compare_runs(chosen, page=page, per_page=per_page))
        a, b = q.get("a"), q.get("b")
        if not a or not b:
            raise BadQuery("compare needs two runs: ?a=RUN&b=RUN, or two or more: ?run=A&run=B&run=C")
        return JSONResponse(data.compare(a, b))

    def paper(request: Request) -> Response:
        chosen = [ref for ref in request.query_params.getlist("run") if ref]
        return JSONResponse(data.paper(request.path_params["benchmark"], chosen))

    def sweeps(_request: Request) -> Response:
        return JSONResponse({"sweeps": data.sweeps()})

    def sweep(request: Request) -> Response:
        return JSONResponse(data.sweep(request.path_params["sweep_id"]))

    def index(_request: Request) -> Response:
        return FileResponse(static_dir() / "index.html", media_type="text/html")

    def no_icon(_request: Request) -> Response:
        return Response(status_code=204)

    async def usage_error(_request: Request, exc: Exception) -> Response:
        # A malformed parameter is the request's fault (400); anything else names what is not there (404).
        return JSONResponse({"error": str(exc)}, status_code=400 if isinstance(exc, BadQuery) else 404)

    routes = [
        Route("/", index),
        Route("/favicon.ico", no_icon),
        Route("/api/runs", runs),
        Route("/api/compare", compare),
        Route("/api/compare/intervals.svg", compare_chart),
        Route("/api/sweeps", sweeps),
        Route("/api/paper/{benchmark}", paper),
        Route("/api/sweeps/{sweep_id}", sweep),
        Route("/api/sweeps/{sweep_id}/charts/{benchmark}.svg", sweep_chart),
        Route("/api/runs/{run_id}", run),
        Route("/api/runs/{run_id}/units", units),
        Route("/api/runs/{run_id}/panels", panels),
        Route("/api/runs/{run_id}/charts/{name}.svg", chart),
        Route("/api/runs/{run_id}/samples/{sample_key:path}", sample),
        Mount("/static", StaticFiles(directory=static_dir()), name="static"),
    ]
    middleware = [Middleware(_Guard, token=token)]
    if allowed_hosts is not None:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    handlers: dict[Any, Any] = {UsageError: usage_error}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)
