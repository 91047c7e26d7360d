// Competitions through the SDK: a recurring one with cohorts by rating (enter, score in the
// cohort, read it, results, history), and a one-off tournament run to its close (final
// results with prizes, the frozen standings of its period).

import { test } from "node:test";
import assert from "node:assert/strict";

import { Ledgerboard } from "@ledgerboard/client";
import { admin, at, declare, eventually, mint, name, skip, stack } from "./stack.js";

test("competitions: enter with a rating, score in the cohort, results and history", { skip }, async () => {
  const id = name("raid");
  await declare(id, { operator: "add", reset: "weekly" });
  await admin("PUT", `/v1/competitions/${id}`, {
    cohort_size: 2, rating_band: 200, category: "sdk", prizes: [{ from: 1, to: 1, reward: "chest", amount: 1 }],
  });
  const players = [["ivy", 1480], ["jon", 1500], ["kim", 3000]] as const;
  const cohorts = new Map<string, number>();
  for (const [user, rating] of players) {
    const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint(user) });
    const entry = await lb.enter(id, { rating });
    assert.equal(entry.duplicate, false);
    const again = await lb.enter(id, { rating });
    assert.deepEqual([again.duplicate, again.seat, again.cohort], [true, entry.seat, entry.cohort]);
    cohorts.set(user, entry.cohort!);
    const posted = await lb.submitScore(id, { delta: Math.floor(rating / 100) });
    assert.equal(posted.cohort, entry.cohort);
  }
  // Similar ratings share a cohort; a far one opens another.
  assert.equal(cohorts.get("ivy"), cohorts.get("jon"));
  assert.notEqual(cohorts.get("ivy"), cohorts.get("kim"));

  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("ivy") });
  const listed = await lb.competitions({ category: "sdk", state: "open" });
  assert.ok(listed.competitions.some((c) => c.id === id), JSON.stringify(listed));
  const competition = await lb.competition(id);
  assert.deepEqual([competition.entrants, competition.cohort_size], [3, 2]);
  const cohort = cohorts.get("ivy")!;
  const mine = await lb.around(id, "ivy", { cohort, radius: 5, consistency: "strong" });
  assert.deepEqual(mine.entries.map((e) => e.user_id), ["jon", "ivy"]);
  assert.equal(mine.cohort, cohort);
  const results = await lb.results(id, { cohort });
  assert.equal(results.final, false);
  assert.deepEqual(results.entries.map((e) => [e.user_id, e.prize?.reward ?? null]), [["jon", "chest"], ["ivy", null]]);
  const history = await lb.history(id);
  assert.deepEqual([history.user_id, history.runs.length, history.runs[0]?.cohort], ["ivy", 1, cohort]);
});

test("a tournament closes: final results with prizes, frozen standings", { skip }, async () => {
  const id = name("cup");
  await declare(id, { operator: "best", reset: "manual" });
  await admin("PUT", `/v1/competitions/${id}`, {
    ends_at: at(4), prizes: [{ from: 1, to: 1, reward: "gold", amount: 100 }],
  });
  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("lea") });
  await eventually("the tournament opens", 10_000, async () => ((await lb.competition(id)).state === "open" ? true : undefined));
  const entry = await lb.enter(id);
  await lb.submitScore(id, { score: 77 });
  await eventually("the tournament ends", 15_000, async () => ((await lb.competition(id)).state === "ended" ? true : undefined));
  await eventually("the run closes", 15_000, async () => {
    const closed = (await admin("POST", `/v1/competitions/${id}/runs/${entry.run}/close`)) as { outcome: string };
    return closed.outcome === "closed" || closed.outcome === "already_closed" ? true : undefined;
  });
  const results = await lb.results(id, { run: entry.run });
  assert.equal(results.final, true);
  assert.deepEqual(results.entries.map((e) => [e.user_id, e.score, e.prize?.reward]), [["lea", 77, "gold"]]);
  const standings = await lb.standings(id, entry.run);
  assert.deepEqual(standings.standings.map((s) => [s.position, s.user_id, s.score]), [[1, "lea", 77]]);
  assert.match(standings.digest, /^[0-9a-f]{64}$/);
  const history = await lb.history(id);
  assert.deepEqual([history.runs[0]?.closed, history.runs[0]?.position], [true, 1]);
});
