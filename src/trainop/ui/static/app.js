// trainop ui: the jobs list and one job's page, kept live by server-sent events.
// Every piece of text from a job (names, labels, logs, messages) goes in with textContent: no HTML
// built from data, so a label holding markup shows as the markup it is.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const MAX_LOG_LINES = 5000; // lines kept on the page; the download has all of them
const app = document.getElementById("app");
document.getElementById("where").textContent = document.querySelector('meta[name="where"]').content;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function formatAge(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 120) return s + "s";
  const m = Math.floor(s / 60), h = Math.floor(s / 3600), d = Math.floor(s / 86400);
  if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  if (m < 180) return m + "m";
  if (h < 8) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  if (h < 48) return h + "h";
  return d + "d";
}

function setLive(on) {
  const live = document.getElementById("live");
  live.textContent = on ? "● live" : "○ reconnecting";
  live.className = on ? "" : "off";
}

function stream(url, handlers) {
  const source = new EventSource(url);
  source.onopen = () => setLive(true);
  source.onerror = () => setLive(false);
  for (const [event, fn] of Object.entries(handlers)) {
    source.addEventListener(event, (e) => fn(JSON.parse(e.data)));
  }
  return source;
}

function errorBox(text) {
  return el("div", { class: "error", role: "alert" }, text);
}

// ---- the jobs list ----

function jobsPage() {
  const params = new URLSearchParams(location.search);
  const ns = el("input", { id: "f-namespace", placeholder: "namespace (all)", value: params.get("namespace") || "" });
  const kind = el("select", { id: "f-kind" }, el("option", { value: "" }, "all kinds"));
  for (const k of ["PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob"]) {
    kind.append(el("option", { value: k }, k));
  }
  kind.value = params.get("kind") || "";
  const label = el("input", { id: "f-label", placeholder: "label selector (a=b,c)", value: params.get("label") || "" });
  const apply = el("button", { id: "f-apply" }, "Filter");
  const error = el("div");
  const body = el("tbody", { id: "jobs-body" });
  const table = el("table", { id: "jobs" },
    el("thead", {}, el("tr", {}, ...["Namespace", "Name", "Kind", "State", "Age", "Replicas", "Restarts", "Queue", "Labels"].map((h) => el("th", {}, h)))),
    body);
  const count = el("p", { id: "jobs-count", class: "muted" });
  app.replaceChildren(el("h1", {}, "Jobs"), el("div", { class: "filters" }, ns, kind, label, apply), error, table, count);
  let source = null;
  let latest = [];
  function connect() {
    const q = new URLSearchParams();
    if (ns.value) q.set("namespace", ns.value);
    if (kind.value) q.set("kind", kind.value);
    if (label.value) q.set("label", label.value);
    history.replaceState(null, "", q.toString() ? "/?" + q : "/");
    if (source) source.close();
    source = stream("/api/stream/jobs?" + q, {
      jobs: (data) => {
        latest = data.jobs;
        error.replaceChildren(...(data.error ? [errorBox(data.error)] : []));
        render();
      },
    });
  }
  function render() {
    const now = Date.now() / 1000;
    body.replaceChildren(...latest.map((j) => el("tr", { "data-job": `${j.namespace}/${j.name}` },
      el("td", { "data-col": "namespace" }, j.namespace),
      el("td", { "data-col": "name" }, el("a", { href: `/jobs/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.name)}` }, j.name)),
      el("td", { "data-col": "kind" }, j.kind),
      el("td", { "data-col": "state", class: "state-" + j.state, title: j.reason }, j.state),
      el("td", { "data-col": "age" }, j.created ? formatAge(now - j.created) : "?"),
      el("td", { "data-col": "replicas", title: j.replicas }, `${j.ready}/${j.total}`),
      el("td", { "data-col": "restarts", class: "num" }, j.restarts === null ? "?" : j.restarts),
      el("td", { "data-col": "queue" }, j.queue),
      el("td", { "data-col": "labels", class: "labels" }, ...Object.entries(j.labels).map(([k, v]) => el("span", {}, `${k}=${v}`))),
    )));
    count.textContent = `${latest.length} job(s)`;
  }
  apply.addEventListener("click", connect);
  for (const input of [ns, label]) input.addEventListener("keydown", (e) => { if (e.key === "Enter") connect(); });
  kind.addEventListener("change", connect);
  setInterval(render, 1000); // ages
  connect();
}

// ---- one job ----

function kvTable(rows) {
  return el("table", { class: "kv" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v)))));
}

async function act(ns, name, action, message) {
  if (action === "delete" && !confirm(`Delete ${name}?`)) return;
  const response = await fetch(`/api/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/${action}`, {
    method: "POST",
    headers: { "X-CSRF-Token": CSRF },
    credentials: "same-origin",
  });
  const body = await response.json().catch(() => ({}));
  message.replaceChildren(response.ok ? el("span", { class: "muted", id: "action-result" }, `${action}: done`) : errorBox(`${action}: ${body.error || response.status}`));
}

function jobPage(ns, name) {
  const message = el("div", { id: "message" });
  const readOnly = el("span", { id: "read-only", class: "muted", hidden: "" });
  const actions = el("div", { class: "actions" },
    ...["suspend", "resume", "delete"].map((a) => el("button", { id: "act-" + a, hidden: "", onclick: () => act(ns, name, a, message) }, a[0].toUpperCase() + a.slice(1))), readOnly);
  function offer(allowed) {  // only what the caller's RBAC allows (always everything on this machine)
    const refused = [];
    for (const a of ["suspend", "resume", "delete"]) {
      const ok = !allowed || allowed[a] !== false;
      document.getElementById("act-" + a).hidden = !ok;
      if (!ok) refused.push(a);
    }
    readOnly.hidden = refused.length === 0;
    readOnly.textContent = refused.length ? `your access does not allow: ${refused.join(", ")}` : "";
  }
  const overview = el("section", { id: "overview" });
  const logs = el("section", { id: "logs", hidden: "" });
  const progress = el("section", { id: "progress", hidden: "" });
  const tabs = {};
  const tabBar = el("div", { class: "tabs" });
  for (const [key, section, title] of [["overview", overview, "Overview"], ["logs", logs, "Logs"], ["progress", progress, "Progress"]]) {
    tabs[key] = el("button", { id: "tab-" + key, onclick: () => show(key) }, title);
    tabBar.append(tabs[key]);
  }
  function show(key) {
    for (const [k, section] of [["overview", overview], ["logs", logs], ["progress", progress]]) {
      section.hidden = k !== key;
      tabs[k].className = k === key ? "on" : "";
    }
    location.hash = key === "overview" ? "" : key;
    if (key === "logs") logView.start();
    if (key === "progress") drawProgress();
  }
  const title = el("h1", { id: "job-title" }, `${ns}/${name}`);
  app.replaceChildren(title, actions, message, tabBar, overview, logs, progress);
  let page = null;
  const logView = makeLogView(ns, name, logs, () => page);
  stream(`/api/stream/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, {
    job: (data) => {
      page = data;
      offer(data.actions);
      renderOverview(overview, data);
      logView.replicas(data.replicas || []);
      if (!progress.hidden) drawProgress();
    },
    gone: (data) => {
      overview.replaceChildren(errorBox(data.error), el("p", { id: "gone" }, "This job no longer exists. ", el("a", { href: "/" }, "All jobs")));
    },
  });
  function drawProgress() { renderProgress(progress, page && page.progress, page && page.errors.progress); }
  show(location.hash === "#logs" ? "logs" : location.hash === "#progress" ? "progress" : "overview");
}

function renderOverview(section, data) {
  if (data.error) { section.replaceChildren(errorBox(data.error)); return; }
  const j = data.job;
  const parts = [
    kvTable([
      ["Kind", j.kind],
      ["State", el("span", { id: "job-state", class: "state-" + j.state }, j.state + (j.reason ? ` (${j.reason})` : ""))],
      ["Replicas", j.replicas],
      ["Restarts", j.restarts === null ? "?" : String(j.restarts)],
      ["Queue", j.queue || "—"],
      ["Labels", el("span", { class: "labels" }, ...Object.entries(j.labels).map(([k, v]) => el("span", {}, `${k}=${v}`)))],
    ]),
    el("h2", {}, "Spec"),
    el("table", { id: "specs" }, el("thead", {}, el("tr", {}, ...["Type", "Replicas", "Restart policy", "Image", "Command"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...data.specs.map((s) => el("tr", {}, el("td", {}, s.type), el("td", { class: "num" }, s.replicas ?? ""), el("td", {}, s.restartPolicy ?? ""), el("td", {}, s.image), el("td", {}, s.command))))),
    el("h2", {}, "Conditions"),
    el("table", { id: "conditions" }, el("thead", {}, el("tr", {}, ...["Type", "Status", "Reason", "Message", "Since"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...data.conditions.map((c) => el("tr", {}, el("td", {}, c.type), el("td", {}, c.status), el("td", {}, c.reason), el("td", {}, c.message), el("td", {}, c.lastTransitionTime))))),
    el("h2", {}, "Replicas"),
  ];
  if (data.replicas === null) parts.push(errorBox(`cannot read the pods: ${data.errors.replicas}`));
  else parts.push(el("table", { id: "replicas" }, el("thead", {}, el("tr", {}, ...["Replica", "Type", "Phase", "Restarts", "Last exit", "Waiting because"].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...data.replicas.map((r) => el("tr", { "data-replica": r.name },
      el("td", {}, r.name), el("td", {}, r.type), el("td", { "data-col": "phase", class: "state-" + r.phase }, r.phase),
      el("td", { "data-col": "restarts", class: "num" }, r.restarts),
      el("td", { "data-col": "exit" }, r.exitCode === null ? "" : `${r.exitCode} (${r.exitReason})`),
      el("td", { "data-col": "waiting", class: "waiting" }, r.waiting))))));
  parts.push(el("h2", {}, "Events"));
  if (data.events === null) parts.push(errorBox(`cannot read the events: ${data.errors.events}`));
  else parts.push(el("table", { id: "events" }, el("thead", {}, el("tr", {}, ...["Type", "Reason", "Message", "Count", "Last seen"].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...data.events.map((e) => el("tr", {}, el("td", {}, e.type), el("td", {}, e.reason), el("td", {}, e.message), el("td", { class: "num" }, e.count), el("td", {}, e.last ? formatAge(Date.now() / 1000 - e.last) + " ago" : ""))))));
  section.replaceChildren(...parts);
}

function makeLogView(ns, name, section, currentPage) {
  const replica = el("select", { id: "log-replica" }, el("option", { value: "" }, "all replicas"));
  const search = el("input", { id: "log-search", placeholder: "search" });
  const download = el("a", { id: "log-download" }, "Download");
  const state = el("span", { id: "log-state", class: "muted" });
  const pre = el("pre", { id: "log", class: "log" });
  const partial = el("div", { id: "log-partial" }); // unfinished last lines: a bar drawn in place
  section.replaceChildren(el("div", { class: "logbar" }, replica, search, download, state), pre);
  const prefixed = (rep, text) => (replica.value ? text : `${rep} | ${text}`);
  let source = null, started = false, known = "";
  function href() {
    const q = new URLSearchParams();
    if (replica.value) q.set("replica", replica.value);
    return q;
  }
  function open() {
    if (source) source.close();
    pre.replaceChildren(partial);
    partial.replaceChildren();
    const q = href();
    download.href = `/api/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/logs?${q}`;
    state.textContent = "following";
    source = new EventSource(`/api/stream/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/logs?${q}`);
    source.addEventListener("lines", (e) => {
      const rows = JSON.parse(e.data);
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      const needle = search.value;
      const frag = document.createDocumentFragment();
      for (const [rep, _container, text] of rows) {
        const line = el("div", { class: "line" }, prefixed(rep, text));
        if (needle && !line.textContent.includes(needle)) line.hidden = true;
        frag.append(line);
      }
      pre.insertBefore(frag, partial);
      while (pre.childElementCount > MAX_LOG_LINES + 1) pre.firstElementChild.remove();
      if (atBottom) pre.scrollTop = pre.scrollHeight;
    });
    source.addEventListener("partial", (e) => {
      const rows = JSON.parse(e.data);
      partial.replaceChildren(...rows.map(([rep, _container, text]) => el("div", { class: "partial" }, prefixed(rep, text))));
    });
    source.addEventListener("failed", (e) => { section.append(errorBox(JSON.parse(e.data))); });
    source.addEventListener("end", () => { state.textContent = "ended"; source.close(); });
    source.onerror = () => { state.textContent = "cannot read the logs"; source.close(); };
  }
  replica.addEventListener("change", open);
  search.addEventListener("input", () => {
    for (const line of pre.children) line.hidden = !!search.value && !line.textContent.includes(search.value);
  });
  return {
    start() { if (!started) { started = true; open(); } },
    replicas(list) {
      const names = list.map((r) => r.name).join(",");
      if (names === known) return;
      known = names;
      const chosen = replica.value;
      replica.replaceChildren(el("option", { value: "" }, "all replicas"), ...list.map((r) => el("option", { value: r.name }, r.name)));
      replica.value = list.some((r) => r.name === chosen) ? chosen : "";
    },
  };
}

const PALETTE = ["#1b5fae", "#d14a2b", "#2f8f46", "#8e44ad", "#c27c0e", "#17889c", "#b03a6f", "#555"];
let drawnProgress = "";

function renderProgress(section, progress, error) {
  const key = JSON.stringify(progress) + (section.hidden ? "h" : "");
  if (key === drawnProgress) return;
  drawnProgress = key;
  if (error) { section.replaceChildren(errorBox(`cannot read the progress: ${error}`)); return; }
  if (!progress || !progress.latest) {
    section.replaceChildren(el("p", { id: "no-progress", class: "muted" },
      "No progress reported yet. Training code posts it to $KUBEFLOW_TRAINER_SERVER_URL (trainop.trainer_progress.post_progress); log lines are not parsed for metrics."));
    return;
  }
  const latest = progress.latest;
  const parts = [kvTable([
    ["Progress", latest.progressPercentage != null ? `${latest.progressPercentage}%` : "—"],
    ["Remaining", latest.estimatedRemainingSeconds != null ? formatAge(latest.estimatedRemainingSeconds) : "—"],
    ["Updated", latest.lastUpdatedTime || "—"],
  ])];
  const charts = [];
  for (const [metric, byReplica] of Object.entries(progress.series)) {
    const xs = [...new Set(Object.values(byReplica).flatMap((points) => points.map((p) => p[0])))].sort((a, b) => a - b);
    const replicas = Object.keys(byReplica);
    const data = [xs, ...replicas.map((r) => { const m = new Map(byReplica[r]); return xs.map((x) => (m.has(x) ? m.get(x) : null)); })];
    const box = el("div", { class: "chart", id: "chart-" + metric, "data-points": JSON.stringify(Object.fromEntries(replicas.map((r) => [r, byReplica[r].length]))) });
    parts.push(el("h2", {}, metric), box);
    charts.push([box, metric, replicas, data]);
  }
  section.replaceChildren(...parts);
  for (const [box, metric, replicas, data] of charts) {
    new uPlot({
      width: Math.min(900, document.body.clientWidth - 60), height: 260,
      scales: { x: { time: false } },
      axes: [{ label: progress.x }, { label: metric }],
      series: [{ label: progress.x }, ...replicas.map((r, i) => ({ label: `rank ${r}`, stroke: PALETTE[i % PALETTE.length], width: 2, points: { show: true } }))],
    }, data, box);
  }
}

// ---- routing ----

const match = location.pathname.match(/^\/jobs\/([^/]+)\/([^/]+)$/);
if (match) jobPage(decodeURIComponent(match[1]), decodeURIComponent(match[2]));
else jobsPage();
