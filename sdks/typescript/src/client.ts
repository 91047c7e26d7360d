// The client a game holds: every player-facing operation of the api, typed by the document.

import { LedgerboardError } from "./errors.js";
import { DEFAULT_RETRY, send, type RetryInfo, type RetryPolicy, type Transport } from "./http.js";
import { subscribe, type ServerEvent, type Subscription, type SubscribeOptions } from "./sse.js";
import { readClaims, TokenHolder, type TokenSource } from "./token.js";
import type {
  Attempt, AttemptInput, AroundOptions, BoardDefinition, CommandBody, CommandOutcome, Competition,
  CompetitionListOptions, CompetitionPage, Entry, EntryInput, EventPage, EventsOptions, History,
  LiveMessage, LiveOptions, Member, Page, ReadOptions, Results, ResultsOptions, ScoreInput,
  Standings, TopOptions, UserOptions, Users,
} from "./types.js";

export interface ClientOptions {
  /** The api's public address, `https://leaderboards.example.com`. */
  baseUrl: string;
  /** A player token (or a service token, on a game server). Omit it to have `refreshToken`
   * give the first one. */
  token?: string;
  /** Gives a new player token (ask the game's backend): called when the api answers
   * `token_expired` (once per call; concurrent calls share one), or for the first token. */
  refreshToken?: TokenSource;
  retry?: Partial<RetryPolicy>;
  /** Told before every repeated send (logging, metrics, tests). */
  onRetry?: (info: RetryInfo) => void;
  /** Another fetch (a test's, a platform's); the global one by default. */
  fetch?: typeof fetch;
}

/** A new idempotency key: a random UUID. */
export function newEventId(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === "function") return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const seg = encodeURIComponent;

function readQuery(o: ReadOptions | undefined): Record<string, string | number | undefined> {
  return {
    consistency: o?.consistency,
    rank_mode: o?.rankMode,
    period: o?.period,
    cohort: o?.cohort,
  };
}

export class Ledgerboard {
  private readonly t: Transport;

  constructor(options: ClientOptions) {
    this.t = {
      baseUrl: options.baseUrl,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
      retry: { ...DEFAULT_RETRY, ...options.retry },
      tokens: new TokenHolder(options.token, options.refreshToken),
      onRetry: options.onRetry,
    };
  }

  /** The player the token names (its `sub`), undefined for a service token. */
  async playerId(): Promise<string | undefined> {
    const token = await this.t.tokens.current();
    return token === undefined ? undefined : readClaims(token)?.sub;
  }

  private async who(userId: string | undefined): Promise<string> {
    const id = userId ?? (await this.playerId());
    if (id === undefined) {
      throw new LedgerboardError({
        status: 0, code: "invalid_user_id", attempts: 0,
        message: "no userId given, and the token is not a player token that names one",
      });
    }
    return id;
  }

  // Score commands

  /**
   * Posts one result. The event id is drawn once (or taken from `input.eventId`) and every
   * retry sends the same body: the api applies it at most once, and a retry of an applied
   * command answers that first outcome with `duplicate: true`.
   */
  async submitScore(board: string, input: ScoreInput): Promise<CommandOutcome> {
    const body: CommandBody = {
      event_id: input.eventId ?? newEventId(),
      user_id: await this.who(input.userId),
    };
    if (input.delta !== undefined) body.delta = input.delta;
    if (input.score !== undefined) body.score = input.score;
    if (input.metadata !== undefined) body.metadata = input.metadata;
    if (input.attemptId !== undefined) body.attempt_id = input.attemptId;
    return send<CommandOutcome>(this.t, {
      method: "POST", path: `/v1/boards/${seg(board)}/scores`, body, signal: input.signal,
    });
  }

  /** Starts an attempt (a run the server saw begin) on a board that requires them. */
  async startAttempt(board: string, input: AttemptInput = {}): Promise<Attempt> {
    const body: { request_id: string; user_id?: string } = { request_id: input.requestId ?? newEventId() };
    if (input.userId !== undefined) body.user_id = input.userId;
    return send<Attempt>(this.t, {
      method: "POST", path: `/v1/boards/${seg(board)}/attempts`, body, signal: input.signal,
    });
  }

  // Reads: every answer carries `freshness`.

  top(board: string, o: TopOptions = {}): Promise<Page> {
    return send<Page>(this.t, {
      method: "GET", path: `/v1/boards/${seg(board)}/top`, signal: o.signal,
      query: { ...readQuery(o), limit: o.limit, offset: o.offset, after: o.after },
    });
  }

  /** One member's entry and rank; `minVersion` for read-your-writes. 404 `not_found` when the
   * member has no entry. */
  user(board: string, userId: string, o: UserOptions = {}): Promise<Member> {
    return send<Member>(this.t, {
      method: "GET", path: `/v1/boards/${seg(board)}/users/${seg(userId)}`, signal: o.signal,
      query: { ...readQuery(o), min_version: o.minVersion },
    });
  }

  /** The member's own entry after a command: `user` with the command's version as `minVersion`. */
  myEntry(outcome: CommandOutcome, o: ReadOptions = {}): Promise<Member> {
    return this.user(outcome.board, outcome.user_id, { ...o, minVersion: outcome.version });
  }

  around(board: string, userId: string, o: AroundOptions = {}): Promise<Page> {
    return send<Page>(this.t, {
      method: "GET", path: `/v1/boards/${seg(board)}/users/${seg(userId)}/around`, signal: o.signal,
      query: { ...readQuery(o), radius: o.radius },
    });
  }

  /** Several members (a friends board): up to 100 ids, none with a comma. */
  users(board: string, ids: readonly string[], o: ReadOptions = {}): Promise<Users> {
    return send<Users>(this.t, {
      method: "GET", path: `/v1/boards/${seg(board)}/users`, signal: o.signal,
      query: { ...readQuery(o), ids: ids.join(",") },
    });
  }

  /** The board's definition: its operator, order, columns, periods. */
  board(board: string, o: { signal?: AbortSignal } = {}): Promise<BoardDefinition> {
    return send<BoardDefinition>(this.t, { method: "GET", path: `/v1/boards/${seg(board)}`, signal: o.signal });
  }

  /** A closed period's frozen standings, a page at a time (`after`: a page's `next`). */
  standings(board: string, period: string, o: { after?: number; limit?: number; signal?: AbortSignal } = {}): Promise<Standings> {
    return send<Standings>(this.t, {
      method: "GET", path: `/v1/boards/${seg(board)}/periods/${seg(period)}/standings`,
      query: { after: o.after, limit: o.limit }, signal: o.signal,
    });
  }

  // Competitions

  competitions(o: CompetitionListOptions = {}): Promise<CompetitionPage> {
    return send<CompetitionPage>(this.t, {
      method: "GET", path: "/v1/competitions", signal: o.signal,
      query: { category: o.category, state: o.state, after: o.after, limit: o.limit },
    });
  }

  competition(id: string, o: { signal?: AbortSignal } = {}): Promise<Competition> {
    return send<Competition>(this.t, { method: "GET", path: `/v1/competitions/${seg(id)}`, signal: o.signal });
  }

  /** Enters the run open now, once: again answers the same entry (`duplicate: true`), so a
   * retry is safe. With cohorts, read the board with the answer's `cohort`. */
  enter(id: string, input: EntryInput = {}): Promise<Entry> {
    const body: { user_id?: string; rating?: number } = {};
    if (input.userId !== undefined) body.user_id = input.userId;
    if (input.rating !== undefined) body.rating = input.rating;
    return send<Entry>(this.t, {
      method: "POST", path: `/v1/competitions/${seg(id)}/entries`, body, signal: input.signal,
    });
  }

  /** A run's standings with the prize each rank earns (`final` once the run is closed). */
  results(id: string, o: ResultsOptions = {}): Promise<Results> {
    return send<Results>(this.t, {
      method: "GET", path: `/v1/competitions/${seg(id)}/results`, signal: o.signal,
      query: { run: o.run, cohort: o.cohort, rank_mode: o.rankMode, offset: o.offset, limit: o.limit },
    });
  }

  /** A player's tier now and its runs, newest first (the token's player by default). */
  async history(id: string, userId?: string, o: { signal?: AbortSignal } = {}): Promise<History> {
    const who = await this.who(userId);
    return send<History>(this.t, {
      method: "GET", path: `/v1/competitions/${seg(id)}/players/${seg(who)}`, signal: o.signal,
    });
  }

  // Events out: the event feed (a game's backend, with a service token of the events scope)
  // and live updates (a game client).

  /** A page of the event feed, after `after` (a page's `next`); with `wait`, a long poll. */
  events(o: EventsOptions = {}): Promise<EventPage> {
    return send<EventPage>(this.t, {
      method: "GET", path: "/v1/events", signal: o.signal,
      extraTimeoutMs: (o.wait ?? 0) * 1000,
      query: {
        after: o.after, kinds: o.kinds?.join(","), boards: o.boards?.join(","), limit: o.limit, wait: o.wait,
      },
    });
  }

  /**
   * Live updates of a board (server-sent events): `onUpdate` gets each snapshot (the board's
   * first N and, with a player token, the player's entry and neighbours, with the reads'
   * freshness). After a lost connection the client reconnects and resumes from the last event
   * id it received (`Last-Event-ID`): the server sends a snapshot again only if it changed.
   * Pass an earlier subscription's `lastEventId` to resume across subscriptions.
   */
  live(
    board: string,
    options: LiveOptions & Omit<SubscribeOptions, "onEvent"> & {
      onUpdate: (update: LiveMessage, event: ServerEvent) => void;
    },
  ): Subscription {
    const { onUpdate, top, radius, period, cohort, ...rest } = options;
    return subscribe(this.t, `/v1/boards/${seg(board)}/live`, { top, radius, period, cohort }, {
      ...rest,
      onEvent: (e) => {
        if (e.event !== "snapshot") return;
        onUpdate(JSON.parse(e.data) as LiveMessage, e);
      },
    });
  }
}
