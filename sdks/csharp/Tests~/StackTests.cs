// Every player-facing operation through the SDK against the running stack: score commands and
// their refusals, reads with their typed freshness, attempts, competitions with cohorts, and a
// tournament run to its close.

using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using Ledgerboard.Client;
using Ledgerboard.Client.Models;

namespace Ledgerboard.Client.Tests
{
    public static class StackTests
    {
        public static IEnumerable<TestCase> All()
        {
            yield return new TestCase("score commands: delta, columns, metadata, and a repeat answers its first outcome", true, Scores);
            yield return new TestCase("refusals arrive as typed errors with their stable codes", true, Refusals);
            yield return new TestCase("reads: top, user, around and users carry a typed freshness", true, Reads);
            yield return new TestCase("read-your-writes: MinVersion gives at least the command's version", true, ReadYourWrites);
            yield return new TestCase("attempts: a score carries the attempt the server saw start, once", true, Attempts);
            yield return new TestCase("competitions: enter with a rating, score in the cohort, results and history", true, Cohorts);
            yield return new TestCase("a tournament closes: final results with prizes, frozen standings", true, Tournament);
        }

        private static Dictionary<string, object> Def(params object[] kv)
        {
            var d = new Dictionary<string, object>();
            for (var i = 0; i < kv.Length; i += 2) d[(string)kv[i]] = kv[i + 1];
            return d;
        }

        private static async Task Scores()
        {
            var points = Stack.Name("points");
            var race = Stack.Name("race");
            await Stack.DeclareAsync(points, Def("operator", "add"));
            await Stack.DeclareAsync(race, Def("operator", "best", "columns", new object[]
            {
                Def("name", "laps", "order", "descending"), Def("name", "time_ms", "order", "ascending", "min", 1),
            }));
            var lb = Stack.Player("ann");
            Check.Equal("ann", await lb.PlayerIdAsync(), "the token's player");
            var eventId = LedgerboardClient.NewEventId();
            var metadata = new Dictionary<string, object> { { "car", "red" } };
            var first = await lb.SubmitScoreAsync(points, new ScoreInput { EventId = eventId, Delta = 10, Metadata = metadata });
            Check.Equal("10 1 False ann", first.Score + " " + first.Version + " " + first.Duplicate + " " + first.UserId, "first");
            var again = await lb.SubmitScoreAsync(points, new ScoreInput { EventId = eventId, Delta = 10, Metadata = metadata });
            Check.Equal("10 1 True " + eventId, again.Score + " " + again.Version + " " + again.Duplicate + " " + again.EventId, "repeat");

            var run = await lb.SubmitScoreAsync(race, new ScoreInput { Score = Submitted.Of(12, 93120) });
            Check.Equal("12,93120", run.Scores.Cast<object>(), "scores");
            var byName = await lb.SubmitScoreAsync(race, new ScoreInput { Score = Submitted.Of(new Dictionary<string, long> { { "laps", 12 }, { "time_ms", 91000 } }) });
            Check.Equal("12,91000 True 2", string.Join(",", byName.Scores) + " " + byName.Improved + " " + byName.Version, "by name");
            var worse = await lb.SubmitScoreAsync(race, new ScoreInput { Score = Submitted.Of(11, 80000) });
            Check.Equal("12,91000 False", string.Join(",", worse.Scores) + " " + worse.Improved, "worse");

            var top = await lb.TopAsync(points, new TopOptions { Consistency = Consistency.Strong });
            Check.Equal("ann 10 red", top.Entries.Select(e => (object)(e.UserId + " " + e.Score + " " + e.Metadata["car"])), "top");
        }

        private static async Task Refusals()
        {
            var board = Stack.Name("refusals");
            await Stack.DeclareAsync(board, Def("operator", "add"));
            var lb = Stack.Player("bob");
            await Check.Refused(() => lb.SubmitScoreAsync(board, new ScoreInput { Delta = 5000 }), 422, ErrorCodes.DeltaOutOfRange);
            await Check.Refused(() => lb.SubmitScoreAsync(board, new ScoreInput { Score = 5 }), 422, ErrorCodes.WrongValueField);
            await Check.Refused(() => lb.SubmitScoreAsync(board, new ScoreInput { UserId = "someone-else", Delta = 1 }), 403, ErrorCodes.PlayerUser);
            var eventId = LedgerboardClient.NewEventId();
            await lb.SubmitScoreAsync(board, new ScoreInput { EventId = eventId, Delta = 1 });
            await Check.Refused(() => lb.SubmitScoreAsync(board, new ScoreInput { EventId = eventId, Delta = 2 }), 409, ErrorCodes.EventIdReused);
            await Check.Refused(() => lb.SubmitScoreAsync(Stack.Name("undeclared"), new ScoreInput { Delta = 1 }), 403, ErrorCodes.BoardServerOnly);
            await Check.Refused(() => lb.UserAsync(board, "nobody"), 404, ErrorCodes.NotFound);
        }

        private static async Task Reads()
        {
            var board = Stack.Name("reads");
            await Stack.DeclareAsync(board, Def("operator", "best"));
            var users = new[] { "cat", "dan", "eve", "fay" };
            for (var i = 0; i < users.Length; i++)
                await Stack.Player(users[i]).SubmitScoreAsync(board, new ScoreInput { Score = 100 - i * 10 });
            var lb = Stack.Player("cat");
            Page page = null;
            // Bounded reads come from the projection once the board is projected and sealed.
            await Stack.Eventually("a read from the projection", 20000, async () =>
            {
                page = await lb.TopAsync(board, new TopOptions { Limit = 2 });
                return page.Freshness.Source == Source.Projection && page.Total == 4;
            });
            Check.Equal<Reason?>(null, page.Freshness.Reason, "no reason from the projection");
            Check.Equal<ProjectionState?>(ProjectionState.Whole, page.Freshness.Projection, "projection");
            Check.Equal("1 cat 100,2 dan 90", page.Entries.Select(e => (object)(e.Rank + " " + e.UserId + " " + e.Score)), "first page");
            Check.True(page.Next != null, "a full page has a cursor");
            var rest = await lb.TopAsync(board, new TopOptions { Limit = 2, After = page.Next });
            Check.Equal("eve,fay", rest.Entries.Select(e => (object)e.UserId), "next page");
            var around = await lb.AroundAsync(board, "eve", new AroundOptions { Radius = 1 });
            Check.Equal("dan,eve,fay", around.Entries.Select(e => (object)e.UserId), "around");
            var friends = await lb.UsersAsync(board, new[] { "fay", "cat", "nobody" }, new ReadOptions { RankMode = RankMode.Competition });
            Check.Equal("cat 1,fay 4", friends.Entries.Select(e => (object)(e.UserId + " " + e.Rank)), "friends");
            Check.Equal("nobody", friends.Missing.Cast<object>(), "missing");
            var me = await lb.UserAsync(board, "dan", new UserOptions { RankMode = RankMode.Dense });
            Check.Equal("2 4 75", me.Rank + " " + me.Total + " " + me.Percentile, "dan");
            var definition = await lb.BoardAsync(board);
            Check.Equal("Best Descending Player", definition.Operator + " " + definition.Sort + " " + definition.WritePolicy, "definition");
        }

        private static async Task ReadYourWrites()
        {
            var board = Stack.Name("ryw");
            await Stack.DeclareAsync(board, Def("operator", "add"));
            var lb = Stack.Player("gus");
            for (var i = 1; i <= 3; i++)
            {
                var posted = await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 5 });
                var mine = await lb.MyEntryAsync(posted);
                Check.True(mine.Version >= posted.Version, "version " + mine.Version + " >= " + posted.Version);
                Check.Equal(5L * i, mine.Score, "score");
                // From PostgreSQL, the answer says why (min_version, or the new board's projection_missing).
                if (mine.Freshness.Source == Source.Database) Check.True(mine.Freshness.Reason.HasValue, "a reason");
            }
        }

        private static async Task Attempts()
        {
            var board = Stack.Name("runs");
            await Stack.DeclareAsync(board, Def("operator", "best", "attempts", Def("min_duration_ms", 0, "max_per_period", 5)));
            var lb = Stack.Player("hal");
            await Check.Refused(() => lb.SubmitScoreAsync(board, new ScoreInput { Score = 10 }), 422, ErrorCodes.AttemptRequired);
            var requestId = LedgerboardClient.NewEventId();
            var attempt = await lb.StartAttemptAsync(board, new AttemptInput { RequestId = requestId });
            Check.Equal(board + " hal False", attempt.Board + " " + attempt.UserId + " " + attempt.Duplicate, "attempt");
            var repeat = await lb.StartAttemptAsync(board, new AttemptInput { RequestId = requestId });
            Check.Equal(attempt.AttemptId + " True", repeat.AttemptId + " " + repeat.Duplicate, "repeat");
            var posted = await lb.SubmitScoreAsync(board, new ScoreInput { Score = 42, AttemptId = attempt.AttemptId });
            Check.Equal(42L, posted.Score, "score");
            await Check.Refused(() => lb.SubmitScoreAsync(board, new ScoreInput { Score = 43, AttemptId = attempt.AttemptId }), 409, ErrorCodes.AttemptUsed);
        }

        private static async Task Cohorts()
        {
            var id = Stack.Name("raid");
            await Stack.DeclareAsync(id, Def("operator", "add", "reset", "weekly"));
            await Stack.AdminAsync("PUT", "/v1/competitions/" + id, Def("cohort_size", 2, "rating_band", 200, "category", "sdk",
                "prizes", new object[] { Def("from", 1, "to", 1, "reward", "chest", "amount", 1) }));
            var cohorts = new Dictionary<string, int>();
            foreach (var p in new[] { Tuple.Create("ivy", 1480L), Tuple.Create("jon", 1500L), Tuple.Create("kim", 3000L) })
            {
                var player = Stack.Player(p.Item1);
                var entry = await player.EnterAsync(id, new EntryInput { Rating = p.Item2 });
                Check.Equal(false, entry.Duplicate, "first entry");
                var again = await player.EnterAsync(id, new EntryInput { Rating = p.Item2 });
                Check.Equal("True " + entry.Seat + " " + entry.Cohort, again.Duplicate + " " + again.Seat + " " + again.Cohort, "entry again");
                cohorts[p.Item1] = entry.Cohort.Value;
                var posted = await player.SubmitScoreAsync(id, new ScoreInput { Delta = p.Item2 / 100 });
                Check.Equal(entry.Cohort, posted.Cohort, "the command's cohort");
            }
            Check.Equal(cohorts["ivy"], cohorts["jon"], "similar ratings share a cohort");
            Check.True(cohorts["ivy"] != cohorts["kim"], "a far rating opens another");
            var lb = Stack.Player("ivy");
            var listed = await lb.CompetitionsAsync(new CompetitionListOptions { Category = "sdk", State = "open" });
            Check.True(listed.Competitions.Any(c => c.Id == id), "listed");
            var competition = await lb.CompetitionAsync(id);
            Check.Equal("3 2", competition.Entrants + " " + competition.CohortSize, "competition");
            var cohort = cohorts["ivy"];
            var mine = await lb.AroundAsync(id, "ivy", new AroundOptions { Cohort = cohort, Radius = 5, Consistency = Consistency.Strong });
            Check.Equal("jon,ivy", mine.Entries.Select(e => (object)e.UserId), "my cohort");
            Check.Equal<int?>(cohort, mine.Cohort, "the read's cohort");
            var results = await lb.ResultsAsync(id, new ResultsOptions { Cohort = cohort });
            Check.Equal(false, results.Final, "final");
            Check.Equal("jon chest,ivy -", results.Entries.Select(e => (object)(e.UserId + " " + (e.Prize == null ? "-" : e.Prize.Reward))), "results");
            var history = await lb.HistoryAsync(id);
            Check.Equal("ivy 1 " + cohort, history.UserId + " " + history.Runs.Count + " " + history.Runs[0].Cohort, "history");
        }

        private static async Task Tournament()
        {
            var id = Stack.Name("cup");
            await Stack.DeclareAsync(id, Def("operator", "best", "reset", "manual"));
            await Stack.AdminAsync("PUT", "/v1/competitions/" + id, Def("ends_at", Stack.At(4),
                "prizes", new object[] { Def("from", 1, "to", 1, "reward", "gold", "amount", 100) }));
            var lb = Stack.Player("lea");
            await Stack.Eventually("the tournament opens", 10000, async () => (await lb.CompetitionAsync(id)).State == "open");
            var entry = await lb.EnterAsync(id);
            await lb.SubmitScoreAsync(id, new ScoreInput { Score = 77 });
            await Stack.Eventually("the tournament ends", 15000, async () => (await lb.CompetitionAsync(id)).State == "ended");
            await Stack.Eventually("the run closes", 15000, async () =>
            {
                var closed = await Stack.AdminAsync("POST", "/v1/competitions/" + id + "/runs/" + entry.Run + "/close");
                var outcome = (string)closed["outcome"];
                return outcome == "closed" || outcome == "already_closed";
            });
            var results = await lb.ResultsAsync(id, new ResultsOptions { Run = entry.Run });
            Check.Equal(true, results.Final, "final");
            Check.Equal("lea 77 gold", results.Entries.Select(e => (object)(e.UserId + " " + e.Score + " " + e.Prize.Reward)), "results");
            var standings = await lb.StandingsAsync(id, entry.Run);
            Check.Equal("1 lea 77", standings.StandingsList.Select(s => (object)(s.Position + " " + s.UserId + " " + s.Score)), "standings");
            Check.Equal(64, standings.Digest.Length, "the digest");
            var history = await lb.HistoryAsync(id);
            Check.Equal("True 1", history.Runs[0].Closed + " " + history.Runs[0].Position, "history");
        }
    }
}
