// chronoq's web console: one module, no build step, no dependencies. It calls the API with the
// signed-in user's bearer token and renders with DOM calls (never HTML from data).

import { entryWords } from "./audit.js";
import { authorizeUrl, redeem } from "./pkce.js";
import { refusalWords } from "./refusal.js";
import { showHeartbeat } from "./status.js";
import { jobsNaming, notifyText, secretRows } from "./secrets.js";

const TOKEN_KEY = "chronoq.token";
const TERMINAL = new Set(["SUCCEEDED", "FAILED", "TIMED_OUT", "SKIPPED", "MISSED", "CANCELLED"]);
const REFRESH_MS = { jobs: 5000, job: 3000, run: 2000 };
const DAYS = { 0: "Sundays", 1: "Mondays", 2: "Tuesdays", 3: "Wednesdays", 4: "Thursdays",
  5: "Fridays", 6: "Saturdays", 7: "Sundays", sun: "Sundays", mon: "Mondays", tue: "Tuesdays",
  wed: "Wednesdays", thu: "Thursdays", fri: "Fridays", sat: "Saturdays" };

const main = document.getElementById("main");
let config = { api: "", cognito: null };
let timer = null;
let view = 0; // bumped on every navigation: answers for an older view are dropped

// --- DOM ------------------------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const badge = (status) => h("span", { class: `badge s-${String(status).toLowerCase()}` }, status);
const link = (href, text, attrs = {}) => h("a", { href, ...attrs }, text);

function table(columns, rows, attrs = {}) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows));
}

function fields(pairs) {
  return h("dl", { class: "fields" },
    pairs.filter(([, v]) => v !== "" && v !== null && v !== undefined)
      .flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// --- words and times ------------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, "0");

export function shortTime(value) {
  if (!value) return "";
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) return String(value);
  return at.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function span(seconds) {
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.floor(seconds);
  if (whole < 3600) return `${Math.floor(whole / 60)}m${pad(whole % 60)}s`;
  if (whole < 86400) return `${Math.floor(whole / 3600)}h${pad(Math.floor((whole % 3600) / 60))}m`;
  return `${Math.floor(whole / 86400)}d${Math.floor((whole % 86400) / 3600)}h`;
}

function relative(value) {
  if (!value) return "";
  const seconds = (new Date(value).getTime() - Date.now()) / 1000;
  return seconds >= 0 ? `in ${span(seconds)}` : `${span(-seconds)} ago`;
}

const when = (value) => (value ? `${shortTime(value)} (${relative(value)})` : "");

export function cronWords(expression) {
  const f = expression.trim().split(/\s+/);
  if (f.length !== 5) return `cron ${expression}`;
  const [minute, hour, day, month, weekday] = f;
  const digits = (s) => /^\d+$/.test(s);
  const stars = (...xs) => xs.every((x) => x === "*");
  if (stars(...f)) return "every minute";
  if (minute.startsWith("*/") && stars(hour, day, month, weekday)) {
    return `every ${minute.slice(2)} minutes`;
  }
  if (!(digits(minute) && month === "*")) return `cron ${expression}`;
  if (stars(hour, day, weekday)) return `hourly at :${pad(Number(minute))}`;
  if (!digits(hour)) return `cron ${expression}`;
  const clock = `${pad(Number(hour))}:${pad(Number(minute))}`;
  if (day === "*" && weekday === "*") return `daily at ${clock}`;
  if (day === "*" && weekday.toLowerCase() === "1-5") return `weekdays at ${clock}`;
  if (day === "*" && weekday.toLowerCase() === "mon-fri") return `weekdays at ${clock}`;
  if (day === "*" && DAYS[weekday.toLowerCase()]) return `${DAYS[weekday.toLowerCase()]} at ${clock}`;
  if (digits(day) && weekday === "*") return `monthly on day ${Number(day)} at ${clock}`;
  return `cron ${expression}`;
}

// --- completion triggers: an after job's upstreams, a job's downstreams, a run's triggers ------

export function afterWords(job) {
  const names = (job.upstreams || []).map((u) => u.name || `${u.id} (deleted)`);
  if (!names.length) return scheduleWords(job.schedule);
  const listed = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `after ${listed}, on ${job.schedule.on}, waiting up to ${span(job.schedule.within_seconds)}`;
}

function linkedJobs(id, jobs) {
  if (!jobs || !jobs.length) return "";
  return h("span", { id }, jobs.flatMap((j, n) => [n ? ", " : "",
    j.name ? link(`#/jobs/${encodeURIComponent(j.id)}`, j.name) : `${j.id} (deleted)`,
    j.state && j.state !== "ACTIVE" ? ` (${j.state.toLowerCase()})` : ""]));
}

function linkedRuns(id, runs) {
  if (!runs || !runs.length) return "";
  return h("span", { id }, runs.flatMap((r, n) => [n ? ", " : "", link(`#/runs/${encodeURIComponent(r)}`, r)]));
}

export function scheduleWords(schedule) {
  if (!schedule) return "";
  let text;
  if (schedule.type === "at") return `once at ${shortTime(schedule.at)}`;
  if (schedule.type === "after") return `after ${schedule.jobs.length} job${schedule.jobs.length === 1 ? "" : "s"}, on ${schedule.on}`;
  if (schedule.type === "rate") text = `every ${schedule.every}`;
  else if (schedule.type === "cron") {
    text = cronWords(schedule.expression || "");
    if (schedule.timezone && schedule.timezone !== "UTC") text += ` (${schedule.timezone})`;
  } else return JSON.stringify(schedule);
  if (schedule.end_at) text += ` until ${shortTime(schedule.end_at)}`;
  return text;
}

function targetWords(target) {
  if (!target) return "";
  const detail = {
    http: `${target.method || "POST"} ${target.url}`,
    python: `${target.task} ${JSON.stringify(target.args || {})}`,
    lambda: target.function_arn, sqs: target.queue_url, sns: target.topic_arn,
    eventbridge: `bus ${target.event_bus || "default"}`,
    container: `${target.image} ${(target.command || []).join(" ")}`,
  }[target.type];
  return `${target.type} ${detail || ""}`.trim();
}

// --- labels -----------------------------------------------------------------------------------

/** "team=data env=prod" (or commas) as the API's selectors, ["team=data", "env=prod"]. */
export function selectors(text) {
  return String(text || "").split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

/** A job's labels as chips; each filters the jobs by itself. */
function labelChips(labels) {
  return Object.entries(labels || {}).sort(([a], [b]) => a.localeCompare(b)).map(([key, value]) =>
    link(`#/?label=${encodeURIComponent(`${key}=${value}`)}`, `${key}=${value}`,
      { class: "label", title: `the jobs labelled ${key}=${value}` }));
}

/** A job's headers, variables, webhook headers: a line each ("secret: name" for a reference). */
const pairRows = (job) => secretRows(job).map(([label, id, lines]) =>
  [label, lines.length ? h("span", { id, class: "pairs" }, lines.map((line) => h("code", {}, line))) : ""]);

/** A silent job's badge (no run succeeded within its expect). */
function silentBadge(job) {
  return h("span", { class: "badge s-silent", title: `silent since ${shortTime(job.silent_since)}` }, "SILENT");
}

function runsLimit(job) {
  if (job.max_runs === null || job.max_runs === undefined) return "";
  return `${job.max_runs}${job.final_run_at ? ` (the last at ${shortTime(job.final_run_at)})` : ""}`;
}

const lag = (run) => (typeof run.lag_ms === "number" ? span(run.lag_ms / 1000) : "");

function seconds(run) {
  if (!run.started_at) return null;
  const end = run.finished_at ? new Date(run.finished_at) : new Date();
  return (end.getTime() - new Date(run.started_at).getTime()) / 1000;
}

const duration = (run) => (seconds(run) === null ? "" : span(seconds(run)));

// --- the token and the API --------------------------------------------------------------------

const token = () => localStorage.getItem(TOKEN_KEY);

function claims(jwt) {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), "=")));
  } catch {
    return null;
  }
}

class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code;
    this.field = error.field || null;
    this.jobs = Array.isArray(error.jobs) ? error.jobs : null; // a 409's: the jobs in the way
  }
}

async function api(method, path, body) {
  const sent = token();
  const headers = { Authorization: `Bearer ${sent}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const answer = await fetch(config.api + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (answer.status === 401) {
    // the likely cause, from the token this request sent (another request's refusal may have
    // signed out meanwhile), and what to do
    signOut(refusalWords(claims(sent || ""), Date.now()));
    throw new ApiError(401, { message: "Unauthorized" });
  }
  if (!answer.ok) throw new ApiError(answer.status, (data && data.error) || { message: text });
  return data;
}

function signOut(message) {
  localStorage.removeItem(TOKEN_KEY);
  location.hash = "#/";
  render(message);
}

// --- views ------------------------------------------------------------------------------------

function every(ms, load) {
  clearInterval(timer);
  timer = setInterval(load, ms);
}

/** Calls ``load`` and shows its failure in ``where``, unless the user has moved on. */
async function guarded(current, where, load) {
  try {
    await load();
    where.replaceChildren();
  } catch (error) {
    if (current !== view || error.status === 401) return;
    where.replaceChildren(h("p", { class: "error", role: "alert" }, error.message));
  }
}

function signInView(message) {
  const input = h("textarea", { id: "token", rows: 4, placeholder: "eyJhbGciOi…", required: true });
  const form = h("form", { id: "sign-in-form", class: "card narrow" },
    h("h1", {}, "Sign in"),
    message ? h("p", { class: "error", role: "alert" }, message) : null,
    h("label", { for: "token" }, "Bearer token"),
    input,
    h("p", { class: "hint" },
      "Locally: ", h("code", {}, "chronoq token alice"),
      ", run in the directory chronoq local runs in (or the admin token it printed at start-up).",
      " On AWS: a Cognito ID token of the stack's user pool."),
    h("button", { type: "submit", id: "sign-in" }, "Sign in"),
    config.cognito ? h("p", {}, "or ", h("a", { href: "#", id: "cognito", onclick: signInWithCognito }, "sign in with Cognito")) : null);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim().replace(/^Bearer\s+/i, "");
    if (!claims(value)) {
      render("That is not a token (a JWT: three dot-separated parts).");
      return;
    }
    localStorage.setItem(TOKEN_KEY, value);
    location.hash = "#/";
    render();
  });
  main.replaceChildren(form);
}

const redirectUri = () => location.origin + location.pathname;

async function signInWithCognito(event) { // the hosted UI, authorization code with PKCE
  event.preventDefault();
  location.assign(await authorizeUrl(config.cognito, redirectUri(), sessionStorage));
}

async function jobsView(current, params) {
  const status = h("div");
  const body = h("tbody");
  const wanted = params.getAll("label");
  const silent = params.get("silent") === "true"; // only the silent jobs (docs/api/notifications.md)
  const filter = h("input", { id: "label-filter", placeholder: "team=data env=prod",
    value: wanted.join(" "), "aria-label": "Labels the jobs must have", autocomplete: "off" });
  const silentOnly = h("input", { id: "silent-filter", type: "checkbox", checked: silent });
  const form = h("form", { id: "filter", class: "filter" }, h("label", { for: "label-filter" }, "Labels"),
    filter, h("label", { for: "silent-filter", class: "check" }, silentOnly, "Silent only"),
    h("button", { type: "submit", class: "secondary" }, "Filter"),
    wanted.length || silent ? link("#/", "Clear", { id: "clear-filter" }) : null);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams(selectors(filter.value).map((s) => ["label", s]));
    if (silentOnly.checked) query.append("silent", "true");
    location.hash = query.toString() ? `#/?${query}` : "#/";
  });
  main.replaceChildren(
    h("div", { class: "bar" }, h("h1", {}, "Jobs"),
      link("#/new", "New job", { class: "button", id: "new-job" })),
    form,
    status,
    h("table", { id: "jobs" },
      h("thead", {}, h("tr", {}, ["Name", "State", "Schedule", "Next run", "Last run", "Labels"]
        .map((c) => h("th", {}, c)))),
      body));
  const labels = wanted.map((s) => `&label=${encodeURIComponent(s)}`).join("") + (silent ? "&silent=true" : "");
  const load = () => guarded(current, status, async () => {
    const jobs = [];
    let next = null;
    do { // every page: an owner has at most a few thousand jobs
      const page = await api("GET", `/jobs?limit=100${labels}${next ? `&next_token=${encodeURIComponent(next)}` : ""}`);
      jobs.push(...page.jobs);
      next = page.next_token;
    } while (next && jobs.length < 1000);
    const last = await Promise.all(jobs.map((job) =>
      api("GET", `/jobs/${encodeURIComponent(job.id)}/runs?limit=1`).then((p) => p.runs[0], () => null)));
    if (current !== view) return;
    body.replaceChildren(...jobs.map((job, i) => h("tr", { "data-job": job.id },
      h("td", {}, link(`#/jobs/${encodeURIComponent(job.id)}`, job.name)),
      h("td", {}, badge(job.state), job.silent_since ? [" ", silentBadge(job)] : ""),
      h("td", {}, scheduleWords(job.schedule)),
      h("td", {}, when(job.next_run_at)),
      h("td", { class: "last-run" }, last[i]
        ? [link(`#/runs/${encodeURIComponent(last[i].id)}`, badge(last[i].status)), " ", relative(last[i].finished_at || last[i].scheduled_at)]
        : ""),
      h("td", { class: "labels" }, labelChips(job.labels)))));
    if (!jobs.length) {
      body.append(h("tr", {}, h("td", { colspan: 6, class: "empty" },
        silent ? "No job is silent." : wanted.length ? `No job has ${wanted.join(" and ")}.` : "No jobs yet.")));
    }
  });
  await load();
  every(REFRESH_MS.jobs, load);
}

function flowWords(flow) {
  if (!flow) return "";
  const limits = [flow.max_running ? `${flow.max_running} running at once` : "",
    flow.max_starts_per_second ? `${flow.max_starts_per_second} starts a second` : ""].filter(Boolean);
  return `${flow.key}: ${limits.join(", ")}`;
}

function backfillTable(items, cancel) {
  return table(["Backfill", "State", "From", "To", "Ended", ""], items.map((b) =>
    h("tr", { "data-backfill": b.id, "data-state": b.state },
      h("td", {}, b.id), h("td", {}, badge(b.state)), h("td", {}, shortTime(b.from)),
      h("td", {}, shortTime(b.to)), h("td", {}, `${b.ended ?? "?"} of ${b.total}`),
      h("td", {}, b.state === "RUNNING" ? h("button", { class: "danger cancel-backfill", onclick: () => cancel(b) }, "Cancel") : ""))),
  { id: "backfills", class: "backfills" });
}

function auditTable(entries) {
  return table(["When", "Action", "By", "From", "Changes"], entries.map((entry) => {
    const words = entryWords(entry);
    return h("tr", { "data-action": words.action, title: `request ${words.request}` },
      h("td", {}, shortTime(entry.at)), h("td", {}, words.action), h("td", {}, words.by),
      h("td", {}, words.source), h("td", { class: "changes" }, words.changes));
  }), { id: "audit", class: "audit" });
}

function timeline(runs) {
  // newest first; each run's duration drawn as a bar, to the scale of the longest shown
  const longest = Math.max(0.001, ...runs.map((r) => seconds(r) || 0));
  return table(["Run", "Status", "Scheduled", "Lag", "Duration", "Attempts"], runs.map((run) =>
    h("tr", { "data-run": run.id, "data-status": run.status },
      h("td", {}, link(`#/runs/${encodeURIComponent(run.id)}`, run.id.slice(run.job_id.length + 1) || run.id)),
      h("td", {}, badge(run.status)),
      h("td", {}, shortTime(run.scheduled_at), run.trigger === "schedule" ? "" : ` (${run.trigger})`),
      h("td", {}, lag(run)),
      h("td", { class: "dur-cell" }, duration(run), h("span", {
        class: `dur s-${run.status.toLowerCase()}`,
        "data-width": Math.max(2, Math.round((100 * (seconds(run) || 0)) / longest)),
      })),
      h("td", {}, run.attempts.length))), { id: "runs", class: "timeline" });
}

function sizeBars(root) { // widths from data attributes: the CSP allows no inline styles
  for (const bar of root.querySelectorAll(".dur[data-width]")) bar.style.width = `${bar.dataset.width}%`;
}

async function jobView(current, id) {
  const path = `/jobs/${encodeURIComponent(id)}`;
  const status = h("div");
  const head = h("div");
  const upcoming = h("div");
  const runs = h("div");
  const backfills = h("div");
  const trail = h("div");
  let trailOf = null; // the job's version whose trail is shown (null: read it again)
  const backfillForm = h("form", { id: "backfill-form", class: "inline" },
    h("label", { for: "backfill-from" }, "From"),
    h("input", { id: "backfill-from", type: "datetime-local", required: true }),
    h("label", { for: "backfill-to" }, "to"),
    h("input", { id: "backfill-to", type: "datetime-local", required: true }),
    h("span", { class: "hint" }, "UTC"),
    h("button", { type: "submit", id: "backfill" }, "Backfill"));
  backfillForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const utc = (id) => `${backfillForm.querySelector(id).value}:00Z`;
    guarded(current, status, async () => {
      await api("POST", `${path}/backfill`, { from: utc("#backfill-from"), to: utc("#backfill-to") });
      trailOf = null;
      await load();
    });
  });
  const rerunFailed = () => guarded(current, status, async () => {
    const to = new Date();
    const from = new Date(to.getTime() - 86400 * 1000);
    const answer = await api("POST", `${path}/rerun`, { from: from.toISOString(), to: to.toISOString() });
    status.replaceChildren(h("p", { class: "hint", id: "rerun-answer" },
      answer.runs.length ? `${answer.runs.length} run(s) re-run.` : "No failed run in the last 24 hours."));
    trailOf = null;
    await load();
  });
  const act = (action, confirmText) => async () => {
    if (confirmText && !window.confirm(confirmText)) return;
    await guarded(current, status, async () => {
      if (action === "delete") {
        await api("DELETE", path);
        location.hash = "#/";
        return;
      }
      await api("POST", `${path}/${action}`);
      trailOf = null;
      await load();
    });
  };
  main.replaceChildren(status, head,
    h("div", { class: "actions" },
      h("button", { id: "pause", onclick: act("pause") }, "Pause"),
      h("button", { id: "resume", onclick: act("resume") }, "Resume"),
      h("button", { id: "trigger", onclick: act("trigger") }, "Trigger now"),
      h("button", { id: "rerun-failed", onclick: rerunFailed }, "Re-run failed (24 h)"),
      link(`#/jobs/${encodeURIComponent(id)}/edit`, "Edit", { class: "button", id: "edit" }),
      h("button", { id: "delete", class: "danger", onclick: act("delete", "Delete this job?") }, "Delete")),
    h("div", { class: "columns" },
      h("section", {}, h("h2", {}, "Runs"), runs,
        h("h2", {}, "Backfills"), backfillForm, backfills,
        h("h2", {}, "Audit trail"), trail),
      h("section", { class: "side" }, h("h2", {}, "Upcoming"), upcoming)));
  let previewed = null;
  const load = () => guarded(current, status, async () => {
    const [job, page, filled] = await Promise.all([api("GET", path), api("GET", `${path}/runs?limit=50`),
      api("GET", `${path}/backfills?limit=10`)]);
    if (current !== view) return;
    const [headers, environment, webhookHeaders] = pairRows(job);
    head.replaceChildren(
      h("div", { class: "bar" }, h("h1", { id: "job-name" }, job.name), badge(job.state)),
      fields([["id", job.id], ["schedule", job.schedule.type === "after" ? afterWords(job) : scheduleWords(job.schedule)],
        ["upstreams", linkedJobs("job-upstreams", job.upstreams)],
        ["downstreams", linkedJobs("job-downstreams", job.downstreams)],
        ["next run", when(job.next_run_at)],
        ["next start", job.next_start_at !== job.next_run_at ? when(job.next_start_at) : ""],
        ["window", job.schedule.window_seconds ? `each run starts within ${span(job.schedule.window_seconds)} of its fire time` : ""],
        ["flow", flowWords(job.flow)], ["target", targetWords(job.target)],
        headers, environment, ["notify", notifyText(job.notify)], webhookHeaders,
        ["priority", job.priority], ["timeout", `${job.timeout_seconds} s`],
        ["retries", `${job.retry.max_attempts} attempts`], ["max runs", runsLimit(job)],
        ["when completed", job.on_complete === "delete" ? "deleted after its last run" : ""],
        ["labels", job.labels && Object.keys(job.labels).length ? h("span", { id: "job-labels" }, labelChips(job.labels)) : ""],
        ["expect", job.expect ? `a success within ${span(job.expect.success_within_seconds)}` : ""],
        ["last success", job.expect ? when(job.last_success_at) || "none yet" : ""],
        ["silent since", job.silent_since ? h("span", { id: "job-silent" }, silentBadge(job), " ", when(job.silent_since)) : ""],
        ["created", shortTime(job.created_at)]]));
    main.querySelector("#pause").hidden = job.state !== "ACTIVE";
    main.querySelector("#resume").hidden = job.state !== "PAUSED";
    runs.replaceChildren(page.runs.length ? timeline(page.runs) : h("p", { class: "empty" }, "No runs yet."));
    sizeBars(runs);
    backfills.replaceChildren(filled.backfills.length
      ? backfillTable(filled.backfills, (b) => guarded(current, status, async () => {
        await api("POST", `${path}/backfills/${encodeURIComponent(b.id)}/cancel`);
        trailOf = null;
        await load();
      }))
      : h("p", { class: "empty" }, "None."));
    if (trailOf !== job.version) { // (read again when the job changed, or the page changed it)
      const changes = await api("GET", `${path}/audit?limit=20`);
      if (current !== view) return;
      trailOf = job.version;
      trail.replaceChildren(changes.entries.length ? auditTable(changes.entries)
        : h("p", { class: "empty" }, "No change recorded."));
    }
    const key = JSON.stringify([job.schedule, job.state]);
    if (key !== previewed) {
      previewed = key;
      if (job.state !== "ACTIVE") {
        upcoming.replaceChildren(h("p", { class: "empty" }, `None while ${job.state.toLowerCase()}.`));
        return;
      }
      const preview = await api("POST", "/schedules/preview", { schedule: job.schedule, count: 10, job_id: job.id });
      if (preview.description) { // (an after job: no fire times of its own)
        upcoming.replaceChildren(h("p", { id: "upcoming-after" }, `Runs ${afterWords(job)}.`));
        return;
      }
      upcoming.replaceChildren(preview.fire_times.length
        ? h("ol", { id: "upcoming" }, preview.fire_times.map((t) => h("li", { title: t.local }, shortTime(t.utc),
          t.starts_at && t.starts_at !== t.utc ? h("span", { class: "hint" }, ` starts ${shortTime(t.starts_at).slice(11)}`) : "")))
        : h("p", { class: "empty" }, "No fire time left."));
    }
  });
  await load();
  every(REFRESH_MS.job, load);
}

async function runView(current, id) {
  const path = `/runs/${encodeURIComponent(id)}`;
  const status = h("div");
  const head = h("div");
  const attempts = h("div");
  const output = h("pre", { id: "output" });
  const logs = h("pre", { id: "logs" });
  main.replaceChildren(status, head,
    h("h2", {}, "Attempts"), attempts, h("h2", {}, "Output"), output, h("h2", {}, "Logs"), logs);
  const load = () => guarded(current, status, async () => {
    const run = await api("GET", path);
    const [out, log] = await Promise.all([
      api("GET", `${path}/output`).catch(() => null), api("GET", `${path}/logs`)]);
    if (current !== view) return;
    head.replaceChildren(
      h("div", { class: "bar" }, h("h1", {}, "Run"), h("span", { id: "run-status" }, badge(run.status))),
      fields([["id", run.id], ["job", link(`#/jobs/${encodeURIComponent(run.job_id)}`, run.job_id)],
        ["trigger", run.trigger], ["scheduled", shortTime(run.scheduled_at)],
        ["planned start", run.starts_at !== run.scheduled_at ? shortTime(run.starts_at) : ""],
        ["rerun of", run.rerun_of ? link(`#/runs/${encodeURIComponent(run.rerun_of)}`, run.rerun_of) : ""],
        ["backfill", run.backfill_id || ""],
        ["triggered by", linkedRuns("run-triggered-by", run.triggered_by)],
        ["triggered", linkedRuns("run-triggered", run.triggered)],
        ["flow wait", typeof run.flow_wait_ms === "number" ? span(run.flow_wait_ms / 1000) : ""],
        ["queued", shortTime(run.queued_at)], ["started", shortTime(run.started_at)],
        ["finished", shortTime(run.finished_at)], ["lag", lag(run)], ["duration", duration(run)],
        ["error", run.error], ["reason", run.reason]]),
      TERMINAL.has(run.status)
        ? h("button", { id: "rerun", onclick: () => guarded(current, status, async () => {
          const again = await api("POST", `${path}/rerun`);
          location.hash = `#/runs/${encodeURIComponent(again.id)}`;
        }) }, "Re-run")
        : h("button", { id: "cancel", onclick: () => guarded(current, status, async () => {
          await api("POST", `${path}/cancel`);
          await load();
        }) }, "Cancel run"));
    attempts.replaceChildren(run.attempts.length
      ? table(["#", "Started", "Finished", "Outcome", "Error"], run.attempts.map((a) => h("tr", {},
        h("td", {}, a.attempt), h("td", {}, shortTime(a.started_at)), h("td", {}, shortTime(a.finished_at)),
        h("td", {}, badge(a.outcome)), h("td", {}, a.error || ""))), { id: "attempts" })
      : h("p", { class: "empty" }, "None yet."));
    output.textContent = out === null || out === undefined ? "" : JSON.stringify(out, null, 2);
    logs.textContent = log.lines.join("\n");
    if (TERMINAL.has(run.status)) clearInterval(timer); // refreshed only while it runs
  });
  every(REFRESH_MS.run, load);
  await load();
}

// --- secrets ----------------------------------------------------------------------------------

async function secretsView(current) {
  const status = h("div");
  const body = h("tbody");
  const error = h("p", { class: "error", role: "alert", hidden: true, id: "secret-error" });
  const said = h("p", { class: "hint", id: "secret-answer", role: "status" });
  const name = h("input", { id: "secret-name", "data-field": "name", placeholder: "crm-token", autocomplete: "off", required: true });
  // the value: a password box (not shown, not kept by the browser), emptied once sent
  const value = h("input", { id: "secret-value", "data-field": "value", type: "password", autocomplete: "new-password", required: true });
  const form = h("form", { id: "secret-form", class: "card" },
    h("h2", {}, "Keep a secret"),
    error,
    h("div", { class: "field" }, h("label", { for: "secret-name" }, "Name"), name),
    h("div", { class: "field" }, h("label", { for: "secret-value" }, "Value"), value,
      h("small", {}, "Write-only: never shown again. The same name again keeps a new version; the jobs naming it use it from their next run.")),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "save-secret" }, "Save")),
    said);
  let known = new Set();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = value.value;
    value.value = "";
    error.hidden = true;
    said.textContent = "";
    const chosen = name.value.trim();
    guarded(current, status, async () => {
      try {
        const secret = await api("PUT", `/secrets/${encodeURIComponent(chosen)}`, { value: text });
        said.textContent = `${known.has(secret.name) ? "Changed" : "Made"} ${secret.name}: version ${secret.version}.`;
      } catch (e) {
        if (e.status === 401) throw e;
        error.textContent = e.field && !e.message.startsWith(`${e.field}:`) ? `${e.field}: ${e.message}` : e.message;
        error.hidden = false;
      }
      await load();
    });
  });
  const remove = async (secret) => {
    if (!window.confirm(`Delete the secret ${secret.name}? Its value is gone for good.`)) return;
    try {
      await api("DELETE", `/secrets/${encodeURIComponent(secret.name)}`);
      status.replaceChildren();
      await load();
    } catch (e) {
      if (current !== view || e.status === 401) return;
      const jobs = jobsNaming(e); // refused while jobs name it: those, to change first
      status.replaceChildren(jobs.length
        ? h("div", { class: "error", role: "alert", id: "secret-in-use" }, h("p", {}, e.message),
          h("p", {}, `The jobs naming ${secret.name}:`),
          h("ul", {}, jobs.map((id) => h("li", {}, link(`#/jobs/${encodeURIComponent(id)}`, id)))))
        : h("p", { class: "error", role: "alert" }, e.message));
    }
  };
  main.replaceChildren(
    h("div", { class: "bar" }, h("h1", {}, "Secrets")),
    h("p", { class: "hint" }, "A job names a secret as a whole header or variable, ",
      h("code", {}, '{"secret": "NAME"}'), ", or inside a string, ", h("code", {}, "{{ secret.NAME }}"),
      ". Values are resolved when a run calls, and never shown."),
    status,
    h("table", { id: "secrets" },
      h("thead", {}, h("tr", {}, ["Name", "Version", "Updated", ""].map((c) => h("th", {}, c)))), body),
    form);
  const load = async () => {
    const page = await api("GET", "/secrets");
    if (current !== view) return;
    known = new Set(page.secrets.map((s) => s.name));
    body.replaceChildren(...page.secrets.map((secret) => h("tr", { "data-secret": secret.name },
      h("td", {}, secret.name), h("td", { class: "version" }, secret.version),
      h("td", {}, shortTime(secret.updated_at)),
      h("td", {}, h("button", { class: "danger delete-secret", onclick: () => remove(secret) }, "Delete")))));
    if (!page.secrets.length) body.append(h("tr", {}, h("td", { colspan: 4, class: "empty" }, "No secrets yet.")));
  };
  await guarded(current, status, load);
}

// --- the job form -----------------------------------------------------------------------------

const COMMON = ["name", "schedule", "target"];

function input(field, label, attrs = {}) {
  const id = `f-${field.replace(/\./g, "-")}`;
  const control = attrs.options
    ? h("select", { id, "data-field": field }, attrs.options.map((o) => h("option", { value: o }, o)))
    : attrs.rows
      ? h("textarea", { id, "data-field": field, rows: attrs.rows, placeholder: attrs.placeholder || null })
      : h("input", { id, "data-field": field, placeholder: attrs.placeholder || null, autocomplete: "off" });
  return h("div", { class: "field", "data-for": field },
    h("label", { for: id }, label), control, attrs.hint ? h("small", {}, attrs.hint) : null,
    h("p", { class: "field-error", role: "alert", hidden: true }));
}

function isoIn(seconds) {
  return new Date(Date.now() + seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
}

async function formView(current, id) {
  const job = id ? await api("GET", `/jobs/${encodeURIComponent(id)}`) : null;
  if (current !== view) return;
  const error = h("p", { class: "error", role: "alert", hidden: true, id: "form-error" });
  const form = h("form", { id: "job-form", class: "card", novalidate: true },
    h("h1", {}, job ? `Edit ${job.name}` : "New job"),
    error,
    input("name", "Name"),
    h("fieldset", {}, h("legend", {}, "Schedule"),
      // (an after job's schedule is kept as it is: changed through the API or the CLI)
      input("schedule.type", "Kind", { options: job && job.schedule.type === "after" ? ["after", "cron", "rate", "at"] : ["cron", "rate", "at"] }),
      input("schedule.expression", "Cron expression", { placeholder: "0 2 * * *", hint: "minute hour day-of-month month day-of-week" }),
      input("schedule.timezone", "Time zone", { placeholder: "UTC" }),
      input("schedule.every", "Every", { placeholder: "5 minutes" }),
      input("schedule.at", "At (ISO 8601)", { placeholder: "2026-11-25T21:48:30Z" })),
    h("fieldset", {}, h("legend", {}, "Target"),
      input("target.type", "Kind", { options: ["http", "python"] }),
      input("target.url", "URL", { placeholder: "https://example.com/hook" }),
      input("target.method", "Method", { options: ["POST", "GET", "PUT", "PATCH", "DELETE"] }),
      input("target.task", "Task", { placeholder: "chronoq.tasks:echo" }),
      input("target.args", "Arguments (JSON)", { rows: 2, placeholder: "{}" })),
    input("extra", "Other fields (JSON)", { rows: 6, placeholder: '{"priority": "high", "retry": {"max_attempts": 5}}',
      hint: "Merged into the job: priority, timeout_seconds, retry, concurrency, notify, labels, max_runs, on_complete, flow, expect, a target of another kind…" }),
    h("div", { class: "actions" },
      h("button", { type: "submit", id: "save" }, job ? "Save" : "Create"),
      link(job ? `#/jobs/${encodeURIComponent(job.id)}` : "#/", "Cancel", { class: "button secondary" })));
  main.replaceChildren(form);
  const get = (field) => form.querySelector(`[data-field="${field}"]`);
  const set = (field, value) => { if (value !== undefined && value !== null) get(field).value = value; };

  if (job) {
    set("name", job.name);
    const s = job.schedule;
    set("schedule.type", s.type);
    set("schedule.expression", s.expression);
    set("schedule.timezone", s.timezone);
    set("schedule.every", s.every);
    set("schedule.at", s.at);
    const t = job.target;
    const simple = t.type === "http" || t.type === "python";
    set("target.type", simple ? t.type : "http");
    set("target.url", t.url);
    set("target.method", t.method);
    set("target.task", t.task);
    if (t.args) set("target.args", JSON.stringify(t.args));
    const extra = {};
    for (const key of ["priority", "timeout_seconds", "concurrency", "start_deadline_seconds",
      "retry", "notify", "output_location", "max_runs", "on_complete", "labels", "flow", "expect"]) if (job[key] !== null) extra[key] = job[key];
    if (!simple) extra.target = t;
    set("extra", JSON.stringify(extra, null, 2));
  } else {
    set("schedule.at", isoIn(60));
    set("schedule.timezone", "UTC");
  }
  const shown = () => { // only the inputs of the kinds chosen
    const kind = get("schedule.type").value;
    for (const [field, kinds] of [["expression", ["cron"]], ["timezone", ["cron"]], ["every", ["rate"]], ["at", ["at"]]]) {
      form.querySelector(`[data-for="schedule.${field}"]`).hidden = !kinds.includes(kind);
    }
    const target = get("target.type").value;
    for (const [field, kinds] of [["url", ["http"]], ["method", ["http"]], ["task", ["python"]], ["args", ["python"]]]) {
      form.querySelector(`[data-for="target.${field}"]`).hidden = !kinds.includes(target);
    }
  };
  get("schedule.type").addEventListener("change", shown);
  get("target.type").addEventListener("change", shown);
  shown();

  const clear = () => {
    error.hidden = true;
    for (const p of form.querySelectorAll(".field-error")) { p.hidden = true; p.textContent = ""; }
    for (const f of form.querySelectorAll(".field.invalid")) f.classList.remove("invalid");
  };
  const show = (field, message) => { // at the field's input, else at the JSON, else on top
    let target = null;
    if (field) {
      const parts = field.split(".");
      for (let n = parts.length; n > 0 && !target; n -= 1) {
        const candidate = form.querySelector(`[data-for="${parts.slice(0, n).join(".")}"]`);
        if (candidate && !candidate.hidden) target = candidate;
      }
      if (!target || (!COMMON.includes(parts[0]) && parts[0] !== "extra")) target = form.querySelector('[data-for="extra"]');
    }
    if (!target) {
      error.textContent = message;
      error.hidden = false;
      return;
    }
    target.classList.add("invalid");
    const p = target.querySelector(".field-error");
    p.textContent = field && !message.startsWith(`${field}:`) ? `${field}: ${message}` : message;
    p.hidden = false;
    target.querySelector("[data-field]").focus();
  };
  const json = (field, text, fallback) => {
    if (!text.trim()) return fallback;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw Object.assign(new Error(`not JSON: ${e.message}`), { field });
    }
  };
  const body = () => {
    const kind = get("schedule.type").value;
    const schedule = { type: kind };
    if (kind === "cron") {
      schedule.expression = get("schedule.expression").value;
      schedule.timezone = get("schedule.timezone").value.trim() || "UTC";
    } else if (kind === "rate") schedule.every = get("schedule.every").value.trim();
    else if (kind === "after") Object.assign(schedule, job.schedule);
    else schedule.at = get("schedule.at").value.trim();
    if (job && job.schedule.type === kind) { // keep what the form does not show: bounds, window
      for (const key of ["start_at", "end_at", "window_seconds"]) {
        if (job.schedule[key] !== null && job.schedule[key] !== undefined) schedule[key] = job.schedule[key];
      }
    }
    const targetKind = get("target.type").value;
    const target = targetKind === "http"
      ? { type: "http", url: get("target.url").value.trim(), method: get("target.method").value }
      : { type: "python", task: get("target.task").value.trim(), args: json("target.args", get("target.args").value, {}) };
    if (job && job.target.type === targetKind) { // keep what the form does not show
      for (const [key, kept] of Object.entries(job.target)) if (target[key] === undefined) target[key] = kept;
    }
    const extra = json("extra", get("extra").value, {});
    if (typeof extra !== "object" || Array.isArray(extra) || extra === null) {
      throw Object.assign(new Error("must be a JSON object"), { field: "extra" });
    }
    return { name: get("name").value, schedule, target, ...extra };
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear();
    let spec;
    try {
      spec = body();
    } catch (e) {
      show(e.field, e.message);
      return;
    }
    try {
      const saved = job
        ? await api("PATCH", `/jobs/${encodeURIComponent(job.id)}`, { ...spec, version: job.version })
        : await api("POST", "/jobs", spec);
      location.hash = `#/jobs/${encodeURIComponent(saved.id)}`;
    } catch (e) {
      if (e.status !== 401) show(e.field, e.message);
    }
  });
}

// --- the router -------------------------------------------------------------------------------

async function render(message) {
  view += 1;
  const current = view;
  clearInterval(timer);
  const jwt = token();
  const who = document.getElementById("who");
  const out = document.getElementById("sign-out");
  const user = jwt ? claims(jwt) : null;
  who.textContent = user ? user.username || user["cognito:username"] || user.email || user.sub : "";
  out.hidden = !user;
  if (!user) {
    signInView(message);
    return;
  }
  showHeartbeat(api, document.getElementById("heartbeat"));
  const [route, query] = (location.hash.replace(/^#/, "") || "/").split("?");
  const parts = route.split("/").filter(Boolean).map(decodeURIComponent);
  try {
    if (parts.length === 0) await jobsView(current, new URLSearchParams(query || ""));
    else if (parts[0] === "new") await formView(current, null);
    else if (parts[0] === "jobs" && parts.length === 2) await jobView(current, parts[1]);
    else if (parts[0] === "jobs" && parts[2] === "edit") await formView(current, parts[1]);
    else if (parts[0] === "runs" && parts.length === 2) await runView(current, parts[1]);
    else if (parts[0] === "secrets" && parts.length === 1) await secretsView(current);
    else main.replaceChildren(h("p", { class: "error" }, `No page ${route}.`), link("#/", "Jobs"));
  } catch (error) {
    if (current === view && error.status !== 401) {
      main.replaceChildren(h("p", { class: "error", role: "alert" }, error.message), link("#/", "Back to the jobs"));
    }
  }
}

async function tokenFromRedirect() { // the hosted UI comes back with ?code=…&state=…
  if (!config.cognito || !location.search) return null;
  try {
    const jwt = await redeem(config.cognito, redirectUri(), location.search, sessionStorage);
    if (jwt) localStorage.setItem(TOKEN_KEY, jwt);
    return null;
  } catch (error) {
    return error.message;
  } finally {
    history.replaceState(null, "", location.pathname + location.hash);
  }
}

async function start() {
  try {
    const answer = await fetch("console/config.json", { cache: "no-cache" });
    if (answer.ok) config = { ...config, ...(await answer.json()) };
  } catch {
    // the defaults: the API on the console's own origin, tokens pasted
  }
  config.api = (config.api || "").replace(/\/$/, "");
  const refused = await tokenFromRedirect();
  document.getElementById("sign-out").addEventListener("click", () => signOut());
  window.addEventListener("hashchange", () => render());
  await render(refused || undefined);
}

start();
