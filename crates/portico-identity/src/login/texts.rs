//! The words on the login pages, in Russian and English.

use axum::http::{HeaderMap, header};
use portico_model::login::Locale;

/// The texts of one language.
#[derive(Debug)]
pub struct Texts {
    pub lang: &'static str,
    pub title: &'static str,
    pub heading: &'static str,
    pub login: &'static str,
    pub password: &'static str,
    pub submit: &'static str,
    pub wrong_credentials: &'static str,
    pub error_heading: &'static str,
    pub error_unknown: &'static str,
    pub error_fatal: &'static str,
    pub error_blocked: &'static str,
    pub action_reload: &'static str,
    pub action_retry: &'static str,
    pub action_redirect: &'static str,
    pub logged_out: &'static str,
}

pub const RU: Texts = Texts {
    lang: "ru",
    title: "Вход — Portico",
    heading: "Вход в интернет-банк",
    login: "Логин",
    password: "Пароль",
    submit: "Войти",
    wrong_credentials: "Неверный логин или пароль",
    error_heading: "Не удалось войти",
    error_unknown: "Что-то пошло не так. Попробуйте ещё раз.",
    error_fatal: "Сеанс входа прерван. Начните вход заново.",
    error_blocked: "Пользователь заблокирован. Обратитесь в банк.",
    action_reload: "Обновить",
    action_retry: "Войти заново",
    action_redirect: "Вернуться",
    logged_out: "Вы вышли из системы или сеанс входа истёк. Вернитесь в приложение, чтобы войти снова.",
};

pub const EN: Texts = Texts {
    lang: "en",
    title: "Sign in — Portico",
    heading: "Sign in to online banking",
    login: "Login",
    password: "Password",
    submit: "Sign in",
    wrong_credentials: "Wrong login or password",
    error_heading: "Could not sign you in",
    error_unknown: "Something went wrong. Please try again.",
    error_fatal: "The sign-in was interrupted. Please start again.",
    error_blocked: "This user is blocked. Please contact the bank.",
    action_reload: "Reload",
    action_retry: "Sign in again",
    action_redirect: "Go back",
    logged_out: "You are signed out, or the sign-in expired. Return to the application to sign in again.",
};

pub fn for_locale(locale: Locale) -> &'static Texts {
    match locale {
        Locale::Ru => &RU,
        Locale::En => &EN,
    }
}

/// The language the browser prefers among ours (Russian by default).
pub fn negotiate(headers: &HeaderMap) -> Locale {
    let accept = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()).unwrap_or("");
    for tag in accept.split(',') {
        let lang = tag.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if lang.starts_with("en") {
            return Locale::En;
        }
        if lang.starts_with("ru") {
            return Locale::Ru;
        }
    }
    Locale::Ru
}
