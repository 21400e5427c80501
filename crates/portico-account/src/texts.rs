//! The account page's words, in Russian and English.

use portico_model::login::Locale;

/// The page's words in one language.
#[derive(Debug, Clone, Copy)]
pub struct Texts {
    locale: Locale,
}

impl Texts {
    pub fn new(locale: Locale) -> Self {
        Self { locale }
    }

    /// `ru` or `en`, for `<html lang>`.
    pub fn lang(&self) -> &'static str {
        self.locale.as_str()
    }

    /// The text under `key`; `?` for an unknown one (a test checks that
    /// every key the templates use is known).
    pub fn s(&self, key: &str) -> &'static str {
        let Some((ru, en)) = entry(key) else { return "?" };
        match self.locale {
            Locale::Ru => ru,
            Locale::En => en,
        }
    }
}

/// Every key with its Russian and English text.
pub const ENTRIES: &[(&str, &str, &str)] = &[
    ("title", "Мой аккаунт", "My account"),
    ("signed_in_as", "Вы вошли как", "Signed in as"),
    ("sign_out", "Выйти", "Sign out"),
    ("language", "Язык", "Language"),
    ("passkeys.heading", "Ключи доступа", "Passkeys"),
    (
        "passkeys.intro",
        "Ключ доступа заменяет пароль и код из SMS: вход подтверждается отпечатком пальца, лицом или PIN-кодом устройства.",
        "A passkey replaces the password and the SMS code: you confirm the sign-in with your fingerprint, face or the device's PIN.",
    ),
    ("passkeys.default_name", "Ключ доступа", "Passkey"),
    ("passkeys.none", "Ключей доступа пока нет.", "No passkeys yet."),
    ("passkeys.add", "Создать ключ доступа", "Create a passkey"),
    (
        "passkeys.add_failed",
        "Ключ не создан: браузер отменил запрос или не поддерживает ключи доступа.",
        "No passkey was created: the browser cancelled or does not support passkeys.",
    ),
    ("passkeys.full", "Создано максимальное число ключей доступа.", "You keep as many passkeys as allowed."),
    ("passkeys.off", "Ключи доступа сейчас недоступны.", "Passkeys are not available now."),
    ("passkeys.created", "Создан", "Created"),
    ("passkeys.last_used", "Последний вход", "Last used"),
    ("passkeys.never_used", "ещё не использовался", "not used yet"),
    (
        "passkeys.locked",
        "Заблокирован: счётчик подписи не вырос, возможно, это копия",
        "Locked: its signature counter did not advance, it may be a copy",
    ),
    (
        "passkeys.sign_in_first",
        "Прежде чем создать ключ доступа, подтвердите, что это вы: войдите ещё раз.",
        "Before you create a passkey, confirm it is you: sign in again.",
    ),
    ("passkeys.sign_in_to_add", "Войти и создать ключ доступа", "Sign in to create a passkey"),
    ("passkeys.name", "Название", "Name"),
    ("passkeys.rename", "Переименовать", "Rename"),
    ("passkeys.remove", "Удалить", "Remove"),
    ("sessions.heading", "Сеансы", "Sessions"),
    ("sessions.intro", "Где выполнен вход в ваш аккаунт.", "Where your account is signed in."),
    ("sessions.current", "Этот браузер", "This browser"),
    ("sessions.since", "Вход", "Signed in"),
    ("sessions.end", "Завершить", "End"),
    ("sessions.end_others", "Завершить все другие сеансы", "End all other sessions"),
    ("devices.heading", "Доверенные устройства", "Trusted devices"),
    (
        "devices.intro",
        "На этих устройствах вход по паролю не требует кода из SMS.",
        "On these devices a password sign-in needs no SMS code.",
    ),
    ("devices.none", "Доверенных устройств нет.", "No trusted devices."),
    ("devices.current", "Это устройство", "This device"),
    ("devices.since", "Доверено", "Trusted"),
    ("devices.forget", "Забыть", "Forget"),
    ("browser.unknown", "Неизвестный браузер", "Unknown browser"),
    ("confirm.remove", "Удалить ключ доступа?", "Remove the passkey?"),
    (
        "confirm.remove_last",
        "Это ваш последний ключ доступа. Без него вход будет по паролю и коду из SMS.",
        "This is your last passkey. Without it you will sign in with a password and an SMS code.",
    ),
    ("confirm.button", "Удалить", "Remove"),
    ("confirm.cancel", "Отмена", "Cancel"),
    ("done.passkey_added", "Ключ доступа создан.", "The passkey was created."),
    (
        "done.signed_in_again",
        "Вы вошли ещё раз: теперь можно создать ключ доступа.",
        "You signed in again: you can create a passkey now.",
    ),
    ("done.passkey_renamed", "Ключ доступа переименован.", "The passkey was renamed."),
    ("done.passkey_removed", "Ключ доступа удалён.", "The passkey was removed."),
    ("done.session_ended", "Сеанс завершён.", "The session was ended."),
    ("done.sessions_ended", "Другие сеансы завершены.", "The other sessions were ended."),
    (
        "done.device_forgotten",
        "Устройство забыто: на нём снова понадобится код.",
        "The device was forgotten: it will need a code again.",
    ),
    ("error.heading", "Не получилось", "That did not work"),
    ("error.back", "Вернуться в аккаунт", "Back to my account"),
    (
        "error.form",
        "Форма заполнена неверно. Вернитесь и попробуйте ещё раз.",
        "The form was not filled in as expected. Go back and try again.",
    ),
    (
        "error.csrf",
        "Страница устарела. Вернитесь и повторите действие.",
        "The page was out of date. Go back and try again.",
    ),
    ("error.not_found", "Такой страницы или записи нет.", "There is no such page or entry."),
    (
        "error.unavailable",
        "Сервис временно недоступен. Попробуйте через несколько секунд.",
        "The service is unavailable for a moment. Try again in a few seconds.",
    ),
    (
        "error.sign_in_lost",
        "Вход не завершён. Откройте страницу аккаунта ещё раз.",
        "The sign-in did not finish. Open your account page again.",
    ),
    ("error.sign_in_refused", "Вход отменён.", "The sign-in was cancelled."),
    (
        "error.passkey_expired",
        "Время на создание ключа истекло. Попробуйте ещё раз.",
        "The time to create the passkey ran out. Try again.",
    ),
    (
        "error.passkey_refused",
        "Ключ доступа не принят. Попробуйте ещё раз или другое устройство.",
        "The passkey was not accepted. Try again, or another device.",
    ),
    ("error.passkey_taken", "Этот ключ доступа уже сохранён.", "This passkey is saved already."),
    (
        "error.passkey_name",
        "Название: от 1 до 64 символов, без невидимых и управляющих символов.",
        "Name: 1 to 64 characters, without invisible or control characters.",
    ),
];

fn entry(key: &str) -> Option<(&'static str, &'static str)> {
    ENTRIES.iter().find(|(k, _, _)| *k == key).map(|(_, ru, en)| (*ru, *en))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_the_templates_use_is_known_in_both_languages() {
        let templates = [
            include_str!("../templates/base.html"),
            include_str!("../templates/account.html"),
            include_str!("../templates/confirm.html"),
            include_str!("../templates/message.html"),
        ];
        for template in templates {
            for part in template.split("l.s(\"").skip(1) {
                let key = &part[..part.find('"').unwrap()];
                assert!(entry(key).is_some(), "unknown key {key}");
            }
        }
        for (key, ru, en) in ENTRIES {
            assert!(!ru.is_empty() && !en.is_empty() && ru != en, "{key}");
            assert_eq!(ENTRIES.iter().filter(|(k, _, _)| k == key).count(), 1, "{key} twice");
        }
    }
}
