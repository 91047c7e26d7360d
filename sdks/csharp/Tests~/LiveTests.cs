// Events out through the SDK against the running stack: a board's live updates (a snapshot
// now, a new one after a score, a resume that does not repeat what was seen) and the event
// feed (a game backend's service token: a score's event, then a long poll for the next).

using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using Ledgerboard.Client;
using Ledgerboard.Client.Models;

namespace Ledgerboard.Client.Tests
{
    public static class LiveTests
    {
        public static IEnumerable<TestCase> All()
        {
            yield return new TestCase("live updates: a snapshot now, another after a score, and a resume that repeats nothing", true, Live);
            yield return new TestCase("the event feed: a score's event, then a long poll that answers with the next", true, Feed);
        }

        private sealed class Collected
        {
            public readonly List<LiveMessage> Messages = new List<LiveMessage>();
            public int Opened;
            public Subscription Sub;

            public long? LastScore()
            {
                lock (Messages)
                {
                    var m = Messages.LastOrDefault();
                    return m == null || m.Me == null || m.Me.Entry == null ? (long?)null : m.Me.Entry.Score;
                }
            }
        }

        private static Collected Collect(LedgerboardClient lb, string board, string lastEventId = null)
        {
            var c = new Collected();
            c.Sub = lb.Live(board, (m, e) => { lock (c.Messages) c.Messages.Add(m); }, new LiveOptions
            {
                Top = 5, Radius = 1, LastEventId = lastEventId,
                OnOpen = from => System.Threading.Interlocked.Increment(ref c.Opened),
            });
            return c;
        }

        private static async Task Live()
        {
            var board = Stack.Name("live");
            await Stack.DeclareAsync(board, new Dictionary<string, object> { { "operator", "add" } });
            var lb = Stack.Player("pia");
            await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 5 });
            var first = Collect(lb, board);
            await Stack.Eventually("a snapshot with the player's entry", 20000, () => Task.FromResult(first.LastScore() == 5));
            LiveMessage snapshot;
            lock (first.Messages) snapshot = first.Messages.Last();
            Check.Equal(board + " 1 pia", snapshot.Board + " " + snapshot.Top.Total + " " + snapshot.Top.Entries[0].UserId, "the snapshot");
            Check.True(snapshot.Freshness.Source != Source.Unknown, "a freshness source");
            Check.True(snapshot.Freshness.Updates != Updates.Unknown, "how updates arrive");
            await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 3 });
            await Stack.Eventually("a snapshot after the score", 20000, () => Task.FromResult(first.LastScore() == 8));
            var lastEventId = first.Sub.LastEventId;
            Check.True(lastEventId != null, "messages carry ids");
            first.Sub.Close();
            await first.Sub.Done;

            // Resumed from the last id: nothing is sent again until the board changes.
            var resumed = Collect(lb, board, lastEventId);
            await Stack.Eventually("the resumed stream opens", 10000, () => Task.FromResult(resumed.Opened > 0));
            await lb.SubmitScoreAsync(board, new ScoreInput { Delta = 4 });
            await Stack.Eventually("a snapshot after the next score", 20000, () => Task.FromResult(resumed.LastScore() == 12));
            resumed.Sub.Close();
            await resumed.Sub.Done;
            LiveMessage firstResumed;
            lock (resumed.Messages) firstResumed = resumed.Messages[0];
            Check.Equal<long?>(12, firstResumed.Me.Entry.Score, "the resumed stream's first snapshot");
        }

        private static async Task Feed()
        {
            var board = Stack.Name("feed");
            await Stack.DeclareAsync(board, new Dictionary<string, object> { { "operator", "add" } });
            var player = Stack.Player("quin");
            var backend = new LedgerboardClient(new LedgerboardOptions { BaseUrl = Stack.Api, Token = Stack.Admin });
            var posted = await player.SubmitScoreAsync(board, new ScoreInput { Delta = 2 });
            var filter = new EventsOptions { Boards = new[] { board }, Kinds = new[] { "score.accepted" } };
            EventPage page = null;
            await Stack.Eventually("the score's event in the feed", 20000, async () =>
            {
                page = await backend.EventsAsync(filter);
                return page.Events.Count > 0;
            });
            var e = page.Events[0];
            Check.Equal(posted.EventId + " score.accepted quin", e.Id + " " + e.Kind + " " + e.UserId, "the event");
            // A long poll may also answer early with an empty page when other boards' events pass
            // the cursor: then it asks again from that page's Next.
            Func<long, Task<List<Event>>> poll = null;
            poll = async after =>
            {
                var p = await backend.EventsAsync(new EventsOptions { Boards = filter.Boards, Kinds = filter.Kinds, After = after, Wait = 20 });
                return p.Events.Count > 0 ? p.Events : await poll(p.Next);
            };
            var waiting = poll(page.Next);
            var next = await player.SubmitScoreAsync(board, new ScoreInput { Delta = 3 });
            Check.Equal(next.EventId, string.Join(",", (await waiting).Select(x => x.Id)), "the long poll's event");
        }
    }
}
