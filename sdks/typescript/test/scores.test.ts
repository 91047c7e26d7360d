// Score commands through the SDK against the running stack: each value shape, metadata, a
// repeat answering its first outcome, and refusals as typed errors with their stable codes.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Ledgerboard, LedgerboardError, newEventId } from "@ledgerboard/client";
import { declare, mint, name, skip, stack } from "./stack.js";

const player = (user: string) => new Ledgerboard({ baseUrl: stack.api!, token: mint(user) });

test("score commands: delta, columns, metadata, and a repeat answers its first outcome", { skip }, async () => {
  const points = name("points");
  const race = name("race");
  await declare(points, { operator: "add" });
  await declare(race, {
    operator: "best",
    columns: [{ name: "laps", order: "descending" }, { name: "time_ms", order: "ascending", min: 1 }],
  });
  const lb = player("ann");
  assert.equal(await lb.playerId(), "ann");

  const eventId = newEventId();
  const first = await lb.submitScore(points, { eventId, delta: 10, metadata: { car: "red" } });
  assert.deepEqual([first.score, first.version, first.duplicate, first.user_id], [10, 1, false, "ann"]);
  const again = await lb.submitScore(points, { eventId, delta: 10, metadata: { car: "red" } });
  assert.deepEqual([again.score, again.version, again.duplicate, again.event_id], [10, 1, true, eventId]);

  const run = await lb.submitScore(race, { score: [12, 93120] });
  assert.deepEqual(run.scores, [12, 93120]);
  const byName = await lb.submitScore(race, { score: { laps: 12, time_ms: 91000 } });
  assert.deepEqual([byName.scores, byName.improved, byName.version], [[12, 91000], true, 2]);
  const worse = await lb.submitScore(race, { score: [11, 80000] });
  assert.deepEqual([worse.scores, worse.improved], [[12, 91000], false]);

  const top = await lb.top(points, { consistency: "strong" });
  assert.deepEqual(top.entries.map((e) => [e.user_id, e.score, e.metadata]), [["ann", 10, { car: "red" }]]);
});

test("refusals arrive as typed errors with their stable codes", { skip }, async () => {
  const board = name("refusals");
  await declare(board, { operator: "add" });
  const lb = player("bob");
  const expect = async (p: Promise<unknown>, status: number, code: string) => {
    await assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof LedgerboardError, String(e));
      assert.deepEqual([e.status, e.code], [status, code], e.message);
      return true;
    });
  };
  await expect(lb.submitScore(board, { delta: 5000 }), 422, "delta_out_of_range");
  await expect(lb.submitScore(board, { score: 5 }), 422, "wrong_value_field");
  await expect(lb.submitScore(board, { userId: "someone-else", delta: 1 }), 403, "player_user");
  const eventId = newEventId();
  await lb.submitScore(board, { eventId, delta: 1 });
  await expect(lb.submitScore(board, { eventId, delta: 2 }), 409, "event_id_reused");
  // An undeclared board takes server tokens only.
  await expect(lb.submitScore(name("undeclared"), { delta: 1 }), 403, "board_server_only");
  await expect(lb.user(board, "nobody"), 404, "not_found");
});
