// Server-sent events with the resume the protocol defines: after a lost connection the client
// connects again and sends the last id: it received as Last-Event-ID, so the server goes on
// from there.

using System;
using System.Collections.Generic;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Ledgerboard.Client
{
    /// <summary>One event as the stream carried it.</summary>
    public sealed class ServerEvent
    {
        /// <summary>The last id: received up to this event (what a resume sends as Last-Event-ID).</summary>
        public string Id { get; set; }
        /// <summary>event:, "message" when the server named none.</summary>
        public string Event { get; set; }
        public string Data { get; set; }
    }

    /// <summary>Parses a text/event-stream; Push feeds it text, each complete event goes to the callback.</summary>
    public sealed class EventStreamParser
    {
        private readonly Action<ServerEvent> dispatch;
        private readonly StringBuilder buffer = new StringBuilder();
        private readonly List<string> data = new List<string>();
        private string eventName = "";

        public EventStreamParser(string lastEventId, Action<ServerEvent> dispatch)
        {
            LastEventId = lastEventId;
            this.dispatch = dispatch;
        }

        public string LastEventId { get; private set; }
        /// <summary>The server's retry:, in milliseconds, once it sent one.</summary>
        public int? RetryMs { get; private set; }

        public void Push(string text)
        {
            buffer.Append(text);
            for (;;)
            {
                var s = buffer.ToString();
                var end = s.IndexOfAny(new[] { '\r', '\n' });
                if (end < 0) return;
                // A lone \r at the end may be the first half of \r\n: wait for the next piece.
                if (s[end] == '\r' && end == s.Length - 1) return;
                var next = s[end] == '\r' && s[end + 1] == '\n' ? end + 2 : end + 1;
                buffer.Remove(0, next);
                Line(s.Substring(0, end));
            }
        }

        private void Line(string line)
        {
            if (line.Length == 0)
            {
                if (data.Count > 0)
                {
                    dispatch(new ServerEvent { Id = LastEventId, Event = eventName.Length > 0 ? eventName : "message", Data = string.Join("\n", data) });
                }
                data.Clear();
                eventName = "";
                return;
            }
            if (line[0] == ':') return; // a comment: the server's keep-alive
            var colon = line.IndexOf(':');
            var field = colon < 0 ? line : line.Substring(0, colon);
            var value = colon < 0 ? "" : line.Substring(colon + 1);
            if (value.StartsWith(" ", StringComparison.Ordinal)) value = value.Substring(1);
            switch (field)
            {
                case "data": data.Add(value); break;
                case "event": eventName = value; break;
                case "id": if (value.IndexOf('\0') < 0) LastEventId = value; break;
                case "retry":
                    int ms;
                    if (int.TryParse(value, out ms) && ms >= 0) RetryMs = ms;
                    break;
            }
        }
    }

    public class SubscribeOptions
    {
        /// <summary>Resume from this id (an earlier subscription's LastEventId).</summary>
        public string LastEventId { get; set; }
        /// <summary>The wait before reconnecting, until the server sends retry: (default 1 s).</summary>
        public TimeSpan? Reconnect { get; set; }
        /// <summary>Every failure; the subscription goes on after those that are Retryable and ends after the others.</summary>
        public Action<LedgerboardException> OnError { get; set; }
        /// <summary>Each (re)connection the server accepted, with the id it resumed from.</summary>
        public Action<string> OnOpen { get; set; }
        /// <summary>More query parameters of the stream.</summary>
        public Dictionary<string, string> Query { get; set; }
    }

    /// <summary>What a board's live stream shows.</summary>
    public sealed class LiveOptions : SubscribeOptions
    {
        /// <summary>1 to 100 (the api's default 10): the first N entries each message carries.</summary>
        public int? Top { get; set; }
        /// <summary>0 to 10 (default 2): with a player token, the entries on each side of the player.</summary>
        public int? Radius { get; set; }
        public string Period { get; set; }
        public int? Cohort { get; set; }
    }

    /// <summary>A running subscription: it reconnects and resumes until closed.</summary>
    public sealed class Subscription : IDisposable
    {
        private readonly CancellationTokenSource stop = new CancellationTokenSource();
        private EventStreamParser parser;

        internal Subscription() { }

        /// <summary>The last id: received: pass it as LastEventId to resume in a later subscription.</summary>
        public string LastEventId { get { return parser == null ? null : parser.LastEventId; } }

        /// <summary>Ends when the subscription ended (closed, or refused for good).</summary>
        public Task Done { get; private set; }

        public void Close() { stop.Cancel(); }

        public void Dispose() { Close(); }

        internal void Start(Sender sender, string path, SubscribeOptions o, Action<ServerEvent> onEvent)
        {
            parser = new EventStreamParser(o.LastEventId, onEvent);
            Done = Run(sender, path, o);
        }

        private async Task Run(Sender sender, string path, SubscribeOptions o)
        {
            var url = sender.Url(path, o.Query);
            var failures = 0;
            var refreshed = false;
            var ct = stop.Token;
            while (!ct.IsCancellationRequested)
            {
                var token = await sender.Tokens.CurrentAsync();
                var call = new HttpCall { Method = "GET", Url = url };
                call.Headers["Accept"] = "text/event-stream";
                call.Headers["Cache-Control"] = "no-cache";
                if (token != null) call.Headers["Authorization"] = "Bearer " + token;
                var resumedFrom = parser.LastEventId;
                if (resumedFrom != null) call.Headers["Last-Event-ID"] = resumedFrom;
                LedgerboardException error = null;
                var opened = false;
                try
                {
                    var answer = await sender.Transport.StreamAsync(call, text =>
                    {
                        if (!opened && text.Length == 0)
                        {
                            opened = true;
                            failures = 0;
                            refreshed = false;
                            if (o.OnOpen != null) o.OnOpen(resumedFrom);
                        }
                        parser.Push(text);
                    }, ct);
                    if (answer.Status < 200 || answer.Status > 299) error = Sender.Refusal(answer, failures + 1);
                }
                catch (Exception e)
                {
                    if (ct.IsCancellationRequested) break;
                    error = new LedgerboardException(0, ErrorCodes.NetworkError, "the stream broke: " + e.Message, null, null, failures + 1, e);
                }
                if (ct.IsCancellationRequested) break;
                var delay = parser.RetryMs.HasValue ? TimeSpan.FromMilliseconds(parser.RetryMs.Value) : (o.Reconnect ?? TimeSpan.FromSeconds(1));
                if (error != null)
                {
                    failures++;
                    if (o.OnError != null) o.OnError(error);
                    if (Sender.RefreshesToken(error) && sender.Tokens.CanRefresh && !refreshed)
                    {
                        refreshed = true;
                        await sender.Tokens.RefreshAsync(token);
                        continue;
                    }
                    if (!error.Retryable) break;
                    var backoff = sender.Backoff(failures);
                    if (backoff > delay) delay = backoff;
                    if (error.RetryAfter.HasValue && error.RetryAfter.Value > delay) delay = error.RetryAfter.Value;
                }
                try
                {
                    await Task.Delay(delay, ct);
                }
                catch (OperationCanceledException)
                {
                    break;
                }
            }
        }
    }
}
