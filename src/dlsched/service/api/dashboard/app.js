// dlsched dashboard: polls the service's JSON API (GET jobs, cluster, metrics) and redraws.
// No build step and no external code: plain DOM (el, from dom.js) and inline SVG. Every value
// from the API is inserted as text (textContent), never as HTML.
"use strict";

const REFRESH_MS = Number(new URLSearchParams(location.search).get("refresh")) || 3000;
const FINISHED_SHOWN = 50;
const FINAL = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
const HOLDING = new Set(["RUNNING", "PREEMPTING"]);
const STATE_ORDER = ["PENDING", "RUNNING", "PREEMPTING", "COMPLETED", "FAILED", "CANCELLED"];
const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// A stable colour per job id, so a job has the same colour in the map and the tables.
function jobColour(id) {
  let h = 0;
  for (const c of String(id)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${(h * 137.508) % 360}, 62%, 52%)`;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(s / 3600);
  return `${h}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

function clock(unix) {
  if (unix === null || unix === undefined) return "–";
  return new Date(unix * 1000).toLocaleTimeString([], { hour12: false });
}

function placement(job) {
  const parts = Object.entries(job.gpu_ids || {}).map(
    ([node, gpus]) => `${node}[${gpus.join(",")}]`,
  );
  return parts.length ? parts.join(" ") : "–";
}

function jobCell(job) {
  return el(
    "td",
    { className: "job" },
    el("span", { className: "swatch", style: `background:${jobColour(job.id)}` }),
    el("span", { text: job.id }),
  );
}

function fillTable(id, rows, emptyText, columns) {
  const body = document.querySelector(`#${id} tbody`);
  const width = document.querySelectorAll(`#${id} thead th`).length;
  const fresh = rows.map((job) => {
    const tr = el("tr", { "data-job-id": job.id, "data-state": job.state });
    for (const cell of columns(job)) tr.append(cell);
    return tr;
  });
  if (!fresh.length) {
    fresh.push(el("tr", { className: "empty" }, el("td", { colspan: width, text: emptyText })));
  }
  body.replaceChildren(...fresh);
}

function td(text, className) {
  return el("td", { className, text: text === null || text === undefined ? "–" : String(text) });
}

// A table cell with a bar filled to ``fraction`` (clamped to [0, 1]) and its percentage.
function barCell(fraction, className) {
  const pct = Math.min(100, Math.max(0, fraction * 100));
  return el(
    "td",
    { className },
    el(
      "div",
      { className: "bar", role: "progressbar", "aria-valuenow": pct.toFixed(0) },
      el("div", { className: "fill", style: `width:${pct.toFixed(1)}%` }),
    ),
    el("span", { className: "pct", text: `${pct.toFixed(0)}%` }),
  );
}

function progressCell(job) {
  if (job.progress === null || job.progress === undefined) return td("–", "progress");
  return barCell(job.progress, "progress");
}

// GPUs as the API gives them: whole numbers without decimals.
function gpuCount(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

// Per-queue usage against nominal quota (present only when the service runs --queues). The
// bar shows use beyond the nominal quota as 100%; the borrowed column says by how much.
function renderQueues(queues) {
  const section = document.getElementById("queues-section");
  section.hidden = !queues;
  if (!queues) return;
  const rows = queues.map((q) =>
    el(
      "tr",
      { "data-queue": q.name, "data-borrowing": String(q.borrowed_gpus > 0) },
      td(q.name),
      td(q.cohort),
      td(`${gpuCount(q.used_gpus)} / ${gpuCount(q.nominal_gpus)}`, "num"),
      barCell(q.nominal_gpus > 0 ? q.used_gpus / q.nominal_gpus : 0, "progress"),
      td(gpuCount(q.borrowed_gpus), "num"),
      td(q.waiting, "num"),
    ),
  );
  document.querySelector("#queues tbody").replaceChildren(...rows);
}

function renderCounts(jobs, metrics) {
  const counts = {};
  for (const s of STATE_ORDER) counts[s] = 0;
  for (const j of jobs) counts[j.state] = (counts[j.state] || 0) + 1;
  if (metrics && metrics.counts) Object.assign(counts, metrics.counts);
  const items = STATE_ORDER.map((s) =>
    el(
      "li",
      { className: `count state-${s.toLowerCase()}`, "data-state": s },
      el("span", { className: "n", text: String(counts[s] || 0) }),
      el("span", { className: "label", text: s.toLowerCase() }),
    ),
  );
  document.getElementById("counts").replaceChildren(...items);
}

function renderCluster(cluster, jobsById) {
  document.getElementById("policy").textContent = `policy: ${cluster.policy}`;
  let total = 0;
  let busy = 0;
  const cards = cluster.nodes.map((node) => {
    const cells = node.gpus.map((gpu) => {
      total += 1;
      const holder = gpu.job_id;
      if (holder) busy += 1;
      const job = holder ? jobsById.get(holder) : null;
      const title = holder
        ? `${node.name} GPU ${gpu.index}: ${holder}${job ? ` (${job.name}, ${job.user})` : ""}`
        : `${node.name} GPU ${gpu.index}: free`;
      return el(
        "div",
        {
          className: holder ? "gpu busy" : "gpu free",
          "data-node": node.name,
          "data-gpu": String(gpu.index),
          "data-job-id": holder || "",
          title,
          style: holder ? `background:${jobColour(holder)}` : null,
        },
        el("span", { className: "idx", text: String(gpu.index) }),
        el("span", { className: "holder", text: holder || "free" }),
      );
    });
    const up = node.up !== false;
    return el(
      "div",
      { className: up ? "node" : "node down", "data-node": node.name },
      el(
        "div",
        { className: "node-head" },
        el("span", { className: "node-name", text: node.name }),
        el("span", { className: "node-type", text: node.gpu_type || "" }),
        el("span", { className: up ? "up" : "down", text: up ? "up" : "down" }),
      ),
      el("div", { className: "gpus" }, ...cells),
    );
  });
  document.getElementById("cluster").replaceChildren(...cards);
  const pct = total ? Math.round((100 * busy) / total) : 0;
  document.getElementById("cluster-summary").textContent =
    `${cluster.nodes.length} nodes · ${busy}/${total} GPUs busy (${pct}%)`;
}

// A line chart of [t, value] points: step lines (values hold until the next sample).
function renderChart(id, points, opts) {
  const box = document.getElementById(id);
  const W = 560;
  const H = 190;
  const m = { l: 44, r: 12, t: 10, b: 26 };
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: "chart-svg",
    role: "img",
    "aria-label": opts.label,
    "data-points": String(points.length),
  });
  if (!points.length) {
    root.append(svg("text", { x: W / 2, y: H / 2, class: "empty" }, box.dataset.empty));
    box.replaceChildren(root);
    return;
  }
  const now = Date.now() / 1000;
  const t0 = Math.min(points[0][0], now - 60);
  const t1 = Math.max(points[points.length - 1][0], now);
  const peak = Math.max(1, ...points.map((p) => p[1]));
  // Counts get a scale divisible by the 4 grid steps, so every tick is a whole number.
  const maxV = opts.max !== undefined ? opts.max : opts.integer ? Math.ceil(peak / 4) * 4 : peak;
  const x = (t) => m.l + ((t - t0) / (t1 - t0 || 1)) * (W - m.l - m.r);
  const y = (v) => H - m.b - (v / maxV) * (H - m.t - m.b);

  for (let i = 0; i <= 4; i++) {
    const v = (maxV * i) / 4;
    root.append(svg("line", { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), class: "grid" }));
    root.append(
      svg("text", { x: m.l - 6, y: y(v) + 4, class: "ylabel" }, opts.format(v)),
    );
  }
  const anchors = ["start", "middle", "middle", "end"];
  for (let i = 0; i <= 3; i++) {
    const t = t0 + ((t1 - t0) * i) / 3;
    const attrs = { x: x(t), y: H - 8, class: "xlabel", "text-anchor": anchors[i] };
    root.append(svg("text", attrs, clock(t)));
  }
  let d = `M${x(points[0][0]).toFixed(1)},${y(points[0][1]).toFixed(1)}`;
  for (let i = 1; i < points.length; i++) {
    d += ` H${x(points[i][0]).toFixed(1)} V${y(points[i][1]).toFixed(1)}`;
  }
  d += ` H${x(t1).toFixed(1)}`;
  const area = `${d} V${y(0).toFixed(1)} H${x(points[0][0]).toFixed(1)} Z`;
  root.append(svg("path", { d: area, class: `area ${opts.kind}` }));
  root.append(svg("path", { d, class: `line ${opts.kind}` }));
  const last = points[points.length - 1][1];
  const caption = el("div", { className: "latest", text: `now ${opts.format(last)}` });
  box.replaceChildren(caption, root);
}

function render(jobs, cluster, metrics) {
  const now = Date.now() / 1000;
  const byId = new Map(jobs.map((j) => [j.id, j]));
  renderCounts(jobs, metrics);
  renderCluster(cluster, byId);
  renderQueues(metrics.queues);

  const running = jobs
    .filter((j) => HOLDING.has(j.state))
    .sort((a, b) => (a.start_time || 0) - (b.start_time || 0));
  document.getElementById("running-count").textContent = `${running.length} jobs`;
  fillTable("running", running, "No job is running.", (j) => [
    jobCell(j),
    td(j.name),
    td(j.user),
    td(j.gpus, "num"),
    td(placement(j), "placement"),
    progressCell(j),
    td(j.samples_per_s ? j.samples_per_s.toFixed(1) : "–", "num"),
    td(duration(j.start_time ? now - j.start_time : null), "num"),
    td(j.restarts, "num"),
  ]);
  for (const tr of document.querySelectorAll("#running tr[data-state=PREEMPTING]")) {
    tr.classList.add("preempting");
  }

  const queue = jobs
    .filter((j) => j.state === "PENDING")
    .sort(
      (a, b) =>
        (a.priority ?? Infinity) - (b.priority ?? Infinity) || a.submit_time - b.submit_time,
    );
  document.getElementById("queue-count").textContent = `${queue.length} waiting`;
  fillTable("queue", queue, "The queue is empty.", (j) => [
    td(j.priority, "num"),
    jobCell(j),
    td(j.name),
    td(j.user),
    td(j.gpus, "num"),
    td(duration(now - j.submit_time), "num"),
    td(j.restarts, "num"),
  ]);

  const finished = jobs
    .filter((j) => FINAL.has(j.state))
    .sort((a, b) => (b.end_time || 0) - (a.end_time || 0));
  const jcts = finished
    .filter((j) => j.state === "COMPLETED" && j.end_time !== null)
    .map((j) => j.end_time - j.submit_time);
  const mean = jcts.length ? jcts.reduce((a, b) => a + b, 0) / jcts.length : null;
  document.getElementById("finished-count").textContent =
    `${finished.length} jobs` + (mean !== null ? ` · mean JCT ${duration(mean)}` : "") +
    (finished.length > FINISHED_SHOWN ? ` · latest ${FINISHED_SHOWN} shown` : "");
  fillTable("finished", finished.slice(0, FINISHED_SHOWN), "No job has finished yet.", (j) => [
    jobCell(j),
    td(j.name),
    td(j.user),
    el("td", { className: `state state-${j.state.toLowerCase()}`, text: j.state }),
    td(j.gpus, "num"),
    td(duration(j.end_time !== null ? j.end_time - j.submit_time : null), "num jct"),
    td(duration(j.start_time !== null ? j.start_time - j.submit_time : null), "num"),
    td(j.restarts, "num"),
    td(clock(j.end_time)),
    td(j.state === "COMPLETED" ? "" : j.reason || "", "reason"),
  ]);

  renderChart("chart-utilization", metrics.utilization || [], {
    label: "GPU utilization over time",
    kind: "util",
    max: 1,
    format: (v) => `${Math.round(v * 100)}%`,
  });
  renderChart("chart-queue", metrics.queue_length || [], {
    label: "queue length over time",
    kind: "queue",
    integer: true,
    format: (v) => String(Math.round(v)),
  });
  const p50 = metrics.cycle_ms_p50;
  const p99 = metrics.cycle_ms_p99;
  document.getElementById("cycle-times").textContent =
    p50 === null || p50 === undefined
      ? ""
      : `cycle p50 ${p50.toFixed(1)} ms · p99 ${p99.toFixed(1)} ms`;
}

// A service with tenants (serve --tokens) answers /jobs only to a token: the page asks for it
// and keeps it for this tab only (sessionStorage), sending it as a bearer token; the service
// then lists that tenant's jobs (all jobs for the admin token).
const TOKEN_KEY = "dlsched-token";

class NeedsToken extends Error {}

async function getJson(path, token = sessionStorage.getItem(TOKEN_KEY)) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const response = await fetch(path, { cache: "no-store", headers });
  if (response.status === 401) throw new NeedsToken(`${path}: HTTP 401`);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// Shows the token form. A refresh without a token while the form is on show keeps its note,
// so that a rejected token stays reported until another one is entered.
function askToken(rejected) {
  const form = document.getElementById("token-form");
  if (rejected || form.hidden) {
    document.getElementById("token-note").textContent = rejected
      ? "The service did not accept that token; enter another."
      : "This service has tenants: enter your token to see your jobs.";
  }
  form.hidden = false;
}

function setupTokenForm() {
  const form = document.getElementById("token-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("token");
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = "";
    form.hidden = true;
    refresh(false);
  });
}

// The jobs the stored token may see; null when the token was replaced while the request was
// out (the refresh the new token started answers for it: a late 401 for the old token must
// not throw the new one away and ask again).
async function jobsOrAsk() {
  const sent = sessionStorage.getItem(TOKEN_KEY);
  try {
    const jobs = await getJson("jobs", sent);
    return sessionStorage.getItem(TOKEN_KEY) === sent ? jobs : null;
  } catch (err) {
    if (!(err instanceof NeedsToken)) throw err;
    if (sessionStorage.getItem(TOKEN_KEY) !== sent) return null;
    askToken(sent !== null);
    sessionStorage.removeItem(TOKEN_KEY);
    return [];
  }
}

async function refresh(again = true) {
  const status = document.getElementById("updated");
  try {
    const [jobs, cluster, metrics] = await Promise.all([
      jobsOrAsk(),
      getJson("cluster"),
      getJson("metrics"),
    ]);
    if (jobs === null) return;
    render(jobs, cluster, metrics);
    status.textContent = `updated ${clock(Date.now() / 1000)}`;
    status.classList.remove("error");
    document.body.dataset.loaded = String(Number(document.body.dataset.loaded || 0) + 1);
  } catch (err) {
    status.textContent = `cannot reach the service (${err.message}); retrying`;
    status.classList.add("error");
  } finally {
    if (again) setTimeout(refresh, REFRESH_MS);
  }
}

setupTokenForm();
refresh();
