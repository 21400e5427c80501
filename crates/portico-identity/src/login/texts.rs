//! The words on the login pages, in Russian and English.

use axum::http::{HeaderMap, header};
use portico_model::login::Locale;

/// The texts of one language.
#[derive(Debug)]
pub struct Texts {
    pub lang: &'static str,
    /// The login steps' title, before the bank's name (`Вход — <bank>`).
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
    /// The line under the heading that names the client; `{client}` is
    /// replaced by its display name.
    pub for_client: &'static str,
    /// The page of `response_mode=form_post` while it posts (or when
    /// JavaScript is off).
    pub form_post_note: &'static str,
    pub form_post_continue: &'static str,
    /// After a logout that has nowhere to return to.
    pub signed_out_heading: &'static str,
    pub signed_out: &'static str,
    /// After a logout whose hint named another user than this browser's.
    pub signed_out_elsewhere: &'static str,
    /// A logout request that was refused (nothing was ended).
    pub logout_refused_heading: &'static str,
    pub logout_bad_request: &'static str,
    pub logout_bad_hint: &'static str,
    pub logout_bad_client: &'static str,
    pub logout_bad_redirect: &'static str,
    /// A browser's page at an address Portico does not serve (404).
    pub not_found_heading: &'static str,
    pub not_found: &'static str,
    /// The SMS or e-mail text; `{code}` is replaced by the code.
    pub otp_text: &'static str,
    pub phone_heading: &'static str,
    pub phone_label: &'static str,
    pub password_heading: &'static str,
    pub unknown_device: &'static str,
    pub phone_auth_not_allowed: &'static str,
    pub phone_duplicated: &'static str,
    pub sms_heading: &'static str,
    pub email_heading: &'static str,
    /// `{to}` is replaced by the masked address.
    pub code_sent: &'static str,
    pub code_label: &'static str,
    pub resend: &'static str,
    /// `{s}` is replaced by the seconds left.
    pub resend_in: &'static str,
    pub use_email: &'static str,
    pub use_phone: &'static str,
    /// The first page's passkey sign-in button.
    pub passkey_login: &'static str,
    /// The `passkey` step (second factor): heading, what to do, its button.
    pub passkey_heading: &'static str,
    pub passkey_intro: &'static str,
    pub passkey_use: &'static str,
    /// A passkey sign-in refused (a wrong, unknown or locked passkey).
    pub err_passkey: &'static str,
    /// The passkey sign-in's challenge expired or was used: try again.
    pub err_passkey_expired: &'static str,
    /// The offer to create a passkey (`passkey-enrolment`): heading, why,
    /// its two buttons.
    pub enrol_heading: &'static str,
    pub enrol_intro: &'static str,
    pub enrol_create: &'static str,
    pub enrol_decline: &'static str,
    /// The browser could not create a passkey (cancelled, none possible).
    pub enrol_failed: &'static str,
    /// A new passkey's name when the browser says nothing of itself.
    pub passkey_default_name: &'static str,
    /// The new passkey was refused, or its challenge ran out.
    pub err_enrol: &'static str,
    pub err_enrol_expired: &'static str,
    pub use_password: &'static str,
    /// Back from a code or password step of the phone method to the number.
    pub change_number: &'static str,
    /// Back from the second factor of the password method to the start.
    pub start_over: &'static str,
    /// From the e-mail code back to SMS.
    pub use_sms: &'static str,
    pub consent_heading: &'static str,
    /// `{client}` is replaced by the client's name.
    pub consent_intro: &'static str,
    /// Links on the consent page to the client's own pages (its home page,
    /// privacy policy, terms of service), with what they lead to.
    pub client_pages: &'static str,
    pub client_home: &'static str,
    pub client_policy: &'static str,
    pub client_terms: &'static str,
    pub allow: &'static str,
    pub deny: &'static str,
    pub group_profile: &'static str,
    pub group_email: &'static str,
    pub group_phone: &'static str,
    pub captcha_label: &'static str,
    pub err_phone: &'static str,
    pub err_code_wrong: &'static str,
    pub err_code_expired: &'static str,
    pub err_resend_early: &'static str,
    pub err_code_limit: &'static str,
    pub err_captcha: &'static str,
    pub err_consent_nothing: &'static str,
    pub error_consent_denied: &'static str,
    pub error_delivery: &'static str,
    pub error_attempts: &'static str,
    pub error_no_phone: &'static str,
    /// `{until}` is replaced by the time (UTC) and `{minutes}` by the minutes left.
    pub err_paused: &'static str,
    /// As `err_paused`, for code entry.
    pub err_code_paused: &'static str,
    /// As `err_paused`, for sending codes.
    pub err_send_paused: &'static str,
    /// `{n}` is replaced by the failures left before a pause.
    pub warn_tries_before_pause: &'static str,
    pub warn_last_code_try: &'static str,
}

impl Texts {
    /// What a login form or error page code means, in this language.
    pub fn for_code(&self, code: &str) -> &'static str {
        use portico_model::login::codes;
        match code {
            codes::USERNAME_PASSWORD_WRONG | codes::PASSWORD_WRONG => self.wrong_credentials,
            codes::PHONE_WRONG => self.err_phone,
            codes::SMS_OTP_WRONG | codes::EMAIL_OTP_WRONG => self.err_code_wrong,
            codes::SMS_OTP_EXPIRED | codes::EMAIL_OTP_EXPIRED => self.err_code_expired,
            codes::SMS_OTP_RESEND_TOO_EARLY | codes::EMAIL_OTP_RESEND_TOO_EARLY => self.err_resend_early,
            codes::SMS_OTP_PROCESS_LIMIT | codes::EMAIL_OTP_PROCESS_LIMIT => self.err_code_limit,
            codes::CAPTCHA_REQUIRED => self.err_captcha,
            codes::CONSENT_NOTHING_SELECTED => self.err_consent_nothing,
            codes::USER_IS_BLOCKED => self.error_blocked,
            codes::FATAL_ERROR => self.error_fatal,
            codes::CONSENT_DENIED => self.error_consent_denied,
            codes::SMS_OTP_DELIVERY_FAILED => self.error_delivery,
            codes::SMS_OTP_ATTEMPTS_EXCEEDED => self.error_attempts,
            codes::SMS_OTP_NO_PHONE => self.error_no_phone,
            codes::USERNAME_PASSWORD_PAUSED | codes::PASSWORD_PAUSED => self.err_paused,
            codes::SMS_OTP_PAUSED | codes::EMAIL_OTP_PAUSED => self.err_code_paused,
            codes::SMS_OTP_SEND_PAUSED | codes::EMAIL_OTP_SEND_PAUSED => self.err_send_paused,
            codes::PASSKEY_REFUSED => self.err_passkey,
            codes::PASSKEY_EXPIRED => self.err_passkey_expired,
            codes::PASSKEY_ENROLMENT_REFUSED => self.err_enrol,
            codes::PASSKEY_ENROLMENT_EXPIRED => self.err_enrol_expired,
            _ => self.error_unknown,
        }
    }

    /// A scope group's name on the consent page.
    pub fn group<'a>(&self, group: &'a str) -> &'a str {
        match group {
            "profile" => self.group_profile,
            "email" => self.group_email,
            "phone" => self.group_phone,
            other => other,
        }
    }
}

pub const RU: Texts = Texts {
    lang: "ru",
    title: "Вход",
    heading: "Вход в интернет-банк",
    login: "Логин",
    password: "Пароль",
    submit: "Войти",
    wrong_credentials: "Неверный логин или пароль. Проверьте раскладку клавиатуры и Caps Lock и попробуйте ещё раз.",
    error_heading: "Не удалось войти",
    error_unknown: "Что-то пошло не так. Попробуйте ещё раз.",
    error_fatal: "Сеанс входа прерван. Начните вход заново.",
    error_blocked: "Пользователь заблокирован. Обратитесь в банк.",
    action_reload: "Обновить",
    action_retry: "Войти заново",
    action_redirect: "Вернуться",
    logged_out: "Вы вышли из системы или сеанс входа истёк. Вернитесь в приложение, чтобы войти снова.",
    for_client: "Для входа в «{client}»",
    form_post_note: "Возвращаем вас в приложение…",
    form_post_continue: "Продолжить",
    signed_out_heading: "Вы вышли",
    signed_out: "Вы вышли из системы. Чтобы войти снова, вернитесь в приложение.",
    signed_out_elsewhere: "Сеанс, который завершило приложение, закрыт. В этом браузере выполнен вход под другим \
                           пользователем, и он продолжается.",
    logout_refused_heading: "Выход не выполнен",
    not_found_heading: "Страница не найдена",
    not_found: "По этому адресу ничего нет. Проверьте адрес или вернитесь в приложение.",
    logout_bad_request: "Запрос на выход составлен неверно: параметр повторяется или пуст. \
                         Вернитесь в приложение и выйдите ещё раз.",
    logout_bad_hint: "Приложение передало чужой или повреждённый токен входа. Вы не вышли из системы. \
                      Вернитесь в приложение и выйдите ещё раз или закройте браузер.",
    logout_bad_client: "Приложение, которое просит выйти, не зарегистрировано в банке. Вы не вышли из системы.",
    logout_bad_redirect: "Приложение просит вернуть вас на адрес, который для него не зарегистрирован. \
                          Вы не вышли из системы. Сообщите об этом в поддержку приложения.",
    otp_text: "Код для входа в интернет-банк: {code}. Никому не сообщайте его.",
    phone_heading: "Вход по номеру телефона",
    phone_label: "Номер телефона",
    password_heading: "Введите пароль",
    unknown_device: "Вы входите с нового устройства. Подтвердите вход паролем.",
    phone_auth_not_allowed: "Вход по номеру телефона для вас отключён. Введите пароль.",
    phone_duplicated: "Этот номер указан у нескольких пользователей. Войдите по логину и паролю.",
    sms_heading: "Код из SMS",
    email_heading: "Код из письма",
    code_sent: "Мы отправили код на {to}",
    code_label: "Код",
    resend: "Отправить код ещё раз",
    resend_in: "Новый код можно запросить через {s} с",
    use_email: "Получить код по e-mail",
    use_phone: "Войти по номеру телефона",
    passkey_login: "Войти с ключом доступа",
    passkey_heading: "Подтвердите вход ключом доступа",
    passkey_intro: "Подтвердите вход ключом доступа на этом устройстве (отпечаток пальца, лицо или PIN-код) \
                    или получите код.",
    passkey_use: "Подтвердить ключом доступа",
    err_passkey: "Не удалось войти с этим ключом доступа. Войдите другим способом или выберите другой ключ.",
    err_passkey_expired: "Время на вход с ключом доступа истекло. Попробуйте ещё раз.",
    enrol_heading: "Входите без SMS-кода",
    enrol_intro: "Создайте ключ доступа на этом устройстве: в следующий раз вы войдёте отпечатком пальца, лицом \
                  или PIN-кодом устройства, без пароля и кода из SMS. Ключ работает только на нашем сайте, \
                  поэтому его нельзя выманить на поддельной странице.",
    enrol_create: "Создать ключ доступа",
    enrol_decline: "Не сейчас",
    enrol_failed: "Ключ доступа не создан. Попробуйте ещё раз или нажмите «Не сейчас».",
    passkey_default_name: "Ключ доступа",
    err_enrol: "Не удалось сохранить ключ доступа. Попробуйте ещё раз или нажмите «Не сейчас».",
    err_enrol_expired: "Время на создание ключа доступа истекло. Попробуйте ещё раз.",
    use_password: "Войти по логину и паролю",
    change_number: "Изменить номер телефона",
    start_over: "Войти заново",
    use_sms: "Получить код по SMS",
    consent_heading: "Доступ к данным",
    consent_intro: "{client} запрашивает доступ:",
    client_pages: "О приложении",
    client_home: "Сайт приложения",
    client_policy: "Политика конфиденциальности",
    client_terms: "Условия использования",
    allow: "Разрешить",
    deny: "Отказать",
    group_profile: "Имя и логин",
    group_email: "Адрес e-mail",
    group_phone: "Номер телефона",
    captcha_label: "Я не робот",
    err_phone: "Пользователь с таким номером не найден. Проверьте номер или войдите по логину и паролю.",
    err_code_wrong: "Неверный код. Введите код из последнего сообщения.",
    err_code_expired: "Код больше не действует. Запросите новый.",
    err_resend_early: "Новый код можно запросить чуть позже: дождитесь конца отсчёта под кнопкой.",
    err_code_limit: "Больше кодов отправить нельзя. Начните вход заново.",
    err_captcha: "Подтвердите, что вы не робот: отметьте поле проверки и отправьте форму ещё раз.",
    err_consent_nothing: "Выберите хотя бы один пункт или нажмите «Отказать».",
    error_consent_denied: "Вы отказали приложению в доступе. Вернитесь в приложение, если передумаете.",
    error_delivery: "Не удалось отправить код. Попробуйте ещё раз.",
    error_attempts: "Попытки ввода кода закончились. Начните вход заново.",
    error_no_phone: "Для входа нужен номер телефона или e-mail. Обратитесь в банк.",
    err_paused: "Слишком много неудачных попыток. Вход по паролю с этого устройства приостановлен до {until} UTC \
                 (около {minutes} мин). Если вы уже входили с другого устройства, войдите с него.",
    err_code_paused: "Слишком много неверных кодов. Ввод кода с этого устройства приостановлен до {until} UTC \
                      (около {minutes} мин). Если вы уже входили с другого устройства, войдите с него.",
    err_send_paused: "Слишком много кодов отправлено. Новый код можно будет получить после {until} UTC \
                      (около {minutes} мин).",
    warn_tries_before_pause: "Осталось попыток до паузы: {n}.",
    warn_last_code_try: "Осталась последняя попытка для этого кода.",
};

pub const EN: Texts = Texts {
    lang: "en",
    title: "Sign in",
    heading: "Sign in to online banking",
    login: "Login",
    password: "Password",
    submit: "Sign in",
    wrong_credentials: "Wrong login or password. Check the keyboard layout and Caps Lock, then try again.",
    error_heading: "Could not sign you in",
    error_unknown: "Something went wrong. Please try again.",
    error_fatal: "The sign-in was interrupted. Please start again.",
    error_blocked: "This user is blocked. Please contact the bank.",
    action_reload: "Reload",
    action_retry: "Sign in again",
    action_redirect: "Go back",
    logged_out: "You are signed out, or the sign-in expired. Return to the application to sign in again.",
    for_client: "To continue to {client}",
    form_post_note: "Taking you back to the application…",
    form_post_continue: "Continue",
    signed_out_heading: "Signed out",
    signed_out: "You are signed out. To sign in again, return to the application.",
    signed_out_elsewhere: "The session the application ended is closed. This browser is signed in as another \
                           user, and stays so.",
    logout_refused_heading: "You are still signed in",
    not_found_heading: "Page not found",
    not_found: "There is nothing at this address. Check the address, or return to the application.",
    logout_bad_request: "The sign-out request is malformed: a parameter is repeated or empty. \
                         Return to the application and sign out again.",
    logout_bad_hint: "The application sent a sign-in token that is damaged or not its own. You are still signed in. \
                      Return to the application and sign out again, or close the browser.",
    logout_bad_client: "The application asking to sign you out is not registered with the bank. \
                        You are still signed in.",
    logout_bad_redirect: "The application asks to send you to an address that is not registered for it. \
                          You are still signed in. Please tell the application's support.",
    otp_text: "Your online banking sign-in code: {code}. Do not share it with anyone.",
    phone_heading: "Sign in with your phone number",
    phone_label: "Phone number",
    password_heading: "Enter your password",
    unknown_device: "You are signing in from a new device. Confirm with your password.",
    phone_auth_not_allowed: "Phone sign-in is off for you. Enter your password.",
    phone_duplicated: "This number belongs to several users. Sign in with your login and password.",
    sms_heading: "Code from the SMS",
    email_heading: "Code from the e-mail",
    code_sent: "We sent a code to {to}",
    code_label: "Code",
    resend: "Send the code again",
    resend_in: "You can ask for a new code in {s} s",
    use_email: "Get the code by e-mail",
    use_phone: "Sign in with a phone number",
    passkey_login: "Sign in with a passkey",
    passkey_heading: "Confirm with your passkey",
    passkey_intro: "Confirm the sign-in with your passkey on this device (fingerprint, face or PIN), or get a code \
                    instead.",
    passkey_use: "Confirm with a passkey",
    err_passkey: "This passkey could not sign you in. Sign in another way or choose another passkey.",
    err_passkey_expired: "The passkey sign-in timed out. Please try again.",
    enrol_heading: "Sign in without an SMS code",
    enrol_intro: "Create a passkey on this device: next time you sign in with your fingerprint, face or the \
                  device's PIN, without a password or a code. A passkey works only on our site, so a fake page \
                  cannot trick you out of it.",
    enrol_create: "Create a passkey",
    enrol_decline: "Not now",
    enrol_failed: "No passkey was created. Try again or choose \u{201c}Not now\u{201d}.",
    passkey_default_name: "Passkey",
    err_enrol: "The passkey could not be saved. Try again or choose \u{201c}Not now\u{201d}.",
    err_enrol_expired: "Creating the passkey timed out. Please try again.",
    use_password: "Sign in with login and password",
    change_number: "Change the phone number",
    start_over: "Start over",
    use_sms: "Get the code by SMS",
    consent_heading: "Access to your data",
    consent_intro: "{client} asks for access to:",
    client_pages: "About the application",
    client_home: "Application website",
    client_policy: "Privacy policy",
    client_terms: "Terms of service",
    allow: "Allow",
    deny: "Deny",
    group_profile: "Name and login",
    group_email: "E-mail address",
    group_phone: "Phone number",
    captcha_label: "I am not a robot",
    err_phone: "No user has this phone number. Check the number, or sign in with login and password.",
    err_code_wrong: "Wrong code. Enter the code from the latest message.",
    err_code_expired: "This code no longer works. Ask for a new one.",
    err_resend_early: "You can ask for a new code a little later: wait for the countdown under the button.",
    err_code_limit: "No more codes can be sent. Please start again.",
    err_captcha: "Please confirm you are not a robot: tick the check and send the form again.",
    err_consent_nothing: "Choose at least one item, or press Deny.",
    error_consent_denied: "You denied the application access. Return to the application if you change your mind.",
    error_delivery: "The code could not be sent. Please try again.",
    error_attempts: "No tries left for the code. Please start again.",
    error_no_phone: "Signing in needs a phone number or e-mail. Please contact the bank.",
    err_paused: "Too many failed attempts. Password sign-in from this device is paused until {until} UTC \
                 (about {minutes} min). If you have signed in from another device before, use that one.",
    err_code_paused: "Too many wrong codes. Code entry from this device is paused until {until} UTC \
                      (about {minutes} min). If you have signed in from another device before, use that one.",
    err_send_paused: "Too many codes were sent. A new code can be sent after {until} UTC (about {minutes} min).",
    warn_tries_before_pause: "Attempts left before a pause: {n}.",
    warn_last_code_try: "This is the last try for this code.",
};

impl Texts {
    /// The language of these texts.
    pub fn locale(&self) -> Locale {
        Locale::parse(self.lang).unwrap_or(Locale::Ru)
    }
}

pub fn for_locale(locale: Locale) -> &'static Texts {
    match locale {
        Locale::Ru => &RU,
        Locale::En => &EN,
    }
}

/// The pages' language when the process has none chosen: the `svc.locale`
/// cookie (the last choice in this browser), then the configured default,
/// then the browser's `Accept-Language` (RFC 9110 §12.5.4: of English and
/// Russian, the one weighted highest above zero, the first listed on a
/// tie; a tag counts by its primary language, `en-GB` as `en`), then
/// Russian.
pub fn negotiate(headers: &HeaderMap, default: Option<Locale>) -> Locale {
    if let Some(locale) = crate::cookies::get(headers, crate::cookies::LOCALE).and_then(Locale::parse) {
        return locale;
    }
    if let Some(locale) = default {
        return locale;
    }
    let mut best: Option<(Locale, u16)> = None;
    for (tag, weight) in crate::negotiation::weighted(headers, &header::ACCEPT_LANGUAGE) {
        let language = tag.split('-').next().unwrap_or_default();
        let locale = if language.eq_ignore_ascii_case("en") {
            Locale::En
        } else if language.eq_ignore_ascii_case("ru") {
            Locale::Ru
        } else {
            continue;
        };
        if weight > 0 && best.is_none_or(|(_, w)| weight > w) {
            best = Some((locale, weight));
        }
    }
    best.map_or(Locale::Ru, |(locale, _)| locale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn browser(accept_language: &'static str) -> Locale {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static(accept_language));
        negotiate(&headers, None)
    }

    #[test]
    fn the_browsers_languages_count_by_weight() {
        assert_eq!(browser("en-GB,en;q=0.9"), Locale::En);
        assert_eq!(browser("ru;q=0.1, en;q=0.9"), Locale::En, "the weight, not the order");
        assert_eq!(browser("de, en;q=0.5, ru;q=0.4"), Locale::En);
        assert_eq!(browser("en;q=0, ru;q=0.2"), Locale::Ru, "q=0 is not acceptable");
        assert_eq!(browser("en;q=0"), Locale::Ru, "nothing acceptable: Russian");
        assert_eq!(browser("ru, en"), Locale::Ru, "a tie: the first listed");
        assert_eq!(browser("english, EN-us;q=0.3"), Locale::En, "by primary language");
        assert_eq!(browser("de"), Locale::Ru);
        assert_eq!(negotiate(&HeaderMap::new(), Some(Locale::En)), Locale::En, "the setting beats the browser");
    }
}
