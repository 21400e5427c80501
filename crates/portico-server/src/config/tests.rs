use std::path::Path;

use super::*;

#[test]
fn defaults_are_valid_and_documented_values() {
    let config = Config::default();
    config.validate().unwrap();
    assert_eq!(config.public_url(), "http://localhost:8080", "loopback is named localhost (passkeys need a host)");
    let open = Config { listen: "0.0.0.0:8080".parse().unwrap(), ..Config::default() };
    assert_eq!(open.public_url(), "http://0.0.0.0:8080");
    assert_eq!(config.database().unwrap(), Database::Sqlite("sqlite://./data/portico.db".into()));
    assert!(!config.identity_settings().secure_cookies);
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn the_theme_and_delivery_come_from_the_file() {
    figment::Jail::expect_with(|jail| {
        jail.create_file(
            "portico.toml",
            r#"
[theme]
passwordResetEnabled = true
[theme.supportDrawer.ru]
title = "Поддержка"
chatButtonText = "Написать в чат"
[[theme.supportDrawer.ru.sections]]
title = "Телефоны"
items = [{ icon = "phone", title = "По России", value = "8 800 000-00-00" }]
[[theme.systemMessages.ru]]
id = "6f1c2a8e-8d5b-4a43-9d3e-2f1a9f0c7b11"
title = "Работы"
message = "Ночью возможны перерывы"

[delivery]
sms = "http"
"#,
        )?;
        let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
        assert!(error.contains("sms_gateway_url"), "{error}");
        jail.set_env("PORTICO_DELIVERY__SMS_GATEWAY_URL", "https://sms.example/send");
        let config = Config::load(Some(Path::new("portico.toml"))).map_err(|e| e.to_string())?;
        let theme = config.identity_settings().theme;
        assert!(theme.password_reset_enabled);
        let view = serde_json::to_value(theme.view()).unwrap();
        assert_eq!(view["supportDrawer"]["ru"]["chatButtonText"], "Написать в чат");
        assert_eq!(view["supportDrawer"]["ru"]["sections"][0]["items"][0]["value"], "8 800 000-00-00");
        assert_eq!(view["systemMessages"]["ru"][0]["title"], "Работы");
        assert_eq!(view["passwordResetEnabled"], true);
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn a_theme_colour_too_faint_for_its_text_stops_the_start_naming_it() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("portico.toml", "[theme]\naccentColor = \"#ffd400\"\nbankName = { ru = \"Банк\" }\n")?;
        let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
        assert!(error.contains("theme.accentColor: #ffd400 has a contrast of 1.4:1"), "{error}");
        jail.create_file("portico.toml", "[theme]\naccentColor = \"#0b5d1e\"\n")?;
        let config = Config::load(Some(Path::new("portico.toml"))).map_err(|e| e.to_string())?;
        assert!(config.identity_settings().branding.css.contains("#0b5d1e"));
        Ok(())
    });
}

#[test]
fn serve_outside_the_demo_needs_code_delivery_and_captcha_chosen_by_name() {
    let mut config = Config::default();
    assert!(config.check_serve(true).unwrap().is_empty(), "the demo picks the development ways");
    let error = config.check_serve(false).unwrap_err().to_string();
    assert!(error.contains("delivery.sms") && error.contains("PORTICO_DELIVERY__SMS"), "{error}");
    config.delivery.sms = Some(SmsDelivery::Http);
    let error = config.check_serve(false).unwrap_err().to_string();
    assert!(error.contains("delivery.email"), "{error}");
    config.delivery.email = Some(EmailDelivery::Smtp);
    let error = config.check_serve(false).unwrap_err().to_string();
    assert!(error.contains("captcha.kind"), "{error}");
    config.captcha.kind = Some(CaptchaKind::Smartcaptcha);
    assert!(config.check_serve(false).unwrap().is_empty(), "production ways: no warning");

    config.delivery.email = Some(EmailDelivery::Outbox);
    config.captcha.kind = Some(CaptchaKind::Dev);
    let warnings = config.check_serve(false).unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("outbox.jsonl") && warnings[1].contains("captcha.kind"), "{warnings:?}");
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn admin_tokens_come_named_from_the_environment_and_are_checked() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("PORTICO_ADMIN_TOKEN", "the-admin-token-0123456789");
        jail.set_env("PORTICO_ADMIN_TOKENS__CI", "the-ci-token-0123456789abc");
        let config = Config::load(None).unwrap();
        assert_eq!(config.admin_tokens.get("ci").map(String::as_str), Some("the-ci-token-0123456789abc"));
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("authorization", "Bearer the-ci-token-0123456789abc".parse().unwrap());
        assert_eq!(config.api_tokens().admin(&headers).unwrap().actor.to_string(), "token:ci");
        jail.set_env("PORTICO_ADMIN_TOKENS__CI", "the-admin-token-0123456789");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("two admin tokens are the same"), "{error}");
        jail.set_env("PORTICO_ADMIN_TOKENS__CI", "short");
        assert!(Config::load(None).unwrap_err().to_string().contains("admin_tokens.ci must be at least 24"));
        jail.set_env("PORTICO_ADMIN_TOKENS__ADMIN", "another-token-0123456789ab");
        jail.set_env("PORTICO_ADMIN_TOKENS__CI", "the-ci-token-0123456789abc");
        assert!(Config::load(None).unwrap_err().to_string().contains("the name admin is admin_token's"));
        Ok(())
    });
}

#[test]
fn the_retry_schedule_is_checked_at_start() {
    let mut config = Config::default();
    config.notifications.retry_waits_secs = vec![2, 5];
    config.notifications.retry_window_secs = 20;
    config.validate().unwrap();
    config.notifications.retry_waits_secs = vec![];
    assert!(config.validate().unwrap_err().to_string().contains("notifications.retry_waits_secs"));
    config.notifications.retry_waits_secs = vec![2, 0];
    assert!(config.validate().unwrap_err().to_string().contains("greater than 0"));
    config.notifications.retry_waits_secs = vec![30];
    assert!(config.validate().unwrap_err().to_string().contains("notifications.retry_window_secs"));
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn kubernetes_service_links_are_not_settings_but_misspelt_settings_still_are() {
    figment::Jail::expect_with(|jail| {
        for (name, value) in [
            ("PORTICO_PORT", "tcp://10.96.0.12:8080"),
            ("PORTICO_SERVICE_HOST", "10.96.0.12"),
            ("PORTICO_SERVICE_PORT", "8080"),
            ("PORTICO_SERVICE_PORT_HTTP", "8080"),
            ("PORTICO_PORT_8080_TCP", "tcp://10.96.0.12:8080"),
            ("PORTICO_PORT_8080_TCP_PROTO", "tcp"),
            ("PORTICO_PORT_8080_TCP_PORT", "8080"),
            ("PORTICO_PORT_8080_TCP_ADDR", "10.96.0.12"),
        ] {
            jail.set_env(name, value);
        }
        let config = Config::load(None).map_err(|e| e.to_string())?;
        assert_eq!(config.listen, Config::default().listen);

        jail.set_env("PORTICO_LISTNE", "0.0.0.0:8080");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("listne"), "{error}");
        jail.clear_env();
        // A `PORTICO_PORT` that is no service link is still refused.
        jail.set_env("PORTICO_PORT", "9000");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("unknown setting `port`"), "{error}");
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn unknown_and_invalid_settings_are_named() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("portico.toml", "listen = \"127.0.0.1:9000\"\nlisten_port = 1\n")?;
        let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
        assert!(error.contains("listen_port"), "{error}");

        jail.create_file("portico.toml", "[tokens]\naccess_token_ttl_secs = \"soon\"\n")?;
        let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
        assert!(error.contains("tokens.access_token_ttl_secs"), "{error}");

        jail.create_file("portico.toml", "")?;
        jail.set_env("PORTICO_LISTEN", "not an address");
        let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
        assert!(error.contains("PORTICO_LISTEN"), "{error}");

        jail.set_env("PORTICO_LISTEN", "127.0.0.1:9001");
        jail.set_env("PORTICO_DATABASE_URL", "mysql://x");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("PORTICO_DATABASE_URL"), "{error}");

        jail.set_env("PORTICO_DATABASE_URL", "postgres://u@h/db");
        jail.set_env("PORTICO_TEST_POSTGRES_URL", "ignored");
        jail.set_env("PORTICO_TOKENS__ACCESS_TOKEN_TTL_SECS", "60");
        let config = Config::load(None).unwrap();
        assert_eq!(config.listen.port(), 9001);
        assert_eq!(config.tokens.access_token_ttl_secs, 60);
        assert_eq!(config.database().unwrap(), Database::Postgres("postgres://u@h/db".into()));

        jail.set_env("PORTICO_LISTN", "1");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("listn"), "{error}");
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn metrics_listen_is_a_second_address() {
    figment::Jail::expect_with(|jail| {
        assert_eq!(Config::load(None).unwrap().metrics_listen, None, "off by default");
        jail.set_env("PORTICO_LISTEN", "127.0.0.1:9001");
        jail.set_env("PORTICO_METRICS_LISTEN", "127.0.0.1:9001");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("metrics_listen"), "the public address twice: {error}");
        jail.set_env("PORTICO_METRICS_LISTEN", "127.0.0.1:9100");
        assert_eq!(Config::load(None).unwrap().metrics_listen, Some("127.0.0.1:9100".parse().unwrap()));
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn software_statement_issuers_come_from_the_file_with_their_public_keys() {
    use portico_crypto::jwt::{Algorithm, SigningKey};
    figment::Jail::expect_with(|jail| {
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        jail.create_file("directory.json", &serde_json::json!({ "keys": [key.jwk()] }).to_string())?;
        let mut private = serde_json::to_value(key.jwk()).unwrap();
        private["d"] = "AAAA".into();
        jail.create_file("private.json", &serde_json::json!({ "keys": [private] }).to_string())?;
        jail.create_file(
            "portico.toml",
            r#"
            [registration]
            require_software_statement = true
            [[registration.software_statement_issuers]]
            issuer = "https://directory.example"
            jwks_file = "directory.json"
            "#,
        )?;
        let config = Config::load(Some(Path::new("portico.toml"))).unwrap();
        let statements = config.registration.software_statements().unwrap();
        assert_eq!(statements.issuers.len(), 1);
        assert_eq!(statements.issuers[0].issuer, "https://directory.example");
        assert!(statements.required);

        let mut broken = config.clone();
        broken.registration.software_statement_issuers[0].jwks_file = "private.json".into();
        let error = broken.validate().unwrap_err().to_string();
        assert!(error.contains("private.json") && error.contains("private member"), "{error}");
        broken.registration.software_statement_issuers[0].jwks_file = "missing.json".into();
        assert!(broken.validate().unwrap_err().to_string().contains("cannot read missing.json"));
        broken.registration.software_statement_issuers.clear();
        let error = broken.validate().unwrap_err().to_string();
        assert!(error.contains("require_software_statement needs"), "{error}");
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn the_certificate_header_needs_trusted_proxies_given_as_one_value_or_a_list() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("PORTICO_MTLS__CERTIFICATE_HEADER", "X-Client-Cert");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("mtls.trusted_proxies is empty"), "{error}");
        jail.set_env("PORTICO_MTLS__TRUSTED_PROXIES", "127.0.0.1/32");
        let config = Config::load(None).unwrap();
        let edge = config.mtls.edge().unwrap();
        assert_eq!(edge.header.as_ref().map(|h| h.as_str()), Some("x-client-cert"));
        assert_eq!(edge.trusted_proxies, vec!["127.0.0.1/32".parse().unwrap()]);
        jail.set_env("PORTICO_MTLS__TRUSTED_PROXIES", r#"["10.0.0.0/8", "fd00::/8"]"#);
        assert_eq!(Config::load(None).unwrap().mtls.trusted_proxies.len(), 2);
        jail.set_env("PORTICO_MTLS__CERTIFICATE_HEADER", "not a header");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("not an HTTP header name"), "{error}");
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn the_mutual_tls_listener_needs_its_certificate_and_key_and_the_aliases_an_https_base() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("PORTICO_MTLS__LISTEN", "127.0.0.1:8443");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("mtls.server_certificate_file"), "{error}");
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let certificate =
            rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().self_signed(&key).unwrap();
        jail.create_file("chain.pem", &certificate.pem())?;
        jail.create_file("key.pem", &key.serialize_pem())?;
        jail.create_file("other-key.pem", &rcgen::KeyPair::generate().unwrap().serialize_pem())?;
        jail.set_env("PORTICO_MTLS__SERVER_CERTIFICATE_FILE", "chain.pem");
        jail.set_env("PORTICO_MTLS__SERVER_KEY_FILE", "other-key.pem");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("does not fit the certificate"), "{error}");
        jail.set_env("PORTICO_MTLS__SERVER_KEY_FILE", "key.pem");
        let config = Config::load(None).unwrap();
        assert!(config.mtls.server_tls().unwrap().is_some());
        assert!(config.identity_settings().client_certificates, "certificates reach Portico");

        jail.set_env("PORTICO_MTLS__PUBLIC_URL", "http://mtls.bank.example");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("mtls.public_url"), "{error}");
        jail.set_env("PORTICO_MTLS__PUBLIC_URL", "https://mtls.bank.example:8443/");
        let settings = Config::load(None).unwrap().identity_settings();
        assert_eq!(settings.mtls_aliases.as_deref(), Some("https://mtls.bank.example:8443"));
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
fn a_default_fapi_ru_profile_needs_certificates_to_reach_portico() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("PORTICO_REGISTRATION__DEFAULT_SECURITY_PROFILE", "fapi-ru");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(error.contains("registration.default_security_profile = fapi-ru") && error.contains("mtls"), "{error}");
        jail.set_env("PORTICO_MTLS__CERTIFICATE_HEADER", "X-Client-Cert");
        jail.set_env("PORTICO_MTLS__TRUSTED_PROXIES", "127.0.0.1/32");
        let config = Config::load(None).unwrap();
        assert_eq!(config.registration.default_security_profile, portico_model::client::SecurityProfile::FapiRu);
        Ok(())
    });
}
