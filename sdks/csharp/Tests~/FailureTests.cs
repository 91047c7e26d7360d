// The failure paths a game meets, against the running stack: the api restarted in the middle
// of a submission (the system test checks PostgreSQL for exactly one effect afterwards), a 429
// honoured, an expired player token refreshed once, and a freshness that says database.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading.Tasks;
using Ledgerboard.Client;
using Ledgerboard.Client.Models;

namespace Ledgerboard.Client.Tests
{
    public static class FailureTests
    {
        public static IEnumerable<TestCase> All()
        {
            yield return new TestCase("the api restarted in the middle of a submission: one effect, the same event id", true, Restart);
            yield return new TestCase("a 429 is honoured: the call waits for Retry-After and then succeeds", true, RateLimited);
            yield return new TestCase("an expired player token is refreshed once, also for concurrent calls", true, Expired);
            yield return new TestCase("a freshness that says database reaches the caller, with its reason", true, Database);
        }

        private static Dictionary<string, object> Add()
        {
            return new Dictionary<string, object> { { "operator", "add" } };
        }

        private static async Task Restart()
        {
            // LB_RESTART_URL is a proxy that forwards the first request, lets the api apply it,
            // drops the answer and has the api restarted; the SDK retries through the outage.
            var retries = new List<RetryInfo>();
            var lb = new LedgerboardClient(new LedgerboardOptions
            {
                BaseUrl = Stack.Restart,
                Token = Stack.Mint(Stack.RestartUser),
                Retry = new RetryPolicy { MaxAttempts = 40, BaseDelay = TimeSpan.FromMilliseconds(100), MaxDelay = TimeSpan.FromSeconds(1) },
                OnRetry = retries.Add,
            });
            var outcome = await lb.SubmitScoreAsync(Stack.RestartBoard, new ScoreInput { Delta = Stack.RestartDelta });
            // The first send was applied; the answer that arrives is the retry's: a repeat of it.
            Check.Equal("True " + Stack.RestartDelta + " 1", outcome.Duplicate + " " + outcome.Score + " " + outcome.Version, "the outcome");
            Check.True(retries.Count >= 1 && retries.All(r => r.Status == 0), "retries without an answer: " + string.Join(",", retries.Select(r => r.Status + " " + r.Code)));
        }

        private static async Task RateLimited()
        {
            var board = Stack.Name("limited");
            await Stack.DeclareAsync(board, Add());
            var retries = new List<RetryInfo>();
            // That api lets a player send one request at a time, refilled once a second.
            var lb = new LedgerboardClient(new LedgerboardOptions { BaseUrl = Stack.Limited, Token = Stack.Mint("max"), OnRetry = retries.Add });
            await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 1 });
            var clock = Stopwatch.StartNew();
            var second = await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 1 });
            var waited = clock.Elapsed;
            Check.Equal(2L, second.Score, "score");
            // One 429, then the wait it asked for, then the send that succeeds: a client that
            // retried sooner would have met more of them.
            var limited = retries.Where(r => r.Status == 429).ToList();
            Check.Equal(1, limited.Count, "429s met");
            Check.Equal(ErrorCodes.RateLimited, limited[0].Code, "code");
            Check.True(limited[0].RetryAfter.HasValue && limited[0].RetryAfter.Value >= TimeSpan.FromSeconds(1), "Retry-After");
            Check.True(limited[0].Delay >= limited[0].RetryAfter.Value, "the wait is Retry-After's");
            Check.True(waited >= limited[0].RetryAfter.Value, "waited " + waited.TotalMilliseconds + " ms");
        }

        private static async Task Expired()
        {
            var board = Stack.Name("tokens");
            await Stack.DeclareAsync(board, Add());
            var refreshes = 0;
            var lb = new LedgerboardClient(new LedgerboardOptions
            {
                BaseUrl = Stack.Api,
                // Expired two minutes ago: past the api's 30 s of clock tolerance.
                Token = Stack.Mint("ned", -120),
                RefreshToken = () =>
                {
                    System.Threading.Interlocked.Increment(ref refreshes);
                    return Task.FromResult(Stack.Mint("ned"));
                },
            });
            var posted = await Task.WhenAll(Enumerable.Range(0, 3).Select(_ => lb.SubmitScoreAsync(board, new ScoreInput { Delta = 1 })));
            Check.Equal("False,False,False", posted.Select(p => (object)p.Duplicate), "three commands");
            Check.Equal(1, refreshes, "refreshes");
            var mine = await lb.UserAsync(board, "ned", new UserOptions { Consistency = Consistency.Strong });
            Check.Equal(3L, mine.Score, "score");
            Check.Equal(1, refreshes, "a valid token is not refreshed");
        }

        private static async Task Database()
        {
            var board = Stack.Name("strong");
            await Stack.DeclareAsync(board, Add());
            var lb = Stack.Player("oli");
            var posted = await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 9 });
            var strong = await lb.UserAsync(board, "oli", new UserOptions { Consistency = Consistency.Strong, MinVersion = posted.Version });
            Check.Equal(Source.Database, strong.Freshness.Source, "source");
            Check.Equal<Reason?>(Reason.Strong, strong.Freshness.Reason, "reason");
            Check.Equal<ProjectionState?>(null, strong.Freshness.Projection, "a strong read does not look at Redis");
            Check.Equal(9L, strong.Score, "score");
            var page = await lb.TopAsync(board, new TopOptions { Consistency = Consistency.Strong });
            Check.Equal("Database Strong", page.Freshness.Source + " " + page.Freshness.Reason, "top");
        }
    }
}
