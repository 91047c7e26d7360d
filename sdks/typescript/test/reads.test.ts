// Reads through the SDK: every answer's freshness is a typed object, read-your-writes with
// minVersion, pages with their cursor, the board's definition.

import { test } from "node:test";
import assert from "node:assert/strict";

import { fromDatabase, Ledgerboard, type Freshness } from "@ledgerboard/client";
import { declare, eventually, mint, name, skip, stack } from "./stack.js";

test("reads: top, user, around and users carry a typed freshness", { skip }, async () => {
  const board = name("reads");
  await declare(board, { operator: "best" });
  const users = ["cat", "dan", "eve", "fay"];
  for (const [i, u] of users.entries()) {
    const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint(u) });
    await lb.submitScore(board, { score: 100 - i * 10 });
  }
  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("cat") });
  // Bounded reads come from the projection once the board is projected and sealed.
  const page = await eventually("a read from the projection", 20_000, async () => {
    const p = await lb.top(board, { limit: 2 });
    return p.freshness.source === "projection" && p.total === 4 ? p : undefined;
  });
  const f: Freshness = page.freshness;
  assert.equal(f.reason ?? null, null);
  assert.equal(f.projection, "whole");
  assert.deepEqual(page.entries.map((e) => [e.rank, e.user_id, e.score]), [[1, "cat", 100], [2, "dan", 90]]);
  assert.ok(page.next, "a full page has a cursor");
  const rest = await lb.top(board, { limit: 2, after: page.next! });
  assert.deepEqual(rest.entries.map((e) => e.user_id), ["eve", "fay"]);

  const around = await lb.around(board, "eve", { radius: 1 });
  assert.deepEqual(around.entries.map((e) => e.user_id), ["dan", "eve", "fay"]);
  const friends = await lb.users(board, ["fay", "cat", "nobody"], { rankMode: "competition" });
  assert.deepEqual(friends.entries.map((e) => [e.user_id, e.rank]), [["cat", 1], ["fay", 4]]);
  assert.deepEqual(friends.missing, ["nobody"]);
  const me = await lb.user(board, "dan", { rankMode: "dense" });
  assert.deepEqual([me.rank, me.total, me.percentile], [2, 4, 75]);
  const definition = await lb.board(board);
  assert.deepEqual([definition.operator, definition.sort, definition.write_policy], ["best", "descending", "player"]);
});

test("read-your-writes: minVersion gives at least the command's version", { skip }, async () => {
  const board = name("ryw");
  await declare(board, { operator: "add" });
  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("gus") });
  for (let i = 1; i <= 3; i += 1) {
    const posted = await lb.submitScore(board, { delta: 5 });
    // Right after the command: from the projection if it has the version, else PostgreSQL.
    const mine = await lb.myEntry(posted);
    assert.ok(mine.version >= posted.version, `version ${mine.version} < ${posted.version}`);
    assert.equal(mine.score, 5 * i);
    if (fromDatabase(mine.freshness)) {
      // Then the answer says why (min_version, or the new board's projection_missing).
      assert.notEqual(mine.freshness.reason ?? null, null);
    }
  }
});
