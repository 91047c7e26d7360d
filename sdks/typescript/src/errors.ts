// Errors as typed values: every refusal of the api carries a stable `code` (docs/api.md); the
// client adds three of its own for what never reached an answer.

/** The api's stable error codes a game meets (docs/api.md), and the client's own three. */
export type KnownErrorCode =
  // Authentication and limits
  | "unauthenticated" | "forbidden" | "rate_limited"
  | "token_malformed" | "token_key_unknown" | "token_signature" | "token_expired"
  | "token_not_yet_valid" | "token_audience" | "token_claims"
  | "player_user" | "player_board" | "player_scope" | "board_server_only"
  // Score commands
  | "malformed_body" | "invalid_path" | "invalid_board_id" | "invalid_user_id" | "invalid_event_id"
  | "wrong_value_field" | "invalid_delta" | "delta_out_of_range" | "invalid_score"
  | "score_out_of_range" | "invalid_metadata" | "metadata_too_large" | "event_id_reused"
  | "payload_too_large"
  // Attempts
  | "attempt_required" | "invalid_attempt_id" | "attempts_not_used" | "attempt_unknown"
  | "attempt_foreign" | "attempt_used" | "attempt_expired" | "attempt_too_fast" | "attempt_limit"
  // Reads
  | "invalid_query" | "invalid_cursor" | "invalid_ids" | "out_of_range" | "projection_behind"
  | "invalid_period" | "board_never_resets" | "no_such_period" | "period_not_closed"
  // Competitions
  | "competition_unknown" | "competition_not_started" | "competition_ended" | "competition_full"
  | "competition_closing" | "competition_not_entered" | "invalid_rating" | "cohort_required"
  // Anything
  | "not_found" | "method_not_allowed" | "unavailable" | "timeout" | "internal"
  // The client's own: no answer arrived (status 0).
  | "network_error" | "client_timeout" | "aborted";

/** A code this client knows, or a newer one the api added since (match on the known ones). */
export type ErrorCode = KnownErrorCode | (string & {});

/** A refusal of the api, or a request that never got an answer. */
export class LedgerboardError extends Error {
  override readonly name = "LedgerboardError";
  /** The HTTP status; 0 when no answer arrived (`network_error`, `client_timeout`, `aborted`). */
  readonly status: number;
  /** Stable: match on it. */
  readonly code: ErrorCode;
  /** On a refusal by a board the command's board feeds: that board. */
  readonly board: string | undefined;
  /** From `Retry-After`, on a 429 or a 503. */
  readonly retryAfterMs: number | undefined;
  /** How many requests were sent for this call, retries included. */
  readonly attempts: number;

  constructor(init: {
    status: number;
    code: ErrorCode;
    message: string;
    board?: string | undefined;
    retryAfterMs?: number | undefined;
    attempts: number;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.board = init.board;
    this.retryAfterMs = init.retryAfterMs;
    this.attempts = init.attempts;
  }

  /** True when the same call may be sent again unchanged (the client already did, up to its limit). */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status === 502 || this.status === 503
      || this.status === 504;
  }
}

/** Narrows an unknown caught value to a refusal with one of `codes`. */
export function isLedgerboardError(e: unknown, ...codes: ErrorCode[]): e is LedgerboardError {
  return e instanceof LedgerboardError && (codes.length === 0 || codes.includes(e.code));
}
