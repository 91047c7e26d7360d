// What a caller configures and passes: the client's options, the retry rule, each call's input.

using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using Ledgerboard.Client.Models;

namespace Ledgerboard.Client
{
    public sealed class LedgerboardOptions
    {
        /// <summary>The api's public address, https://leaderboards.example.com.</summary>
        public string BaseUrl { get; set; }

        /// <summary>A player token (or a service token, on a game server). Leave it null to have
        /// RefreshToken give the first one.</summary>
        public string Token { get; set; }

        /// <summary>Gives a new player token (ask the game's backend): called when the api answers
        /// token_expired (once per call; concurrent calls share one), or for the first token.</summary>
        public Func<Task<string>> RefreshToken { get; set; }

        public RetryPolicy Retry { get; set; }

        /// <summary>Told before every repeated send (logging, metrics, tests).</summary>
        public Action<RetryInfo> OnRetry { get; set; }

        /// <summary>What carries the requests; an HttpClientTransport when null.</summary>
        public IHttpTransport Transport { get; set; }
    }

    /// <summary>
    /// Which failures are sent again and how often. A call the api may not have answered (no
    /// answer, a timeout, 502/503/504) or refused for now (429) is sent again unchanged: every
    /// call of this client is idempotent, so a second send never makes a second effect.
    /// </summary>
    public sealed class RetryPolicy
    {
        public RetryPolicy()
        {
            MaxAttempts = 6;
            BaseDelay = TimeSpan.FromMilliseconds(200);
            MaxDelay = TimeSpan.FromSeconds(5);
            Timeout = TimeSpan.FromSeconds(10);
            MaxRetryAfter = TimeSpan.FromSeconds(60);
        }

        /// <summary>Sends per call, the first included.</summary>
        public int MaxAttempts { get; set; }
        /// <summary>The first backoff; each next one doubles, up to MaxDelay.</summary>
        public TimeSpan BaseDelay { get; set; }
        public TimeSpan MaxDelay { get; set; }
        /// <summary>One send's bound, answer included.</summary>
        public TimeSpan Timeout { get; set; }
        /// <summary>A Retry-After longer than this is not waited for: the call fails with rate_limited.</summary>
        public TimeSpan MaxRetryAfter { get; set; }
    }

    /// <summary>What OnRetry is told before each repeated send.</summary>
    public sealed class RetryInfo
    {
        public string Method { get; set; }
        public string Path { get; set; }
        /// <summary>The send that failed (1: the first).</summary>
        public int Attempt { get; set; }
        public TimeSpan Delay { get; set; }
        /// <summary>network_error, client_timeout, or the api's code (rate_limited, unavailable, …).</summary>
        public string Code { get; set; }
        /// <summary>The HTTP status, 0 when no answer arrived.</summary>
        public int Status { get; set; }
        public TimeSpan? RetryAfter { get; set; }
    }

    /// <summary>Eventual: the projection always; Bounded (the api's default): the projection
    /// while it keeps up, else PostgreSQL; Strong: PostgreSQL always (rewards, payouts).</summary>
    public enum Consistency { Bounded, Eventual, Strong }

    public enum RankMode { Ordinal, Dense, Competition }

    public class ReadOptions
    {
        /// <summary>Null: the api's default (bounded).</summary>
        public Consistency? Consistency { get; set; }
        public RankMode? RankMode { get; set; }
        /// <summary>current (the default), previous, or a period id (20261130T000000Z).</summary>
        public string Period { get; set; }
        /// <summary>A cohort of a competition's run.</summary>
        public int? Cohort { get; set; }
    }

    public sealed class TopOptions : ReadOptions
    {
        public int? Limit { get; set; }
        public long? Offset { get; set; }
        /// <summary>A page's Next: the page after it.</summary>
        public string After { get; set; }
    }

    public sealed class UserOptions : ReadOptions
    {
        /// <summary>Read-your-writes: a command's Version. The answer holds at least that version
        /// (from PostgreSQL when the projection does not yet); with Eventual, projection_behind.</summary>
        public long? MinVersion { get; set; }
    }

    public sealed class AroundOptions : ReadOptions
    {
        public int? Radius { get; set; }
    }

    public sealed class ScoreInput
    {
        /// <summary>The player. Defaults to the player token's sub; a service token must name one.</summary>
        public string UserId { get; set; }
        /// <summary>On add boards.</summary>
        public Submitted Delta { get; set; }
        /// <summary>On best and latest boards.</summary>
        public Submitted Score { get; set; }
        public Dictionary<string, object> Metadata { get; set; }
        public string AttemptId { get; set; }
        /// <summary>The idempotency key, drawn by the client when null. Set your own to resend a
        /// submission across restarts of the game itself: store it before the first send.</summary>
        public string EventId { get; set; }
    }

    public sealed class AttemptInput
    {
        public string UserId { get; set; }
        /// <summary>The start's idempotency key, drawn by the client when null.</summary>
        public string RequestId { get; set; }
    }

    public sealed class EntryInput
    {
        public string UserId { get; set; }
        public long? Rating { get; set; }
    }

    public sealed class ResultsOptions
    {
        public string Run { get; set; }
        public int? Cohort { get; set; }
        public RankMode? RankMode { get; set; }
        public long? Offset { get; set; }
        public int? Limit { get; set; }
    }

    public sealed class CompetitionListOptions
    {
        public string Category { get; set; }
        /// <summary>upcoming, open or ended.</summary>
        public string State { get; set; }
        public string After { get; set; }
        public int? Limit { get; set; }
    }

    public sealed class EventsOptions
    {
        /// <summary>A page's Next: the events after it. Null: from the oldest event kept.</summary>
        public long? After { get; set; }
        /// <summary>Only these kinds (score.accepted, rank.top_changed, …).</summary>
        public IEnumerable<string> Kinds { get; set; }
        /// <summary>Only these boards.</summary>
        public IEnumerable<string> Boards { get; set; }
        public int? Limit { get; set; }
        /// <summary>Seconds to wait for an event when none follows After yet (a long poll, up to 30).</summary>
        public int? Wait { get; set; }
    }
}
