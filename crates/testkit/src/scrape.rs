//! Reads a daemon's `/metrics` (Prometheus text format) for assertions.

use std::collections::BTreeMap;

type Labels = BTreeMap<String, String>;

/// One scrape: every sample by metric name, each with its labels.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    samples: BTreeMap<String, Vec<(Labels, f64)>>,
    pub text: String,
}

impl Scrape {
    /// Fetches `http://<addr>/metrics`; panics on anything but a 200.
    pub fn fetch(addr: &str) -> Scrape {
        let (status, body) = crate::http_request(addr, "GET", "/metrics", "");
        assert_eq!(status, 200, "GET {addr}/metrics: {body}");
        Scrape::parse(&body)
    }

    /// Parses the text format's sample lines (`name{a="b",...} value`); comments are skipped.
    /// Panics on a sample line it cannot read: skipping it would make the metric look absent,
    /// and a test would have to tell that from a real absence.
    pub fn parse(text: &str) -> Scrape {
        let mut samples: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let value = line
                .rsplit_once(' ')
                .and_then(|(series, value)| Some((series, value.parse::<f64>().ok()?)));
            let Some((series, value)) = value else {
                panic!("a sample line without a number: {line:?}");
            };
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, parse_labels(rest.trim_end_matches('}'))),
                None => (series, BTreeMap::new()),
            };
            samples
                .entry(name.to_owned())
                .or_default()
                .push((labels, value));
        }
        Scrape {
            samples,
            text: text.to_owned(),
        }
    }

    /// The value of the one sample of `name` whose labels include `labels`; None when there
    /// is none. Panics when several match (the test's labels are not specific enough).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching = self.matching(name, labels)?;
        assert!(
            matching.len() <= 1,
            "{name} {labels:?} matches {} samples",
            matching.len()
        );
        matching.first().copied()
    }

    /// The values of the samples of `name` whose labels include `labels`; None when the
    /// scrape has no `name` at all.
    fn matching(&self, name: &str, labels: &[(&str, &str)]) -> Option<Vec<f64>> {
        Some(
            self.samples
                .get(name)?
                .iter()
                .filter(|(have, _)| {
                    labels
                        .iter()
                        .all(|(k, v)| have.get(*k).is_some_and(|h| h == v))
                })
                .map(|(_, v)| *v)
                .collect(),
        )
    }

    /// The sum of every sample of `name` whose labels include `labels`; None when no sample
    /// matches. Never 0 for an absent metric: a misspelt name or label would then pass an
    /// "is 0" check. The daemons export every labelled series at 0 from the start, so a
    /// series that exists reads 0, and one that does not is a mistake of the test.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching = self.matching(name, labels)?;
        (!matching.is_empty()).then(|| matching.iter().sum())
    }

    /// Every metric name in the scrape.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.samples.keys().map(String::as_str)
    }
}

fn parse_labels(raw: &str) -> Labels {
    let mut labels = BTreeMap::new();
    let mut rest = raw;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        labels.insert(key.trim_start_matches(',').trim().to_owned(), value);
        rest = &after[end..];
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_and_values() {
        let s = Scrape::parse(
            "# HELP x y\nledgerboard_outbox_pending 3\n\
             ledgerboard_projections_total{result=\"applied\"} 5\n\
             ledgerboard_projections_total{result=\"stale\"} 1\n\
             h_bucket{route=\"/v1/{a},b\",le=\"0.5\"} 2\n",
        );
        assert_eq!(s.value("ledgerboard_outbox_pending", &[]), Some(3.0));
        assert_eq!(
            s.value("ledgerboard_projections_total", &[("result", "stale")]),
            Some(1.0)
        );
        assert_eq!(s.sum("ledgerboard_projections_total", &[]), Some(6.0));
        assert_eq!(
            s.sum("ledgerboard_projections_total", &[("result", "stale")]),
            Some(1.0)
        );
        assert_eq!(
            s.value("h_bucket", &[("route", "/v1/{a},b"), ("le", "0.5")]),
            Some(2.0)
        );
        assert_eq!(s.value("absent", &[]), None);
        assert_eq!(
            Scrape::parse("x +Inf\n").value("x", &[]),
            Some(f64::INFINITY)
        );
    }

    #[test]
    fn an_absent_metric_has_no_sum_not_a_sum_of_0() {
        let s = Scrape::parse(
            "ledgerboard_outbox_parked 0\nledgerboard_projections_total{result=\"failed\"} 0\n",
        );
        assert_eq!(s.sum("ledgerboard_outbox_parked", &[]), Some(0.0));
        assert_eq!(
            s.sum("ledgerboard_outbox_parkd", &[]),
            None,
            "a misspelt name"
        );
        assert_eq!(
            s.sum("ledgerboard_projections_total", &[("result", "failed")]),
            Some(0.0)
        );
        assert_eq!(
            s.sum("ledgerboard_projections_total", &[("result", "faild")]),
            None,
            "a misspelt label value"
        );
        assert_eq!(s.value("ledgerboard_outbox_parkd", &[]), None);
    }

    #[test]
    #[should_panic(expected = "a sample line without a number")]
    fn an_unreadable_sample_line_is_an_error_not_an_absent_metric() {
        Scrape::parse("ledgerboard_outbox_pending three\n");
    }
}
