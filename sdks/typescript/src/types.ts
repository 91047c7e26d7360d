// The shapes of the api's answers and bodies: aliases of the types openapi-typescript generated
// from sdks/openapi.json (src/generated/openapi.ts), so they follow the document.

import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

export type CommandBody = Schemas["CommandBody"];
export type CommandOutcome = Schemas["CommandOutcome"];
export type FedOutcome = Schemas["FedOutcome"];
/** A command's value: one integer, one per column in order, or one per column by name. */
export type Submitted = Schemas["Submitted"];
/** Where a read's answer came from, why, and how far its board's projection lags. */
export type Freshness = Schemas["Freshness"];
export type FreshnessSource = Schemas["Source"];
export type FreshnessReason = Schemas["Reason"];
export type ProjectionState = Schemas["ProjectionState"];
export type Page = Schemas["Page"];
export type Member = Schemas["Member"];
export type Users = Schemas["Users"];
export type RankedEntry = Schemas["RankedEntry"];
export type BoardDefinition = Schemas["BoardDefinition"];
export type Standings = Schemas["Standings"];
export type Standing = Schemas["Standing"];
export type Attempt = Schemas["Attempt"];
export type Competition = Schemas["Competition"];
export type CompetitionPage = Schemas["CompetitionPage"];
export type Entry = Schemas["Entry"];
export type Results = Schemas["Results"];
export type Placed = Schemas["Placed"];
export type Prize = Schemas["Prize"];
export type History = Schemas["History"];
export type RunEntry = Schemas["RunEntry"];
export type ErrorBody = Schemas["ErrorBody"];
/** One message of a board's live stream: an absolute snapshot (top, the player's part). */
export type LiveMessage = Schemas["LiveMessage"];
export type LiveFreshness = Schemas["LiveFreshness"];
export type Event = Schemas["Event"];
export type EventPage = Schemas["EventPage"];

/** `eventual`: the projection always; `bounded` (the api's default): the projection while it
 * keeps up, else PostgreSQL; `strong`: PostgreSQL always (rewards, payouts). */
export type Consistency = "eventual" | "bounded" | "strong";
export type RankMode = "ordinal" | "dense" | "competition";

export interface ReadOptions {
  consistency?: Consistency;
  rankMode?: RankMode;
  /** `current` (the default), `previous`, or a period id (`20261130T000000Z`). */
  period?: string;
  /** A cohort of a competition's run. */
  cohort?: number;
  signal?: AbortSignal;
}

export interface TopOptions extends ReadOptions {
  limit?: number;
  offset?: number;
  /** A page's `next`: the page after it. */
  after?: string;
}

export interface UserOptions extends ReadOptions {
  /** Read-your-writes: a command's `version`. The answer holds at least that version (from
   * PostgreSQL when the projection does not yet); with `eventual`, `projection_behind`. */
  minVersion?: number;
}

export interface AroundOptions extends ReadOptions {
  radius?: number;
}

export interface ScoreInput {
  /** The player. Defaults to the player token's `sub`; a service token must name one. */
  userId?: string;
  /** On `add` boards. */
  delta?: Submitted;
  /** On `best` and `latest` boards. */
  score?: Submitted;
  metadata?: Record<string, unknown>;
  attemptId?: string;
  /** The idempotency key, drawn by the client when absent. Pass your own to resend a
   * submission across restarts of the game itself: store it before the first send. */
  eventId?: string;
  signal?: AbortSignal;
}

export interface AttemptInput {
  userId?: string;
  /** The start's idempotency key, drawn by the client when absent. */
  requestId?: string;
  signal?: AbortSignal;
}

export interface EntryInput {
  userId?: string;
  rating?: number;
  signal?: AbortSignal;
}

export interface ResultsOptions {
  run?: string;
  cohort?: number;
  rankMode?: RankMode;
  offset?: number;
  limit?: number;
  signal?: AbortSignal;
}

export interface CompetitionListOptions {
  category?: string;
  state?: "upcoming" | "open" | "ended";
  after?: string;
  limit?: number;
  signal?: AbortSignal;
}

/** True when the answer came from PostgreSQL, with the reason (narrowed). */
export function fromDatabase(
  f: Freshness,
): f is Freshness & { source: "database" } {
  return f.source === "database";
}

export interface LiveOptions {
  /** 1 to 100 (the api's default 10): the first N entries each message carries. */
  top?: number;
  /** 0 to 10 (default 2): with a player token, the entries on each side of the player. */
  radius?: number;
  period?: string;
  cohort?: number;
}

export interface EventsOptions {
  /** A page's `next`: the events after it. Absent: from the oldest event kept. */
  after?: number;
  /** Only these kinds (`score.accepted`, `rank.top_changed`, …). */
  kinds?: readonly string[];
  /** Only these boards. */
  boards?: readonly string[];
  limit?: number;
  /** Seconds to wait for an event when none follows `after` yet (a long poll, up to 30). */
  wait?: number;
  signal?: AbortSignal;
}
