// The HTTP seam: the client builds requests and reads answers; an IHttpTransport carries them.
// HttpClientTransport (System.Net.Http, part of .NET Standard 2.1) is the default; a Unity game
// may pass one over UnityWebRequest instead (sdks/csharp/README.md has one).

using System;
using System.Collections.Generic;
using System.Net.Http;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Ledgerboard.Client
{
    /// <summary>One request as the client built it.</summary>
    public sealed class HttpCall
    {
        public string Method { get; set; }
        public string Url { get; set; }
        /// <summary>JSON, or null for none.</summary>
        public string Body { get; set; }
        public Dictionary<string, string> Headers { get; private set; }

        public HttpCall()
        {
            Headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        }
    }

    /// <summary>An answer: its status, headers and (unless streamed) its body.</summary>
    public sealed class HttpAnswer
    {
        public HttpAnswer(int status, string body, IDictionary<string, string> headers)
        {
            Status = status;
            Body = body;
            Headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
            if (headers != null) foreach (var h in headers) Headers[h.Key] = h.Value;
        }

        public int Status { get; private set; }
        public string Body { get; private set; }
        public Dictionary<string, string> Headers { get; private set; }

        public string Header(string name)
        {
            string value;
            return Headers.TryGetValue(name, out value) ? value : null;
        }
    }

    public interface IHttpTransport
    {
        /// <summary>
        /// Sends one request and returns its whole answer, whatever its status. Throws when no
        /// answer arrives (any exception: the client retries it); honours <paramref name="ct"/>
        /// (the client's timeout and the caller's cancellation).
        /// </summary>
        Task<HttpAnswer> SendAsync(HttpCall call, CancellationToken ct);

        /// <summary>
        /// Sends a request whose answer is a stream (server-sent events): on a 2xx answer,
        /// <paramref name="onText"/> gets "" once its headers arrived, then the body piece by
        /// piece as it arrives, and the task ends with the stream (the answer's Body is then
        /// null); any other answer is returned whole.
        /// </summary>
        Task<HttpAnswer> StreamAsync(HttpCall call, Action<string> onText, CancellationToken ct);
    }

    /// <summary>The transport over System.Net.Http.HttpClient.</summary>
    public sealed class HttpClientTransport : IHttpTransport
    {
        private readonly HttpClient http;

        public HttpClientTransport() : this(new HttpClient()) { }

        /// <summary>Uses <paramref name="http"/> (its own Timeout is left to the client's policy).</summary>
        public HttpClientTransport(HttpClient http)
        {
            this.http = http;
            this.http.Timeout = System.Threading.Timeout.InfiniteTimeSpan;
        }

        private static HttpRequestMessage Request(HttpCall call)
        {
            var request = new HttpRequestMessage(new HttpMethod(call.Method), call.Url);
            if (call.Body != null) request.Content = new StringContent(call.Body, Encoding.UTF8, "application/json");
            foreach (var h in call.Headers) request.Headers.TryAddWithoutValidation(h.Key, h.Value);
            return request;
        }

        private static Dictionary<string, string> Headers(HttpResponseMessage response)
        {
            var headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
            foreach (var h in response.Headers) headers[h.Key] = string.Join(", ", h.Value);
            if (response.Content != null)
                foreach (var h in response.Content.Headers) headers[h.Key] = string.Join(", ", h.Value);
            return headers;
        }

        public async Task<HttpAnswer> SendAsync(HttpCall call, CancellationToken ct)
        {
            using (var request = Request(call))
            using (var response = await http.SendAsync(request, HttpCompletionOption.ResponseContentRead, ct))
            {
                var body = response.Content == null ? "" : await response.Content.ReadAsStringAsync();
                return new HttpAnswer((int)response.StatusCode, body, Headers(response));
            }
        }

        public async Task<HttpAnswer> StreamAsync(HttpCall call, Action<string> onText, CancellationToken ct)
        {
            using (var request = Request(call))
            using (var response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, ct))
            {
                var status = (int)response.StatusCode;
                if (status < 200 || status > 299)
                {
                    var text = response.Content == null ? "" : await response.Content.ReadAsStringAsync();
                    return new HttpAnswer(status, text, Headers(response));
                }
                onText("");
                // A read that ignores the token ends when the response is disposed.
                using (ct.Register(response.Dispose))
                using (var stream = await response.Content.ReadAsStreamAsync())
                {
                    var decoder = Encoding.UTF8.GetDecoder();
                    var bytes = new byte[4096];
                    var chars = new char[Encoding.UTF8.GetMaxCharCount(bytes.Length)];
                    for (;;)
                    {
                        ct.ThrowIfCancellationRequested();
                        var n = await stream.ReadAsync(bytes, 0, bytes.Length, ct);
                        if (n == 0) break;
                        var c = decoder.GetChars(bytes, 0, n, chars, 0);
                        if (c > 0) onText(new string(chars, 0, c));
                    }
                }
                return new HttpAnswer(status, null, Headers(response));
            }
        }
    }
}
