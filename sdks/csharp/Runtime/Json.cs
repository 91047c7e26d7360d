// A small JSON reader and writer, as nakama-dotnet's TinyJson: the SDK depends on the base
// library only. Json.Parse gives a tree of Dictionary<string, object> (objects),
// List<object> (arrays), string, long (integers that fit), double (other numbers), bool and
// null; Json.Serialize writes such a tree (and any IDictionary, IEnumerable, number, enum as
// its number). The generated models (Generated/Models.g.cs) read and write these trees.

using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Ledgerboard.Client
{
    public static class Json
    {
        /// <summary>Parses a JSON text; throws <see cref="FormatException"/> when it is not one.</summary>
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var reader = new Reader(text);
            reader.SkipSpace();
            var value = reader.Value(0);
            reader.SkipSpace();
            if (!reader.End) throw reader.Error("text after the value");
            return value;
        }

        public static string Serialize(object value)
        {
            var sb = new StringBuilder();
            Write(sb, value);
            return sb.ToString();
        }

        private static void Write(StringBuilder sb, object value)
        {
            if (value == null) { sb.Append("null"); return; }
            var s = value as string;
            if (s != null) { WriteString(sb, s); return; }
            if (value is bool) { sb.Append((bool)value ? "true" : "false"); return; }
            if (value is double || value is float)
            {
                var d = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no NaN or infinity");
                sb.Append(d.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            if (value is Enum) { sb.Append(Convert.ToInt64(value, CultureInfo.InvariantCulture)); return; }
            if (value is IConvertible && IsNumber(value))
            {
                sb.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
                return;
            }
            var map = value as IDictionary;
            if (map != null)
            {
                sb.Append('{');
                var first = true;
                foreach (DictionaryEntry e in map)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, Convert.ToString(e.Key, CultureInfo.InvariantCulture));
                    sb.Append(':');
                    Write(sb, e.Value);
                }
                sb.Append('}');
                return;
            }
            var list = value as IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                var first = true;
                foreach (var item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    Write(sb, item);
                }
                sb.Append(']');
                return;
            }
            throw new ArgumentException("cannot write a " + value.GetType().Name + " as JSON");
        }

        private static bool IsNumber(object v)
        {
            return v is int || v is long || v is short || v is byte || v is sbyte || v is uint
                || v is ulong || v is ushort || v is decimal;
        }

        private static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (var c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        private sealed class Reader
        {
            private const int MaxDepth = 128;
            private readonly string text;
            private int pos;

            public Reader(string text) { this.text = text; }

            public bool End { get { return pos >= text.Length; } }

            public FormatException Error(string what)
            {
                return new FormatException("invalid JSON at " + pos + ": " + what);
            }

            public void SkipSpace()
            {
                while (pos < text.Length && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) pos++;
            }

            public object Value(int depth)
            {
                if (depth > MaxDepth) throw Error("nested too deep");
                if (End) throw Error("a value expected");
                var c = text[pos];
                switch (c)
                {
                    case '{': return ObjectValue(depth);
                    case '[': return ArrayValue(depth);
                    case '"': return StringValue();
                    case 't': Literal("true"); return true;
                    case 'f': Literal("false"); return false;
                    case 'n': Literal("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return NumberValue();
                        throw Error("unexpected '" + c + "'");
                }
            }

            private void Literal(string word)
            {
                if (string.CompareOrdinal(text, pos, word, 0, word.Length) != 0) throw Error(word + " expected");
                pos += word.Length;
            }

            private Dictionary<string, object> ObjectValue(int depth)
            {
                var o = new Dictionary<string, object>();
                pos++;
                SkipSpace();
                if (!End && text[pos] == '}') { pos++; return o; }
                for (;;)
                {
                    SkipSpace();
                    if (End || text[pos] != '"') throw Error("a member name expected");
                    var key = StringValue();
                    SkipSpace();
                    if (End || text[pos] != ':') throw Error("':' expected");
                    pos++;
                    SkipSpace();
                    o[key] = Value(depth + 1);
                    SkipSpace();
                    if (End) throw Error("'}' expected");
                    if (text[pos] == ',') { pos++; continue; }
                    if (text[pos] == '}') { pos++; return o; }
                    throw Error("',' or '}' expected");
                }
            }

            private List<object> ArrayValue(int depth)
            {
                var a = new List<object>();
                pos++;
                SkipSpace();
                if (!End && text[pos] == ']') { pos++; return a; }
                for (;;)
                {
                    SkipSpace();
                    a.Add(Value(depth + 1));
                    SkipSpace();
                    if (End) throw Error("']' expected");
                    if (text[pos] == ',') { pos++; continue; }
                    if (text[pos] == ']') { pos++; return a; }
                    throw Error("',' or ']' expected");
                }
            }

            private string StringValue()
            {
                pos++;
                var sb = new StringBuilder();
                for (;;)
                {
                    if (End) throw Error("unterminated string");
                    var c = text[pos++];
                    if (c == '"') return sb.ToString();
                    if (c < 0x20) throw Error("a control character in a string");
                    if (c != '\\') { sb.Append(c); continue; }
                    if (End) throw Error("unterminated escape");
                    var e = text[pos++];
                    switch (e)
                    {
                        case '"': sb.Append('"'); break;
                        case '\\': sb.Append('\\'); break;
                        case '/': sb.Append('/'); break;
                        case 'b': sb.Append('\b'); break;
                        case 'f': sb.Append('\f'); break;
                        case 'n': sb.Append('\n'); break;
                        case 'r': sb.Append('\r'); break;
                        case 't': sb.Append('\t'); break;
                        case 'u':
                            if (pos + 4 > text.Length) throw Error("a short \\u escape");
                            int code;
                            if (!int.TryParse(text.Substring(pos, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                                throw Error("a bad \\u escape");
                            sb.Append((char)code);
                            pos += 4;
                            break;
                        default: throw Error("a bad escape");
                    }
                }
            }

            private object NumberValue()
            {
                var start = pos;
                if (text[pos] == '-') pos++;
                var integral = true;
                while (pos < text.Length)
                {
                    var c = text[pos];
                    if (c >= '0' && c <= '9') { pos++; continue; }
                    if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') { integral = false; pos++; continue; }
                    break;
                }
                var s = text.Substring(start, pos - start);
                long l;
                if (integral && long.TryParse(s, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out l)) return l;
                double d;
                if (double.TryParse(s, NumberStyles.Float, CultureInfo.InvariantCulture, out d)) return d;
                throw Error("a bad number");
            }
        }
    }

    /// <summary>Reads values out of a <see cref="Json.Parse"/> tree (what the models use).</summary>
    public static class JsonRead
    {
        public static string String(object v) { return v as string ?? (v == null ? null : Convert.ToString(v, CultureInfo.InvariantCulture)); }
        public static long Long(object v) { return Convert.ToInt64(v, CultureInfo.InvariantCulture); }
        public static int Int(object v) { return Convert.ToInt32(v, CultureInfo.InvariantCulture); }
        public static double Double(object v) { return Convert.ToDouble(v, CultureInfo.InvariantCulture); }
        public static bool Bool(object v) { return v is bool && (bool)v; }
        public static bool IsInteger(object v) { return v is long || (v is double && Math.Floor((double)v) == (double)v); }
        public static bool IsNumber(object v) { return v is long || v is double; }
        public static Dictionary<string, object> Object(object v) { return v as Dictionary<string, object>; }

        public static List<T> List<T>(object v, Func<object, T> read)
        {
            var items = v as List<object>;
            if (items == null) return null;
            var result = new List<T>(items.Count);
            foreach (var item in items) result.Add(read(item));
            return result;
        }

        public static Dictionary<string, T> Map<T>(object v, Func<object, T> read)
        {
            var o = v as Dictionary<string, object>;
            if (o == null) return null;
            var result = new Dictionary<string, T>(o.Count);
            foreach (var e in o) result[e.Key] = read(e.Value);
            return result;
        }
    }

    /// <summary>Writes model values into a tree <see cref="Json.Serialize"/> takes.</summary>
    public static class JsonWrite
    {
        public static List<object> List<T>(IEnumerable<T> items, Func<T, object> write)
        {
            var result = new List<object>();
            foreach (var item in items) result.Add(write(item));
            return result;
        }

        public static Dictionary<string, object> Map<T>(IDictionary<string, T> map, Func<T, object> write)
        {
            var result = new Dictionary<string, object>();
            foreach (var e in map) result[e.Key] = write(e.Value);
            return result;
        }
    }
}
