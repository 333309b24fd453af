//! The client address sign-in throttling counts under.
//!
//! The address is the TCP peer's, unless the peer is one of the operator's
//! trusted reverse proxies (`INVOICING_TRUSTED_PROXIES`): then it is read from
//! the `Forwarded` (or, lacking it, `X-Forwarded-For`) chain, walking from the
//! right past trusted proxies to the first address none of them is. Anything a
//! client writes into those headers itself sits left of that and is ignored, and
//! from an untrusted peer the headers are not read at all.

use std::{
    net::{IpAddr, SocketAddr},
    str::FromStr,
};

use axum::http::{HeaderMap, HeaderName, header};

/// An IP network: an address and how many leading bits of it must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// Whether `ip` lies in this network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
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

impl FromStr for IpNet {
    type Err = String;

    /// `10.0.0.0/8`, `2001:db8::/32`, or one address (`192.0.2.7`, `::1`).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not an IP address or network (such as 10.0.0.0/8)");
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr = IpAddr::from_str(addr.trim())
            .map_err(|_| bad())?
            .to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(bad)?,
        };
        Ok(Self { addr, prefix })
    }
}

/// The reverse proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// A comma- or space-separated list of addresses and networks; empty: none.
    pub fn parse(list: &str) -> Result<Self, String> {
        list.split([',', ' ', '\t', '\n'])
            .filter(|s| !s.is_empty())
            .map(IpNet::from_str)
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(ip))
    }

    /// The client's address: the peer's, or behind trusted proxies the first
    /// address from the right of the forwarding chain that is not one of them.
    pub fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.to_canonical();
        if !self.trusts(peer) {
            return Some(peer);
        }
        let mut nearest = peer;
        for hop in forwarding_chain(headers).iter().rev() {
            match hop_address(hop) {
                Some(ip) if self.trusts(ip) => nearest = ip,
                Some(ip) => return Some(ip),
                // An obfuscated or garbled hop: the proxy after it is all we know.
                None => return Some(nearest),
            }
        }
        Some(nearest)
    }
}

/// The hops of `Forwarded` (its `for=` values) if the request has that header,
/// else of `X-Forwarded-For`, left (the original client) to right.
fn forwarding_chain(headers: &HeaderMap) -> Vec<String> {
    let values = |name| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>()
    };
    let forwarded = values(header::FORWARDED);
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.trim().split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
                    .map_or(String::new(), |(_, v)| v.trim().to_owned())
            })
            .collect();
    }
    values(HeaderName::from_static("x-forwarded-for"))
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The address of one hop: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]:4711`, optionally in quotes.
fn hop_address(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    if let Some(rest) = hop.strip_prefix('[') {
        let (addr, _) = rest.split_once(']')?;
        return IpAddr::from_str(addr).ok().map(|ip| ip.to_canonical());
    }
    IpAddr::from_str(hop)
        .ok()
        .or_else(|| SocketAddr::from_str(hop).ok().map(|s| s.ip()))
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_match_by_prefix() {
        let net: IpNet = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains(ip("10.200.3.4")));
        assert!(net.contains(ip("::ffff:10.1.2.3")));
        assert!(!net.contains(ip("11.0.0.1")));
        let one: IpNet = "2001:db8::1".parse().unwrap();
        assert!(one.contains(ip("2001:db8::1")) && !one.contains(ip("2001:db8::2")));
        let all: IpNet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")));
        for bad in ["10.0.0.0/33", "example.com", "10.0.0.0/x", ""] {
            assert!(bad.parse::<IpNet>().is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarding_headers_count_only_from_trusted_proxies() {
        let proxies = TrustedProxies::parse("10.0.0.0/8, 192.0.2.1").unwrap();
        let xff = headers(&[("x-forwarded-for", "198.51.100.66, 203.0.113.5, 10.1.1.1")]);
        // From an untrusted peer the header is the client's own claim: ignored.
        assert_eq!(
            proxies.client(Some(ip("198.51.100.7")), &xff),
            Some(ip("198.51.100.7"))
        );
        // Through two trusted hops, the first untrusted address from the right.
        assert_eq!(
            proxies.client(Some(ip("10.0.0.2")), &xff),
            Some(ip("203.0.113.5"))
        );
        let fwd = headers(&[(
            "forwarded",
            "for=198.51.100.66, for=\"[2001:db8::7]:4711\";proto=https, for=192.0.2.1",
        )]);
        assert_eq!(
            proxies.client(Some(ip("10.0.0.2")), &fwd),
            Some(ip("2001:db8::7"))
        );
        let hidden = headers(&[("forwarded", "for=_hidden")]);
        assert_eq!(
            proxies.client(Some(ip("10.0.0.2")), &hidden),
            Some(ip("10.0.0.2"))
        );
        assert_eq!(
            TrustedProxies::default().client(Some(ip("10.0.0.2")), &xff),
            Some(ip("10.0.0.2"))
        );
    }
}
