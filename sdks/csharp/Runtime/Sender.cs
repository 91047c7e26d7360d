// One call with the client's retry rule and one token refresh. The body is serialised once,
// before the first send, so every retry carries the same bytes (the same event id).

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Ledgerboard.Client
{
    /// <summary>The current token; a new one from the game's callback when the api says it expired.</summary>
    internal sealed class TokenHolder
    {
        private readonly Func<Task<string>> refresh;
        private readonly object gate = new object();
        private string token;
        private Task<string> inflight;

        public TokenHolder(string token, Func<Task<string>> refresh)
        {
            this.token = token;
            this.refresh = refresh;
        }

        public bool CanRefresh { get { return refresh != null; } }

        public async Task<string> CurrentAsync()
        {
            string t;
            lock (gate) t = token;
            if (t == null && refresh != null) await RefreshAsync(null);
            lock (gate) return token;
        }

        /// <summary>Replaces <paramref name="stale"/> with a new token: a caller whose token another
        /// call replaced meanwhile gets the new one with no second callback; concurrent callers share one.</summary>
        public async Task RefreshAsync(string stale)
        {
            if (refresh == null) return;
            Task<string> task;
            lock (gate)
            {
                if (token != stale) return;
                if (inflight == null) inflight = Fetch();
                task = inflight;
            }
            await task;
        }

        private async Task<string> Fetch()
        {
            try
            {
                var fresh = await refresh();
                lock (gate) token = fresh;
                return fresh;
            }
            finally
            {
                lock (gate) inflight = null;
            }
        }
    }

    internal sealed class Sender
    {
        private static readonly Random Jitter = new Random();
        private readonly string baseUrl;
        private readonly IHttpTransport transport;
        private readonly RetryPolicy retry;
        private readonly Action<RetryInfo> onRetry;

        public Sender(LedgerboardOptions o)
        {
            if (string.IsNullOrEmpty(o.BaseUrl)) throw new ArgumentException("BaseUrl is required");
            baseUrl = o.BaseUrl.TrimEnd('/');
            transport = o.Transport ?? new HttpClientTransport();
            retry = o.Retry ?? new RetryPolicy();
            onRetry = o.OnRetry;
            Tokens = new TokenHolder(o.Token, o.RefreshToken);
        }

        public TokenHolder Tokens { get; private set; }
        public IHttpTransport Transport { get { return transport; } }
        public RetryPolicy Retry { get { return retry; } }

        public string Url(string path, IEnumerable<KeyValuePair<string, string>> query)
        {
            var sb = new StringBuilder(baseUrl).Append(path);
            var first = true;
            if (query != null)
            {
                foreach (var q in query)
                {
                    if (q.Value == null) continue;
                    sb.Append(first ? '?' : '&').Append(Uri.EscapeDataString(q.Key)).Append('=').Append(Uri.EscapeDataString(q.Value));
                    first = false;
                }
            }
            return sb.ToString();
        }

        public static TimeSpan? RetryAfter(string header)
        {
            if (header == null) return null;
            double seconds;
            if (double.TryParse(header.Trim(), NumberStyles.Float, CultureInfo.InvariantCulture, out seconds) && seconds >= 0)
                return TimeSpan.FromSeconds(seconds);
            DateTimeOffset at;
            if (DateTimeOffset.TryParse(header, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out at))
            {
                var wait = at - DateTimeOffset.UtcNow;
                return wait < TimeSpan.Zero ? TimeSpan.Zero : wait;
            }
            return null;
        }

        public TimeSpan Backoff(int attempt)
        {
            var ceiling = Math.Min(retry.MaxDelay.TotalMilliseconds, retry.BaseDelay.TotalMilliseconds * Math.Pow(2, attempt - 1));
            double r;
            lock (Jitter) r = Jitter.NextDouble();
            return TimeSpan.FromMilliseconds(ceiling / 2 + r * ceiling / 2);
        }

        /// <summary>The api's error body as an exception, or a stand-in when it has none.</summary>
        public static LedgerboardException Refusal(HttpAnswer answer, int attempts)
        {
            var code = "http_" + answer.Status;
            var message = "HTTP " + answer.Status;
            string board = null;
            try
            {
                var body = Json.Parse(answer.Body ?? "") as Dictionary<string, object>;
                object error;
                if (body != null && body.TryGetValue("error", out error))
                {
                    var detail = error as Dictionary<string, object>;
                    object v;
                    if (detail != null && detail.TryGetValue("code", out v) && v is string) code = (string)v;
                    if (detail != null && detail.TryGetValue("message", out v) && v is string) message = (string)v;
                    if (detail != null && detail.TryGetValue("board", out v)) board = v as string;
                }
            }
            catch (FormatException)
            {
                // Not JSON (a proxy's page): keep the stand-in.
            }
            return new LedgerboardException(answer.Status, code, message, board, RetryAfter(answer.Header("Retry-After")), attempts, null);
        }

        internal static bool RefreshesToken(LedgerboardException e)
        {
            return e.Status == 401 && (e.Code == ErrorCodes.TokenExpired || e.Code == ErrorCodes.TokenKeyUnknown);
        }

        /// <summary>Sends the call and answers its JSON tree, retrying as the policy says.</summary>
        public async Task<object> SendAsync(string method, string path, IEnumerable<KeyValuePair<string, string>> query, object body, CancellationToken ct, TimeSpan extraTimeout = default(TimeSpan))
        {
            var url = Url(path, query);
            var json = body == null ? null : Json.Serialize(body);
            var attempt = 0;
            var refreshed = false;
            for (;;)
            {
                attempt++;
                var token = await Tokens.CurrentAsync();
                var call = new HttpCall { Method = method, Url = url, Body = json };
                call.Headers["Accept"] = "application/json";
                if (token != null) call.Headers["Authorization"] = "Bearer " + token;
                LedgerboardException failure;
                using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct))
                {
                    timeout.CancelAfter(retry.Timeout + extraTimeout);
                    HttpAnswer answer = null;
                    Exception error = null;
                    try
                    {
                        answer = await transport.SendAsync(call, timeout.Token);
                    }
                    catch (Exception e)
                    {
                        error = e;
                    }
                    if (error != null)
                    {
                        if (ct.IsCancellationRequested)
                            throw new LedgerboardException(0, ErrorCodes.Aborted, "the caller cancelled the call", null, null, attempt, error);
                        var timedOut = timeout.IsCancellationRequested;
                        failure = new LedgerboardException(0,
                            timedOut ? ErrorCodes.ClientTimeout : ErrorCodes.NetworkError,
                            timedOut ? "no answer within " + (retry.Timeout + extraTimeout).TotalMilliseconds + " ms" : "the request failed before an answer: " + error.Message,
                            null, null, attempt, error);
                    }
                    else if (answer.Status >= 200 && answer.Status <= 299)
                    {
                        return string.IsNullOrEmpty(answer.Body) ? null : Json.Parse(answer.Body);
                    }
                    else
                    {
                        failure = Refusal(answer, attempt);
                    }
                }
                if (RefreshesToken(failure) && Tokens.CanRefresh && !refreshed)
                {
                    // The token expired (or its key was rotated out): one new token, then the same call.
                    refreshed = true;
                    await Tokens.RefreshAsync(token);
                    attempt--;
                    continue;
                }
                if (!failure.Retryable || attempt >= retry.MaxAttempts) throw failure;
                var retryAfter = failure.RetryAfter ?? TimeSpan.Zero;
                if (retryAfter > retry.MaxRetryAfter) throw failure;
                var backoff = Backoff(attempt);
                var delay = retryAfter > backoff ? retryAfter : backoff;
                if (onRetry != null)
                {
                    onRetry(new RetryInfo
                    {
                        Method = method, Path = path, Attempt = attempt, Delay = delay, Code = failure.Code,
                        Status = failure.Status, RetryAfter = failure.RetryAfter,
                    });
                }
                try
                {
                    await Task.Delay(delay, ct);
                }
                catch (OperationCanceledException e)
                {
                    throw new LedgerboardException(0, ErrorCodes.Aborted, "the caller cancelled the call", null, null, attempt, e);
                }
            }
        }
    }
}
