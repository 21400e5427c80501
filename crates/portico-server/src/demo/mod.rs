//! The demo: a documented data set seeded into an empty database, and a
//! small relying-party page (`/demo`) that walks the whole protocol in the
//! browser: PKCE authorize, code exchange, decoded tokens, refresh, liveness,
//! revoke; and a demo merchant whose notifications arrive at a page of
//! Portico itself ([`merchant`]). The data set is listed in the README.

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use portico_identity::Identity;
use portico_model::client::{Client, LocalizedText};
use portico_model::ids::UserId;
use portico_model::user::User;
use portico_permissions::service::{PermissionService, parse_document};
use serde_json::json;

use crate::app::AppState;

pub mod merchant;

pub const CLIENT_ID: &str = "demo-app";
pub const CLIENT_SECRET: &str = "portico-demo-secret";
pub const SCOPE: &str = "openid profile email phone";
/// A second demo client that requires consent (same redirect URI).
pub const CONSENT_CLIENT_ID: &str = "partner-app";
pub const CONSENT_CLIENT_SECRET: &str = "portico-partner-secret";

/// A demo user: login, password, full name, phone, e-mail, blocked.
pub struct DemoUser {
    pub login: &'static str,
    pub password: &'static str,
    pub name: &'static str,
    pub phone: &'static str,
    pub email: &'static str,
    pub blocked: bool,
    /// Whether the user may start a login with the phone number.
    pub phone_login: bool,
}

/// The demo's operator: signs in to the console (`/console`) as an admin.
pub const OPERATOR: DemoUser = DemoUser {
    login: "operator",
    password: "operator-password",
    name: "Ольга Операторова",
    phone: "+79009990000",
    email: "operator@example.com",
    blocked: false,
    phone_login: true,
};

pub const USERS: [DemoUser; 8] = [
    DemoUser {
        login: "ivan",
        password: "ivan-password",
        name: "Иван Петров",
        phone: "+79001234567",
        email: "ivan@example.com",
        blocked: false,
        phone_login: true,
    },
    DemoUser {
        login: "maria",
        password: "maria-password",
        name: "Мария Смирнова",
        phone: "+79007654321",
        email: "maria@example.com",
        blocked: false,
        phone_login: true,
    },
    DemoUser {
        login: "oleg",
        password: "oleg-password",
        name: "Олег Кузнецов",
        phone: "+79003334455",
        email: "oleg@example.com",
        blocked: false,
        phone_login: true,
    },
    DemoUser {
        login: "anna",
        password: "anna-password",
        name: "Анна Соколова",
        phone: "+79006667788",
        email: "anna@example.com",
        blocked: false,
        phone_login: true,
    },
    DemoUser {
        login: "blocked",
        password: "blocked-password",
        name: "Заблокированный Пользователь",
        phone: "+79005550000",
        email: "blocked@example.com",
        blocked: true,
        phone_login: true,
    },
    DemoUser {
        login: "sergey",
        password: "sergey-password",
        name: "Сергей Орлов",
        phone: "+79005551234",
        email: "sergey@example.com",
        blocked: false,
        phone_login: true,
    },
    DemoUser {
        login: "elena",
        password: "elena-password",
        name: "Елена Орлова",
        phone: "+79005551234",
        email: "elena@example.com",
        blocked: false,
        phone_login: true,
    },
    DemoUser {
        login: "kirill",
        password: "kirill-password",
        name: "Кирилл Волков",
        phone: "+79008889900",
        email: "kirill@example.com",
        blocked: false,
        phone_login: false,
    },
];

/// The demo permission model: three companies (one with a blocked
/// contract), their EIOs, an accountant working for two of them, an operator.
pub const DEMO_PERMISSIONS: &str = include_str!("../../assets/demo-permissions.yaml");

/// The demo client's redirect URI for a server at `issuer`.
pub fn redirect_uri(issuer: &str) -> String {
    format!("{issuer}/demo/callback")
}

/// The demo bank's look when the configuration names no bank: a neutral
/// name, Portico's mark, contacts and the reminder every bank shows.
pub fn branding() -> portico_identity::theme::Branding {
    use portico_identity::theme::PerLanguage;
    let both = |ru: &str, en: &str| Some(PerLanguage { ru: Some(ru.to_owned()), en: Some(en.to_owned()) });
    let theme = portico_identity::theme::Theme {
        bank_name: both("Демо-банк", "Demo Bank"),
        support_contacts: both(
            "Поддержка: 8 800 000-00-00 (круглосуточно), support@bank.example",
            "Support: 8 800 000-00-00 (24/7), support@bank.example",
        ),
        security_notice: both(
            "Банк никогда не звонит с просьбой назвать код из SMS или пароль. Не сообщайте их никому.",
            "The bank never calls to ask for a code from an SMS or your password. Do not share them with anyone.",
        ),
        ..Default::default()
    };
    theme.branding().expect("the demo theme is valid")
}

/// Where the demo clients come back to after RP-initiated logout.
pub fn logout_return_uri(issuer: &str) -> String {
    format!("{issuer}/demo/logged-out")
}

/// Seeds the data set when the database holds no client and no user yet.
///
/// # Errors
/// When storage fails.
pub async fn seed(
    identity: &Identity,
    permissions: &PermissionService,
    notify: &portico_notify::Notify,
) -> anyhow::Result<()> {
    let store = &identity.store;
    if !store.list_clients(portico_storage::KeyPage { after: None, limit: 1 }, None).await?.is_empty()
        || !store.list_users().await?.is_empty()
    {
        tracing::info!("the database already holds data: demo data not seeded");
        return Ok(());
    }
    let now = identity.clock.now();
    store
        .create_client(&Client {
            client_id: CLIENT_ID.into(),
            secret_hash: portico_crypto::hash::client_secret_hash(CLIENT_SECRET),
            name: LocalizedText { ru: "Демо-приложение".to_owned(), en: "Demo application".to_owned() },
            redirect_uris: vec![redirect_uri(&identity.settings.issuer)],
            scopes: SCOPE.split(' ').map(str::to_owned).collect(),
            require_consent: false,
            post_logout_redirect_uris: vec![logout_return_uri(&identity.settings.issuer)],
            logout_revokes_grants: true,
            backchannel_logout_uri: None,
            security: Default::default(),
            secret_sealed: None,
            registration_token_hash: None,
            awaiting_approval: false,
            created_at: now,
            revision: 0,
        })
        .await?;
    store
        .create_client(&Client {
            client_id: CONSENT_CLIENT_ID.into(),
            secret_hash: portico_crypto::hash::client_secret_hash(CONSENT_CLIENT_SECRET),
            name: LocalizedText {
                ru: "Партнёрское приложение".to_owned(), en: "Partner application".to_owned()
            },
            redirect_uris: vec![redirect_uri(&identity.settings.issuer)],
            scopes: SCOPE.split(' ').map(str::to_owned).collect(),
            require_consent: true,
            post_logout_redirect_uris: vec![logout_return_uri(&identity.settings.issuer)],
            logout_revokes_grants: false,
            backchannel_logout_uri: None,
            security: Default::default(),
            secret_sealed: None,
            registration_token_hash: None,
            awaiting_approval: false,
            created_at: now,
            revision: 0,
        })
        .await?;
    for user in USERS.iter().chain([&OPERATOR]) {
        let password = user.password.to_owned();
        let password_hash = tokio::task::spawn_blocking(move || portico_crypto::password::hash(&password)).await?;
        store
            .create_user(&User {
                id: UserId::random(),
                login: user.login.to_owned(),
                password_hash,
                phone: Some(user.phone.to_owned()),
                email: Some(user.email.to_owned()),
                name: Some(user.name.to_owned()),
                phone_login_enabled: user.phone_login,
                blocked: user.blocked,
                deactivated: false,
                created_at: now,
                provisioned: None,
                revision: 0,
            })
            .await?;
    }
    let operator = store.find_user_by_login(OPERATOR.login).await?.context("the demo operator")?;
    store.set_operator_role(operator.id, Some(portico_model::user::OperatorRole::Admin), now).await?;
    let doc = parse_document(DEMO_PERMISSIONS, true).map_err(|e| anyhow::anyhow!("demo permissions: {e}"))?;
    permissions.apply(&doc).await.map_err(|e| anyhow::anyhow!("demo permissions: {e:?}"))?;
    merchant::seed(notify, &identity.settings.issuer).await?;
    let agreement = portico_reports::sample::agreement(&portico_reports::sample::Shape::demo());
    store.save_agreements(&[agreement], now).await?;
    tracing::info!("seeded the demo data set");
    Ok(())
}

/// What the server prints for a newcomer.
pub fn banner(issuer: &str) -> String {
    let mut text = format!(
        "\n  Portico demo is running.\n\n  Open {issuer}/demo/login in a browser to sign in as the demo client\n  (or {issuer}/demo for the client's page).\n\n  Users (login / password):\n"
    );
    for user in &USERS {
        let note = match user.login {
            _ if user.blocked => "  (blocked: shows the error page)",
            "sergey" | "elena" => "  (share the phone +79005551234)",
            "kirill" => "  (phone login off)",
            _ => "",
        };
        text.push_str(&format!("    {:<8} / {}{note}\n", user.login, user.password));
    }
    text.push_str(&format!(
        "\n  Operator console: {issuer}/console (as {} / {}, an admin)\n",
        OPERATOR.login, OPERATOR.password
    ));
    text.push_str(&format!(
        "\n  Client: {CLIENT_ID} / {CLIENT_SECRET}, redirect URI {}\n  Client requiring consent: {CONSENT_CLIENT_ID} / {CONSENT_CLIENT_SECRET}\n  SMS and e-mail codes: in outbox.jsonl in the data folder (the log says when one was written)\n  Discovery: {issuer}/.well-known/openid-configuration\n  Merchant notifications: merchant {} (key on the demo page), events from the demo page\n    or `portico notifications simulate --merchant-id {}`\n  Brokerage reports: agreement БД-0001 of ООО «Ромашка» (7700000001); ivan and maria may ask for them\n    (POST /v1/reports/tasks with their tokens; docs/reports.md)\n",
        redirect_uri(issuer),
        merchant::MERCHANT_ID,
        merchant::MERCHANT_ID
    ));
    text
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/demo", get(page))
        .route("/demo/login", get(page))
        .route("/demo/callback", get(page))
        .route("/demo/logged-out", get(page))
        .with_state(state)
}

async fn page(State(state): State<AppState>) -> Html<String> {
    let issuer = &state.identity.settings.issuer;
    let config = json!({
        "issuer": issuer,
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "partnerClientId": CONSENT_CLIENT_ID,
        "partnerClientSecret": CONSENT_CLIENT_SECRET,
        "redirectUri": redirect_uri(issuer),
        "logoutReturnUri": logout_return_uri(issuer),
        "scope": SCOPE,
    });
    let config = config.to_string().replace('<', "\\u003c");
    Html(include_str!("../../assets/demo.html").replace("{{CONFIG}}", &config))
}
