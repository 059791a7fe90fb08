"""See stored runs: the web viewer (``toolgauge view``) and the self-contained HTML report (``report --html``).

:mod:`.data` reads the store (runs, verdicts, transcripts) into JSON-ready shapes; :mod:`.charts` draws
the breakdowns with Vega-Lite (altair) as SVG rendered here, offline (vl-convert); :mod:`.app` serves
them over HTTP (starlette) to the front end in ``static/``; :mod:`.html_report` writes one run as one
file. The benchmarks are reached only through a :class:`~toolgauge.view.data.Benchmarks` the caller
gives (the CLI builds it from the registry), so this package stays in the core.
"""
