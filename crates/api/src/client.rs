//! Which client a request comes from, for the rate limit and the per-client connection cap.
//!
//! - The TCP peer is the client, unless it is one of `api.trusted_proxies`: only then are
//!   `X-Forwarded-For` (or, without it, `Forwarded: for=`) read, from the right, and the first
//!   address that is not itself a trusted proxy is the client. From any other peer the headers
//!   are ignored: anyone can write them, so trusting them would let a client pick a fresh
//!   bucket for every request.
//! - An IPv6 client is its /64: one subscriber usually holds a whole /64 and can use any
//!   address in it, so per address it would have 2^64 buckets.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use axum::http::HeaderMap;
use axum::http::header::FORWARDED;

/// One CIDR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = addr
            .parse()
            .map_err(|e| format!("{text:?}: not an address: {e}"))?;
        let network = network.to_canonical();
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{text:?}: the prefix must be 0..={max}"))?,
        };
        Ok(Cidr { network, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The proxies of `api.trusted_proxies`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Cidr>);

impl TrustedProxies {
    /// Comma-separated CIDRs or addresses; empty trusts none.
    pub fn parse(text: &str) -> Result<TrustedProxies, String> {
        text.split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(Cidr::parse)
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|cidr| cidr.contains(ip))
    }

    /// The client of a request that came from `peer` with `headers` (see the module's text).
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let hops = forwarded_for(headers);
        // From the right: each trusted proxy appended the address it received from; the
        // first one that is not a trusted proxy is the client. Should every hop be trusted,
        // the leftmost is the furthest known.
        hops.iter()
            .rev()
            .find(|hop| !self.contains(**hop))
            .or(hops.first())
            .copied()
            .unwrap_or(peer)
    }
}

/// The addresses of `X-Forwarded-For` (every such header, in order), or when there is none,
/// the `for=` of `Forwarded`. An unreadable header gives no hops: the peer stays the client.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let xff: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    if !xff.is_empty() {
        return xff.iter().filter_map(|hop| parse_hop(hop)).collect();
    }
    headers
        .get_all(FORWARDED)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .flat_map(|element| element.split(';'))
        .filter_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            key.eq_ignore_ascii_case("for").then_some(value)
        })
        .filter_map(parse_hop)
        .collect()
}

/// `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]:4711`, quoted or not.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (addr, _port) = hop.rsplit_once(':')?;
    addr.parse().ok()
}

/// A client as the rate limit and the connection cap count it: an IPv4 address, or an IPv6
/// /64 (an IPv4-mapped IPv6 address is its IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    pub fn of(ip: IpAddr) -> ClientKey {
        ClientKey(match ip.to_canonical() {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64))),
        })
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        map
    }

    #[test]
    fn cidrs_parse_and_match() {
        let trusted = TrustedProxies::parse("10.0.0.0/8, 192.168.1.7 ,2001:db8::/32").expect("ok");
        assert!(trusted.contains(ip("10.1.2.3")));
        assert!(trusted.contains(ip("::ffff:10.1.2.3")));
        assert!(trusted.contains(ip("192.168.1.7")));
        assert!(!trusted.contains(ip("192.168.1.8")));
        assert!(trusted.contains(ip("2001:db8:ffff::1")));
        assert!(!trusted.contains(ip("2001:db9::1")));
        assert!(TrustedProxies::parse("").expect("empty").0.is_empty());
        assert!(
            TrustedProxies::parse("0.0.0.0/0")
                .expect("all")
                .contains(ip("8.8.8.8"))
        );
        for bad in ["10.0.0.0/33", "nowhere", "::/129", "10.0.0.0/x"] {
            assert!(TrustedProxies::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarding_headers_count_only_from_a_trusted_peer() {
        let trusted = TrustedProxies::parse("10.0.0.0/8").expect("ok");
        let xff = headers(&[("x-forwarded-for", "203.0.113.9, 10.0.0.5")]);
        // Untrusted peer: the header is ignored.
        assert_eq!(trusted.client(ip("198.51.100.1"), &xff), ip("198.51.100.1"));
        // Trusted peer: the rightmost untrusted hop.
        assert_eq!(trusted.client(ip("10.0.0.1"), &xff), ip("203.0.113.9"));
        // A client cannot hide behind a forged left part.
        let forged = headers(&[("x-forwarded-for", "1.1.1.1, 203.0.113.9")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &forged), ip("203.0.113.9"));
        let forwarded = headers(&[("forwarded", "for=\"[2001:db8::7]:4711\";proto=https")]);
        assert_eq!(
            trusted.client(ip("10.0.0.1"), &forwarded),
            ip("2001:db8::7")
        );
        let garbage = headers(&[("x-forwarded-for", "not an address")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &garbage), ip("10.0.0.1"));
        assert_eq!(
            trusted.client(ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        assert_eq!(
            ClientKey::of(ip("2001:db8:1:2:aaaa::1")),
            ClientKey::of(ip("2001:db8:1:2:bbbb::2"))
        );
        assert_ne!(
            ClientKey::of(ip("2001:db8:1:2::1")),
            ClientKey::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            ClientKey::of(ip("2001:db8:1:2:aaaa::1")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            ClientKey::of(ip("::ffff:192.0.2.1")),
            ClientKey::of(ip("192.0.2.1"))
        );
        assert_ne!(
            ClientKey::of(ip("192.0.2.1")),
            ClientKey::of(ip("192.0.2.2"))
        );
    }
}
