//! The formats of `lua/read.lua`'s reply, parsed. The script answers its counts and a users
//! read's ids as strings rather than one reply value each: the redis crate parses every reply
//! value with a step of its own, and that parser was 8% of the api's CPU on `users/{id}` when a
//! read's 17 values came separately. A page's rows stay a flat array (`read.lua` says why).

use super::ReadModelError;

/// The seal's fields as `lua/read.lua` gives them: `HGET :m card`, `ZCARD :z`, `HLEN :v`,
/// `HGET :m dcard`, `ZCARD :d`, `HGET :m xcard`, `HLEN :x`.
pub(super) type SealReply = (
    Option<String>,
    u64,
    u64,
    Option<String>,
    u64,
    Option<String>,
    u64,
);

/// [`SealReply`] from the script's one string of seven fields ('-' for a field `:m` lacks).
pub(super) fn seal_reply(text: &str) -> Result<SealReply, ReadModelError> {
    let bad = || ReadModelError::Reply(format!("not a seal: {text:?}"));
    let mut fields = text.split(' ');
    let mut next = || fields.next().ok_or_else(bad);
    let held = |f: &str| (f != "-").then(|| f.to_owned());
    let count = |f: &str| f.parse::<u64>().map_err(|_| bad());
    let reply = (
        held(next()?),
        count(next()?)?,
        count(next()?)?,
        held(next()?),
        count(next()?)?,
        held(next()?),
        count(next()?)?,
    );
    if fields.next().is_some() {
        return Err(bad());
    }
    Ok(reply)
}

/// `N` counts from one of the script's strings of counts, spaces between.
pub(super) fn counts<const N: usize>(text: &str) -> Result<[u64; N], ReadModelError> {
    let bad = || ReadModelError::Reply(format!("not {N} counts: {text:?}"));
    let mut out = [0; N];
    let mut fields = text.split(' ');
    for slot in &mut out {
        *slot = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
    }
    if fields.next().is_some() {
        return Err(bad());
    }
    Ok(out)
}

/// Reads the script's packed strings: words up to a space, and values taken by their byte
/// length (`<bytes> <value>`), or `-` for none. A length rather than a separator, as a stored
/// version or metadata written by hand may hold any byte, spaces and newlines too.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str, what: &'static str) -> Self {
        Self { text, at: 0, what }
    }

    fn bad(&self) -> ReadModelError {
        ReadModelError::Reply(format!("{} malformed at byte {}", self.what, self.at))
    }

    fn done(&self) -> bool {
        self.at >= self.text.len()
    }

    /// Takes `byte` if it comes next.
    fn take(&mut self, byte: u8) -> bool {
        let next = self.text.as_bytes().get(self.at) == Some(&byte);
        if next {
            self.at += 1;
        }
        next
    }

    fn require(&mut self, byte: u8) -> Result<(), ReadModelError> {
        if self.take(byte) {
            Ok(())
        } else {
            Err(self.bad())
        }
    }

    /// Up to the next space, which it takes too.
    fn word(&mut self) -> Result<&'a str, ReadModelError> {
        let rest = self.text.get(self.at..).ok_or_else(|| self.bad())?;
        let end = rest.find(' ').ok_or_else(|| self.bad())?;
        self.at += end + 1;
        Ok(&rest[..end])
    }

    /// `<bytes> <value>`: the value, which must end on a character boundary.
    fn sized(&mut self) -> Result<&'a str, ReadModelError> {
        let len: usize = self.word()?.parse().map_err(|_| self.bad())?;
        let end = self.at.checked_add(len).ok_or_else(|| self.bad())?;
        let value = self.text.get(self.at..end).ok_or_else(|| self.bad())?;
        self.at = end;
        Ok(value)
    }

    /// `-` for none, or [`Self::sized`].
    fn sized_or_none(&mut self) -> Result<Option<&'a str>, ReadModelError> {
        if self.take(b'-') {
            Ok(None)
        } else {
            self.sized().map(Some)
        }
    }
}

/// One id of a `users` read that is on the board: its score as Redis spells it, its 0-based
/// position, the entries with a strictly better tuple and the distinct such tuples (0 unless
/// asked), its stored `:v` value and its metadata JSON.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PackedStanding<'a> {
    pub score: &'a str,
    pub places: [u64; 3],
    pub stored: Option<&'a str>,
    pub metadata: Option<&'a str>,
}

/// A `users` read's ids from the script's one string, in the order asked: an empty line for
/// an id not on the board (not `-`: a score may start with one), else `<score> <position> <better> <dense better> `, the stored
/// value and the metadata each as `<bytes> <value>` or `-`, a space between, and a newline.
pub(super) fn packed_standings(
    text: &str,
) -> Result<Vec<Option<PackedStanding<'_>>>, ReadModelError> {
    let mut c = Cursor::new(text, "a users read's ids");
    let mut out = Vec::new();
    while !c.done() {
        if c.take(b'\n') {
            out.push(None);
            continue;
        }
        let score = c.word()?;
        let mut places = [0; 3];
        for p in &mut places {
            *p = c.word()?.parse().map_err(|_| c.bad())?;
        }
        let stored = c.sized_or_none()?;
        c.require(b' ')?;
        let metadata = c.sized_or_none()?;
        c.require(b'\n')?;
        out.push(Some(PackedStanding {
            score,
            places,
            stored,
            metadata,
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_string_reads_as_its_seven_fields() {
        assert_eq!(
            seal_reply("5 5 5 - 0 2 2").ok(),
            Some((Some("5".into()), 5, 5, None, 0, Some("2".into()), 2))
        );
        for bad in ["", "5 5 5 - 0 2", "5 5 5 - 0 2 2 9", "5 five 5 - 0 2 2"] {
            assert!(seal_reply(bad).is_err(), "{bad:?} read as a seal");
        }
    }

    #[test]
    fn a_string_of_counts_reads_as_exactly_its_counts() {
        assert_eq!(counts::<4>("0 7 3 1").ok(), Some([0, 7, 3, 1]));
        for bad in ["0 7 3", "0 7 3 1 1", "0 -7 3 1", ""] {
            assert!(counts::<4>(bad).is_err(), "{bad:?} read as four counts");
        }
    }

    #[test]
    fn packed_standings_read_each_id_in_order() {
        let text = concat!(
            "\n",
            "12 0 0 0 3 1:x 2 {}\n",
            "-7 4 3 1 - -\n",
            "5 1 1 0 5 a b\nc -\n"
        );
        let got = packed_standings(text).expect("standings");
        assert_eq!(
            got,
            [
                None,
                Some(PackedStanding {
                    score: "12",
                    places: [0, 0, 0],
                    stored: Some("1:x"),
                    metadata: Some("{}")
                }),
                Some(PackedStanding {
                    score: "-7",
                    places: [4, 3, 1],
                    stored: None,
                    metadata: None
                }),
                Some(PackedStanding {
                    score: "5",
                    places: [1, 1, 0],
                    stored: Some("a b\nc"),
                    metadata: None
                }),
            ]
        );
        for bad in [
            "-\n",
            " \n",
            "12 0 0 - -\n",
            "12 0 0 x - -\n",
            "12 0 0 0 - -",
            "12 0 0 0 -- \n",
            "12 0 0 0 9 1:x - \n",
        ] {
            assert!(packed_standings(bad).is_err(), "{bad:?} read as standings");
        }
    }
}
