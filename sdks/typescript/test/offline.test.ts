// The client's rules without a server: retries keep the body (the event id) byte for byte,
// Retry-After is honoured, refusals are typed and not retried, and the event-stream parser and
// resume follow the protocol. Each fake `fetch` records what the client sent.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import {
  EventStreamParser, Ledgerboard, LedgerboardError, type RetryInfo, type ServerEvent, type Subscription,
} from "@ledgerboard/client";

const outcome = {
  event_id: "", board: "b", user_id: "u", score: 10, version: 1, duplicate: false, improved: true,
};

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

test("a retried score command sends the same event id every time", async () => {
  const bodies: string[] = [];
  const answers: Array<() => Response> = [
    () => { throw new TypeError("fetch failed: socket hang up"); },
    () => json(503, { error: { code: "unavailable", message: "PostgreSQL could not be reached" } }),
    () => json(200, { ...outcome, event_id: JSON.parse(bodies[0]!).event_id, duplicate: true }),
  ];
  const retries: RetryInfo[] = [];
  const lb = new Ledgerboard({
    baseUrl: "http://api.invalid",
    token: "service-token",
    retry: { baseDelayMs: 1, maxDelayMs: 2 },
    onRetry: (r) => retries.push(r),
    fetch: async (_url, init) => {
      bodies.push(String(init?.body));
      return answers[bodies.length - 1]!();
    },
  });
  // The 503 carries no Retry-After here, so the backoff alone paces the test.
  const result = await lb.submitScore("b", { userId: "u", delta: 10 });
  assert.equal(bodies.length, 3);
  assert.equal(new Set(bodies).size, 1, `every send carries the same body: ${bodies.join(" | ")}`);
  assert.equal(result.duplicate, true);
  assert.deepEqual(retries.map((r) => [r.status, r.code]), [[0, "network_error"], [503, "unavailable"]]);
});

test("a 429's Retry-After is waited for before the next send", async () => {
  const sentAt: number[] = [];
  const lb = new Ledgerboard({
    baseUrl: "http://api.invalid",
    token: "t",
    retry: { baseDelayMs: 1, maxDelayMs: 2 },
    fetch: async () => {
      sentAt.push(Date.now());
      return sentAt.length === 1
        ? json(429, { error: { code: "rate_limited", message: "slow down" } }, { "retry-after": "1" })
        : json(200, { entries: [], total: 0, freshness: { source: "projection" } });
    },
  });
  await lb.top("b");
  assert.equal(sentAt.length, 2);
  assert.ok(sentAt[1]! - sentAt[0]! >= 1000, `waited ${sentAt[1]! - sentAt[0]!} ms`);
});

test("a refusal is a typed error and is not retried", async () => {
  let sends = 0;
  const lb = new Ledgerboard({
    baseUrl: "http://api.invalid",
    token: "t",
    fetch: async () => {
      sends += 1;
      return json(422, { error: { code: "delta_out_of_range", message: "delta must be between -1000 and 1000" } });
    },
  });
  await assert.rejects(lb.submitScore("b", { userId: "u", delta: 5000 }), (e: unknown) => {
    assert.ok(e instanceof LedgerboardError);
    assert.equal(e.code, "delta_out_of_range");
    assert.equal(e.status, 422);
    assert.equal(e.retryable, false);
    return true;
  });
  assert.equal(sends, 1);
});

test("no answer within the timeout is retried with the same body, then fails as client_timeout", async () => {
  const bodies: string[] = [];
  const lb = new Ledgerboard({
    baseUrl: "http://api.invalid",
    token: "t",
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2, timeoutMs: 50 },
    fetch: (_url, init) => {
      bodies.push(String(init?.body));
      return new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      });
    },
  });
  await assert.rejects(lb.submitScore("b", { userId: "u", delta: 1 }), { code: "client_timeout", attempts: 3 });
  assert.equal(bodies.length, 3);
  assert.equal(new Set(bodies).size, 1);
});

test("the event-stream parser reads split chunks, CRLF, comments, ids and retry", () => {
  const events: ServerEvent[] = [];
  const p = new EventStreamParser(undefined, (e) => events.push(e));
  for (const chunk of [": keep-alive\r\n", "id: 1\r", "\nevent: rank\ndata: {\"a\"", ":1}\n\n", "retry: 250\nid: 2\ndata: x\ndata: y\n", "\n"]) {
    p.push(chunk);
  }
  assert.deepEqual(events, [
    { id: "1", event: "rank", data: "{\"a\":1}" },
    { id: "2", event: "message", data: "x\ny" },
  ]);
  assert.equal(p.retryMs, 250);
});

test("live updates resume after a lost connection with Last-Event-ID", async () => {
  const seen: Array<string | undefined> = [];
  const snapshot = (id: number, total: number) =>
    `id: ${id}\nevent: snapshot\ndata: ${JSON.stringify({ board: "b", top: { entries: [], total }, freshness: { source: "projection", updates: "pubsub" } })}\n\n`;
  const server = createServer((req, res) => {
    const last = req.headers["last-event-id"] as string | undefined;
    seen.push(last);
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (last === undefined) {
      // Two snapshots and a heartbeat, then the connection drops.
      res.end(`retry: 10\n\n${snapshot(1, 3)}: hb\n\n${snapshot(2, 2)}`);
    } else {
      res.write(snapshot(Number(last) + 1, 1));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const lb = new Ledgerboard({ baseUrl: `http://127.0.0.1:${port}`, token: "t" });
  const totals: number[] = [];
  let sub: Subscription | undefined;
  await new Promise<void>((resolve) => {
    sub = lb.live("b", {
      onUpdate: (m) => {
        totals.push(m.top.total);
        if (totals.length === 3) resolve();
      },
    });
  });
  sub!.close();
  await sub!.done;
  server.closeAllConnections();
  server.close();
  assert.deepEqual(totals, [3, 2, 1]);
  assert.deepEqual(seen, [undefined, "2"]);
  assert.equal(sub!.lastEventId, "3");
});
