// Server-sent events over fetch (an EventSource cannot send the Authorization header), with the
// resume the protocol defines: after a lost connection the client connects again and sends the
// last `id:` it received as `Last-Event-ID`, so the server goes on from there.

import { LedgerboardError } from "./errors.js";
import { backoffMs, retryAfterMs, sleep, url, type Transport } from "./http.js";

/** One event as the stream carried it. */
export interface ServerEvent {
  /** The last `id:` received up to this event (what a resume sends as `Last-Event-ID`). */
  id: string | undefined;
  /** `event:`, `message` when the server named none. */
  event: string;
  data: string;
}

export interface SubscribeOptions {
  onEvent: (event: ServerEvent) => void;
  /** Every failure; the subscription goes on after those that are `retryable`, and ends after
   * the others (a 403, a 404: reconnecting would not help). */
  onError?: (error: LedgerboardError) => void;
  /** Each (re)connection the server accepted. */
  onOpen?: (resumedFrom: string | undefined) => void;
  /** Resume from this id (an earlier subscription's `lastEventId`). */
  lastEventId?: string;
  /** The wait before reconnecting, until the server sends `retry:` (default 1000 ms). */
  reconnectMs?: number;
  signal?: AbortSignal;
}

export interface Subscription {
  close(): void;
  /** The last `id:` received: pass it as `lastEventId` to resume in a later subscription. */
  readonly lastEventId: string | undefined;
  /** Settles when the subscription ended (closed, aborted, or refused for good). */
  readonly done: Promise<void>;
}

/** Parses a text/event-stream; `push` feeds it chunks, `dispatch` gets each complete event. */
export class EventStreamParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  lastEventId: string | undefined;
  retryMs: number | undefined;

  constructor(lastEventId: string | undefined, private readonly dispatch: (e: ServerEvent) => void) {
    this.lastEventId = lastEventId;
  }

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (m === null || (m[0] === "\r" && m.index === this.buffer.length - 1)) return;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0) {
        this.dispatch({ id: this.lastEventId, event: this.event || "message", data: this.data.join("\n") });
      }
      this.data = [];
      this.event = "";
      return;
    }
    if (line.startsWith(":")) return; // a comment: the server's keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data": this.data.push(value); break;
      case "event": this.event = value; break;
      case "id": if (!value.includes("\0")) this.lastEventId = value; break;
      case "retry": if (/^\d+$/.test(value)) this.retryMs = Number(value); break;
      default: break;
    }
  }
}

/** Subscribes to an event stream of the api, reconnecting (and resuming) until closed. */
export function subscribe(
  t: Transport,
  path: string,
  query: Record<string, string | number | undefined>,
  options: SubscribeOptions,
): Subscription {
  const stop = new AbortController();
  options.signal?.addEventListener("abort", () => stop.abort(), { once: true });
  const parser = new EventStreamParser(options.lastEventId, options.onEvent);
  const target = url(t, path, query);
  const run = async () => {
    let failures = 0;
    let refreshed = false;
    while (!stop.signal.aborted) {
      const token = await t.tokens.current();
      const headers: Record<string, string> = { accept: "text/event-stream", "cache-control": "no-cache" };
      if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
      if (parser.lastEventId !== undefined) headers["last-event-id"] = parser.lastEventId;
      let error: LedgerboardError | undefined;
      try {
        const res = await t.fetch(target, { headers, signal: stop.signal });
        if (res.ok && res.body !== null) {
          failures = 0;
          refreshed = false;
          options.onOpen?.(headers["last-event-id"]);
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parser.push(value);
          }
        } else {
          let code = `http_${res.status}`;
          let message = `HTTP ${res.status}`;
          try {
            const body = (await res.json()) as { error?: { code?: string; message?: string } };
            code = body.error?.code ?? code;
            message = body.error?.message ?? message;
          } catch { /* not JSON */ }
          error = new LedgerboardError({
            status: res.status, code, message, attempts: failures + 1,
            retryAfterMs: retryAfterMs(res.headers.get("retry-after")),
          });
        }
      } catch (e) {
        if (stop.signal.aborted) break;
        error = new LedgerboardError({
          status: 0, code: "network_error", message: `the stream broke: ${String((e as Error)?.message ?? e)}`,
          attempts: failures + 1, cause: e,
        });
      }
      if (stop.signal.aborted) break;
      let delay = parser.retryMs ?? options.reconnectMs ?? 1000;
      if (error !== undefined) {
        failures += 1;
        options.onError?.(error);
        if (error.status === 401 && (error.code === "token_expired" || error.code === "token_key_unknown")
          && t.tokens.canRefresh && !refreshed) {
          refreshed = true;
          await t.tokens.refresh(token);
          continue;
        }
        if (!error.retryable) break;
        delay = Math.max(delay, error.retryAfterMs ?? 0, backoffMs(t.retry, failures));
      }
      try {
        await sleep(delay, stop.signal);
      } catch {
        break;
      }
    }
  };
  const done = run().catch(() => undefined);
  return {
    close: () => stop.abort(),
    get lastEventId() {
      return parser.lastEventId;
    },
    done,
  };
}
