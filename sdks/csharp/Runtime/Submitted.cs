// A command's value, made by hand: one integer, one per column in order, or one per column by name.

using System.Collections.Generic;

namespace Ledgerboard.Client.Models
{
    public sealed partial class Submitted
    {
        public static Submitted Of(long value)
        {
            return new Submitted { AsInteger = value };
        }

        /// <summary>One integer per column, in the order the board's definition lists them.</summary>
        public static Submitted Of(params long[] values)
        {
            return new Submitted { AsArray = new List<long>(values) };
        }

        /// <summary>One integer per column, by the column's name.</summary>
        public static Submitted Of(IDictionary<string, long> byName)
        {
            return new Submitted { AsObject = new Dictionary<string, long>(byName) };
        }

        public static implicit operator Submitted(long value)
        {
            return Of(value);
        }
    }
}
