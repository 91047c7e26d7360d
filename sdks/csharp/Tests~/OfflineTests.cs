// The client's rules without a server, through a fake transport (the HTTP seam): retries keep
// the body (the event id) byte for byte, Retry-After is honoured, refusals are typed and not
// retried, the JSON reader and writer, and the event-stream parser and resume.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Ledgerboard.Client;
using Ledgerboard.Client.Models;

namespace Ledgerboard.Client.Tests
{
    /// <summary>Answers each call with the next of its answers, and records what it was sent.</summary>
    public sealed class FakeTransport : IHttpTransport
    {
        private readonly Queue<Func<HttpCall, CancellationToken, Task<HttpAnswer>>> answers;
        public readonly List<HttpCall> Sent = new List<HttpCall>();
        public readonly List<long> SentAtMs = new List<long>();
        private readonly Stopwatch clock = Stopwatch.StartNew();

        public FakeTransport(params Func<HttpCall, CancellationToken, Task<HttpAnswer>>[] answers)
        {
            this.answers = new Queue<Func<HttpCall, CancellationToken, Task<HttpAnswer>>>(answers);
        }

        public Func<HttpCall, Action<string>, CancellationToken, Task<HttpAnswer>> Stream { get; set; }

        public static Func<HttpCall, CancellationToken, Task<HttpAnswer>> Answer(int status, string body, string retryAfter = null)
        {
            var headers = new Dictionary<string, string>();
            if (retryAfter != null) headers["Retry-After"] = retryAfter;
            return (call, ct) => Task.FromResult(new HttpAnswer(status, body, headers));
        }

        public Task<HttpAnswer> SendAsync(HttpCall call, CancellationToken ct)
        {
            Sent.Add(call);
            SentAtMs.Add(clock.ElapsedMilliseconds);
            return answers.Dequeue()(call, ct);
        }

        public Task<HttpAnswer> StreamAsync(HttpCall call, Action<string> onText, CancellationToken ct)
        {
            Sent.Add(call);
            return Stream(call, onText, ct);
        }
    }

    public static class OfflineTests
    {
        private const string Outcome = "{\"event_id\":\"e\",\"board\":\"b\",\"user_id\":\"u\",\"score\":10,\"version\":1,\"duplicate\":true,\"improved\":true}";

        public static IEnumerable<TestCase> All()
        {
            yield return new TestCase("a retried score command sends the same event id every time", false, SameEventId);
            yield return new TestCase("a 429's Retry-After is waited for before the next send", false, RetryAfter);
            yield return new TestCase("a refusal is a typed error and is not retried", false, Refusal);
            yield return new TestCase("no answer within the timeout is retried with the same body, then fails as client_timeout", false, Timeout);
            yield return new TestCase("the JSON reader and writer keep the api's shapes", false, JsonShapes);
            yield return new TestCase("the event-stream parser reads split pieces, CRLF, comments, ids and retry", false, Parser);
            yield return new TestCase("live updates resume after a lost connection with Last-Event-ID", false, Resume);
        }

        private static LedgerboardClient Client(FakeTransport transport, List<RetryInfo> retries = null, RetryPolicy policy = null)
        {
            return new LedgerboardClient(new LedgerboardOptions
            {
                BaseUrl = "http://api.invalid",
                Token = "service-token",
                Transport = transport,
                Retry = policy ?? new RetryPolicy { BaseDelay = TimeSpan.FromMilliseconds(1), MaxDelay = TimeSpan.FromMilliseconds(2) },
                OnRetry = retries == null ? (Action<RetryInfo>)null : retries.Add,
            });
        }

        private static async Task SameEventId()
        {
            var transport = new FakeTransport(
                (call, ct) => { throw new System.Net.Http.HttpRequestException("connection reset"); },
                FakeTransport.Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"PostgreSQL could not be reached\"}}"),
                FakeTransport.Answer(200, Outcome));
            var retries = new List<RetryInfo>();
            var result = await Client(transport, retries).SubmitScoreAsync("b", new ScoreInput { UserId = "u", Delta = 10 });
            Check.Equal(3, transport.Sent.Count, "sends");
            Check.Equal(1, transport.Sent.Select(c => c.Body).Distinct().Count(), "distinct bodies: " + string.Join(" | ", transport.Sent.Select(c => c.Body)));
            Check.True(transport.Sent[0].Body.Contains("\"event_id\":\""), transport.Sent[0].Body);
            Check.Equal(true, result.Duplicate, "duplicate");
            Check.Equal("0 network_error,503 unavailable", retries.Select(r => (object)(r.Status + " " + r.Code)), "retries");
        }

        private static async Task RetryAfter()
        {
            var transport = new FakeTransport(
                FakeTransport.Answer(429, "{\"error\":{\"code\":\"rate_limited\",\"message\":\"slow down\"}}", "1"),
                FakeTransport.Answer(200, "{\"entries\":[],\"total\":0,\"freshness\":{\"source\":\"projection\"}}"));
            var page = await Client(transport).TopAsync("b");
            Check.Equal(2, transport.Sent.Count, "sends");
            Check.True(transport.SentAtMs[1] - transport.SentAtMs[0] >= 1000, "waited " + (transport.SentAtMs[1] - transport.SentAtMs[0]) + " ms");
            Check.Equal(Source.Projection, page.Freshness.Source, "source");
        }

        private static async Task Refusal()
        {
            var transport = new FakeTransport(
                FakeTransport.Answer(422, "{\"error\":{\"code\":\"delta_out_of_range\",\"message\":\"delta must be between -1000 and 1000\"}}"));
            var e = await Check.Refused(() => Client(transport).SubmitScoreAsync("b", new ScoreInput { UserId = "u", Delta = 5000 }), 422, ErrorCodes.DeltaOutOfRange);
            Check.Equal(false, e.Retryable, "retryable");
            Check.Equal(1, transport.Sent.Count, "sends");
        }

        private static async Task Timeout()
        {
            Func<HttpCall, CancellationToken, Task<HttpAnswer>> hang = async (call, ct) =>
            {
                await Task.Delay(System.Threading.Timeout.Infinite, ct);
                return null;
            };
            var transport = new FakeTransport(hang, hang, hang);
            var policy = new RetryPolicy { MaxAttempts = 3, BaseDelay = TimeSpan.FromMilliseconds(1), MaxDelay = TimeSpan.FromMilliseconds(2), Timeout = TimeSpan.FromMilliseconds(50) };
            var e = await Check.Refused(() => Client(transport, null, policy).SubmitScoreAsync("b", new ScoreInput { UserId = "u", Delta = 1 }), 0, ErrorCodes.ClientTimeout);
            Check.Equal(3, e.Attempts, "attempts");
            Check.Equal(1, transport.Sent.Select(c => c.Body).Distinct().Count(), "distinct bodies");
        }

        private static Task JsonShapes()
        {
            var text = "{\"a\":[1,-2,9007199254740991,1.5,\"x\\u00e9\\n\",true,null,{}],\"b\":{\"c\":\"\\\"q\\\"\"}}";
            var tree = Json.Parse(text);
            Check.Equal(text.Replace("\\u00e9", "é"), Json.Serialize(tree), "round trip");
            var a = (List<object>)((Dictionary<string, object>)tree)["a"];
            Check.Equal(9007199254740991L, (long)a[2], "a 53-bit integer is exact");
            var body = new CommandBody { EventId = "e", UserId = "u", Score = Submitted.Of(12, 93120), Metadata = new Dictionary<string, object> { { "car", "red" } } };
            Check.Equal("{\"event_id\":\"e\",\"metadata\":{\"car\":\"red\"},\"score\":[12,93120],\"user_id\":\"u\"}", Json.Serialize(body.ToJson()), "a command body");
            var member = Member.FromJson(Json.Parse("{\"user_id\":\"u\",\"score\":3,\"version\":2,\"rank\":1,\"percentile\":100.0,\"total\":1,\"freshness\":{\"source\":\"database\",\"reason\":\"strong\",\"projection\":null}}"));
            Check.Equal(Source.Database, member.Freshness.Source, "source");
            Check.Equal<Reason?>(Reason.Strong, member.Freshness.Reason, "reason");
            Check.Equal<ProjectionState?>(null, member.Freshness.Projection, "projection");
            var unknown = Freshness.FromJson(Json.Parse("{\"source\":\"somewhere_new\"}"));
            Check.Equal(Source.Unknown, unknown.Source, "a value a newer api adds");
            var bad = false;
            try { Json.Parse("{\"a\":1,}"); } catch (FormatException) { bad = true; }
            Check.True(bad, "a trailing comma is refused");
            return Task.FromResult(0);
        }

        private static Task Parser()
        {
            var events = new List<ServerEvent>();
            var p = new EventStreamParser(null, events.Add);
            foreach (var piece in new[] { ": keep-alive\r\n", "id: 1\r", "\nevent: rank\ndata: {\"a\"", ":1}\n\n", "retry: 250\nid: 2\ndata: x\ndata: y\n", "\n" }) p.Push(piece);
            Check.Equal("1 rank {\"a\":1}|2 message x\ny", string.Join("|", events.Select(e => e.Id + " " + e.Event + " " + e.Data)), "events");
            Check.Equal<int?>(250, p.RetryMs, "retry");
            return Task.FromResult(0);
        }

        private static string Snapshot(int id, int total)
        {
            return "id: " + id + "\nevent: snapshot\ndata: {\"board\":\"b\",\"top\":{\"entries\":[],\"total\":" + total
                + "},\"freshness\":{\"source\":\"projection\",\"updates\":\"pubsub\"}}\n\n";
        }

        private static async Task Resume()
        {
            var transport = new FakeTransport();
            var seen = new List<string>();
            transport.Stream = (call, onText, ct) =>
            {
                string last;
                call.Headers.TryGetValue("Last-Event-ID", out last);
                seen.Add(last ?? "none");
                onText("");
                if (last == null)
                {
                    // Two snapshots and a heartbeat, then the connection drops.
                    onText("retry: 10\n\n" + Snapshot(1, 3) + ": hb\n\n" + Snapshot(2, 2));
                    return Task.FromResult(new HttpAnswer(200, null, null));
                }
                onText(Snapshot(int.Parse(last) + 1, 1));
                return Task.Delay(System.Threading.Timeout.Infinite, ct).ContinueWith(t => new HttpAnswer(200, null, null));
            };
            var totals = new List<long>();
            var three = new TaskCompletionSource<bool>();
            var sub = Client(transport).Live("b", (m, e) =>
            {
                totals.Add(m.Top.Total);
                if (totals.Count == 3) three.TrySetResult(true);
            });
            var done = await Task.WhenAny(three.Task, Task.Delay(10000));
            sub.Close();
            await sub.Done;
            Check.True(done == three.Task, "three updates within 10 s");
            Check.Equal("3,2,1", totals.Cast<object>(), "totals");
            Check.Equal("none,2", seen.Cast<object>(), "Last-Event-ID sent");
            Check.Equal("3", sub.LastEventId, "the last id");
        }
    }
}
