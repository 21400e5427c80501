//! `GET /login` (operation `getLoginPage`): the current step's page, with
//! `LoginViewDataDTO` in `script#viewData`. Showing an OTP step sends its
//! code first (see [`super::steps::otp`]).

use std::net::IpAddr;

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use portico_model::login::{AuthMethod, LoginFormErrors, LoginProcess, StepType, ViewType};
use portico_model::otp::{OtpPolicy, mask_email, mask_phone};
use portico_model::user::User;
use portico_storage::StorageError;
use time::OffsetDateTime;

use super::flow::requested_scope;
use super::steps::otp::{self, Prepared};
use super::steps::password::captcha_required;
use super::texts::{self, Texts};
use super::view::{ClientPages, LoginViewData, StepContext, script_json};
use super::{authorize_url, current_process, no_process};
use crate::client_address::Peer;
use crate::cookies::{self, SetCookies};
use crate::http::redirect;
use crate::{Identity, IdentityState};

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    t: &'a Texts,
    brand: crate::theme::BrandView<'a>,
    step: &'static str,
    csrf: &'a str,
    principal: &'a str,
    notice: Option<&'a str>,
    principal_error: Option<String>,
    credentials_error: Option<String>,
    other_error: Option<String>,
    captcha_required: bool,
    /// The CAPTCHA service's site key; the dev checkbox without one.
    captcha_site_key: Option<&'a str>,
    code_sent: Option<String>,
    code_length: usize,
    resend_in: i64,
    resend_hint: String,
    email_available: bool,
    sms_available: bool,
    other_methods: Vec<(&'static str, &'a str, &'static str)>,
    /// The first page offers a passkey sign-in (shown by the script).
    passkey_offered: bool,
    consent_intro: String,
    groups: Vec<(String, String, bool)>,
    /// On the consent step: the client's pages its registration names,
    /// each as (address, link text).
    client_links: Vec<(&'a str, &'static str)>,
    messages: Vec<&'a crate::theme::SystemMessage>,
    drawer: Option<&'a crate::theme::Drawer>,
    view_json: String,
}

#[utoipa::path(
    get,
    path = "/login",
    operation_id = "getLoginPage",
    tag = "login",
    params(crate::edge::LoginCookies),
    responses(
        (status = 200, description = "The current step's page; `script#viewData` holds `LoginViewDataDTO`.",
         content_type = "text/html", body = String,
         headers(("Set-Cookie" = String, description = "May set `XSRF-TOKEN`, clear `step_error_details`."))),
        (status = 302, description = "No process: to the client address of `login_client_entry` (with \
                                      `error=access_denied`) or to the logged-out page; a completed process: \
                                      to the original `/oauth2/authorize`.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "May clear `authentication_flow`, `login_client_entry`."))),
        (status = 303, description = "The process cannot go on (a limit was reached).",
         headers(("Location" = String, description = "`/error`"), ("Set-Cookie" = String, description = "`error_page_details`, `failed_authentication_flow_id`."))),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn login_page(State(identity): State<IdentityState>, Peer(peer): Peer, headers: HeaderMap) -> Response {
    let address = identity.client_address(&headers, peer);
    match render(&identity, &headers, address).await {
        Ok(Rendered::Page(response, redirect_uri)) => super::assets::secure_to(response, redirect_uri.as_deref()),
        Ok(Rendered::Other(response)) => super::assets::secure(response),
        Err(error) => super::error_page::server_error(error),
    }
}

/// What `GET /login` answers.
enum Rendered {
    /// The step's page, and the redirect URI its forms may end at.
    Page(Response, Option<String>),
    /// A redirect, or a failure.
    Other(Response),
}

async fn render(identity: &Identity, headers: &HeaderMap, address: Option<IpAddr>) -> Result<Rendered, StorageError> {
    let now = identity.clock.now();
    let Some(mut process) = current_process(identity, headers, now).await? else {
        return Ok(Rendered::Other(no_process(identity, headers).await));
    };
    if process.state.is_complete() {
        return Ok(Rendered::Other(redirect(StatusCode::FOUND, &authorize_url(identity, &process))));
    }
    let locale = process.state.locale.unwrap_or_else(|| texts::negotiate(headers, identity.settings.default_locale));
    let t = texts::for_locale(locale);
    let user = match process.state.user_id {
        Some(id) => identity.store.find_user(id).await?,
        None => None,
    };
    if let Some(user) = &user {
        process = match otp::prepare(identity, process, user, t).await? {
            Prepared::Ready(process) => *process,
            Prepared::Answer(answer) => return Ok(Rendered::Other(answer.respond(identity))),
        };
    }
    let prepared = match (process.state.step, &user) {
        (StepType::Passkey, _) => super::passkey::prepare(identity, process).await?,
        (StepType::PasskeyEnrolment, Some(user)) => super::passkey_enrolment::prepare(identity, process, user).await?,
        _ => Some(process),
    };
    let Some(prepared) = prepared else {
        return Ok(Rendered::Other(super::answer::Answer::ToLogin.respond(identity)));
    };
    process = prepared;

    // Errors are shown once: clear them from the process as they are shown.
    let errors = process.state.errors.take();
    if errors.is_some() {
        identity.store.update_login_process(&process).await?;
    }
    let context = step_context(identity, &process, user.as_ref(), locale, address).await?;
    let html = page(identity, &process, errors, t, &context, locale, now);
    let Some(html) = html else {
        return Ok(Rendered::Other(StatusCode::INTERNAL_SERVER_ERROR.into_response()));
    };
    let mut response = portico_api::no_store(Html(html));
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    if cookies::get(headers, cookies::STEP_ERROR_DETAILS).is_some() {
        set.clear(cookies::STEP_ERROR_DETAILS);
    }
    // After an error page (which has a CSRF token of its own) the process's
    // token comes back, so that a RELOAD continues where it stopped.
    if cookies::get(headers, cookies::XSRF_TOKEN) != Some(process.state.csrf.as_str()) {
        let ttl = (process.expires_at - now).whole_seconds().max(0);
        set.set(cookies::XSRF_TOKEN, &process.state.csrf, Some(ttl));
    }
    set.apply(response.headers_mut());
    let redirect_uri = process.state.request.map(|request| request.redirect_uri);
    Ok(Rendered::Page(response, redirect_uri))
}

async fn step_context(
    identity: &Identity,
    process: &LoginProcess,
    user: Option<&User>,
    locale: portico_model::login::Locale,
    address: Option<IpAddr>,
) -> Result<StepContext, StorageError> {
    let state = &process.state;
    let mut context = StepContext { theme: identity.settings.theme.clone(), ..StepContext::default() };
    // Every step names the application asking, so the user knows who it is.
    let client = identity.store.find_client(&state.client_id).await?;
    if state.step == StepType::Consent
        && let Some(client) = &client
    {
        let security = &client.security;
        context.client_pages = ClientPages {
            client_uri: security.client_uri.clone(),
            policy_uri: security.policy_uri.clone(),
            tos_uri: security.tos_uri.clone(),
        };
    }
    context.client_name = client.map(|c| match locale {
        portico_model::login::Locale::Ru => c.name.ru,
        portico_model::login::Locale::En => c.name.en,
    });
    match state.step {
        StepType::UsernamePassword | StepType::Password => {
            context.captcha_required = captcha_required(identity, process, user, address).await?;
        }
        StepType::Phone => {
            context.captcha_required = state.password_failures >= identity.settings.phone_captcha_after_failures
                || super::guard::phone_captcha_due(identity, address).await?;
        }
        StepType::SmsOtp => context.email_delivery_available = otp::email_available(process, user),
        StepType::EmailOtp => context.sms_delivery_available = otp::sms_available(process, user),
        StepType::Passkey => {
            context.sms_delivery_available = otp::sms_available(process, user);
            context.email_delivery_available = otp::email_available(process, user);
        }
        StepType::PasskeyEnrolment => {}
        StepType::Consent => {
            context.available_scope_groups = portico_model::consent::groups(&requested_scope(state));
        }
    }
    Ok(context)
}

#[allow(clippy::too_many_arguments)]
fn page(
    identity: &Identity,
    process: &LoginProcess,
    errors: Option<LoginFormErrors>,
    t: &Texts,
    context: &StepContext,
    locale: portico_model::login::Locale,
    now: time::OffsetDateTime,
) -> Option<String> {
    let state = &process.state;
    let policy = identity.settings.otp;
    let message = |code: &Option<String>| code.as_deref().map(|c| explain(t, state, &policy, c, now));
    let (principal_error, credentials_error, other_error) = match &errors {
        Some(e) => (message(&e.principal_error), message(&e.credentials_error), message(&e.other_error)),
        None => (None, None, None),
    };
    let notice = match state.view_type {
        ViewType::UnknownDevice => Some(t.unknown_device),
        ViewType::PhoneAuthNotAllowed => Some(t.phone_auth_not_allowed),
        ViewType::PhoneDuplicated => Some(t.phone_duplicated),
        _ => None,
    };
    let code_sent = state.otp.as_ref().map(|o| {
        let to = match o.channel {
            portico_model::otp::OtpChannel::Sms => mask_phone(&o.to),
            portico_model::otp::OtpChannel::Email => mask_email(&o.to),
        };
        t.code_sent.replace("{to}", &to)
    });
    let resend_in = state.otp.as_ref().map_or(0, |o| (o.resend_at(&policy) - now).whole_seconds().max(0));
    // The ways to another method or back to the start: each restarts the
    // process (`auth-method`), so no step is a dead end.
    let other_methods = match (state.step, state.method) {
        (StepType::UsernamePassword, AuthMethod::Password) if state.passed.is_empty() => {
            vec![("PHONE", t.use_phone, "switchMethod")]
        }
        (StepType::Phone, _) if state.passed.is_empty() => vec![("PASSWORD", t.use_password, "switchMethod")],
        (StepType::SmsOtp | StepType::EmailOtp | StepType::Password, AuthMethod::Phone) => {
            vec![("PHONE", t.change_number, "changeNumber"), ("PASSWORD", t.use_password, "usePassword")]
        }
        (StepType::SmsOtp | StepType::EmailOtp | StepType::Passkey, AuthMethod::Password) => {
            vec![("PASSWORD", t.start_over, "startOver")]
        }
        _ => Vec::new(),
    };
    let client_name = context.client_name.as_deref().unwrap_or(state.client_id.as_str());
    let theme = &identity.settings.theme;
    let messages = theme
        .system_messages
        .as_ref()
        .and_then(|m| in_language(locale, m))
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    let drawer = theme.support_drawer.as_ref().and_then(|d| in_language(locale, d));
    let brand = identity.settings.branding.view(locale, Some(t.for_client.replace("{client}", client_name)));
    let page = LoginPage {
        t,
        brand,
        step: state.step.as_str(),
        csrf: &state.csrf,
        principal: state.principal.as_deref().unwrap_or(""),
        notice,
        principal_error,
        credentials_error,
        other_error,
        captcha_required: context.captcha_required,
        captcha_site_key: identity.captcha.site_key(),
        code_sent,
        code_length: policy.length,
        resend_in,
        resend_hint: if resend_in > 0 { t.resend_in.replace("{s}", &resend_in.to_string()) } else { String::new() },
        email_available: context.email_delivery_available,
        sms_available: context.sms_delivery_available,
        other_methods,
        passkey_offered: super::passkey::offered(identity, process),
        consent_intro: t.consent_intro.replace("{client}", client_name),
        groups: context
            .available_scope_groups
            .iter()
            .map(|g| {
                // Every box ticked the first time; afterwards, the user's choice.
                let checked = state.consent_choice.as_ref().is_none_or(|choice| choice.contains(g));
                (g.clone(), t.group(g).to_owned(), checked)
            })
            .collect(),
        client_links: [
            (&context.client_pages.client_uri, t.client_home),
            (&context.client_pages.policy_uri, t.client_policy),
            (&context.client_pages.tos_uri, t.client_terms),
        ]
        .into_iter()
        .filter_map(|(uri, text)| uri.as_deref().map(|uri| (uri, text)))
        .collect(),
        messages,
        drawer,
        view_json: script_json(&LoginViewData::of(process, errors, locale, now, context)),
    };
    page.render().ok()
}

/// What a form error code means, with what the process knows of it: when a
/// pause ends, how many failures are left before one, whether a code has
/// one try left.
fn explain(
    t: &Texts,
    state: &portico_model::login::LoginState,
    policy: &OtpPolicy,
    code: &str,
    now: OffsetDateTime,
) -> String {
    use portico_model::login::codes;
    let mut text = t.for_code(code).to_owned();
    let paused = state.paused_until.filter(|until| *until > now);
    // A pause's text with its end filled in.
    let until_text = |text: &str, until: OffsetDateTime| {
        let minutes = ((until - now).whole_seconds() + 59) / 60;
        let hhmm = format!("{:02}:{:02}", until.hour(), until.minute());
        text.replace("{until}", &hhmm).replace("{minutes}", &minutes.max(1).to_string())
    };
    // What a failure left: a pause, or few failures before one.
    let after_failure = |text: &mut String, paused_text: &str| {
        if let Some(until) = paused {
            text.push(' ');
            text.push_str(&until_text(paused_text, until));
        } else if let Some(n) = state.tries_before_pause {
            text.push(' ');
            text.push_str(&t.warn_tries_before_pause.replace("{n}", &n.to_string()));
        }
    };
    match code {
        codes::USERNAME_PASSWORD_PAUSED
        | codes::PASSWORD_PAUSED
        | codes::SMS_OTP_PAUSED
        | codes::EMAIL_OTP_PAUSED
        | codes::SMS_OTP_SEND_PAUSED
        | codes::EMAIL_OTP_SEND_PAUSED => text = until_text(&text, paused.unwrap_or(now)),
        codes::USERNAME_PASSWORD_WRONG | codes::PASSWORD_WRONG => after_failure(&mut text, t.err_paused),
        codes::SMS_OTP_WRONG | codes::EMAIL_OTP_WRONG => {
            if paused.is_none() && state.otp.as_ref().is_some_and(|otp| otp.failures + 1 == policy.max_failures) {
                text.push(' ');
                text.push_str(t.warn_last_code_try);
            }
            after_failure(&mut text, t.err_code_paused);
        }
        _ => {}
    }
    text
}

/// The page language's version, or the other one.
fn in_language<T>(locale: portico_model::login::Locale, value: &crate::theme::PerLanguage<T>) -> Option<&T> {
    match locale {
        portico_model::login::Locale::Ru => value.ru.as_ref().or(value.en.as_ref()),
        portico_model::login::Locale::En => value.en.as_ref().or(value.ru.as_ref()),
    }
}
