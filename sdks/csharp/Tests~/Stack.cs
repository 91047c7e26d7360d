// What the tests against a running stack share: the addresses and secrets the system test
// passes in the environment, a player token minter standing in for the game's backend, and an
// admin's raw requests to declare boards.

using System;
using System.Collections.Generic;
using System.Net.Http;
using System.Security.Cryptography;
using System.Text;
using System.Threading.Tasks;
using Ledgerboard.Client;

namespace Ledgerboard.Client.Tests
{
    public static class Stack
    {
        public static readonly string Api = Environment.GetEnvironmentVariable("LB_API_URL");
        public static readonly string Limited = Environment.GetEnvironmentVariable("LB_LIMITED_URL");
        public static readonly string Restart = Environment.GetEnvironmentVariable("LB_RESTART_URL");
        public static readonly string RestartBoard = Environment.GetEnvironmentVariable("LB_RESTART_BOARD") ?? "restart";
        public static readonly string RestartUser = Environment.GetEnvironmentVariable("LB_RESTART_USER") ?? "restart-player";
        public static readonly long RestartDelta = long.Parse(Environment.GetEnvironmentVariable("LB_RESTART_DELTA") ?? "7");
        public static readonly string Admin = Environment.GetEnvironmentVariable("LB_ADMIN_TOKEN");
        public static readonly string Kid = Environment.GetEnvironmentVariable("LB_PLAYER_KID");
        public static readonly string Secret = Environment.GetEnvironmentVariable("LB_PLAYER_SECRET");
        /// <summary>A suffix of this run, so that a second run against the same stack uses new boards.</summary>
        public static readonly string Run = Guid.NewGuid().ToString("N").Substring(0, 6);
        private static readonly HttpClient Http = new HttpClient();

        public static string Missing
        {
            get
            {
                return Api == null || Admin == null || Secret == null
                    ? "no stack: set LB_API_URL, LB_ADMIN_TOKEN, LB_PLAYER_KID, LB_PLAYER_SECRET (sdks.rs does)"
                    : null;
            }
        }

        public static string Name(string b) { return b + "-" + Run; }

        private static string B64(byte[] bytes)
        {
            return Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        }

        private static byte[] Unb64(string s)
        {
            var b = s.Replace('-', '+').Replace('_', '/');
            return Convert.FromBase64String(b + new string('=', (4 - b.Length % 4) % 4));
        }

        /// <summary>A player token as the game's backend mints it (HS256), expiring ttlS from now.</summary>
        public static string Mint(string sub, long ttlS = 600)
        {
            var exp = DateTimeOffset.UtcNow.ToUnixTimeSeconds() + ttlS;
            var header = B64(Encoding.UTF8.GetBytes(Json.Serialize(new Dictionary<string, object> { { "alg", "HS256" }, { "typ", "JWT" }, { "kid", Kid } })));
            var claims = B64(Encoding.UTF8.GetBytes(Json.Serialize(new Dictionary<string, object> { { "sub", sub }, { "boards", new[] { "*" } }, { "exp", exp } })));
            using (var hmac = new HMACSHA256(Unb64(Secret)))
            {
                var signature = B64(hmac.ComputeHash(Encoding.ASCII.GetBytes(header + "." + claims)));
                return header + "." + claims + "." + signature;
            }
        }

        public static LedgerboardClient Player(string user)
        {
            return new LedgerboardClient(new LedgerboardOptions { BaseUrl = Api, Token = Mint(user) });
        }

        /// <summary>A request with the admin token (what a game's operator does, not the game client).</summary>
        public static async Task<Dictionary<string, object>> AdminAsync(string method, string path, object body = null)
        {
            using (var request = new HttpRequestMessage(new HttpMethod(method), Api + path))
            {
                request.Headers.TryAddWithoutValidation("Authorization", "Bearer " + Admin);
                if (body != null) request.Content = new StringContent(Json.Serialize(body), Encoding.UTF8, "application/json");
                using (var response = await Http.SendAsync(request))
                {
                    var text = await response.Content.ReadAsStringAsync();
                    if (!response.IsSuccessStatusCode) throw new Exception(method + " " + path + ": " + (int)response.StatusCode + " " + text);
                    return Json.Parse(text) as Dictionary<string, object>;
                }
            }
        }

        /// <summary>Declares a board that player tokens may post to.</summary>
        public static Task DeclareAsync(string board, Dictionary<string, object> definition)
        {
            definition["write_policy"] = "player";
            return AdminAsync("PUT", "/v1/boards/" + board, definition);
        }

        /// <summary>Polls check every 20 ms until it holds, for at most limitMs.</summary>
        public static async Task Eventually(string what, int limitMs, Func<Task<bool>> check)
        {
            var deadline = DateTime.UtcNow.AddMilliseconds(limitMs);
            Exception last = null;
            for (;;)
            {
                try
                {
                    if (await check()) return;
                }
                catch (Exception e)
                {
                    last = e;
                }
                if (DateTime.UtcNow > deadline) throw new Exception(what + ": not within " + limitMs + " ms", last);
                await Task.Delay(20);
            }
        }

        /// <summary>RFC 3339 in whole seconds, offsetS from now.</summary>
        public static string At(long offsetS)
        {
            var t = DateTimeOffset.FromUnixTimeSeconds(DateTimeOffset.UtcNow.ToUnixTimeSeconds() + offsetS);
            return t.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss'Z'", System.Globalization.CultureInfo.InvariantCulture);
        }
    }
}
