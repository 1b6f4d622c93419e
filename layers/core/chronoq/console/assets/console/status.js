// The deployment's heartbeat in the console's header (GET /status): a job chronoq runs on itself
// every minute, through the whole path of a run. Shown on each page, as chronoq status shows it.

/** The heartbeat in a few words: its state, its last success's lag and age. */
export function heartbeatText(beat) {
  const success = beat.last_success;
  if (!success) return `heartbeat ${beat.state}: no run has succeeded yet`;
  const lag = success.lag_ms === null ? "" : `, ${success.lag_ms.toLocaleString("en")} ms late`;
  const age = beat.seconds_since_success === null ? "" : `, ${Math.round(beat.seconds_since_success)} s ago`;
  return `heartbeat ${beat.state}: last run ${success.status.toLowerCase()}${lag}${age}`;
}

/** Ask the API (`api(method, path)`) and show the answer in `element` (nothing if it fails). */
export async function showHeartbeat(api, element) {
  try {
    const beat = (await api("GET", "/status")).heartbeat;
    element.textContent = heartbeatText(beat);
    element.dataset.state = beat.state;
    element.title = `every ${beat.every_seconds} s; late over ${beat.max_lag_seconds} s of lag,`
      + ` missing after ${beat.max_silence_seconds} s without a success`;
  } catch {
    element.textContent = "";
  }
}
