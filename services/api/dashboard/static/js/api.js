// Talking to the API: conditional GETs, a poller paced by the server, and the run feed that
// keeps one run's history in memory and asks only for what changed.

class ApiError extends Error {
  constructor(status, detail) {
    super(status ? `${status}: ${detail}` : detail);
    this.status = status;
  }
}

/** GET JSON. With `etag`, a 304 answer resolves to {notModified: true}. */
export async function getJSON(url, etag = null) {
  let response;
  try {
    // no-store: we do our own revalidation with If-None-Match, the HTTP cache stays out of it.
    response = await fetch(url, {cache: "no-store", headers: etag ? {"If-None-Match": etag} : {}});
  } catch (error) {
    throw new ApiError(0, `cannot reach the API (${error.message})`);
  }
  if (response.status === 304) return {notModified: true, etag};
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail ?? detail; } catch { /* not JSON */ }
    throw new ApiError(response.status, typeof detail === "string" ? detail : JSON.stringify(detail));
  }
  return {notModified: false, etag: response.headers.get("ETag"), body: await response.json()};
}

/** Calls `step()` (async, returns the seconds until the next call) until stopped. Errors go to
 * `onError` and back off; the next success goes to `onOk`. */
export class Poller {
  constructor(step, {onOk = () => {}, onError = () => {}} = {}) {
    Object.assign(this, {step, onOk, onError, timer: null, stopped: false, failures: 0});
  }

  start() {
    this.tick();
    return this;
  }

  async tick() {
    if (this.stopped) return;
    let wait;
    try {
      wait = await this.step();
      this.failures = 0;
      if (!this.stopped) this.onOk();
    } catch (error) {
      this.failures += 1;
      wait = Math.min(30, 2 ** this.failures);
      if (!this.stopped) this.onError(error, wait);
    }
    if (!this.stopped) this.timer = setTimeout(() => this.tick(), wait * 1000);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** One run's data as the dashboard holds it: iterations and eval points keyed by iteration,
 * merged from deltas of GET /api/dashboard/runs/{id}/summary. */
export class RunFeed {
  /** `compact`: only what a comparison draws (no iteration rows, no per-family breakdown). */
  constructor(runId, ks = [1, 4, 8], {compact = false} = {}) {
    Object.assign(this, {runId, ks, compact, version: null, cursor: null, etag: null, run: null, pollS: 5,
                         iterations: new Map(), evals: new Map(), loaded: false,
                         phases: []});  // [{from, to, phase, label}]: curriculum phases, whole
  }

  url() {
    const params = new URLSearchParams(this.ks.map(k => ["k", k]));
    if (this.compact) params.set("compact", "true");
    if (this.version !== null) params.set("since_version", this.version);
    if (this.cursor) params.set("changed_after", this.cursor);
    return `/api/dashboard/runs/${this.runId}/summary?${params}`;
  }

  /** One poll; resolves to true when something new arrived. */
  async refresh() {
    const answer = await getJSON(this.url(), this.etag);
    if (answer.notModified) return false;
    const body = answer.body;
    this.etag = answer.etag;
    this.pollS = body.poll_s;
    if (body.unchanged) return false;
    Object.assign(this, {version: body.version, cursor: body.cursor, run: body.run, phases: body.phases, loaded: true});
    for (const row of body.iterations) this.iterations.set(row.iteration, row);
    for (const point of body.evals) this.evals.set(point.iteration, point);
    return true;
  }

  sortedIterations() {
    return [...this.iterations.values()].sort((a, b) => a.iteration - b.iteration);
  }

  sortedEvals() {
    return [...this.evals.values()].sort((a, b) => a.iteration - b.iteration);
  }

  /** The label of the phase iteration `i` falls in (an eval after the last iteration: the last). */
  phaseAt(i) {
    return this.phases.findLast(band => band.from <= i)?.label ?? null;
  }

  /** The pass@k values that exist (k > 1: pass@1 is the pass rate). */
  passKs() {
    return this.ks.filter(k => k > 1 && this.sortedEvals().some(p => p.pass_at_k[k] !== null && p.pass_at_k[k] !== undefined));
  }
}
