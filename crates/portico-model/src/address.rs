//! Addresses Portico itself sends requests to on someone else's word
//! (merchant callbacks, clients' back-channel logout addresses): absolute
//! `https` URLs with a host, no credentials and no fragment, at most 2,048
//! characters, and never an address that is not globally reachable. Plain
//! `http`, `localhost` and such addresses only when the configuration
//! allows insecure addresses (the demo does). Senders check the resolved
//! addresses again.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest address Portico stores or sends to (bytes).
pub const MAX_URL_LEN: usize = 2048;

/// IPv4 blocks of the IANA IPv4 Special-Purpose Address Registry that are
/// not globally reachable (RFC 6890 and its updates), and multicast and the
/// reserved class E: `(network, prefix length)`. `192.0.0.0/24` is refused
/// whole, its two anycast services included: no merchant's server is there.
const V4_NOT_GLOBAL: [(u32, u8); 16] = [
    (0x0000_0000, 8),  // 0.0.0.0/8 "this network"
    (0x0a00_0000, 8),  // 10.0.0.0/8 private
    (0x6440_0000, 10), // 100.64.0.0/10 shared (carrier-grade NAT)
    (0x7f00_0000, 8),  // 127.0.0.0/8 loopback
    (0xa9fe_0000, 16), // 169.254.0.0/16 link-local (cloud metadata)
    (0xac10_0000, 12), // 172.16.0.0/12 private
    (0xc000_0000, 24), // 192.0.0.0/24 IETF protocol assignments
    (0xc000_0200, 24), // 192.0.2.0/24 documentation
    (0xc058_6300, 24), // 192.88.99.0/24 6to4 relay anycast (deprecated)
    (0xc0a8_0000, 16), // 192.168.0.0/16 private
    (0xc612_0000, 15), // 198.18.0.0/15 benchmarking
    (0xc633_6400, 24), // 198.51.100.0/24 documentation
    (0xcb00_7100, 24), // 203.0.113.0/24 documentation
    (0xe000_0000, 4),  // 224.0.0.0/4 multicast
    (0xf000_0000, 4),  // 240.0.0.0/4 reserved
    (0xffff_ffff, 32), // limited broadcast
];

/// IPv6 blocks inside the global unicast space `2000::/3` that the IANA
/// IPv6 Special-Purpose Address Registry marks not globally reachable (or
/// deprecated): `2001::/23` is refused whole, its few anycast and overlay
/// blocks included, and so is Teredo (`2001::/32`), which hides an IPv4
/// address. 6to4 (`2002::/16`) is judged by the IPv4 address it carries.
const V6_NOT_GLOBAL: [(u128, u8); 3] = [
    (0x2001_0000 << 96, 23), // 2001::/23 IETF protocol assignments, Teredo, benchmarking, ORCHID
    (0x2001_0db8 << 96, 32), // 2001:db8::/32 documentation
    (0x3fff_0000 << 96, 20), // 3fff::/20 documentation
];

fn in_block(address: u128, bits: u32, (network, prefix): (u128, u8)) -> bool {
    let shift = bits - u32::from(prefix);
    prefix == 0 || address >> shift == network >> shift
}

fn v4_is_internal(ip: Ipv4Addr) -> bool {
    let address = u128::from(u32::from(ip));
    V4_NOT_GLOBAL.iter().any(|&(network, prefix)| in_block(address, 32, (u128::from(network), prefix)))
}

/// The IPv4 address an IPv6 address stands for, where it embeds one: the
/// NAT64 well-known prefix `64:ff9b::/96` (RFC 6052), 6to4 `2002::/16`
/// (RFC 3056), and the mapped `::ffff:0:0/96`, SIIT-translated
/// `::ffff:0:0:0/96` and deprecated IPv4-compatible `::/96` forms.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]));
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, high, lower, ..] => Some(Ipv4Addr::from((u32::from(high) << 16) | u32::from(lower))),
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        _ => None,
    }
}

fn v6_is_internal(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        // `::` and `::1` fall in the IPv4-compatible form as 0.0.0.0/8.
        return v4_is_internal(v4);
    }
    let address = u128::from(ip);
    // Only global unicast `2000::/3` is reachable on the Internet: this
    // refuses unique-local, link-local, site-local, multicast, the
    // discard-only prefix, local-use NAT64 and SRv6 segment identifiers.
    !in_block(address, 128, (0x2000 << 112, 3)) || V6_NOT_GLOBAL.iter().any(|&block| in_block(address, 128, block))
}

/// Whether `ip` is somewhere a bank must not send requests on a merchant's
/// word: any address the IANA special-purpose registries mark not globally
/// reachable, also when written inside an IPv6 address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_is_internal(v4),
        IpAddr::V6(v6) => v6_is_internal(v6),
    }
}

/// # Errors
/// What is wrong with `url`, in words for the merchant.
pub fn check_public_url(url: &str, allow_insecure: bool) -> Result<(), String> {
    if url.len() > MAX_URL_LEN {
        return Err(format!("longer than {MAX_URL_LEN} characters"));
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("not an absolute URL ({e})"))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_insecure => {}
        "http" => return Err("must use https".into()),
        other => return Err(format!("the scheme {other:?} is not allowed; use https")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry credentials".into());
    }
    if parsed.fragment().is_some() {
        return Err("must not have a fragment".into());
    }
    let internal = match parsed.host() {
        None => return Err("has no host".into()),
        Some(url::Host::Domain(domain)) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain == "localhost" || domain.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => is_internal(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_internal(IpAddr::V6(ip)),
    };
    if internal && !allow_insecure {
        return Err("points into a private or loopback network".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_https_addresses_unless_allowed() {
        assert!(check_public_url("https://shop.example/notify?x=1", false).is_ok());
        for bad in [
            "http://shop.example/cb",
            "ftp://shop.example/cb",
            "https://user:pw@shop.example/cb",
            "https://shop.example/cb#frag",
            "https://localhost/cb",
            "https://127.0.0.1/cb",
            "https://10.1.2.3/cb",
            "https://192.168.0.1/cb",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/cb",
            "https://[fd00::1]/cb",
            "https://[::ffff:10.0.0.1]/cb",
            "https://100.64.0.1/cb",
            "/relative",
            "",
        ] {
            assert!(check_public_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_public_url("http://127.0.0.1:9000/cb", true).is_ok());
        assert!(check_public_url("ftp://127.0.0.1/cb", true).is_err());
    }

    /// Every special-purpose address that is not globally reachable is
    /// refused, also in its IPv6 disguises; ordinary public ones pass.
    #[test]
    fn special_purpose_addresses_are_refused_in_every_form() {
        for internal in [
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.250",
            "192.0.0.1",
            "192.0.0.9",
            "192.0.2.1",
            "192.88.99.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "240.0.0.1",
            "255.255.255.255",
            "100.127.255.255",
            "172.31.0.1",
            "::",
            "::1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "::127.0.0.1",
            "::10.0.0.1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "fec0::1",
            "ff02::1",
            "ff0e::1",
            "::ffff:0:7f00:1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "fe80::1",
            "fd12:3456::1",
            "100::1",
            "2001::1",
            "2001:0:4136:e378::1",
            "2001:2::1",
            "2001:db8::1",
            "3fff::1",
            "5f00::1",
            "4000::1",
        ] {
            let ip: IpAddr = internal.parse().unwrap();
            assert!(is_internal(ip), "{internal} must be refused");
            let url = match ip {
                IpAddr::V4(_) => format!("https://{internal}/cb"),
                IpAddr::V6(_) => format!("https://[{internal}]/cb"),
            };
            assert!(check_public_url(&url, false).is_err(), "{url}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "100.128.0.1",
            "192.0.3.1",
            "198.20.0.1",
            "223.255.255.255",
            "2a00:1450:4001:80b::200e",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_internal(public.parse().unwrap()), "{public} is public");
        }
    }
}
