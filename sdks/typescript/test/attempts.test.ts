// Attempts through the SDK: a board that requires them takes a player's score only with an
// attempt the server saw start, once.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Ledgerboard, newEventId } from "@ledgerboard/client";
import { declare, mint, name, skip, stack } from "./stack.js";

test("attempts: a score carries the attempt the server saw start, once", { skip }, async () => {
  const board = name("runs");
  await declare(board, { operator: "best", attempts: { min_duration_ms: 0, max_per_period: 5 } });
  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("hal") });
  await assert.rejects(lb.submitScore(board, { score: 10 }), { code: "attempt_required", status: 422 });
  const requestId = newEventId();
  const attempt = await lb.startAttempt(board, { requestId });
  assert.deepEqual([attempt.board, attempt.user_id, attempt.duplicate], [board, "hal", false]);
  const repeat = await lb.startAttempt(board, { requestId });
  assert.deepEqual([repeat.attempt_id, repeat.duplicate], [attempt.attempt_id, true]);
  const posted = await lb.submitScore(board, { score: 42, attemptId: attempt.attempt_id });
  assert.equal(posted.score, 42);
  await assert.rejects(lb.submitScore(board, { score: 43, attemptId: attempt.attempt_id }), { code: "attempt_used", status: 409 });
});
