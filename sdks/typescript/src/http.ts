// One request with the client's retry rule: a call the api may not have answered (no answer,
// a timeout, 502/503/504) or refused for now (429) is sent again, unchanged, after a backoff or
// the `Retry-After` the api gave. Every call this client makes is idempotent (score commands by
// their event id, attempts by their request id, entries once per run, reads), so a second send
// never makes a second effect: that is why the body is built once, before the first send.

import { LedgerboardError } from "./errors.js";
import { TokenHolder } from "./token.js";

export interface RetryPolicy {
  /** Sends per call, the first included (default 6). */
  maxAttempts: number;
  /** The first backoff; each next one doubles, up to `maxDelayMs` (defaults 200 and 5000). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** One send's bound, answer included (default 10,000). */
  timeoutMs: number;
  /** A `Retry-After` longer than this is not waited for: the call fails with `rate_limited`. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  timeoutMs: 10_000,
  maxRetryAfterMs: 60_000,
};

/** What `onRetry` is told before each repeated send. */
export interface RetryInfo {
  method: string;
  path: string;
  /** The send that failed (1: the first). */
  attempt: number;
  /** How long the client waits before the next send. */
  delayMs: number;
  /** `network_error`, `client_timeout`, or the api's code (`rate_limited`, `unavailable`, …). */
  code: string;
  /** The HTTP status, 0 when no answer arrived. */
  status: number;
  retryAfterMs: number | undefined;
}

export interface Transport {
  baseUrl: string;
  fetch: typeof fetch;
  retry: RetryPolicy;
  tokens: TokenHolder;
  onRetry: ((info: RetryInfo) => void) | undefined;
}

export interface Call {
  method: "GET" | "POST";
  path: string;
  query?: Record<string, string | number | undefined> | undefined;
  body?: unknown;
  signal?: AbortSignal | undefined;
  /** Added to the policy's timeout for this call (a long poll's wait). */
  extraTimeoutMs?: number;
}

const RETRY_STATUS = new Set([429, 502, 503, 504]);
const REFRESH_CODES = new Set(["token_expired", "token_key_unknown"]);

export function url(t: Transport, path: string, query?: Call["query"]): string {
  const u = new URL(t.baseUrl.replace(/\/+$/, "") + path);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined) u.searchParams.set(k, String(v));
  }
  return u.toString();
}

/** `Retry-After` in milliseconds: whole seconds, or an HTTP date. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

export function backoffMs(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(0, signal.reason));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted(0, signal?.reason));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function aborted(attempts: number, cause: unknown): LedgerboardError {
  return new LedgerboardError({
    status: 0, code: "aborted", message: "the caller aborted the call", attempts, cause,
  });
}

/** The api's error body, or a stand-in when the answer has none (a proxy's 502). */
async function refusal(res: Response, attempts: number): Promise<LedgerboardError> {
  let code = `http_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  let board: string | undefined;
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; board?: string | null } };
    if (body.error?.code) code = body.error.code;
    if (body.error?.message) message = body.error.message;
    board = body.error?.board ?? undefined;
  } catch {
    // Not JSON: keep the stand-in.
  }
  return new LedgerboardError({
    status: res.status, code, message, board, attempts,
    retryAfterMs: retryAfterMs(res.headers.get("retry-after")),
  });
}

/** Sends `call`, with the retry rule above and one token refresh; answers the JSON body. */
export async function send<T>(t: Transport, call: Call): Promise<T> {
  const target = url(t, call.path, call.query);
  // Serialised once: every send of this call carries exactly these bytes.
  const body = call.body === undefined ? undefined : JSON.stringify(call.body);
  let attempt = 0;
  let refreshed = false;
  for (;;) {
    attempt += 1;
    const token = await t.tokens.current();
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
    const timeout = new AbortController();
    const limitMs = t.retry.timeoutMs + (call.extraTimeoutMs ?? 0);
    const timer = setTimeout(() => timeout.abort(), limitMs);
    const onAbort = () => timeout.abort();
    call.signal?.addEventListener("abort", onAbort, { once: true });
    let failure: LedgerboardError;
    try {
      const res = await t.fetch(target, { method: call.method, headers, body, signal: timeout.signal });
      if (res.ok) return (await res.json()) as T;
      failure = await refusal(res, attempt);
    } catch (e) {
      if (call.signal?.aborted) throw aborted(attempt, e);
      const timedOut = timeout.signal.aborted;
      failure = new LedgerboardError({
        status: 0,
        code: timedOut ? "client_timeout" : "network_error",
        message: timedOut
          ? `no answer within ${limitMs} ms`
          : `the request failed before an answer: ${String((e as Error)?.message ?? e)}`,
        attempts: attempt,
        cause: e,
      });
    } finally {
      clearTimeout(timer);
      call.signal?.removeEventListener("abort", onAbort);
    }
    if (failure.status === 401 && REFRESH_CODES.has(failure.code) && t.tokens.canRefresh && !refreshed) {
      // The token expired (or its key was rotated out): one new token, then the same call.
      refreshed = true;
      await t.tokens.refresh(token);
      attempt -= 1;
      continue;
    }
    const retryable = failure.status === 0 || RETRY_STATUS.has(failure.status);
    if (!retryable || attempt >= t.retry.maxAttempts) throw failure;
    if ((failure.retryAfterMs ?? 0) > t.retry.maxRetryAfterMs) throw failure;
    const delayMs = Math.max(failure.retryAfterMs ?? 0, backoffMs(t.retry, attempt));
    t.onRetry?.({
      method: call.method, path: call.path, attempt, delayMs, code: failure.code,
      status: failure.status, retryAfterMs: failure.retryAfterMs,
    });
    await sleep(delayMs, call.signal);
  }
}
