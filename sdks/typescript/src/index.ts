// @ledgerboard/client: a typed client for the ledgerboard HTTP API (sdks/openapi.json).

export { Ledgerboard, newEventId, type ClientOptions } from "./client.js";
export { LedgerboardError, isLedgerboardError, type ErrorCode, type KnownErrorCode } from "./errors.js";
export { DEFAULT_RETRY, type RetryInfo, type RetryPolicy } from "./http.js";
export { EventStreamParser, type ServerEvent, type Subscription, type SubscribeOptions } from "./sse.js";
export { readClaims, type PlayerClaims, type TokenSource } from "./token.js";
export * from "./types.js";
export type { components, paths, operations } from "./generated/openapi.js";
