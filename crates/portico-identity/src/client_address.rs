//! The client's address, for the login guard's per-address counters.
//!
//! The TCP peer, unless the peer is one of the configured trusted proxies
//! (`http.trusted_proxies`): then the nearest address in `X-Forwarded-For`
//! that is not a trusted proxy itself (reading from the right, as each proxy
//! appends the address it saw). Without trusted proxies the header is never
//! read, so a client cannot choose its own address.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use axum::http::HeaderMap;

/// An address block such as `10.0.0.0/8`, `192.0.2.7` or `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Whether `address` lies in the block (an IPv4-mapped IPv6 address
    /// counts as its IPv4 address).
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        match (self.network, address) {
            (IpAddr::V4(net), IpAddr::V4(addr)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(addr) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(addr)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(addr) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network =
            canonical(address.trim().parse::<IpAddr>().map_err(|_| format!("`{text}` is not an IP address or block"))?);
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{text}`: the prefix length must be 0 to {max}"))?,
            None => max,
        };
        Ok(Self { network, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl serde::Serialize for Cidr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Cidr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// The TCP peer of a request, when the listener recorded it (`ConnectInfo`).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub Option<SocketAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Peer(parts.extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|info| info.0)))
    }
}

/// The client's address for a request from `peer` (see the module docs).
pub fn client_address(trusted_proxies: &[Cidr], headers: &HeaderMap, peer: Option<SocketAddr>) -> Option<IpAddr> {
    let peer = canonical(peer?.ip());
    let trusted = |address: IpAddr| trusted_proxies.iter().any(|cidr| cidr.contains(address));
    if !trusted(peer) {
        return Some(peer);
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    for hop in forwarded.iter().rev() {
        match hop.parse::<IpAddr>() {
            Ok(address) if trusted(canonical(address)) => continue,
            Ok(address) => return Some(canonical(address)),
            // Garbage in the chain: the last trustworthy hop is the proxy.
            Err(_) => return Some(peer),
        }
    }
    Some(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(forwarded: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", forwarded.parse().unwrap());
        headers
    }

    #[test]
    fn blocks_contain_their_addresses() {
        let block: Cidr = "10.0.0.0/8".parse().unwrap();
        assert!(block.contains("10.200.3.4".parse().unwrap()));
        assert!(block.contains("::ffff:10.1.2.3".parse().unwrap()), "IPv4-mapped");
        assert!(!block.contains("11.0.0.1".parse().unwrap()));
        let one: Cidr = "192.0.2.7".parse().unwrap();
        assert!(one.contains("192.0.2.7".parse().unwrap()) && !one.contains("192.0.2.8".parse().unwrap()));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()) && !v6.contains("fe80::1".parse().unwrap()));
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains("203.0.113.1".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Cidr>().unwrap_err().contains("0 to 32"));
        assert!("proxy".parse::<Cidr>().is_err());
    }

    #[test]
    fn forwarded_for_is_read_only_behind_a_trusted_proxy() {
        let proxies = vec!["10.0.0.0/8".parse().unwrap()];
        let from_proxy = Some(SocketAddr::from(([10, 0, 0, 5], 4000)));
        let direct = Some(SocketAddr::from(([198, 51, 100, 9], 4000)));
        let chain = headers("203.0.113.66, 198.51.100.1, 10.0.0.9");
        assert_eq!(client_address(&proxies, &chain, from_proxy), Some("198.51.100.1".parse().unwrap()));
        assert_eq!(client_address(&proxies, &chain, direct), Some("198.51.100.9".parse().unwrap()), "forged");
        assert_eq!(client_address(&[], &chain, from_proxy), Some("10.0.0.5".parse().unwrap()), "none trusted");
        assert_eq!(client_address(&proxies, &HeaderMap::new(), from_proxy), Some("10.0.0.5".parse().unwrap()));
        assert_eq!(client_address(&proxies, &headers("x, 10.0.0.2"), from_proxy), Some("10.0.0.5".parse().unwrap()));
        assert_eq!(client_address(&proxies, &chain, None), None);
    }
}
