// The C# SDK's test runner (no test framework: the base library only, as the SDK). Runs each
// test in order and prints `ok - name` or `not ok - name` with the failure, then a summary;
// exits 1 when a test failed. Tests that need the running stack skip without its variables
// (crates/system-tests/tests/it/sdks.rs sets them, and fails on a skip).

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading.Tasks;
using Ledgerboard.Client;

namespace Ledgerboard.Client.Tests
{
    public sealed class TestCase
    {
        public TestCase(string name, bool needsStack, Func<Task> run)
        {
            Name = name;
            NeedsStack = needsStack;
            Run = run;
        }

        public string Name { get; private set; }
        public bool NeedsStack { get; private set; }
        public Func<Task> Run { get; private set; }
    }

    public static class Runner
    {
        public static int Main(string[] args)
        {
            var tests = new List<TestCase>();
            tests.AddRange(OfflineTests.All());
            tests.AddRange(StackTests.All());
            tests.AddRange(LiveTests.All());
            tests.AddRange(FailureTests.All());
            var filter = args.Length > 0 ? args[0] : null;
            int passed = 0, failed = 0, skipped = 0;
            foreach (var t in tests)
            {
                if (filter != null && t.Name.IndexOf(filter, StringComparison.Ordinal) < 0) continue;
                if (t.NeedsStack && Stack.Missing != null)
                {
                    skipped++;
                    Console.WriteLine("ok - " + t.Name + " # SKIP " + Stack.Missing);
                    continue;
                }
                var clock = Stopwatch.StartNew();
                try
                {
                    t.Run().GetAwaiter().GetResult();
                    passed++;
                    Console.WriteLine("ok - " + t.Name + " (" + clock.ElapsedMilliseconds + " ms)");
                }
                catch (Exception e)
                {
                    failed++;
                    Console.WriteLine("not ok - " + t.Name + " (" + clock.ElapsedMilliseconds + " ms)");
                    Console.WriteLine("  " + e.ToString().Replace("\n", "\n  "));
                }
            }
            Console.WriteLine("# passed " + passed);
            Console.WriteLine("# failed " + failed);
            Console.WriteLine("# skipped " + skipped);
            return failed == 0 ? 0 : 1;
        }
    }

    public static class Check
    {
        public static void Equal<T>(T expected, T actual, string what)
        {
            if (!EqualityComparer<T>.Default.Equals(expected, actual))
                throw new Exception(what + ": expected " + Show(expected) + ", got " + Show(actual));
        }

        public static void Equal(string expected, IEnumerable<object> actual, string what)
        {
            Equal(expected, string.Join(",", actual), what);
        }

        public static void True(bool condition, string what)
        {
            if (!condition) throw new Exception("expected: " + what);
        }

        public static async Task<LedgerboardException> Refused(Func<Task> call, int status, string code)
        {
            try
            {
                await call();
            }
            catch (LedgerboardException e)
            {
                Equal(status + " " + code, e.Status + " " + e.Code, "the refusal (" + e.Message + ")");
                return e;
            }
            throw new Exception("expected a refusal " + status + " " + code + ", the call succeeded");
        }

        private static string Show(object v)
        {
            return v == null ? "null" : "\"" + v + "\"";
        }
    }
}
