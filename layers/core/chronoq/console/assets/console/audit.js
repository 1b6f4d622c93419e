// A job's audit trail on its page (GET /jobs/{id}/audit): every change made to it, newest first,
// who made it, from what (api, cli, console, apply) and what it changed. Words only: app.js draws.

const value = (v) => (v === null || v === undefined ? "-" : typeof v === "string" ? v : JSON.stringify(v));

/** What an entry changed, in a line: `priority: normal → high; name = nightly; run_id=…`. */
export function changeWords(entry) {
  const parts = (entry.changes || []).map((c) => (c.before === null || c.before === undefined
    ? `${c.field} = ${value(c.after)}`
    : `${c.field}: ${value(c.before)} → ${value(c.after)}`));
  for (const [key, v] of Object.entries(entry.detail || {})) parts.push(`${key}=${value(v)}`);
  return parts.join("; ");
}

/** An entry as the trail's table shows it: who by name (else the token's subject). */
export function entryWords(entry) {
  return {
    action: entry.action,
    by: entry.by_name || entry.by,
    source: entry.source,
    changes: changeWords(entry),
    request: entry.request_id,
  };
}
