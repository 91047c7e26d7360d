// Events out through the SDK against the running stack: a board's live updates (a snapshot
// now, a new one after a score, a resume that does not repeat what was seen) and the event
// feed (a game backend's service token: a score's event, then a long poll for the next).

import { test } from "node:test";
import assert from "node:assert/strict";

import { Ledgerboard, type LiveMessage, type Subscription } from "@ledgerboard/client";
import { declare, eventually, mint, name, skip, stack } from "./stack.js";

/** Collects a subscription's snapshots. */
function collect(lb: Ledgerboard, board: string, lastEventId?: string) {
  const messages: LiveMessage[] = [];
  let opened = 0;
  const sub: Subscription = lb.live(board, {
    top: 5, radius: 1, ...(lastEventId === undefined ? {} : { lastEventId }),
    onOpen: () => { opened += 1; },
    onUpdate: (m) => messages.push(m),
  });
  return { messages, sub, opened: () => opened };
}

test("live updates: a snapshot now, another after a score, and a resume that repeats nothing", { skip }, async () => {
  const board = name("live");
  await declare(board, { operator: "add" });
  const lb = new Ledgerboard({ baseUrl: stack.api!, token: mint("pia") });
  await lb.submitScore(board, { delta: 5 });
  const first = collect(lb, board);
  const score = (m: LiveMessage | undefined) => m?.me?.entry?.score;
  await eventually("a snapshot with the player's entry", 20_000, async () => (score(first.messages.at(-1)) === 5 ? true : undefined));
  const snapshot = first.messages.at(-1)!;
  assert.deepEqual([snapshot.board, snapshot.top.total, snapshot.top.entries[0]?.user_id], [board, 1, "pia"]);
  assert.ok(["projection", "database"].includes(snapshot.freshness.source));
  assert.ok(["pubsub", "polling"].includes(snapshot.freshness.updates));
  await lb.submitScore(board, { delta: 3 });
  await eventually("a snapshot after the score", 20_000, async () => (score(first.messages.at(-1)) === 8 ? true : undefined));
  const lastEventId = first.sub.lastEventId;
  assert.ok(lastEventId, "messages carry ids");
  first.sub.close();
  await first.sub.done;

  // Resumed from the last id: nothing is sent again until the board changes.
  const resumed = collect(lb, board, lastEventId);
  await eventually("the resumed stream opens", 10_000, async () => (resumed.opened() > 0 ? true : undefined));
  await lb.submitScore(board, { delta: 4 });
  await eventually("a snapshot after the next score", 20_000, async () => (score(resumed.messages.at(-1)) === 12 ? true : undefined));
  resumed.sub.close();
  await resumed.sub.done;
  assert.equal(score(resumed.messages[0]), 12, `the resumed stream repeated a snapshot: ${JSON.stringify(resumed.messages[0])}`);
});

test("the event feed: a score's event, then a long poll that answers with the next", { skip }, async () => {
  const board = name("feed");
  await declare(board, { operator: "add" });
  const player = new Ledgerboard({ baseUrl: stack.api!, token: mint("quin") });
  const backend = new Ledgerboard({ baseUrl: stack.api!, token: stack.admin! });
  const posted = await player.submitScore(board, { delta: 2 });
  const page = await eventually("the score's event in the feed", 20_000, async () => {
    const p = await backend.events({ boards: [board], kinds: ["score.accepted"] });
    return p.events.length > 0 ? p : undefined;
  });
  assert.deepEqual([page.events[0]!.id, page.events[0]!.kind, page.events[0]!.user_id], [posted.event_id, "score.accepted", "quin"]);
  // A long poll may also answer early with an empty page when other boards' events pass the
  // cursor: then it asks again from that page's `next`.
  const poll = async (after: number): Promise<string[]> => {
    const p = await backend.events({ boards: [board], kinds: ["score.accepted"], after, wait: 20 });
    return p.events.length > 0 ? p.events.map((e) => e.id) : poll(p.next);
  };
  const waiting = poll(page.next);
  const next = await player.submitScore(board, { delta: 3 });
  assert.deepEqual(await waiting, [next.event_id]);
});
