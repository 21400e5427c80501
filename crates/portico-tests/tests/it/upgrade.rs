//! `portico migrate` on a database an earlier release filled: every row is
//! kept, and reads back through today's repositories as it was written.

use portico_model::oauth::{Redemption, Rotation};
use portico_model::session::SsoSession;
use portico_storage::{ReportTaskFilter, Storage};
use portico_storage_pg::PgStore;
use portico_storage_sqlite::SqliteStore;
use portico_tests::release_sample::sample;
use portico_tests::{Backend, TempDir, backends, fresh_database};
use sqlx::Connection as _;
use time::Duration;

const PG_RELEASE_0_1: &str = include_str!("../../../portico-storage-pg/tests/fixtures/release-0.1.sql");
const SQLITE_RELEASE_0_1: &str = include_str!("../../../portico-storage-sqlite/tests/fixtures/release-0.1.sql");

#[tokio::test]
async fn a_sqlite_database_of_release_0_1_upgrades_in_place_keeping_every_row() {
    let dir = TempDir::new();
    let url = fresh_database(Backend::Sqlite, &dir).await;
    let path = url.strip_prefix("sqlite://").unwrap().to_owned();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(SQLITE_RELEASE_0_1)
        .expect("load the release 0.1 database");

    let store = SqliteStore::connect(&url).await.unwrap();
    store.migrate().await.expect("upgrade in place");
    store.migrate().await.expect("a second run finds nothing to do");
    every_row_reads_back_and_keeps_working(&store).await;
    store.close().await;
}

/// A migration that ran is never run again, and one changed after it ran
/// is refused rather than silently skipped.
#[tokio::test]
async fn a_sqlite_migration_changed_after_it_ran_is_refused() {
    let dir = TempDir::new();
    let url = fresh_database(Backend::Sqlite, &dir).await;
    let path = url.strip_prefix("sqlite://").unwrap().to_owned();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(SQLITE_RELEASE_0_1).unwrap();
    conn.execute("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 3", []).unwrap();
    drop(conn);

    let store = SqliteStore::connect(&url).await.unwrap();
    let error = store.migrate().await.expect_err("a changed migration").to_string();
    assert!(error.contains("migration 3 (login) was changed"), "{error}");
    store.close().await;
}

#[tokio::test]
async fn a_postgres_database_of_release_0_1_upgrades_in_place_keeping_every_row() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let dir = TempDir::new();
    let url = fresh_database(Backend::Postgres, &dir).await;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(PG_RELEASE_0_1).execute(&mut conn).await.expect("load the release 0.1 database");
    conn.close().await.unwrap();

    let store = PgStore::connect(&url, 4, std::time::Duration::from_secs(5)).await.unwrap();
    store.migrate().await.expect("upgrade in place");
    store.migrate().await.expect("a second run finds nothing to do");
    every_row_reads_back_and_keeps_working(&store).await;
    store.close().await;
}

/// Reads every value of the sample back, then redeems, replays and rotates
/// on the upgraded rows.
async fn every_row_reads_back_and_keeps_working(db: &dyn Storage) {
    let s = sample();

    assert_eq!(db.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap(), vec![s.client.clone()]);
    assert_eq!(db.list_users().await.unwrap(), vec![s.blocked_user.clone(), s.user.clone()]);
    assert_eq!(db.list_signing_keys().await.unwrap(), vec![s.active_key.clone(), s.retired_key.clone()]);
    assert_eq!(
        db.active_signing_kid("RS256").await.unwrap().as_deref(),
        Some("kid-active"),
        "keys of before are RS256"
    );

    let spent = db.find_code(&s.spent_code.code_hash).await.unwrap().expect("the spent code");
    assert!(spent.spent);
    assert_eq!(spent.code, s.spent_code);
    let fresh = db.find_code(&s.fresh_code.code_hash).await.unwrap().expect("the fresh code");
    assert!(!fresh.spent);
    assert_eq!(fresh.code, s.fresh_code);
    assert_eq!(db.find_grant(s.grant.id).await.unwrap(), Some(s.grant.clone()));
    assert_eq!(db.find_grant(s.revoked_grant.id).await.unwrap(), Some(s.revoked_grant.clone()));
    let old = db.find_refresh_token(&s.spent_refresh.token_hash).await.unwrap().expect("spent refresh token");
    assert!(old.spent);
    assert_eq!((old.token, old.grant), (s.spent_refresh.clone(), s.grant.clone()));
    let live = db.find_refresh_token(&s.live_refresh.token_hash).await.unwrap().expect("live refresh token");
    assert!(!live.spent);
    assert_eq!(live.token, s.live_refresh);
    let state = db.access_token_state(s.revoked_grant.id, &s.revoked_jti).await.unwrap();
    assert!(state.grant_revoked && state.token_revoked);
    let state = db.access_token_state(s.grant.id, "another").await.unwrap();
    assert!(!state.grant_revoked && !state.token_revoked);

    let session = db.find_session(&s.session.token_hash, s.t0).await.unwrap().expect("the session");
    assert_eq!(session, SsoSession { id: session.id, ..s.session.clone() }, "only the id is new");
    assert_eq!(db.find_session_by_id(session.id, s.t0).await.unwrap(), Some(session.clone()), "by its new id");
    assert_eq!(db.find_login_process(s.process.id, s.t0).await.unwrap(), Some(s.process.clone()));
    let audit = db.recent_audit(10).await.unwrap();
    assert_eq!(audit.len(), 4, "redemptions and rotation of the fill, and the revocation: {audit:?}");
    assert_eq!(audit[0], s.audit[1]);
    assert_eq!(audit[3], s.audit[0]);
    assert!(db.is_device_trusted(s.user.id, &s.device, s.t0).await.unwrap());
    assert_eq!(db.find_consent(s.user.id, &s.client.client_id).await.unwrap(), Some(s.consent.clone()));
    let throttle = db.throttle(&s.throttle_key, s.t0 - Duration::days(1), s.t0).await.unwrap();
    assert_eq!(throttle.failures, 2);
    assert_eq!(throttle.locked_until, None);

    assert_eq!(db.list_merchants(portico_storage::KeyPage::ALL).await.unwrap(), vec![s.merchant.clone()]);
    assert_eq!(db.find_event(&s.event.event_id).await.unwrap(), Some(s.event.clone()));
    assert_eq!(db.deliveries_of(&s.event.event_id).await.unwrap(), vec![s.delivery.clone()]);
    assert_eq!(db.attempts_of(s.delivery.id).await.unwrap(), vec![s.attempt.clone()]);

    let permissions = db.load_permissions().await.unwrap();
    assert_eq!(permissions.revision, 1);
    assert_eq!(permissions, s.permissions);

    assert_eq!(db.find_agreement(&s.agreement.number).await.unwrap(), Some(s.agreement.clone()));
    assert_eq!(db.find_report_task(s.task.id).await.unwrap(), Some(s.task.clone()));
    let filter = ReportTaskFilter { cnums: vec![s.task.cnum.clone()], limit: 10, ..ReportTaskFilter::default() };
    assert_eq!(db.list_report_tasks(&filter).await.unwrap(), vec![s.task.clone()]);
    let (file, cnum) = db.find_report_file(s.task.files[0].id).await.unwrap().expect("the report file");
    assert_eq!((file, cnum), (s.task.files[0].clone(), s.task.cnum.clone()));

    // The upgraded rows keep working: the code already spent is a replay,
    // the live refresh token rotates, the unspent code redeems.
    let later = s.t0 + Duration::minutes(3);
    let grant = portico_model::oauth::Grant { id: portico_model::ids::GrantId::now_v7(), ..s.grant.clone() };
    let refresh = portico_model::oauth::RefreshToken {
        token_hash: "after-upgrade".into(),
        grant_id: grant.id,
        ..s.live_refresh.clone()
    };
    let replay = db.redeem_code(&s.spent_code.code_hash, later, &grant, &refresh, &s.audit[0]).await.unwrap();
    assert_eq!(replay, Redemption::Replay { grant_id: Some(s.grant.id) });
    assert_eq!(
        db.redeem_code(&s.fresh_code.code_hash, later, &grant, &refresh, &s.audit[0]).await.unwrap(),
        Redemption::Redeemed
    );
    let successor = portico_model::oauth::RefreshToken { token_hash: "successor".into(), ..s.live_refresh.clone() };
    let rotated = db.rotate_refresh_token(&s.live_refresh.token_hash, later, &successor, &s.audit[0]).await.unwrap();
    assert_eq!(rotated, Rotation::Rotated);
}
