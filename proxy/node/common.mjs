// Shared by the scripts of proxy/node: the settings that proxy/node_test.go
// passes in the environment, a fetch that counts the HTTP requests the
// client makes (retries included), and the one JSON line each script prints.

/** The proxy's base URL (no trailing slash, no /v1). */
export const baseURL = required('LOOPGUARD_BASE_URL');
/** Whether the script asks for streamed responses. */
export const stream = process.env.LOOPGUARD_STREAM === '1';
/** Which API the @openai/agents script's model speaks: responses or chat. */
export const api = process.env.LOOPGUARD_API || 'responses';
/** The most model requests a hand-written loop makes before it gives up. */
export const maxRequests = 10;

/** The tool's JSON Schema, as the hand-written loops declare it. */
export const searchSchema = {
  type: 'object',
  properties: { q: { type: 'string' } },
  required: ['q'],
  additionalProperties: false,
};

function required(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return v.replace(/\/+$/, '');
}

/** What happened, printed as one JSON line by done. */
export const report = {
  requests: 0, // model requests the loop (or the framework) made
  httpRequests: 0, // HTTP requests the client sent, retries included
  toolRuns: 0, // times the tool ran
  text: null, // the final answer's text
  finish: null, // its finish reason (stop, end_turn, completed)
  error: null, // {name, status, message, shouldRetry} of the error that ended the run
};

/** A fetch for the SDKs' fetch option that counts what it sends. */
export async function countingFetch(url, init) {
  report.httpRequests++;
  return fetch(url, init);
}

/** The tool: it runs, and finds nothing, every time. */
export function search() {
  report.toolRuns++;
  return 'no results';
}

/** Prints the report and exits 0: the Go test judges it. */
export function done(err) {
  if (err !== undefined) {
    report.error = {
      name: err?.constructor?.name ?? typeof err,
      status: err?.status ?? null,
      message: String(err?.message ?? err),
      shouldRetry: err?.headers?.get?.('x-should-retry') ?? err?.headers?.['x-should-retry'] ?? null,
    };
  }
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exit(0);
}

/** Runs main and reports what it returned or threw. */
export function main(fn) {
  fn().then(() => done(), (err) => done(err));
}
