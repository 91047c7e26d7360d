// The client a game holds: every player-facing operation of the api, with the models generated
// from sdks/openapi.json (Generated/Models.g.cs). Continuations run on the caller's
// synchronisation context (no ConfigureAwait(false)): under Unity a transport over
// UnityWebRequest is then always called on the main thread.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Ledgerboard.Client.Models;

namespace Ledgerboard.Client
{
    public sealed class LedgerboardClient
    {
        private readonly Sender sender;

        public LedgerboardClient(LedgerboardOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            sender = new Sender(options);
        }

        /// <summary>A new idempotency key: a random UUID.</summary>
        public static string NewEventId()
        {
            return Guid.NewGuid().ToString("D");
        }

        /// <summary>The player the token names (its sub), null for a service token.</summary>
        public async Task<string> PlayerIdAsync()
        {
            return Sub(await sender.Tokens.CurrentAsync());
        }

        /// <summary>A JWT's sub, read without verifying it (the api verifies); null when not a JWT.</summary>
        public static string Sub(string token)
        {
            if (token == null) return null;
            var parts = token.Split('.');
            if (parts.Length != 3 || !parts[0].StartsWith("eyJ", StringComparison.Ordinal)) return null;
            try
            {
                var b64 = parts[1].Replace('-', '+').Replace('_', '/');
                b64 += new string('=', (4 - b64.Length % 4) % 4);
                var claims = Json.Parse(Encoding.UTF8.GetString(Convert.FromBase64String(b64))) as Dictionary<string, object>;
                object sub;
                return claims != null && claims.TryGetValue("sub", out sub) ? sub as string : null;
            }
            catch (FormatException)
            {
                return null;
            }
        }

        private async Task<string> Who(string userId)
        {
            var id = userId ?? await PlayerIdAsync();
            if (id == null)
                throw new LedgerboardException(0, ErrorCodes.InvalidUserId, "no UserId given, and the token is not a player token that names one", null, null, 0, null);
            return id;
        }

        private static string Seg(string s) { return Uri.EscapeDataString(s); }

        private static string Num(long? v) { return v.HasValue ? v.Value.ToString(CultureInfo.InvariantCulture) : null; }

        private static string Lower(object v) { return v == null ? null : v.ToString().ToLowerInvariant(); }

        private static List<KeyValuePair<string, string>> Query(ReadOptions o, params KeyValuePair<string, string>[] more)
        {
            var q = new List<KeyValuePair<string, string>>();
            if (o != null)
            {
                q.Add(Pair("consistency", Lower(o.Consistency)));
                q.Add(Pair("rank_mode", Lower(o.RankMode)));
                q.Add(Pair("period", o.Period));
                q.Add(Pair("cohort", Num(o.Cohort)));
            }
            q.AddRange(more);
            return q;
        }

        private static KeyValuePair<string, string> Pair(string k, string v) { return new KeyValuePair<string, string>(k, v); }

        // Score commands

        /// <summary>
        /// Posts one result. The event id is drawn once (or taken from input.EventId) and every
        /// retry sends the same body: the api applies it at most once, and a retry of an applied
        /// command answers that first outcome with Duplicate = true.
        /// </summary>
        public async Task<CommandOutcome> SubmitScoreAsync(string board, ScoreInput input, CancellationToken ct = default(CancellationToken))
        {
            var body = new CommandBody
            {
                EventId = input.EventId ?? NewEventId(),
                UserId = await Who(input.UserId),
                Delta = input.Delta,
                Score = input.Score,
                Metadata = input.Metadata,
                AttemptId = input.AttemptId,
            };
            var json = await sender.SendAsync("POST", "/v1/boards/" + Seg(board) + "/scores", null, body.ToJson(), ct);
            return CommandOutcome.FromJson(json);
        }

        /// <summary>Starts an attempt (a run the server saw begin) on a board that requires them.</summary>
        public async Task<Attempt> StartAttemptAsync(string board, AttemptInput input = null, CancellationToken ct = default(CancellationToken))
        {
            var body = new AttemptBody
            {
                RequestId = input != null && input.RequestId != null ? input.RequestId : NewEventId(),
                UserId = input == null ? null : input.UserId,
            };
            return Attempt.FromJson(await sender.SendAsync("POST", "/v1/boards/" + Seg(board) + "/attempts", null, body.ToJson(), ct));
        }

        // Reads: every answer carries Freshness.

        public async Task<Page> TopAsync(string board, TopOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var q = Query(o);
            if (o != null)
            {
                q.Add(Pair("limit", Num(o.Limit)));
                q.Add(Pair("offset", Num(o.Offset)));
                q.Add(Pair("after", o.After));
            }
            return Page.FromJson(await sender.SendAsync("GET", "/v1/boards/" + Seg(board) + "/top", q, null, ct));
        }

        /// <summary>One member's entry and rank; MinVersion for read-your-writes. not_found when it has none.</summary>
        public async Task<Member> UserAsync(string board, string userId, UserOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var q = Query(o);
            if (o != null) q.Add(Pair("min_version", Num(o.MinVersion)));
            return Member.FromJson(await sender.SendAsync("GET", "/v1/boards/" + Seg(board) + "/users/" + Seg(userId), q, null, ct));
        }

        /// <summary>The member's own entry after a command: UserAsync with the command's version as MinVersion.</summary>
        public Task<Member> MyEntryAsync(CommandOutcome outcome, UserOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var options = o ?? new UserOptions();
            options.MinVersion = outcome.Version;
            return UserAsync(outcome.Board, outcome.UserId, options, ct);
        }

        public async Task<Page> AroundAsync(string board, string userId, AroundOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var q = Query(o);
            if (o != null) q.Add(Pair("radius", Num(o.Radius)));
            return Page.FromJson(await sender.SendAsync("GET", "/v1/boards/" + Seg(board) + "/users/" + Seg(userId) + "/around", q, null, ct));
        }

        /// <summary>Several members (a friends board): up to 100 ids, none with a comma.</summary>
        public async Task<Users> UsersAsync(string board, IEnumerable<string> ids, ReadOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var q = Query(o, Pair("ids", string.Join(",", ids)));
            return Users.FromJson(await sender.SendAsync("GET", "/v1/boards/" + Seg(board) + "/users", q, null, ct));
        }

        /// <summary>The board's definition: its operator, order, columns, periods.</summary>
        public async Task<BoardDefinition> BoardAsync(string board, CancellationToken ct = default(CancellationToken))
        {
            return BoardDefinition.FromJson(await sender.SendAsync("GET", "/v1/boards/" + Seg(board), null, null, ct));
        }

        /// <summary>A closed period's frozen standings, a page at a time (after: a page's Next).</summary>
        public async Task<Standings> StandingsAsync(string board, string period, long? after = null, int? limit = null, CancellationToken ct = default(CancellationToken))
        {
            var q = Query(null, Pair("after", Num(after)), Pair("limit", Num(limit)));
            return Standings.FromJson(await sender.SendAsync("GET", "/v1/boards/" + Seg(board) + "/periods/" + Seg(period) + "/standings", q, null, ct));
        }

        // Competitions

        public async Task<CompetitionPage> CompetitionsAsync(CompetitionListOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var q = new List<KeyValuePair<string, string>>();
            if (o != null)
            {
                q.Add(Pair("category", o.Category));
                q.Add(Pair("state", o.State));
                q.Add(Pair("after", o.After));
                q.Add(Pair("limit", Num(o.Limit)));
            }
            return CompetitionPage.FromJson(await sender.SendAsync("GET", "/v1/competitions", q, null, ct));
        }

        public async Task<Competition> CompetitionAsync(string id, CancellationToken ct = default(CancellationToken))
        {
            return Competition.FromJson(await sender.SendAsync("GET", "/v1/competitions/" + Seg(id), null, null, ct));
        }

        /// <summary>Enters the run open now, once: again answers the same entry (Duplicate), so a
        /// retry is safe. With cohorts, read the board with the answer's Cohort.</summary>
        public async Task<Entry> EnterAsync(string id, EntryInput input = null, CancellationToken ct = default(CancellationToken))
        {
            var body = new EntryBody { UserId = input == null ? null : input.UserId, Rating = input == null ? null : input.Rating };
            return Entry.FromJson(await sender.SendAsync("POST", "/v1/competitions/" + Seg(id) + "/entries", null, body.ToJson(), ct));
        }

        /// <summary>A run's standings with the prize each rank earns (Final once the run is closed).</summary>
        public async Task<Results> ResultsAsync(string id, ResultsOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            var q = new List<KeyValuePair<string, string>>();
            if (o != null)
            {
                q.Add(Pair("run", o.Run));
                q.Add(Pair("cohort", Num(o.Cohort)));
                q.Add(Pair("rank_mode", Lower(o.RankMode)));
                q.Add(Pair("offset", Num(o.Offset)));
                q.Add(Pair("limit", Num(o.Limit)));
            }
            return Results.FromJson(await sender.SendAsync("GET", "/v1/competitions/" + Seg(id) + "/results", q, null, ct));
        }

        /// <summary>A player's tier now and its runs, newest first (the token's player by default).</summary>
        public async Task<History> HistoryAsync(string id, string userId = null, CancellationToken ct = default(CancellationToken))
        {
            var who = await Who(userId);
            return History.FromJson(await sender.SendAsync("GET", "/v1/competitions/" + Seg(id) + "/players/" + Seg(who), null, null, ct));
        }

        // Events out: the event feed (a game's backend, with a service token of the events scope)
        // and live updates (a game client).

        /// <summary>A page of the event feed after a page's Next; with Wait, a long poll.</summary>
        public async Task<EventPage> EventsAsync(EventsOptions o = null, CancellationToken ct = default(CancellationToken))
        {
            o = o ?? new EventsOptions();
            var q = Query(null, Pair("after", Num(o.After)), Pair("kinds", o.Kinds == null ? null : string.Join(",", o.Kinds)),
                Pair("boards", o.Boards == null ? null : string.Join(",", o.Boards)), Pair("limit", Num(o.Limit)), Pair("wait", Num(o.Wait)));
            var wait = TimeSpan.FromSeconds(o.Wait ?? 0);
            return EventPage.FromJson(await sender.SendAsync("GET", "/v1/events", q, null, ct, wait));
        }

        /// <summary>
        /// Live updates of a board (server-sent events): onUpdate gets each snapshot (the board's
        /// first N and, with a player token, the player's entry and neighbours, with the reads'
        /// freshness). After a lost connection the client reconnects and resumes from the last
        /// event id it received (Last-Event-ID): the server sends a snapshot again only if it
        /// changed. Set LastEventId to an earlier subscription's to resume across subscriptions.
        /// </summary>
        public Subscription Live(string board, Action<LiveMessage, ServerEvent> onUpdate, LiveOptions o = null)
        {
            o = o ?? new LiveOptions();
            var query = o.Query == null ? new Dictionary<string, string>() : new Dictionary<string, string>(o.Query);
            if (o.Top.HasValue) query["top"] = Num(o.Top);
            if (o.Radius.HasValue) query["radius"] = Num(o.Radius);
            if (o.Period != null) query["period"] = o.Period;
            if (o.Cohort.HasValue) query["cohort"] = Num(o.Cohort);
            var options = new SubscribeOptions
            {
                LastEventId = o.LastEventId, Reconnect = o.Reconnect, OnError = o.OnError, OnOpen = o.OnOpen, Query = query,
            };
            var subscription = new Subscription();
            subscription.Start(sender, "/v1/boards/" + Seg(board) + "/live", options, e =>
            {
                if (e.Event != "snapshot") return;
                onUpdate(LiveMessage.FromJson(Json.Parse(e.Data)), e);
            });
            return subscription;
        }
    }
}
