//! Passkey ceremonies against a software authenticator (P-256, attestation
//! `none`, user verified), on both backends: enrolment, sign-in, a counter
//! that does not advance locking the passkey, and the bad input a browser
//! or an attacker may send, none of which changes anything.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use portico_crypto::b64url;
use portico_identity::passkeys::{PasskeyError, Passkeys};
use portico_model::audit::AuditKind;
use portico_model::clock::Clock;
use portico_model::ids::UserId;
use portico_storage::Storage;
use portico_tests::{ADMIN_TOKEN, TempDir, TestApp, backends};
use serde_json::{Value, json};

use crate::storage_contract::{store, t0, user};

const ORIGIN: &str = "https://id.bank.example";
const RP_ID: &str = "id.bank.example";

/// An authenticator holding one discoverable P-256 credential.
struct Authenticator {
    key: EcdsaKeyPair,
    credential_id: Vec<u8>,
    user_handle: Vec<u8>,
    counter: u32,
}

/// CBOR of a byte string.
fn cbor_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = match bytes.len() {
        n @ 0..=23 => vec![0x40 | n as u8],
        n @ 24..=255 => vec![0x58, n as u8],
        n => vec![0x59, (n >> 8) as u8, n as u8],
    };
    out.extend(bytes);
    out
}

/// CBOR of a short text string.
fn cbor_text(text: &str) -> Vec<u8> {
    let mut out = vec![0x60 | text.len() as u8];
    out.extend(text.as_bytes());
    out
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    portico_crypto::hash::sha256(bytes).to_vec()
}

impl Authenticator {
    fn new(user: UserId) -> Self {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new()).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref()).unwrap();
        let credential_id = uuid::Uuid::new_v4().as_bytes().to_vec();
        Self { key, credential_id, user_handle: uuid::Uuid::from(user).as_bytes().to_vec(), counter: 0 }
    }

    /// Authenticator data: RP ID hash, flags (user present and verified),
    /// counter, and what follows.
    fn auth_data(&self, rp_id: &str, flags: u8, rest: &[u8]) -> Vec<u8> {
        let mut data = sha256(rp_id.as_bytes());
        data.push(flags);
        data.extend(self.counter.to_be_bytes());
        data.extend(rest);
        data
    }

    fn client_data(kind: &str, options: &Value, origin: &str) -> Vec<u8> {
        let challenge = options["publicKey"]["challenge"].as_str().unwrap();
        json!({ "type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false }).to_string().into_bytes()
    }

    /// The browser's answer to an enrolment's options.
    fn create(&self, options: &Value, origin: &str) -> String {
        let point = self.key.public_key().as_ref();
        let mut cose = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21];
        cose.extend(cbor_bytes(&point[1..33]));
        cose.push(0x22);
        cose.extend(cbor_bytes(&point[33..65]));
        let mut attested = vec![0; 16];
        attested.extend((self.credential_id.len() as u16).to_be_bytes());
        attested.extend(&self.credential_id);
        attested.extend(cose);
        let auth_data = self.auth_data(RP_ID, 0x45, &attested);
        let mut object = vec![0xa3];
        object.extend(cbor_text("fmt"));
        object.extend(cbor_text("none"));
        object.extend(cbor_text("attStmt"));
        object.push(0xa0);
        object.extend(cbor_text("authData"));
        object.extend(cbor_bytes(&auth_data));
        let id = b64url(&self.credential_id);
        json!({
            "id": id, "rawId": id, "type": "public-key", "extensions": {},
            "response": {
                "attestationObject": b64url(object),
                "clientDataJSON": b64url(Self::client_data("webauthn.create", options, origin)),
            },
        })
        .to_string()
    }

    /// The browser's answer to a sign-in's options, the counter advanced by `step`.
    fn get(&mut self, options: &Value, origin: &str, step: u32) -> String {
        self.counter += step;
        let auth_data = self.auth_data(RP_ID, 0x05, &[]);
        let client_data = Self::client_data("webauthn.get", options, origin);
        let signed = [auth_data.clone(), sha256(&client_data)].concat();
        let signature = self.key.sign(&SystemRandom::new(), &signed).unwrap();
        let id = b64url(&self.credential_id);
        json!({
            "id": id, "rawId": id, "type": "public-key", "extensions": {},
            "response": {
                "authenticatorData": b64url(auth_data),
                "clientDataJSON": b64url(client_data),
                "signature": b64url(signature.as_ref()),
                "userHandle": b64url(&self.user_handle),
            },
        })
        .to_string()
    }
}

async fn audited(store: &dyn Storage, kind: AuditKind) -> usize {
    store.recent_audit(1_000).await.unwrap().iter().filter(|e| e.kind == kind.as_str()).count()
}

#[tokio::test]
async fn a_passkey_is_enrolled_signs_in_and_is_locked_when_its_counter_goes_back() {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let ivan = user("ivan");
        store.create_user(&ivan).await.unwrap();
        let mut authenticator = Authenticator::new(ivan.id);

        let started = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = authenticator.create(&started.options, ORIGIN);
        let enrolled =
            passkeys.finish_enrolment(&*store, ivan.id, &started.state, &answer, "Phone", t0()).await.unwrap();
        assert_eq!((enrolled.name.as_str(), enrolled.sign_count), ("Phone", 0));
        assert_eq!(store.passkeys_of(ivan.id).await.unwrap(), vec![enrolled.clone()], "{backend:?}");
        // The same credential again is refused: by the options, which
        // exclude it, and by the store, when a ceremony did not.
        let again = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", std::slice::from_ref(&enrolled)).unwrap();
        assert_eq!(again.options["publicKey"]["excludeCredentials"][0]["id"], enrolled.credential_id);
        let answer = authenticator.create(&again.options, ORIGIN);
        let excluded = passkeys.finish_enrolment(&*store, ivan.id, &again.state, &answer, "Phone", t0()).await;
        assert!(matches!(excluded, Err(PasskeyError::Refused(_))), "{backend:?}: {excluded:?}");
        let unaware = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = authenticator.create(&unaware.options, ORIGIN);
        let taken = passkeys.finish_enrolment(&*store, ivan.id, &unaware.state, &answer, "Phone", t0()).await;
        assert!(matches!(taken, Err(PasskeyError::Taken)), "{backend:?}: {taken:?}");
        assert_eq!(store.passkeys_of(ivan.id).await.unwrap().len(), 1);
        assert_eq!(audited(&*store, AuditKind::PasskeyCreated).await, 1);

        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 1);
        let signed_in = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await.unwrap();
        assert_eq!((signed_in.user_id, signed_in.passkey.id, signed_in.user_verified), (ivan.id, enrolled.id, true));
        assert_eq!(store.find_passkey(&enrolled.credential_id).await.unwrap().unwrap().sign_count, 1);
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 1);

        // A counter that does not advance: a possible clone, locked.
        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 0);
        let clone = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(clone, Err(PasskeyError::PossibleClone)), "{backend:?}: {clone:?}");
        assert!(store.find_passkey(&enrolled.credential_id).await.unwrap().unwrap().locked_at.is_some());
        assert_eq!(audited(&*store, AuditKind::PasskeyLocked).await, 1);
        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 5);
        let locked = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(locked, Err(PasskeyError::Locked)), "{backend:?}: {locked:?}");
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 1, "no use recorded since");
    }
}

#[tokio::test]
async fn bad_passkey_answers_are_refused_and_change_nothing() {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = (user("ivan"), user("maria"));
        store.create_user(&ivan).await.unwrap();
        store.create_user(&maria).await.unwrap();
        let mut authenticator = Authenticator::new(ivan.id);

        // An enrolment answered for another origin stores nothing.
        let started = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let foreign = authenticator.create(&started.options, "https://id.bank.example.evil");
        let refused = passkeys.finish_enrolment(&*store, ivan.id, &started.state, &foreign, "Phone", t0()).await;
        assert!(matches!(refused, Err(PasskeyError::Refused(_))), "{backend:?}: {refused:?}");
        assert!(store.passkeys_of(ivan.id).await.unwrap().is_empty());
        let answer = authenticator.create(&started.options, ORIGIN);
        let enrolled =
            passkeys.finish_enrolment(&*store, ivan.id, &started.state, &answer, "Phone", t0()).await.unwrap();

        let started = passkeys.start_sign_in().unwrap();
        let other = passkeys.start_sign_in().unwrap();
        let cases: Vec<(&str, String, &str)> = vec![
            ("another origin", authenticator.get(&started.options, "https://evil.example", 1), "Refused"),
            ("another challenge", authenticator.get(&other.options, ORIGIN, 1), "Refused"),
            ("not JSON", "{\"id\":".into(), "Malformed"),
            ("huge", format!("{{\"pad\":\"{}\"}}", "a".repeat(20_000)), "Malformed"),
        ];
        for (case, answer, expected) in cases {
            let outcome = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
            assert!(format!("{outcome:?}").contains(expected), "{backend:?}, {case}: {outcome:?}");
        }
        // Ivan's credential presented as Maria's.
        let mut impostor =
            Authenticator { user_handle: uuid::Uuid::from(maria.id).as_bytes().to_vec(), ..authenticator };
        let answer = impostor.get(&started.options, ORIGIN, 1);
        let outcome = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(outcome, Err(PasskeyError::UnknownCredential)), "{backend:?}: {outcome:?}");
        // An unknown credential.
        let mut stranger = Authenticator::new(ivan.id);
        let answer = stranger.get(&started.options, ORIGIN, 1);
        let outcome = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(outcome, Err(PasskeyError::UnknownCredential)), "{backend:?}: {outcome:?}");

        let stored = store.find_passkey(&enrolled.credential_id).await.unwrap().unwrap();
        assert_eq!((stored.sign_count, stored.last_used_at, stored.locked_at), (0, None, None), "{backend:?}");
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 0);
    }
}

/// An admin API call with the admin token: status and JSON body.
async fn admin(app: &TestApp, method: reqwest::Method, path: &str) -> (u16, Value) {
    let response = app.http().request(method, app.url(path)).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn operators_list_and_remove_a_users_passkeys_and_a_removed_one_signs_nobody_in() {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let mut authenticator = Authenticator::new(ivan.id);
        let started = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = authenticator.create(&started.options, ORIGIN);
        let now = app.clock.now();
        let enrolled =
            passkeys.finish_enrolment(&*app.store, ivan.id, &started.state, &answer, "Phone", now).await.unwrap();

        let id = ivan.id;
        let (status, listed) = admin(&app, reqwest::Method::GET, &format!("/admin/v1/users/{id}/passkeys")).await;
        assert_eq!(status, 200, "{backend:?}: {listed}");
        assert_eq!(listed[0]["id"], json!(enrolled.id));
        assert_eq!((listed[0]["name"].as_str(), &listed[0]["lastUsedAt"]), (Some("Phone"), &Value::Null));
        assert!(listed[0].get("credential").is_none(), "the credential stays in Portico: {listed}");
        let nobody = uuid::Uuid::new_v4();
        for (path, code) in [
            (format!("/admin/v1/users/{id}/passkeys/{nobody}"), "passkey_not_found"),
            (format!("/admin/v1/users/{id}/passkeys/not-a-uuid"), "passkey_not_found"),
            (format!("/admin/v1/users/{nobody}/passkeys/{}", enrolled.id), "user_not_found"),
        ] {
            let (status, body) = admin(&app, reqwest::Method::DELETE, &path).await;
            assert_eq!((status, body["code"].as_str()), (404, Some(code)), "{backend:?} {path}: {body}");
        }
        let path = format!("/admin/v1/users/{id}/passkeys/{}", enrolled.id);
        assert_eq!(admin(&app, reqwest::Method::DELETE, &path).await.0, 204);
        assert_eq!(admin(&app, reqwest::Method::DELETE, &path).await.0, 404, "removed once");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("passkey.removed", Some("token:admin")));
        assert_eq!(event.detail["passkey"], json!(enrolled.id));
        let (_, listed) = admin(&app, reqwest::Method::GET, &format!("/admin/v1/users/{id}/passkeys")).await;
        assert_eq!(listed, json!([]));

        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 1);
        let outcome = passkeys.finish_sign_in(&*app.store, &started.state, &answer, now).await;
        assert!(matches!(outcome, Err(PasskeyError::UnknownCredential)), "{backend:?}: {outcome:?}");
    }
}
