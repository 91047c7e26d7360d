// The failure paths a game meets, against the running stack: the api restarted in the middle
// of a submission (the system test checks PostgreSQL for exactly one effect afterwards), a 429
// honoured, an expired player token refreshed once, and a freshness that says `database`.

import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDatabase, Ledgerboard, type RetryInfo } from "@ledgerboard/client";
import { declare, mint, name, skip, stack } from "./stack.js";

test("the api restarted in the middle of a submission: one effect, the same event id", { skip }, async () => {
  // LB_RESTART_URL is a proxy that forwards the first request, lets the api apply it, drops
  // the answer and has the api restarted; the SDK retries through the outage.
  const retries: RetryInfo[] = [];
  const lb = new Ledgerboard({
    baseUrl: stack.restart!,
    token: mint(stack.restartUser),
    retry: { maxAttempts: 40, baseDelayMs: 100, maxDelayMs: 1000 },
    onRetry: (r) => retries.push(r),
  });
  const outcome = await lb.submitScore(stack.restartBoard, { delta: stack.restartDelta });
  // The first send was applied; the answer that arrives is the retry's: a repeat of it.
  assert.deepEqual([outcome.duplicate, outcome.score, outcome.version], [true, stack.restartDelta, 1],
    JSON.stringify(outcome));
  assert.ok(retries.length >= 1 && retries.every((r) => r.status === 0), JSON.stringify(retries));
});

test("a 429 is honoured: the call waits for Retry-After and then succeeds", { skip }, async () => {
  const board = name("limited");
  await declare(board, { operator: "add" });
  const retries: RetryInfo[] = [];
  // That api lets a player send one request at a time, refilled once a second.
  const lb = new Ledgerboard({ baseUrl: stack.limited!, token: mint("max"), onRetry: (r) => retries.push(r) });
  await lb.submitScore(board, { delta: 1 });
  const started = Date.now();
  const second = await lb.submitScore(board, { delta: 1 });
  const waited = Date.now() - started;
  assert.equal(second.score, 2);
  // One 429, then the wait it asked for, then the send that succeeds: a client that retried
  // sooner would have met more of them.
  const limited = retries.filter((r) => r.status === 429);
  assert.equal(limited.length, 1, JSON.stringify(retries));
  assert.equal(limited[0]!.code, "rate_limited");
  assert.ok((limited[0]!.retryAfterMs ?? 0) >= 1000, JSON.stringify(limited[0]));
  assert.ok(limited[0]!.delayMs >= limited[0]!.retryAfterMs!, JSON.stringify(limited[0]));
  assert.ok(waited >= limited[0]!.retryAfterMs!, `waited ${waited} ms`);
});

test("an expired player token is refreshed once, also for concurrent calls", { skip }, async () => {
  const board = name("tokens");
  await declare(board, { operator: "add" });
  let refreshes = 0;
  const lb = new Ledgerboard({
    baseUrl: stack.api!,
    // Expired two minutes ago: past the api's 30 s of clock tolerance.
    token: mint("ned", ["*"], -120),
    refreshToken: async () => {
      refreshes += 1;
      return mint("ned");
    },
  });
  const posted = await Promise.all([1, 2, 3].map(() => lb.submitScore(board, { delta: 1 })));
  assert.deepEqual(posted.map((p) => p.duplicate), [false, false, false]);
  assert.equal(refreshes, 1);
  const mine = await lb.user(board, "ned", { consistency: "strong" });
  assert.equal(mine.score, 3);
  assert.equal(refreshes, 1, "a valid token is not refreshed");
});

test("a freshness that says database reaches the caller, with its reason", { skip }, async () => {
  const board = name("strong");
  await declare(board, { operator: "add" });
  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("oli") });
  const posted = await lb.submitScore(board, { delta: 9 });
  const strong = await lb.user(board, "oli", { consistency: "strong", minVersion: posted.version });
  assert.equal(strong.freshness.source, "database");
  assert.ok(fromDatabase(strong.freshness));
  assert.equal(strong.freshness.reason, "strong");
  assert.equal(strong.freshness.projection ?? null, null, "a strong read does not look at Redis");
  assert.equal(strong.score, 9);
  const page = await lb.top(board, { consistency: "strong" });
  assert.deepEqual([page.freshness.source, page.freshness.reason], ["database", "strong"]);
});
