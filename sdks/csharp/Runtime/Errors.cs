// Errors as typed values: every refusal of the api carries a stable code (docs/api.md); the
// client adds three of its own for what never reached an answer (Status 0).

using System;

namespace Ledgerboard.Client
{
    /// <summary>A refusal of the api, or a call that never got an answer.</summary>
    public sealed class LedgerboardException : Exception
    {
        public LedgerboardException(int status, string code, string message, string board, TimeSpan? retryAfter, int attempts, Exception inner)
            : base(message, inner)
        {
            Status = status;
            Code = code;
            Board = board;
            RetryAfter = retryAfter;
            Attempts = attempts;
        }

        /// <summary>The HTTP status; 0 when no answer arrived (network_error, client_timeout, aborted).</summary>
        public int Status { get; private set; }

        /// <summary>Stable: match on it (<see cref="ErrorCodes"/>).</summary>
        public string Code { get; private set; }

        /// <summary>On a refusal by a board the command's board feeds: that board.</summary>
        public string Board { get; private set; }

        /// <summary>From Retry-After, on a 429 or a 503.</summary>
        public TimeSpan? RetryAfter { get; private set; }

        /// <summary>How many requests were sent for this call, retries included.</summary>
        public int Attempts { get; private set; }

        /// <summary>True when the same call may be sent again unchanged (the client already did, up to its limit).</summary>
        public bool Retryable
        {
            get { return Status == 0 || Status == 429 || Status == 502 || Status == 503 || Status == 504; }
        }

        public override string ToString()
        {
            return "LedgerboardException " + Status + " " + Code + ": " + Message;
        }
    }

    /// <summary>The api's stable error codes a game meets most (docs/api.md has them all), and the client's own.</summary>
    public static class ErrorCodes
    {
        public const string Unauthenticated = "unauthenticated";
        public const string Forbidden = "forbidden";
        public const string RateLimited = "rate_limited";
        public const string TokenExpired = "token_expired";
        public const string TokenKeyUnknown = "token_key_unknown";
        public const string TokenSignature = "token_signature";
        public const string TokenMalformed = "token_malformed";
        public const string PlayerUser = "player_user";
        public const string PlayerBoard = "player_board";
        public const string PlayerScope = "player_scope";
        public const string BoardServerOnly = "board_server_only";
        public const string MalformedBody = "malformed_body";
        public const string InvalidUserId = "invalid_user_id";
        public const string InvalidEventId = "invalid_event_id";
        public const string WrongValueField = "wrong_value_field";
        public const string InvalidDelta = "invalid_delta";
        public const string DeltaOutOfRange = "delta_out_of_range";
        public const string InvalidScore = "invalid_score";
        public const string ScoreOutOfRange = "score_out_of_range";
        public const string InvalidMetadata = "invalid_metadata";
        public const string MetadataTooLarge = "metadata_too_large";
        public const string EventIdReused = "event_id_reused";
        public const string AttemptRequired = "attempt_required";
        public const string AttemptUnknown = "attempt_unknown";
        public const string AttemptForeign = "attempt_foreign";
        public const string AttemptUsed = "attempt_used";
        public const string AttemptExpired = "attempt_expired";
        public const string AttemptTooFast = "attempt_too_fast";
        public const string AttemptLimit = "attempt_limit";
        public const string ProjectionBehind = "projection_behind";
        public const string NotFound = "not_found";
        public const string InvalidPeriod = "invalid_period";
        public const string NoSuchPeriod = "no_such_period";
        public const string PeriodNotClosed = "period_not_closed";
        public const string CompetitionUnknown = "competition_unknown";
        public const string CompetitionNotStarted = "competition_not_started";
        public const string CompetitionEnded = "competition_ended";
        public const string CompetitionFull = "competition_full";
        public const string CompetitionClosing = "competition_closing";
        public const string CompetitionNotEntered = "competition_not_entered";
        public const string CohortRequired = "cohort_required";
        public const string Unavailable = "unavailable";
        public const string Timeout = "timeout";
        public const string Internal = "internal";
        /// <summary>The client's own: the request failed before an answer.</summary>
        public const string NetworkError = "network_error";
        /// <summary>The client's own: no answer within the retry policy's timeout.</summary>
        public const string ClientTimeout = "client_timeout";
        /// <summary>The client's own: the caller cancelled.</summary>
        public const string Aborted = "aborted";
    }
}
