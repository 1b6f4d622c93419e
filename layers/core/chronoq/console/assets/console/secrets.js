// Secrets in the console: what a job holds where a secret may be named, in words, and what the
// API's answers about secrets say. Pure: no DOM, no fetch. A job never holds a secret's value,
// and no answer carries one: only names are ever shown.

/**
 * A header's or a variable's value as the job holds it: text as it is (a placeholder such as
 * "Bearer {{ secret.crm-token }}" too), a reference {"secret": "crm-token"} as
 * "secret: crm-token", anything else as its JSON.
 */
export function valueText(value) {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && !Array.isArray(value)
    && Object.keys(value).length === 1 && typeof value.secret === "string") {
    return `secret: ${value.secret}`;
  }
  return JSON.stringify(value);
}

/** "Name: value" for each entry of a mapping (headers, environment), in its order. */
export function pairLines(values) {
  if (!values || typeof values !== "object") return [];
  return Object.entries(values).map(([name, value]) => `${name}: ${valueText(value)}`);
}

/**
 * The rows of a job's page that may name secrets, each [label, id, lines]: its target's
 * headers and environment, its webhook's headers (no lines: nothing to show).
 */
export function secretRows(job) {
  const target = (job && job.target) || {};
  const notify = (job && job.notify) || {};
  return [
    ["headers", "target-headers", pairLines(target.headers)],
    ["environment", "target-environment", pairLines(target.environment)],
    ["webhook headers", "webhook-headers", pairLines(notify.webhook_headers)],
  ];
}

/** Whom a job's notifications go to: "FAILED, TIMED_OUT -> https://…, ops@example.com". */
export function notifyText(notify) {
  if (!notify) return "";
  const to = [notify.webhook, notify.email].filter(Boolean);
  return to.length ? `${(notify.on || []).join(", ")} -> ${to.join(", ")}` : "";
}

/** The ids of the jobs a refused delete names (a 409's error.jobs); none otherwise. */
export function jobsNaming(error) {
  return error && error.status === 409 && Array.isArray(error.jobs) ? error.jobs.map(String) : [];
}
