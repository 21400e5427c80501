//! A row of every kind, with fixed values: what a database of an earlier
//! release holds, so that an upgrade can be shown to keep every row.
//!
//! `tests/fixtures/release-0.1.sql` of `portico-storage-pg` and of
//! `portico-storage-sqlite` are databases at schema 0007 that release 0.1
//! filled with [`fill`]`(&`[`sample`]`())` (`pg_dump`, and Python's
//! `sqlite3` `iterdump`); the upgrade tests load them, migrate, and read
//! every value back through the repository traits.

use std::collections::{BTreeMap, BTreeSet};

use portico_model::audit::AuditEvent;
use portico_model::client::{Client, LocalizedText};
use portico_model::key::SigningKeyRecord;
use portico_model::login::{LoginProcess, LoginState};
use portico_model::notify::{
    Attempt, Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, OperationTypes, Outcome,
    StoredEvent,
};
use portico_model::oauth::{AuthorizationCode, Grant, RefreshToken};
use portico_model::permissions::{CatalogObject, Company, ContractStatus, Employee, PermissionModel, Role};
use portico_model::reports::brokerage::Agreement;
use portico_model::reports::{
    FileType, ReportFile, ReportTask, ReportType, SignatureType, Source, TaskOutcome, TaskStatus,
};
use portico_model::session::SsoSession;
use portico_model::user::User;
use portico_storage::{CountAttempt, DeliveryClaim, FinishedAttempt, Storage};
use time::{Date, Duration, Month, OffsetDateTime};
use uuid::Uuid;

/// Every value of the sample.
#[derive(Debug, Clone)]
pub struct Sample {
    pub t0: OffsetDateTime,
    pub client: Client,
    pub user: User,
    pub blocked_user: User,
    pub retired_key: SigningKeyRecord,
    pub active_key: SigningKeyRecord,
    pub spent_code: AuthorizationCode,
    pub fresh_code: AuthorizationCode,
    pub grant: Grant,
    pub revoked_grant: Grant,
    pub spent_refresh: RefreshToken,
    pub live_refresh: RefreshToken,
    pub revoked_jti: String,
    pub session: SsoSession,
    pub process: LoginProcess,
    pub audit: Vec<AuditEvent>,
    pub device: String,
    pub consent: Vec<String>,
    pub throttle_key: String,
    pub merchant: Merchant,
    pub event: StoredEvent,
    pub delivery: Delivery,
    pub attempt: Attempt,
    pub permissions: PermissionModel,
    pub agreement: Agreement,
    pub task: ReportTask,
}

fn id(n: u128) -> Uuid {
    Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 | n)
}

/// The sample's values.
///
/// # Panics
/// Never: every value is fixed.
#[must_use]
pub fn sample() -> Sample {
    let t0 = OffsetDateTime::from_unix_timestamp(1_790_000_000).expect("time");
    let client = Client {
        client_id: "release-client".into(),
        secret_hash: "sha256:5d41402abc4b2a76b9719d911017c592".into(),
        name: LocalizedText { ru: "Клиент выпуска".into(), en: "Release client".into() },
        redirect_uris: vec!["https://rp.example/cb".into(), "https://rp.example/cb2".into()],
        scopes: vec!["openid".into(), "profile".into(), "email".into()],
        require_consent: true,
        post_logout_redirect_uris: Vec::new(),
        logout_revokes_grants: false,
        backchannel_logout_uri: None,
        security: Default::default(),
        secret_sealed: None,
        registration_token_hash: None,
        awaiting_approval: false,
        created_at: t0,
        revision: 0,
    };
    let user = User {
        id: id(1).into(),
        login: "release-user".into(),
        password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
        phone: Some("+79001234567".into()),
        email: Some("user@example.ru".into()),
        name: Some("Пользователь Выпуска".into()),
        phone_login_enabled: true,
        blocked: false,
        deactivated: false,
        created_at: t0 + Duration::seconds(1),
        provisioned: None,
        revision: 0,
    };
    let blocked_user = User {
        id: id(2).into(),
        login: "release-blocked".into(),
        phone: None,
        email: None,
        name: None,
        phone_login_enabled: false,
        blocked: true,
        deactivated: false,
        ..user.clone()
    };
    let retired_key = SigningKeyRecord {
        kid: "kid-retired".into(),
        alg: "RS256".into(),
        private_sealed: vec![0, 1, 2, 254, 255],
        created_at: t0,
        retired_at: Some(t0 + Duration::days(30)),
    };
    let active_key = SigningKeyRecord {
        kid: "kid-active".into(),
        alg: "RS256".into(),
        private_sealed: vec![9; 48],
        created_at: t0 + Duration::days(30),
        retired_at: None,
    };
    let grant = Grant {
        id: id(10).into(),
        client_id: client.client_id.clone(),
        user_id: user.id,
        scope: "openid profile".into(),
        auth_time: t0 + Duration::minutes(1),
        created_at: t0 + Duration::minutes(2),
        revoked_at: None,
        amr: vec!["pwd".into(), "sms".into(), "mfa".into()],
        session_id: None,
    };
    let revoked_grant = Grant {
        id: id(11).into(),
        scope: "openid".into(),
        revoked_at: Some(t0 + Duration::minutes(9)),
        amr: vec!["pwd".into()],
        ..grant.clone()
    };
    let spent_code = AuthorizationCode {
        code_hash: "code-spent".into(),
        client_id: client.client_id.clone(),
        user_id: user.id,
        redirect_uri: "https://rp.example/cb".into(),
        scope: "openid profile".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        nonce: Some("n-0S6_WzA2Mj".into()),
        auth_time: grant.auth_time,
        created_at: t0 + Duration::minutes(1),
        expires_at: t0 + Duration::minutes(6),
        grant_id: Some(grant.id),
        amr: grant.amr.clone(),
        session_id: None,
        dpop_jkt: None,
    };
    let fresh_code = AuthorizationCode {
        code_hash: "code-fresh".into(),
        nonce: None,
        grant_id: None,
        amr: vec!["pwd".into()],
        ..spent_code.clone()
    };
    let spent_refresh = RefreshToken {
        token_hash: "refresh-spent".into(),
        grant_id: grant.id,
        created_at: t0 + Duration::minutes(2),
        expires_at: t0 + Duration::days(30),
    };
    let live_refresh = RefreshToken {
        token_hash: "refresh-live".into(),
        created_at: t0 + Duration::minutes(3),
        ..spent_refresh.clone()
    };
    // Release 0.1 kept no session id: an upgrade gives each session a
    // random one (the upgrade test compares everything else).
    let session = SsoSession {
        id: id(30).into(),
        token_hash: "session-hash".into(),
        user_id: user.id,
        auth_time: grant.auth_time,
        created_at: t0 + Duration::minutes(1),
        expires_at: t0 + Duration::hours(8),
        amr: grant.amr.clone(),
        user_agent: None,
    };
    let state: LoginState = serde_json::from_value(serde_json::json!({
        "client_id": client.client_id,
        "authorize_query": "response_type=code&client_id=release-client&scope=openid",
        "csrf": "csrf-token",
        "method": "PASSWORD",
        "step": "username-password",
        "view_type": "default",
        "principal": "release-user",
        "user_id": null,
        "locale": "en",
        "device_id": "device-1",
        "errors": null,
    }))
    .expect("login state");
    let process = LoginProcess {
        id: id(20).into(),
        version: 3,
        created_at: t0 + Duration::minutes(1),
        expires_at: t0 + Duration::minutes(31),
        state,
    };
    let audit = vec![
        AuditEvent {
            at: t0 + Duration::minutes(2),
            kind: "code_redeemed".into(),
            user_id: Some(user.id),
            client_id: Some(client.client_id.clone()),
            detail: serde_json::json!({"grant_id": grant.id, "scope": ["openid", "profile"]}),
            actor: None,
        },
        AuditEvent {
            at: t0 + Duration::minutes(9),
            kind: "grant_revoked".into(),
            user_id: None,
            client_id: None,
            detail: serde_json::json!({}),
            actor: None,
        },
    ];
    let merchant = Merchant {
        ids: MerchantIds {
            merchant_id: "MA0000000001".into(),
            public_id: "release-public".into(),
            sbp_merchant_id: "MB0000000001".into(),
        },
        key_hash: "sha256:merchant-key".into(),
        key_sealed: vec![7; 40],
        settings: Some(NotificationSettings {
            callback_url: "https://merchant.example/notify".into(),
            operation_types: OperationTypes::default(),
        }),
        created_at: t0,
    };
    let event = StoredEvent {
        event_id: "evt-release-1".into(),
        merchant_id: merchant.ids.merchant_id.clone(),
        kind: EventKind::Payment,
        payload: serde_json::json!({"amount": 12_345, "currency": "RUB", "nested": {"ok": true}}),
        received_at: t0 + Duration::minutes(4),
        trace_parent: None,
    };
    let delivery = Delivery {
        id: id(30).into(),
        event_id: event.event_id.clone(),
        merchant_id: merchant.ids.merchant_id.clone(),
        status: DeliveryStatus::Pending,
        attempts: 1,
        next_attempt_at: t0 + Duration::minutes(5),
        lease_until: None,
        created_at: t0 + Duration::minutes(4),
        finished_at: None,
    };
    let attempt = Attempt {
        delivery_id: delivery.id,
        attempt: 1,
        at: t0 + Duration::minutes(4),
        status_code: Some(503),
        error: Some("HTTP 503".into()),
        response_excerpt: Some("busy".into()),
        duration_ms: 42,
    };
    let role = Role {
        id: id(40),
        code: "EIO".into(),
        name: Some("Руководитель".into()),
        available: true,
        grants: BTreeMap::from([("payments".to_owned(), BTreeSet::from(["sign".to_owned(), "view".to_owned()]))]),
    };
    let permissions = PermissionModel::new(
        1,
        [Company { cnum: "C001".into(), name: "ООО Выпуск".into(), contract_status: ContractStatus::Active }],
        [role.clone()],
        [CatalogObject {
            path: "payments".into(),
            name: Some("Платежи".into()),
            actions: BTreeSet::from(["sign".to_owned(), "view".to_owned()]),
        }],
        [Employee { user_id: user.id.as_uuid(), cnum: "C001".into(), role_id: Some(role.id), active: true }],
    );
    let mut agreement = portico_reports::sample::agreement(&portico_reports::sample::Shape::demo());
    // Release 0.1's sample kept other positions: one instrument per account,
    // the last snapshot twice the first, whatever the trades said.
    let dates = [
        agreement.positions.iter().map(|p| p.date).min().expect("positions"),
        agreement.positions.iter().map(|p| p.date).max().expect("positions"),
    ];
    agreement.positions = dates
        .iter()
        .zip([1, 2])
        .flat_map(|(date, factor)| {
            let (instruments, accounts) = (&agreement.instruments, &agreement.accounts);
            instruments.iter().enumerate().map(move |(i, instrument)| {
                let quantity = 100 * (i as i64 + 1) * factor;
                portico_model::reports::brokerage::Position {
                    account: accounts[i % 2].number.clone(),
                    date: *date,
                    ticker: instrument.ticker.clone(),
                    quantity,
                    value: portico_model::reports::brokerage::Fixed(quantity * 15_000),
                }
            })
        })
        .collect();
    let task = ReportTask {
        id: id(50).into(),
        cnum: agreement.cnum.clone(),
        report_type: ReportType::BrokerageReport,
        agreement_number: agreement.number.clone(),
        account: None,
        period_from: Date::from_calendar_date(2026, Month::January, 1).expect("date"),
        period_to: Date::from_calendar_date(2026, Month::March, 31).expect("date"),
        handle_if_exists: false,
        file_types: vec![FileType::PrintedForm, FileType::SimpleDocumentary],
        status: TaskStatus::Done,
        source: Source::OnlineBank,
        error: None,
        created_by: Some(user.id.as_uuid()),
        attempts: 1,
        lease_until: None,
        created_at: t0 + Duration::minutes(10),
        updated_at: t0 + Duration::minutes(11),
        trace_parent: None,
        files: vec![ReportFile {
            id: id(51).into(),
            task_id: id(50).into(),
            file_type: FileType::PrintedForm,
            name_rus: "Отчёт брокера".into(),
            name_eng: "Broker report".into(),
            file_name: "broker-report.pdf".into(),
            signature_type: SignatureType::None,
            content_type: "application/pdf".into(),
            size: 123_456,
            object_key: "reports/0190/broker-report.pdf".into(),
        }],
    };
    Sample {
        t0,
        client,
        user,
        blocked_user,
        retired_key,
        active_key,
        spent_code,
        fresh_code,
        grant,
        revoked_grant,
        spent_refresh,
        live_refresh,
        revoked_jti: "jti-revoked".into(),
        session,
        process,
        audit,
        device: "device-1".into(),
        consent: vec!["openid".into(), "profile".into()],
        throttle_key: "login:release-user".into(),
        merchant,
        event,
        delivery,
        attempt,
        permissions,
        agreement,
        task,
    }
}

/// Writes the sample through `store`'s repository traits.
///
/// # Panics
/// When a write fails.
pub async fn fill(store: &dyn Storage, s: &Sample) {
    let t0 = s.t0;
    store.create_client(&s.client).await.expect("client");
    store.create_user(&s.user).await.expect("user");
    store.create_user(&s.blocked_user).await.expect("user");
    assert!(store.insert_first_signing_key(&s.retired_key).await.expect("key"));
    store.rotate_signing_key(&s.active_key, s.retired_key.retired_at.expect("retired")).await.expect("rotate");
    let code = AuthorizationCode { grant_id: None, ..s.spent_code.clone() };
    store.insert_code(&code).await.expect("code");
    store.insert_code(&s.fresh_code).await.expect("code");
    let redeemed = store
        .redeem_code(&code.code_hash, s.grant.created_at, &s.grant, &s.spent_refresh, &s.audit[0])
        .await
        .expect("redeem");
    assert_eq!(redeemed, portico_model::oauth::Redemption::Redeemed);
    let rotated = store
        .rotate_refresh_token(&s.spent_refresh.token_hash, s.live_refresh.created_at, &s.live_refresh, &s.audit[0])
        .await
        .expect("rotate");
    assert_eq!(rotated, portico_model::oauth::Rotation::Rotated);
    let revoked = Grant { revoked_at: None, ..s.revoked_grant.clone() };
    let spare = AuthorizationCode { code_hash: "code-for-revoked".into(), ..code.clone() };
    store.insert_code(&spare).await.expect("code");
    let refresh =
        RefreshToken { token_hash: "refresh-of-revoked".into(), grant_id: revoked.id, ..s.live_refresh.clone() };
    store.redeem_code(&spare.code_hash, revoked.created_at, &revoked, &refresh, &s.audit[0]).await.expect("redeem");
    store.revoke_grant(revoked.id, s.revoked_grant.revoked_at.expect("revoked")).await.expect("revoke");
    store.revoke_access_token(&s.revoked_jti, t0 + Duration::hours(1), t0).await.expect("revoke token");
    store.create_session(&s.session).await.expect("session");
    let mut process = s.process.clone();
    process.version = 0;
    store.create_login_process(&process).await.expect("process");
    for _ in 0..s.process.version {
        assert!(store.update_login_process(&process).await.expect("update"));
        process.version += 1;
    }
    store.record_audit(&s.audit[1]).await.expect("audit");
    store.trust_device(s.user.id, &s.device, t0).await.expect("device");
    store.grant_consent(s.user.id, &s.client.client_id, &s.consent, t0).await.expect("consent");
    for _ in 0..2 {
        store
            .count_attempt(CountAttempt {
                key: &s.throttle_key,
                attempt: uuid::Uuid::new_v4(),
                report_by: t0 + Duration::days(1),
                now: t0,
                forget_before: t0 - Duration::days(1),
                hold_from: 5,
                hold_until: t0 + Duration::minutes(1),
            })
            .await
            .expect("count");
    }
    store.create_merchant(&s.merchant).await.expect("merchant");
    let fresh = Delivery { attempts: 0, next_attempt_at: s.event.received_at, ..s.delivery.clone() };
    store.record_event(&s.event, &fresh).await.expect("event");
    let leased = store
        .claim_due_deliveries(&DeliveryClaim {
            now: s.attempt.at,
            lease_until: s.attempt.at + Duration::minutes(1),
            limit: 10,
            per_merchant: 10,
            skip_merchants: &[],
        })
        .await
        .expect("claim");
    assert_eq!(leased.len(), 1);
    store
        .finish_attempts(&[FinishedAttempt {
            attempt: s.attempt.clone(),
            lease_until: leased[0].lease_until.expect("lease"),
            outcome: Outcome::RetryAt(s.delivery.next_attempt_at),
        }])
        .await
        .expect("finish");
    let empty = store.load_permissions().await.expect("permissions");
    let mut model = s.permissions.clone();
    model.revision = empty.revision;
    assert!(store.save_permissions(&model).await.expect("save permissions"));
    store.save_agreements(std::slice::from_ref(&s.agreement), t0).await.expect("agreements");
    let new = ReportTask {
        status: TaskStatus::New,
        attempts: 0,
        updated_at: s.task.created_at,
        files: Vec::new(),
        trace_parent: None,
        ..s.task.clone()
    };
    store.create_report_task(&new, portico_storage::Reuse::Never).await.expect("task");
    let lease = s.task.updated_at + Duration::minutes(5);
    let claimed = store.claim_report_task(s.task.updated_at, lease).await.expect("claim").expect("a task");
    assert_eq!(claimed.id, s.task.id);
    assert!(
        store
            .finish_report_task(s.task.id, lease, &TaskOutcome::Done(s.task.files.clone()), s.task.updated_at)
            .await
            .expect("finish")
    );
}
