//! Which callback addresses are accepted: absolute `https` URLs with a host,
//! no credentials and no fragment, at most 2,048 characters. Plain `http`,
//! `localhost` and addresses in loopback, private, link-local or other
//! non-public ranges only when the configuration allows insecure callbacks
//! (the demo does). The delivery client checks the resolved addresses again.

use std::net::IpAddr;

/// Whether `ip` is somewhere a bank must not send requests on a merchant's word.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1])
                || v4.octets()[0] >= 240
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| is_internal(IpAddr::V4(v4)))
        }
    }
}

/// # Errors
/// What is wrong with `url`, in words for the merchant.
pub fn check_callback_url(url: &str, allow_insecure: bool) -> Result<(), String> {
    if url.len() > 2048 {
        return Err("longer than 2048 characters".into());
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
        assert!(check_callback_url("https://shop.example/notify?x=1", false).is_ok());
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
            assert!(check_callback_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_callback_url("http://127.0.0.1:9000/cb", true).is_ok());
        assert!(check_callback_url("ftp://127.0.0.1/cb", true).is_err());
    }
}
