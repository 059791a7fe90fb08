// toolgauge viewer: renders the JSON of the viewer's API (or, in an HTML report, the same JSON embedded in the page).
// Every text that comes from a run (model output, tool results, sample keys, explanations) is set with
// textContent or as a text node, never parsed as HTML; charts are SVG documents parsed as XML with scripts,
// event attributes and links removed before they are shown.
"use strict";

(function () {
  const POLL_MS = 2000;
  const PER_PAGE = 50;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const embedded = document.getElementById("toolgauge-data");
  const REPORT = embedded ? JSON.parse(embedded.textContent) : null;
  // A sweep's report holds its leaderboard and its runs' pages: metrics, charts and panels (no verdicts,
  // transcripts or comparisons).
  const SWEEP_REPORT = REPORT && REPORT.sweep ? REPORT : null;
  let pollTimer = null;
  let renderSerial = 0;

  // --- DOM helpers: text only ---------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "href") node.setAttribute("href", internalHref(value));
      else node.setAttribute(key, String(value));
    }
    for (const child of children) append(node, child);
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) child.forEach((c) => append(node, c));
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }

  // Only links inside the viewer: "#/..." (never a URL taken from the data).
  function internalHref(value) {
    const text = String(value);
    return text.startsWith("#/") ? text : "#/";
  }

  // A report's link to a page in its samples folder (--all-samples): names the report wrote, plain characters only.
  function fileLink(path, text, attrs) {
    const link = el("a", attrs || {}, text);
    if (/^[A-Za-z0-9_-][A-Za-z0-9._-]*\/[A-Za-z0-9_-][A-Za-z0-9._-]*\.html$/.test(path)) link.setAttribute("href", path);
    return link;
  }

  function runLink(id) { return "#/run/" + encodeURIComponent(id); }
  function samplesLink(id, params) { return runLink(id) + "/samples" + query(params || {}); }
  // params: the sample list's filters (for previous / next in it) and the epoch whose transcript is shown.
  function sampleLink(id, key, params) { return runLink(id) + "/sample/" + encodeURIComponent(key) + query(params || {}); }
  // The sample list's filters, as a sample page carries them on.
  function listFilters(params) {
    const kept = {};
    for (const name of ["verdict", "error_class", "q"]) if (params[name]) kept[name] = params[name];
    return kept;
  }
  // The runs to compare, the first the baseline (A).
  function compareLink(ids, params) { return "#/compare" + query(Object.assign({ run: ids }, params || {})); }
  function sweepLink(id) { return "#/sweep/" + encodeURIComponent(id); }
  // The paper tab of a benchmark for runs or a sweep (toolgauge paper).
  function paperLink(benchmark, refs) { return "#/paper/" + encodeURIComponent(benchmark) + query({ run: refs }); }
  const PAPERS = ["tool-genesis", "wildtoolbench", "mtu-bench", "toolgate"];

  // An array value is the key repeated (?run=A&run=B).
  function query(params) {
    const parts = Object.entries(params).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))
      .filter(([, v]) => v !== null && v !== undefined && v !== "");
    return parts.length ? "?" + parts.map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v)).join("&") : "";
  }

  function fmt(value, kind) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    if (kind === "rate") return (value * 100).toFixed(1) + "%";
    if (kind === "count" || Number.isInteger(value)) return String(value);
    return value.toFixed(3);
  }

  function interval(row) {
    if (row.ci_low === null || row.ci_low === undefined || row.ci_high === null || row.ci_high === undefined) return "";
    return "[" + fmt(row.ci_low, row.kind) + ", " + fmt(row.ci_high, row.kind) + "]";
  }

  function when(seconds) {
    if (!seconds) return "–";
    return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC";
  }

  function badge(verdict) { return el("span", { class: "badge v-" + verdict, text: verdict }); }
  function statusBadge(status) { return el("span", { class: "badge s-" + status, text: status }); }

  function table(headers, rows, cls) {
    return el("table", { class: cls || "grid" },
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
      el("tbody", {}, rows));
  }

  function pre(text, cls) { return el("pre", { class: cls || "text" }, String(text)); }

  function json(value) { return JSON.stringify(value, null, 2); }

  // --- data: the API, or the report's embedded copy -----------------------------------------------------------

  async function get(path, params) {
    if (REPORT) return fromReport(path, params || {});
    const response = await fetch("api/" + path + query(params || {}), { credentials: "same-origin" });
    const body = await response.json().catch(() => ({ error: "HTTP " + response.status }));
    if (!response.ok) throw new Error(body.error || "HTTP " + response.status);
    return body;
  }

  function fromReport(path, params) {
    const parts = path.split("/").map(decodeURIComponent);
    if (parts[0] === "compare") {
      throw new Error("a report holds no comparisons: toolgauge view (its compare page), or toolgauge compare A B");
    }
    if (SWEEP_REPORT && parts[0] === "sweeps" && parts[1] === SWEEP_REPORT.sweep.sweep) return SWEEP_REPORT.sweep;
    const run = parts[0] === "runs" ? runReport(parts[1]) : null;
    if (!run) throw new Error("this report does not hold that page: toolgauge view shows every run");
    if (parts[2] === "units") return reportUnits(run, params);
    if (parts[2] === "panels") return run.panels || { panels: [], note: null };
    if (parts[2] === "samples") {
      const key = parts.slice(3).join("/");
      const found = run.samples[key];
      if (!found) {
        const error = new Error("this report includes the transcripts of the first " + run.transcripts + " failing samples only");
        error.sampleFile = sampleFile(run, key);
        throw error;
      }
      const epoch = Number(params.epoch) || 1;
      const calls = found.calls_by_epoch ? found.calls_by_epoch[String(epoch)] : (epoch === 1 ? found.calls : null);
      if (!calls) throw new Error("run " + parts[1] + " has no epoch " + params.epoch);
      // Previous and next among the samples this report lists, under the list's filters.
      const keys = [...new Set(reportRows(run, params).map((r) => r.sample))];
      const at = keys.indexOf(key);
      return Object.assign({}, found, { calls: calls, epoch: epoch,
        prev: at > 0 ? keys[at - 1] : null, next: at >= 0 && at + 1 < keys.length ? keys[at + 1] : null });
    }
    return run.run;
  }

  // The sample's page in the report's samples folder, when it was written with --all-samples.
  function sampleFile(run, key) {
    const files = run.sample_files;
    return files && files.files && files.files[key] ? files.dir + "/" + files.files[key] : null;
  }

  // A run's report: the file's one run, or in a sweep's file each of its runs (what report_data holds).
  function runReport(runId) {
    if (SWEEP_REPORT) return SWEEP_REPORT.runs[runId] || null;
    return REPORT && REPORT.run.run.id === runId ? REPORT : null;
  }

  function reportRows(run, params) {
    return run.units.rows.filter((r) =>
      (!params.verdict || r.verdict === params.verdict) &&
      (!params.error_class || r.error_class === params.error_class) &&
      (!params.q || r.id.toLowerCase().includes(String(params.q).toLowerCase())));
  }

  function reportUnits(run, params) {
    const rows = reportRows(run, params);
    const page = Math.max(1, Number(params.page) || 1);
    // A report lists the first units of each verdict; its counts are of every unit.
    const listed = run.units.units !== undefined && run.units.rows.length < run.units.units
      ? "this report lists the first " + run.units.rows_per_verdict + " units of each verdict (" + run.units.rows.length +
        " of " + run.units.units + "); the counts and charts cover every unit: toolgauge view shows every one" +
        (run.sample_files ? ", and the samples folder has every sample's page" : "")
      : null;
    return Object.assign({}, run.units, {
      total: rows.length, page: page, per_page: PER_PAGE, rows: rows.slice((page - 1) * PER_PAGE, page * PER_PAGE),
      listed: listed,
    });
  }

  async function chartNode(runId, name) {
    let text;
    if (REPORT) text = (runReport(runId) || { charts: {} }).charts[name];
    else {
      const response = await fetch("api/runs/" + encodeURIComponent(runId) + "/charts/" + encodeURIComponent(name) + ".svg",
        { credentials: "same-origin" });
      if (!response.ok) throw new Error("chart " + name + ": HTTP " + response.status);
      text = await response.text();
    }
    return svgNode(text, name);
  }

  function svgNode(text, name) {
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const svg = doc.documentElement;
    if (!svg || svg.namespaceURI !== SVG_NS || svg.localName !== "svg") throw new Error("chart " + name + " is not an SVG");
    // The SVG comes from vl-convert (which escapes the data's text); drop anything active all the same.
    for (const node of Array.from(svg.querySelectorAll("script, foreignObject, a, iframe"))) node.remove();
    for (const node of [svg, ...svg.querySelectorAll("*")]) {
      for (const attr of Array.from(node.attributes)) {
        const value = attr.value.trim().toLowerCase();
        if (attr.name.toLowerCase().startsWith("on") || ((attr.localName === "href") && !value.startsWith("#"))) {
          node.removeAttribute(attr.name);
        }
      }
    }
    return document.importNode(svg, true);
  }

  // A benchmark's own panel (a chart as SVG, a table, or text); every piece of its text is set as text.
  function panelNode(panel) {
    const box = el("figure", { class: "panel panel-" + panel.kind, "data-panel": panel.name },
      el("figcaption", { text: panel.title }));
    try {
      if (panel.kind === "chart") box.appendChild(svgNode(panel.svg, panel.name));
      else if (panel.kind === "table") {
        box.appendChild(el("div", { class: "scroll" }, table(panel.columns, panel.rows.map((row) => el("tr", {},
          row.map((cell) => el("td", { class: typeof cell === "number" ? "num" : "wrap",
            text: cell === null ? "" : (typeof cell === "number" ? fmt(cell) : String(cell)) })))), "grid")));
      } else box.appendChild(pre(panel.text));
    } catch (error) {
      box.appendChild(el("p", { class: "error", text: String(error.message || error) }));
    }
    if (panel.note) box.appendChild(el("p", { class: "muted", text: panel.note }));
    return box;
  }

  function panelsBlock(panels, note) {
    const box = el("div", { class: "panels" });
    if (note) box.appendChild(el("p", { class: "warning", text: note }));
    for (const panel of panels) box.appendChild(panelNode(panel));
    return box;
  }

  // --- routing ------------------------------------------------------------------------------------------------

  function route() {
    const home = SWEEP_REPORT ? "/sweep/" + encodeURIComponent(SWEEP_REPORT.sweep.sweep)
      : REPORT ? "/run/" + encodeURIComponent(REPORT.run.run.id) : "/";
    const hash = location.hash.replace(/^#/, "") || home;
    const [path, search] = hash.split("?");
    const searched = new URLSearchParams(search || "");
    const params = Object.fromEntries(searched);
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "compare") {
      // ?run=A&run=B&run=C (the first the baseline); ?a=A&b=B is the same as ?run=A&run=B.
      const runs = searched.getAll("run").filter(Boolean);
      params.runs = runs.length ? runs : [params.a, params.b].filter(Boolean);
      return { page: "compare", params };
    }
    if (parts[0] === "paper" && parts.length >= 2) {
      params.runs = searched.getAll("run").filter(Boolean);
      return { page: "paper", benchmark: parts[1], params };
    }
    if (parts[0] === "sweeps") return { page: "sweeps", params };
    if (parts[0] === "sweep" && parts.length >= 2) return { page: "sweep", sweep: parts.slice(1).join("/"), params };
    if (parts[0] === "run" && parts.length >= 2) {
      if (parts[2] === "samples") return { page: "samples", run: parts[1], params };
      if (parts[2] === "sample") return { page: "sample", run: parts[1], key: parts.slice(3).join("/"), params };
      return { page: "run", run: parts[1], params };
    }
    return { page: "runs", params };
  }

  async function render() {
    const serial = ++renderSerial;
    stopPolling();
    const where = route();
    const main = document.getElementById("main");
    // data-ready holds the hash of the page shown once it is complete (charts included): what tests wait for.
    main.removeAttribute("data-ready");
    try {
      let view;
      if (where.page === "runs") view = await runsPage(where.params);
      else if (where.page === "run") view = await runPage(where.run);
      else if (where.page === "compare") view = await comparePage(where.params);
      else if (where.page === "sweeps") view = await sweepsPage();
      else if (where.page === "sweep") view = await sweepPage(where.sweep);
      else if (where.page === "paper") view = await paperPage(where.benchmark, where.params);
      else if (where.page === "samples") view = await samplesPage(where.run, where.params);
      else view = await samplePage(where.run, where.key, where.params);
      if (serial !== renderSerial) return; // a newer navigation won
      setCrumbs(where);
      main.replaceChildren(view.node);
      if (view.after) await view.after();
      if ((view.poll || view.pending) && !REPORT) startPolling();
      // A page still waiting for the run's verdicts is not complete: it is shown again when they are ready.
      if (!view.pending) main.setAttribute("data-ready", location.hash);
    } catch (error) {
      if (serial !== renderSerial) return;
      main.replaceChildren(el("p", { class: "error", text: String(error.message || error) }));
      if (error.sampleFile) main.appendChild(el("p", {}, fileLink(error.sampleFile, "its page in the samples folder →", { id: "sample-file" })));
      main.setAttribute("data-ready", location.hash);
    }
  }

  function setCrumbs(where) {
    const crumbs = document.getElementById("crumbs");
    const items = [];
    if (!REPORT) items.push(el("a", { href: "#/", text: "runs" }), el("a", { href: "#/sweeps", id: "sweeps-link", text: "sweeps" }));
    if (SWEEP_REPORT && !where.sweep) items.push(el("a", { href: sweepLink(SWEEP_REPORT.sweep.sweep), text: SWEEP_REPORT.sweep.sweep }));
    if (where.page === "compare") items.push(el("span", { text: "compare" }));
    if (where.page === "paper") items.push(el("span", { text: "paper · " + where.benchmark }));
    if (where.sweep) items.push(el("a", { href: sweepLink(where.sweep), text: where.sweep }));
    if (where.run) items.push(el("a", { href: runLink(where.run), text: where.run }));
    if (where.page === "samples" || where.page === "sample") items.push(el("a", { href: samplesLink(where.run), text: "samples" }));
    if (where.page === "sample") items.push(el("span", { text: where.key }));
    crumbs.replaceChildren(...items.flatMap((item, i) => (i ? [el("span", { class: "sep", text: " / " }), item] : [item])));
  }

  function startPolling() {
    document.getElementById("live").hidden = false;
    pollTimer = setTimeout(pollTick, POLL_MS);
  }

  // Not while the user is typing in a filter or picking runs to compare: the page would be drawn anew under them.
  function pollTick() {
    const active = document.activeElement;
    const typing = active && active.closest && active.closest("form");
    if (typing || document.querySelector("input.pick:checked")) pollTimer = setTimeout(pollTick, POLL_MS);
    else render();
  }

  function stopPolling() {
    if (pollTimer !== null) clearTimeout(pollTimer);
    pollTimer = null;
    document.getElementById("live").hidden = true;
  }

  // --- runs -----------------------------------------------------------------------------------------------------

  async function runsPage(params) {
    const data = await get("runs", params);
    const select = (name, options) => el("select", { name: name, id: "f-" + name },
      el("option", { value: "", text: "any " + name }),
      options.map((o) => el("option", { value: o, selected: params[name] === o ? "selected" : null, text: o })));
    const form = el("form", { class: "filters", id: "run-filters" },
      select("benchmark", data.benchmarks),
      el("input", { name: "model", id: "f-model", placeholder: "model contains", value: params.model || "" }),
      select("status", data.statuses),
      el("label", {}, "from ", el("input", { type: "date", name: "since", id: "f-since", value: params.since || "" })),
      el("label", {}, "to ", el("input", { type: "date", name: "until", id: "f-until", value: params.until || "" })),
      el("button", { type: "submit", text: "filter" }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = "#/" + query(Object.fromEntries(new FormData(form)));
    });
    form.addEventListener("change", () => form.requestSubmit());
    const rows = data.runs.map((r) => el("tr", {},
      el("td", {}, el("input", { type: "checkbox", class: "pick", "data-run": r.id, "aria-label": "select run " + r.id })),
      el("td", {}, el("a", { href: runLink(r.id), class: "run-link", text: r.id })),
      el("td", { text: runLabels(r) }), el("td", { text: r.benchmark }), el("td", { text: r.model }),
      el("td", { text: settingsText(r.settings) }), el("td", {}, statusBadge(r.status)),
      el("td", { class: "num", text: r.samples }), el("td", { class: "num", text: usd(r.cost_usd, r.status) }),
      el("td", { text: when(r.created_at) }),
      el("td", { text: Object.entries(r.headline).map(([k, v]) => k + " " + fmt(v, "rate")).join(" · ") })));
    const compareButton = el("button", { type: "button", id: "compare", disabled: "disabled", text: "compare the selected runs" });
    const picked = []; // in the order they were picked: the first is the baseline
    compareButton.addEventListener("click", () => {
      if (picked.length >= 2) location.hash = compareLink(picked);
    });
    const node = el("section", {}, el("h1", { text: "runs" }), form,
      el("p", { class: "compare-bar" }, compareButton, el("span", { class: "muted", text: " tick two or more runs of one benchmark: the first ticked is the baseline (A)" })),
      rows.length ? table(["", "run", "name", "benchmark", "model", "settings", "status", "samples", "cost", "started", "headline"], rows, "grid runs")
        : el("p", { class: "muted", text: "no run matches" }));
    node.addEventListener("change", (event) => {
      if (!event.target.classList || !event.target.classList.contains("pick")) return;
      const id = event.target.getAttribute("data-run");
      const at = picked.indexOf(id);
      if (event.target.checked && at < 0) picked.push(id);
      else if (!event.target.checked && at >= 0) picked.splice(at, 1);
      compareButton.disabled = picked.length < 2;
    });
    return { node, poll: data.runs.some((r) => r.status === "running") };
  }

  // --- compare two runs -----------------------------------------------------------------------------------------

  function signed(value) {
    if (value === null || value === undefined) return "–";
    return (value > 0 ? "+" : value < 0 ? "−" : "") + Math.abs(value).toFixed(3);
  }

  function pValue(p) {
    if (p === null || p === undefined) return "–";
    return p < 0.0001 ? p.toExponential(1) : p.toFixed(4);
  }

  // A run's letter on the compare page: A (the baseline), B, C, … (then R27, R28, …).
  function runLabel(i) { return i < 26 ? String.fromCharCode(65 + i) : "R" + (i + 1); }

  async function comparePage(params) {
    const ids = params.runs;
    if (ids.length < 2) throw new Error("pick two or more runs to compare in the runs list");
    // The runs first: two benchmarks are said plainly here, without asking for a comparison the API refuses.
    const pages = await Promise.all(ids.map((id) => get("runs/" + encodeURIComponent(id))));
    const other = pages.find((p) => p.run.benchmark !== pages[0].run.benchmark);
    if (other) {
      throw new Error("run " + pages[0].run.id + " is " + pages[0].run.benchmark + " and run " + other.run.id + " is " +
        other.run.benchmark + ": compare runs of the same benchmark");
    }
    const page = Math.max(1, Number(params.page) || 1);
    const data = await get("compare", { run: ids, page: page });
    const runs = data.runs;
    const against = {}; // run id -> its comparison with the baseline
    for (const c of data.comparisons) against[c.b] = c;
    const title = runs.length === 2 ? data.benchmark + ": B against A" : data.benchmark + ": " + (runs.length - 1) + " runs against A";
    const side = (run, i) => {
      const c = against[run.id];
      const item = el("li", { "data-run": run.id }, el("b", { text: runLabel(i) + (i ? ": " : " (baseline): ") }),
        el("a", { href: runLink(run.id), class: "run-link", text: run.id }),
        " · ", el("span", { class: "model", text: run.model }), " · " + run.samples + " samples");
      if (c) {
        item.append(" · ", el("span", { class: "flip-counts", text: c.flipped.to_pass.length + " fail → pass, " +
          c.flipped.to_fail.length + " pass → fail" }), " · units only in A: ", el("b", { class: "only-a", text: c.only_in_a }),
          ", only in " + runLabel(i) + ": ", el("b", { class: "only-b", text: c.only_in_b }), " · ",
          el("a", { href: compareLink([run.id, ...ids.filter((x) => x !== run.id)]), class: "baseline-link",
            id: runs.length === 2 ? "swap" : null, text: runs.length === 2 ? "swap A and B" : "make it the baseline" }));
      }
      return item;
    };
    const node = el("section", { class: "compare" }, el("h1", { text: title }),
      el("ul", { class: "sides" }, runs.map(side)),
      el("p", { class: "muted" }, "units: ", el("b", { id: "units", text: data.units }),
        " · in some runs only: ", el("b", { id: "only-some", text: data.only_in_some })));
    node.appendChild(el("h2", { text: "headline metrics: each run against A on the units both have" }));
    const metricRows = [];
    for (const name of data.headline) {
      runs.forEach((run, i) => {
        const value = fmt(run.headline[name], "rate");
        const head = [el("td", { text: name }), el("td", {}, el("b", { text: runLabel(i) + " " }), el("a", { href: runLink(run.id), text: run.id })),
          el("td", { class: "model", text: run.model }), el("td", { class: "num", text: value })];
        const c = against[run.id];
        if (!c) {
          metricRows.push(el("tr", { "data-metric": name, "data-run": run.id, class: "baseline" }, head,
            el("td", { colspan: 6, class: "muted", text: "baseline" })));
          return;
        }
        const m = c.metrics[name];
        const ci = m.ci_low === null || m.ci_high === null ? "" : "[" + signed(m.ci_low) + ", " + signed(m.ci_high) + "]";
        metricRows.push(el("tr", { "data-metric": name, "data-run": run.id }, head,
          el("td", { class: "num", text: m.n }), el("td", { class: "num", text: signed(m.diff) }), el("td", { class: "num", text: ci }),
          el("td", { text: m.test || "–" }), el("td", { class: "num", text: pValue(m.p_value) }),
          el("td", {}, m.p_value === null ? el("span", { class: "muted", text: "no paired unit" })
            : el("span", { class: "badge " + (m.significant ? "sig" : "nsig"), text: m.significant ? "significant" : "not significant" }))));
      });
    }
    node.appendChild(metricRows.length
      ? el("div", { class: "scroll" }, table(["metric", "run", "model", "value", "n paired", "run − A", "95% interval", "test", "p", ""], metricRows, "grid compare-metrics"))
      : el("p", { class: "muted", text: "this benchmark names no headline metric" }));
    const figure = metricRows.length ? el("figure", { class: "chart intervals", "data-chart": "intervals" }) : null;
    if (figure) node.append(el("h2", { text: "each run's value with its own 95% interval" }), figure);
    const diff = data.differing;
    node.appendChild(el("h2", { text: "units whose verdict differs (" + diff.total + ")" }));
    if (!diff.total) node.appendChild(el("p", { class: "muted", text: "none: every unit has the same verdict in every run that has it" }));
    else {
      const pages = Math.max(1, Math.ceil(diff.total / diff.per_page));
      const nav = el("p", { class: "pager" },
        page > 1 ? el("a", { href: compareLink(ids, { page: page - 1 }), id: "prev", text: "← previous" }) : null,
        " page " + page + " of " + pages + " · " + diff.total + " units ",
        page < pages ? el("a", { href: compareLink(ids, { page: page + 1 }), id: "next", text: "next →" }) : null);
      const rows = diff.rows.map((u) => el("tr", { "data-unit": u.id }, el("td", { class: "flip-id", text: u.id }),
        u.verdicts.map((verdict, i) => el("td", { "data-run": runs[i].id }, verdict === null ? el("span", { class: "muted", text: "—" })
          : el("a", { href: sampleLink(runs[i].id, u.samples[i]), class: "in-run" }, badge(verdict))))));
      node.append(nav, el("div", { class: "scroll" }, table(["unit", ...runs.map((r, i) => runLabel(i))], rows, "grid differing")));
    }
    const after = figure ? () => intervalChart(figure, "compare/intervals.svg" + query({ run: ids }), null) : null;
    return { node, after };
  }

  // --- sweeps ---------------------------------------------------------------------------------------------------

  async function sweepsPage() {
    const data = await get("sweeps");
    const rows = data.sweeps.map((s) => el("tr", {},
      el("td", {}, el("a", { href: sweepLink(s.id), class: "sweep-link", text: s.id })), el("td", {}, statusBadge(s.status)),
      el("td", { class: "num", text: s.finished_cells + " / " + s.cells }), el("td", { text: s.models.join(", ") }),
      el("td", { text: s.benchmarks.join(", ") }), el("td", { text: when(s.created_at) })));
    const node = el("section", {}, el("h1", { text: "sweeps" }),
      rows.length ? table(["sweep", "status", "finished cells", "models", "benchmarks", "started"], rows, "grid sweeps")
        : el("p", { class: "muted", text: "no sweep in this store (toolgauge sweep SWEEP.toml makes one)" }));
    return { node, poll: data.sweeps.some((s) => s.status === "running") };
  }

  // A leaderboard cell: the mean, and under it its interval (two short lines keep six metrics within the page).
  function meanInterval(stat) {
    if (!stat || stat.mean === null || stat.mean === undefined) return ["–"];
    let spread = null;
    if (stat.ci_low !== null && stat.ci_low !== undefined && stat.ci_high !== null && stat.ci_high !== undefined) {
      spread = "[" + fmt(stat.ci_low, "rate") + ", " + fmt(stat.ci_high, "rate") + "]";
    } else if (stat.stderr !== null && stat.stderr !== undefined) spread = "± " + fmt(stat.stderr, "rate");
    return [el("span", { class: "mean", text: fmt(stat.mean, "rate") }), spread ? el("span", { class: "ci", text: " " + spread }) : null];
  }

  // A chart of intervals (a leaderboard's or a comparison's): fetched from the viewer, or the report's copy.
  async function intervalChart(figure, path, reportSvg) {
    try {
      let text = reportSvg;
      if (!REPORT) {
        const response = await fetch("api/" + path, { credentials: "same-origin" });
        if (!response.ok) throw new Error("chart: HTTP " + response.status);
        text = await response.text();
      }
      if (text) figure.appendChild(svgNode(text, "intervals"));
      else figure.remove();
    } catch (error) {
      figure.appendChild(el("p", { class: "error", text: String(error.message || error) }));
    }
  }

  async function sweepPage(sweepId) {
    const data = await get("sweeps/" + encodeURIComponent(sweepId));
    const node = el("section", { class: "sweep" }, el("h1", {}, "sweep " + data.sweep + " ", statusBadge(data.status)),
      el("p", { class: "muted", text: "per benchmark, the models ranked by its first headline metric; mean [95% interval]. " +
        "“not significant”: the difference with the best model is not significant (a paired test of the two runs, " +
        "else overlapping intervals)." }));
    let intervals = false;
    const charts = [];
    for (const board of data.boards) {
      // A board of offline models only (gold, replays: $0 each) has no cost column.
      const costed = board.cells.some((c) => c.cost_usd !== 0);
      const rows = board.cells.map((c, i) => {
        let mark = "best";
        if (i > 0) mark = c.significant === null ? "?" : c.significant ? "significant" : "not significant";
        if (i > 0 && c.test === "intervals") intervals = true;
        return el("tr", { "data-run": c.run },
          el("td", { class: "num", text: i + 1 }), el("td", { class: "model", text: c.name ? c.name + " (" + c.model + ")" : c.model }),
          board.metrics.map((name) => el("td", { class: "num cell" }, el("a", { href: runLink(c.run), class: "cell-link" }, meanInterval(c.metrics[name])))),
          el("td", {}, el("span", { class: "mark " + mark.replace(/[^a-z]+/g, "-"), text: mark + (i > 0 && c.test ? " (" + c.test + ")" : "") }),
            i > 0 && !REPORT ? [" ", el("a", { href: compareLink([board.cells[0].run, c.run]), class: "compare-link", text: "compare" })] : null),
          costed ? el("td", { class: "num", text: usd(c.cost_usd, c.status) +
            (c.cost_per_point === null || c.cost_per_point === undefined ? "" : " (" + usd(c.cost_per_point, c.status) + "/pt)") }) : null,
          el("td", {}, el("a", { href: runLink(c.run), class: "run-link", text: c.run })), el("td", {}, statusBadge(c.status)));
      });
      node.appendChild(el("h2", { text: board.benchmark + ": ranked by " + (board.metrics[0] || "–") }));
      // Within its own box: a board wider than the page scrolls there, never the page.
      node.appendChild(el("div", { class: "scroll board" }, table(["#", "model", ...board.metrics, "vs best", ...(costed ? ["cost ($/point)"] : []), "run", "status"], rows, "grid leaderboard")));
      if (!REPORT && PAPERS.includes(board.benchmark)) {
        node.appendChild(el("p", {}, el("a", { href: paperLink(board.benchmark, [sweepId]), class: "paper-link",
          text: "the paper's tables for these models →" })));
      }
      const figure = el("figure", { class: "chart intervals", "data-chart": "intervals", "data-benchmark": board.benchmark });
      node.appendChild(figure);
      charts.push(() => intervalChart(figure, "sweeps/" + encodeURIComponent(sweepId) + "/charts/" + encodeURIComponent(board.benchmark) + ".svg",
        SWEEP_REPORT ? (SWEEP_REPORT.sweep_charts || {})[board.benchmark] : null));
      if (!REPORT && board.cells.length > 2) {
        node.appendChild(el("p", {}, el("a", { href: compareLink(board.cells.map((c) => c.run)), class: "compare-all",
          text: "compare all " + board.cells.length + " runs, the best as the baseline →" })));
      }
    }
    if (intervals) node.appendChild(el("p", { class: "muted", text: "“(intervals)”: decided by overlapping 95% intervals, a coarser test" }));
    const after = async () => { for (const draw of charts) await draw(); };
    return { node, after, poll: data.status === "running" };
  }

  // --- a paper's tables (toolgauge paper) ----------------------------------------------------------------------

  function paperCell(cell) {
    const v = cell.value;
    if (v === null || v === undefined) return "–";
    if (cell.unit === "text" || typeof v !== "number") return String(v);
    if (cell.unit === "percent") {
      const ci = cell.ci_low !== null && cell.ci_low !== undefined && cell.ci_high !== null && cell.ci_high !== undefined
        ? " [" + (cell.ci_low * 100).toFixed(2) + ", " + (cell.ci_high * 100).toFixed(2) + "]" : "";
      return (v * 100).toFixed(2) + ci;
    }
    return Number.isInteger(v) ? String(v) : v.toFixed(3);
  }

  async function paperPage(benchmark, params) {
    const data = await get("paper/" + encodeURIComponent(benchmark), { run: params.runs });
    const node = el("section", { class: "paper" }, el("h1", { text: data.paper + ": the paper's tables" }),
      el("p", { class: "muted", text: "rates in percent, [95% interval] where the run has one; toolgauge paper " +
        data.paper + " prints the same (docs/paper.md)." }));
    for (const block of data.blocks) {
      const title = block.ref + (block.exact ? "" : " (reconstructed)") + " · " + block.title;
      const box = el("div", { class: "paper-block", "data-ref": block.ref }, el("h2", { text: title }));
      if (block.missing) box.appendChild(el("p", { class: "warning", text: block.missing }));
      else {
        const rows = block.rows.map((row) => el("tr", {}, el("td", { class: "wrap", text: row.label }),
          row.cells.map((cell) => el("td", { class: cell.unit === "text" ? "wrap" : "num", text: paperCell(cell) }))));
        box.appendChild(el("div", { class: "scroll" }, table(block.columns, rows, "grid")));
        for (const note of block.notes) box.appendChild(el("p", { class: "muted", text: note }));
        for (const chart of block.charts || []) {
          const figure = el("figure", { class: "chart" }, el("figcaption", { text: chart.caption }));
          try { figure.appendChild(svgNode(chart.svg, block.ref)); } catch (error) {
            figure.appendChild(el("p", { class: "error", text: String(error.message || error) }));
          }
          box.appendChild(figure);
        }
      }
      node.appendChild(box);
    }
    return { node };
  }

  // --- one run --------------------------------------------------------------------------------------------------

  // A run's --name and --tag KEY=VALUE labels, its settings (mode, variant, T, epochs, limit) and its cost.
  function runLabels(r) {
    return [r.name || ""].concat(Object.entries(r.tags || {}).map(([k, v]) => k + "=" + v)).join(" ").trim();
  }
  function settingsText(settings) {
    return Object.entries(settings || {}).filter(([k, v]) => v !== null && !(k === "epochs" && v === 1))
      .map(([k, v]) => (k === "temperature" ? "T" : k) + "=" + v).join(" ");
  }
  function usd(value, status) {
    if (value === null || value === undefined) return status === "finished" || status === "finished_with_errors" ? "price unknown" : "";
    if (value === 0) return "$0";
    return "$" + (value >= 1 ? value.toFixed(2) : value.toPrecision(3));
  }
  async function runPage(runId) {
    const data = await get("runs/" + encodeURIComponent(runId));
    const run = data.run;
    const results = data.results;
    const stats = results && results.run;
    const node = el("section", { class: "run" },
      el("h1", {}, run.benchmark + " · ", el("span", { class: "model", text: run.model }), " ", statusBadge(run.status)),
      el("p", { class: "muted" },
        "run " + run.id + (runLabels(run) ? " (" + runLabels(run) + ")" : "") + " · " + run.samples + " samples · " +
        (settingsText(run.settings) ? settingsText(run.settings) + " · " : "") + "started " + when(run.created_at) +
        (run.finished_at ? " · finished " + when(run.finished_at) : "")));
    if (stats) {
      node.appendChild(el("p", { class: "stats" },
        [["sample errors", stats.sample_errors], ["model calls", stats.model_calls], ["cached calls", stats.cached_calls],
          ["input tokens", stats.input_tokens], ["output tokens", stats.output_tokens], ["cost", usd(stats.cost_usd, stats.status)],
          ["epochs", stats.epochs],
          ["wall", stats.wall_seconds.toFixed(1) + " s"]].map(([k, v]) => el("span", { class: "stat" }, el("b", { text: v }), " " + k))));
    }
    node.appendChild(el("p", {}, el("a", { href: samplesLink(run.id), class: "samples-link", text: "samples and verdicts →" }),
      " ", el("a", { href: samplesLink(run.id, { verdict: "fail" }), text: "failures" }),
      " ", el("a", { href: samplesLink(run.id, { verdict: "error" }), text: "errors" }),
      !REPORT && PAPERS.includes(run.benchmark) ? [" ", el("a", { href: paperLink(run.benchmark, [run.id]), class: "paper-link", text: "paper tables" })] : null));
    if (!results) {
      node.appendChild(el("p", { class: "muted", text: run.status === "running"
        ? "running: the metrics appear when it is scored; this page updates every " + POLL_MS / 1000 + " s"
        : "this run has no stored results (status " + run.status + ")" }));
      return { node, poll: run.status === "running" };
    }
    for (const warning of results.warnings) node.appendChild(el("p", { class: "warning", text: "⚠ " + warning }));
    node.appendChild(el("h2", { text: "metrics" }));
    node.appendChild(table(["metric", "value", "95% interval", "n"], data.overall.map((m) => el("tr", { class: m.headline ? "headline" : null },
      el("td", { text: m.name }), el("td", { class: "num", text: fmt(m.value, m.kind) }),
      el("td", { class: "num", text: interval(m) }), el("td", { class: "num", text: m.n === null ? "" : m.n }))), "grid metrics"));
    const passk = Object.keys(results.pass_at_k || {});
    if (passk.length) {
      node.appendChild(table(["k", "pass@k", "pass^k"], passk.map((k) => el("tr", {}, el("td", { text: k }),
        el("td", { class: "num", text: fmt(results.pass_at_k[k], "rate") }),
        el("td", { class: "num", text: fmt((results.pass_hat_k || {})[k], "rate") }))), "grid passk"));
    }
    const chartBox = el("div", { class: "charts" });
    if (data.charts.length) node.append(el("h2", { text: "charts" }), chartBox);
    for (const b of data.breakdowns) {
      // A breakdown that has its own "n" metric shows it as one of its columns.
      const nColumn = !b.metrics.some((m) => m.name === "n");
      const rows = b.rows.map((r) => el("tr", {}, el("td", { text: r.group }),
        nColumn ? el("td", { class: "num", text: r.n === null ? "" : r.n }) : null,
        b.metrics.map((m) => el("td", { class: "num", text: fmt(r.values[m.name], m.kind) }))));
      node.appendChild(el("details", { class: "breakdown", open: b.rows.length <= 40 ? "open" : null },
        el("summary", { text: "by " + b.by + " (" + b.rows.length + " groups)" }),
        el("div", { class: "scroll" }, table([b.by, ...(nColumn ? ["n"] : []), ...b.metrics.map((m) => m.name)], rows, "grid"))));
    }
    node.appendChild(el("details", { class: "config" }, el("summary", { text: "settings and config" }),
      pre(json({ settings: results.settings, config: data.config, provenance: results.provenance }))));
    const panelBox = el("div", { class: "run-panels" });
    node.insertBefore(panelBox, node.querySelector("details.breakdown") || node.querySelector("details.config"));
    const after = async () => {
      for (const c of data.charts) {
        const figure = el("figure", { class: "chart", "data-chart": c.name });
        chartBox.appendChild(figure);
        try { figure.appendChild(await chartNode(run.id, c.name)); } catch (error) {
          figure.appendChild(el("p", { class: "error", text: String(error.message || error) }));
        }
      }
      // The benchmark's own views need the run's verdicts: asked for after the page shows.
      try {
        const found = await get("runs/" + encodeURIComponent(run.id) + "/panels");
        if (found.panels.length || found.note) panelBox.append(el("h2", { text: "views" }), panelsBlock(found.panels, found.note));
      } catch (error) {
        panelBox.appendChild(el("p", { class: "error", text: String(error.message || error) }));
      }
    };
    return { node, after, poll: run.status === "running" };
  }

  // --- the sample list --------------------------------------------------------------------------------------

  async function samplesPage(runId, params) {
    const page = Math.max(1, Number(params.page) || 1);
    const data = await get("runs/" + encodeURIComponent(runId) + "/units", Object.assign({}, params, { page, per_page: PER_PAGE }));
    const verdict = el("select", { name: "verdict", id: "f-verdict" }, el("option", { value: "", text: "any verdict" }),
      Object.entries(data.verdicts).map(([v, n]) => el("option", { value: v, selected: params.verdict === v ? "selected" : null, text: v + " (" + n + ")" })));
    const klass = el("select", { name: "error_class", id: "f-error-class" }, el("option", { value: "", text: "any error class" }),
      Object.entries(data.error_classes).map(([c, n]) => el("option", { value: c, selected: params.error_class === c ? "selected" : null, text: c + " (" + n + ")" })));
    const search = el("input", { name: "q", id: "f-q", placeholder: "id contains", value: params.q || "" });
    const form = el("form", { class: "filters", id: "unit-filters" }, verdict, klass, search, el("button", { type: "submit", text: "filter" }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = samplesLink(runId, Object.fromEntries(new FormData(form)));
    });
    verdict.addEventListener("change", () => form.requestSubmit());
    klass.addEventListener("change", () => form.requestSubmit());
    // A unit of a later epoch opens its sample on that epoch's transcript; the filters go along (previous / next).
    const epochs = data.rows.some((u) => (u.epoch || 1) > 1);
    const filters = listFilters(params);
    const rows = data.rows.map((u) => el("tr", {},
      el("td", {}, el("a", { href: sampleLink(runId, u.sample, Object.assign({}, filters, (u.epoch || 1) > 1 ? { epoch: u.epoch } : {})),
        class: "unit-link", text: u.id })),
      epochs ? el("td", { class: "num epoch", text: u.epoch || 1 }) : null,
      el("td", {}, badge(u.verdict)), el("td", { text: u.error_class || "" }),
      el("td", { class: "wrap", text: u.error || u.explanation || "" })));
    const pages = Math.max(1, Math.ceil(data.total / data.per_page));
    const nav = el("p", { class: "pager" },
      page > 1 ? el("a", { href: samplesLink(runId, Object.assign({}, params, { page: page - 1 })), id: "prev", text: "← previous" }) : null,
      " page " + page + " of " + pages + " · " + data.total + " units ",
      page < pages ? el("a", { href: samplesLink(runId, Object.assign({}, params, { page: page + 1 })), id: "next", text: "next →" }) : null);
    const errorChart = !data.pending && Object.keys(data.error_classes).length
      ? el("figure", { class: "chart", "data-chart": "error-classes" }) : null;
    const report = REPORT ? runReport(runId) : null;
    const node = el("section", {}, el("h1", { text: "samples of " + runId }),
      data.note ? el("p", { class: "warning", text: data.note }) : null,
      data.listed ? el("p", { class: "muted", id: "listed", text: data.listed }) : null,
      report && report.sample_files ? el("p", {}, fileLink(report.sample_files.dir + "/" + report.sample_files.index,
        "every sample's page (the samples folder) →", { id: "samples-folder" })) : null,
      errorChart, form, nav,
      rows.length ? table(["unit", ...(epochs ? ["epoch"] : []), "verdict", "error class", "why"], rows, "grid units")
        : el("p", { class: "muted", text: data.pending ? "…" : "no unit matches" }));
    const after = async () => {
      if (!errorChart) return;
      try { errorChart.appendChild(await chartNode(runId, "error-classes")); } catch (error) {
        errorChart.appendChild(el("p", { class: "error", text: String(error.message || error) }));
      }
    };
    return { node, after, pending: data.pending };
  }

  // --- one sample ---------------------------------------------------------------------------------------------

  async function samplePage(runId, key, params) {
    const filters = listFilters(params || {});
    const data = await get("runs/" + encodeURIComponent(runId) + "/samples/" + encodeURIComponent(key),
      Object.assign({}, filters, params && params.epoch ? { epoch: params.epoch } : {}));
    const filtered = Object.keys(filters).length ? " (in the list filtered by " +
      Object.entries(filters).map(([k, v]) => k.replace("_", " ") + " " + v).join(", ") + ")" : "";
    const node = el("section", { class: "sample" },
      el("p", { class: "pager sample-nav" },
        data.prev !== null && data.prev !== undefined
          ? el("a", { href: sampleLink(runId, data.prev, filters), id: "prev-sample", text: "← previous sample" }) : el("span", { class: "muted", text: "← first sample" }),
        " · ", el("a", { href: samplesLink(runId, filters), text: "the sample list" + filtered }), " · ",
        data.next !== null && data.next !== undefined
          ? el("a", { href: sampleLink(runId, data.next, filters), id: "next-sample", text: "next sample →" }) : el("span", { class: "muted", text: "last sample →" })),
      el("h1", {}, "sample ", el("span", { class: "key", text: key })));
    const epochs = data.epochs || 1;
    if (epochs > 1) {
      // The tries of this sample: each has its own stored state and transcript.
      node.appendChild(el("p", { class: "epochs", id: "epochs" }, "epoch: ", Array.from({ length: epochs }, (_, i) => i + 1).map((e) =>
        e === data.epoch ? el("b", { class: "epoch current", "data-epoch": e, text: String(e) })
          : el("a", { href: sampleLink(runId, key, Object.assign({}, filters, { epoch: e })), class: "epoch", "data-epoch": e, text: String(e) }))
        .flatMap((item, i) => (i ? [" ", item] : [item]))));
    }
    if (data.state) {
      node.appendChild(el("p", { class: "muted", id: "sample-status" }, "status " + data.state.status +
        (data.state.latency_s !== null ? " · " + data.state.latency_s.toFixed(2) + " s" : "") +
        // The evaluated model's calls of this try (cached ones $0); nothing while the run's price is unknown.
        (data.cost_usd !== null && data.cost_usd !== undefined ? " · " + usd(data.cost_usd, data.run.status) : "")));
      if (data.state.error) node.appendChild(pre("error: " + data.state.error, "text error"));
    }
    if (data.note) node.appendChild(el("p", { class: "warning", text: data.note }));
    node.appendChild(el("h2", { text: "verdicts" + (epochs > 1 ? " (every epoch's)" : "") }));
    for (const unit of data.units) node.appendChild(unitBox(unit, epochs > 1));
    if (!data.units.length && !data.pending) node.appendChild(el("p", { class: "muted", text: "no verdict on this sample" }));
    if ((data.panels || []).length || data.panels_note) node.append(el("h2", { text: "views" }), panelsBlock(data.panels || [], data.panels_note));
    node.appendChild(el("h2", { id: "transcript-title", text: "transcript" + (epochs > 1 ? " of epoch " + data.epoch : "") +
      " (" + data.calls.length + " model calls)" }));
    node.appendChild(transcript(data.calls));
    return { node, pending: data.pending };
  }

  function unitBox(unit, withEpoch) {
    const box = el("div", { class: "unit", "data-unit": unit.id, "data-epoch": unit.epoch || 1 },
      el("h3", {}, badge(unit.verdict), " ", withEpoch ? el("span", { class: "epoch-label", text: "epoch " + (unit.epoch || 1) + " · " }) : null,
        el("span", { text: unit.id })),
      unit.explanation ? el("p", {}, el("b", { text: "why: " }), el("span", { class: "explanation", text: unit.explanation })) : null,
      unit.error ? pre("run error: " + unit.error, "text error") : null);
    const scores = Object.entries(unit.scores || {});
    if (scores.length) box.appendChild(el("p", { class: "scores" }, scores.map(([k, v]) => el("span", { class: "score" }, el("b", { text: k }), " " + fmt(v)))));
    const meta = Object.assign({}, unit.metadata || {});
    const gold = meta.expected !== undefined ? meta.expected : meta.gold;
    const model = meta.predicted !== undefined ? meta.predicted : meta.decoded;
    if (gold !== undefined || model !== undefined) {
      box.appendChild(el("div", { class: "versus" },
        el("div", { class: "side gold" }, el("h4", { text: "gold" }), callsBlock(gold)),
        el("div", { class: "side model" }, el("h4", { text: "model" }), callsBlock(model))));
      delete meta.expected; delete meta.gold; delete meta.predicted; delete meta.decoded;
    }
    if (Object.keys(meta).length) box.appendChild(el("details", {}, el("summary", { text: "details" }), pre(json(meta))));
    return box;
  }

  function callsBlock(calls) {
    if (calls === undefined || calls === null) return el("p", { class: "muted", text: "–" });
    if (!Array.isArray(calls)) return pre(json(calls));
    if (!calls.length) return el("p", { class: "muted", text: "no call" });
    return el("div", {}, calls.map((c) => toolCall(c)));
  }

  function toolCall(call) {
    if (!call || typeof call !== "object") return pre(json(call));
    // BFCL's decoded calls are {name: arguments}: shown as a call of that name with those arguments.
    const keys = Object.keys(call);
    if (call.name === undefined && keys.length === 1 && call[keys[0]] && typeof call[keys[0]] === "object" &&
        !Array.isArray(call[keys[0]])) {
      call = { name: keys[0], arguments: call[keys[0]] };
    }
    const args = call.parse_error ? (call.raw || "") : json(call.arguments === undefined ? {} : call.arguments);
    return el("div", { class: "call" },
      el("div", { class: "call-head" }, el("b", { class: "call-name", text: call.name || "(no name)" }),
        call.id ? el("span", { class: "muted", text: " id " + call.id }) : null),
      pre(args, "text args"),
      call.parse_error ? el("p", { class: "error", text: "arguments not decoded: " + call.parse_error }) : null);
  }

  function transcript(calls) {
    const box = el("div", { class: "transcript" });
    const last = {};
    for (const call of calls) {
      const previous = last[call.role];
      last[call.role] = call;
      const head = ["step " + call.step, call.role, call.cached ? "from the cache" : (call.latency_s * 1000).toFixed(1) + " ms",
        call.usage.input_tokens + " in / " + call.usage.output_tokens + " out tokens"];
      if (call.attempts > 1) head.push(call.attempts + " attempts");
      const block = el("div", { class: "call-block" }, el("div", { class: "call-title", text: head.join(" · ") }));
      if (call.tools) {
        const same = previous && JSON.stringify(previous.tools) === JSON.stringify(call.tools);
        block.appendChild(el("details", { class: "tools" }, el("summary", { text: same ? "tools: as in step " + previous.step
          : "tools: " + (call.tools.map((t) => t.name).join(", ") || "none") }), same ? null : pre(json(call.tools))));
      }
      const messages = call.messages || [];
      let start = 0;
      if (previous && previous.messages && previous.messages.length <= messages.length &&
          JSON.stringify(messages.slice(0, previous.messages.length)) === JSON.stringify(previous.messages)) {
        start = previous.messages.length;
        if (start) block.appendChild(el("p", { class: "muted", text: "… " + start + " messages as in step " + previous.step }));
      }
      if (call.messages === null) block.appendChild(el("p", { class: "muted", text: "request not stored" }));
      for (const message of messages.slice(start)) block.appendChild(messageBox(message));
      if (call.response) block.appendChild(messageBox(Object.assign({ role: "assistant", answer: true }, call.response)));
      if (call.error) block.appendChild(pre("error: " + call.error, "text error"));
      box.appendChild(block);
    }
    if (!calls.length) box.appendChild(el("p", { class: "muted", text: "no stored model call" }));
    return box;
  }

  function messageBox(message) {
    let label = message.answer ? "→ assistant (answer)" : message.role;
    if (message.role === "tool") label = "tool result" + (message.name ? " " + message.name : "") + (message.tool_call_id ? " (" + message.tool_call_id + ")" : "");
    const box = el("div", { class: "msg role-" + message.role + (message.answer ? " answer" : "") },
      el("div", { class: "msg-role", text: label }));
    if (message.content) box.appendChild(pre(message.content));
    for (const call of message.tool_calls || []) box.appendChild(toolCall(call));
    if (!message.content && !(message.tool_calls || []).length) box.appendChild(el("p", { class: "muted", text: "(empty)" }));
    if (message.finish_reason) box.appendChild(el("p", { class: "muted", text: "finish: " + message.finish_reason }));
    return box;
  }

  window.addEventListener("hashchange", render);
  render();
})();
