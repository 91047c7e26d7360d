//! Which addresses a receiver may be at.
//!
//! A subscription's URL is chosen by whoever holds an admin token, and the dispatcher runs
//! inside the operator's network. Without a check, a URL naming an internal service, the
//! node's loopback or a cloud's metadata endpoint (`169.254.169.254`) would have the dispatcher
//! POST there and record the answer's status in the delivery log: a request forged from inside
//! (SSRF). So unless `dispatcher.allow_private_addresses`, the client connects to public
//! addresses only: it resolves the host itself, judges every address, and connects to an
//! address it judged, never to the name again, so a DNS answer that changes between the check
//! and the connection (rebinding) cannot move a delivery inside.
//!
//! A URL that names such an address outright (an IP literal, or `localhost`) is refused when it
//! is registered too ([`named`], unless `api.webhook_allow_private_addresses`): its owner
//! learns at once, from a 422, what the dispatcher would otherwise only record as each
//! delivery's error. A name is not resolved then: what it resolves to can change before a
//! delivery, so the dispatcher's check stays the one that decides.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of non-public address `ip` is (as an error names it), or None for a public one.
pub fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        // An IPv4 address carried in IPv6 (`::ffff:10.0.0.1`, or NAT64's `64:ff9b::/96`) is
        // judged as the IPv4 address it reaches.
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_kind(v4),
            None => v6_kind(v6),
        },
    }
}

/// The non-public address `url`'s host names outright, as the error spells it, and its kind:
/// an IP literal (in any spelling the URL parser reads: `2130706433` is `127.0.0.1`), or
/// `localhost` and names under it, which resolve to loopback (RFC 6761). None for any other
/// name, and for a public address.
pub fn named(url: &url::Url) -> Option<(String, &'static str)> {
    match url.host()? {
        url::Host::Ipv4(ip) => v4_kind(ip).map(|kind| (ip.to_string(), kind)),
        url::Host::Ipv6(ip) => private_kind(IpAddr::V6(ip)).map(|kind| (ip.to_string(), kind)),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            (name == "localhost" || name.ends_with(".localhost")).then_some((name, "loopback"))
        }
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_private() {
        "private"
    } else if ip.is_link_local() {
        // 169.254.0.0/16: the cloud metadata endpoints live here.
        "link-local"
    } else if a == 100 && (64..128).contains(&b) {
        "shared (carrier-grade NAT)"
    } else if a == 0 {
        "unspecified"
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        "multicast or reserved"
    } else if a == 198 && (b == 18 || b == 19) {
        "benchmarking"
    } else {
        return None;
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if ip.is_unique_local() {
        "private (unique local)"
    } else if ip.is_unicast_link_local() || first & 0xffc0 == 0xfec0 {
        // fe80::/10, and the deprecated site-local fec0::/10.
        "link-local"
    } else if ip.is_multicast() {
        "multicast or reserved"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`) or NAT64's
/// well-known prefix (`64:ff9b::/96`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]).then(|| {
        let [.., a, b, c, d] = ip.octets();
        Ipv4Addr::new(a, b, c, d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_named_and_public_ones_pass() {
        let kind = |s: &str| private_kind(s.parse().expect("an address"));
        for (ip, expected) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("10.0.0.5", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("100.127.255.254", "shared (carrier-grade NAT)"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast or reserved"),
            ("255.255.255.255", "multicast or reserved"),
            ("198.18.0.1", "benchmarking"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd00::1", "private (unique local)"),
            ("fe80::1", "link-local"),
            ("fec0::1", "link-local"),
            ("ff02::1", "multicast or reserved"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("64:ff9b::a00:1", "private"),
        ] {
            assert_eq!(kind(ip), Some(expected), "{ip}");
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(kind(ip), None, "{ip} is public");
        }
    }
}
