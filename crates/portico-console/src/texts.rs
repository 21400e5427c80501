//! The console's words in Russian and English, one table: a key, then
//! the Russian text, then the English.

use portico_model::login::Locale;

/// The texts of one language.
#[derive(Debug, Clone, Copy)]
pub struct Texts {
    locale: Locale,
}

impl Texts {
    pub fn new(locale: Locale) -> Self {
        Self { locale }
    }

    /// `ru` or `en`.
    pub fn lang(&self) -> &'static str {
        self.locale.as_str()
    }

    /// The text under `key`; the key itself when there is none (a test
    /// checks that every key the pages use is here).
    pub fn s(&self, key: &str) -> &'static str {
        match TEXTS.iter().find(|(k, _, _)| *k == key) {
            Some((_, ru, en)) => match self.locale {
                Locale::Ru => ru,
                Locale::En => en,
            },
            None => {
                tracing::warn!(key, "a console text is missing");
                ""
            }
        }
    }

    /// The notice of a finished action (`done=<notice>`), when it is one.
    pub fn notice(&self, done: &str) -> Option<&'static str> {
        TEXTS.iter().find(|(k, _, _)| k.strip_prefix("done.") == Some(done)).map(|(k, _, _)| *k)
    }
}

/// `(key, Russian, English)`.
pub const TEXTS: &[(&str, &str, &str)] = &[
    ("console", "Консоль операторов", "Operator console"),
    ("nav.label", "Разделы", "Sections"),
    ("nav.users", "Пользователи", "Users"),
    ("nav.clients", "Клиенты", "Clients"),
    ("nav.keys", "Ключи подписи", "Signing keys"),
    ("nav.audit", "Журнал аудита", "Audit log"),
    ("nav.merchants", "Уведомления мерчантов", "Merchant notifications"),
    ("nav.reports", "Отчёты", "Reports"),
    ("nav.permissions", "Модель прав", "Permission model"),
    ("nav.brokerage", "Брокерские данные", "Brokerage data"),
    ("nav.sign_out", "Выйти", "Sign out"),
    ("role.admin", "администратор", "admin"),
    ("role.support", "поддержка", "support"),
    ("role.none", "нет", "none"),
    ("yes", "да", "yes"),
    ("no", "нет", "no"),
    ("save", "Сохранить", "Save"),
    ("actions", "Действия", "Actions"),
    ("pager.next", "Следующая страница", "Next page"),
    ("pager.previous", "Предыдущая страница", "Previous page"),
    ("pager.older", "Более ранние события", "Older events"),
    // Users.
    ("users.title", "Пользователи", "Users"),
    ("users.by", "Искать по", "Search by"),
    ("users.by_login", "логину (начало)", "login (start)"),
    ("users.by_phone", "телефону", "phone"),
    ("users.by_email", "e-mail", "e-mail"),
    ("users.query", "Что искать", "Search for"),
    ("users.state", "Состояние", "State"),
    ("users.state_any", "любое", "any"),
    ("users.state_active", "активные", "active"),
    ("users.state_blocked", "заблокированные", "blocked"),
    ("users.find", "Найти", "Find"),
    ("users.new", "Новый пользователь", "New user"),
    ("users.create", "Создать", "Create"),
    ("users.none", "Пользователей пока нет.", "There are no users yet."),
    ("users.none_found", "Никто не найден.", "Nobody was found."),
    ("user.id", "Идентификатор", "Id"),
    ("user.login", "Логин", "Login"),
    ("user.password", "Пароль", "Password"),
    ("user.new_password", "Новый пароль", "New password"),
    (
        "user.password_rule",
        "Пароль: от 10 до 256 символов, не логин и не один повторённый символ.",
        "A password: 10 to 256 characters, not the login, not one character repeated.",
    ),
    ("user.name", "Имя", "Name"),
    ("user.phone", "Телефон", "Phone"),
    ("user.email", "E-mail", "E-mail"),
    ("user.phone_login", "Вход по телефону", "Sign-in with the phone"),
    ("user.state", "Состояние", "State"),
    ("user.active", "активен", "active"),
    ("user.deactivated", "отключён системой учёта", "deactivated by provisioning"),
    ("user.blocked", "заблокирован", "blocked"),
    ("user.role", "Роль оператора", "Operator role"),
    ("user.created", "Создан", "Created"),
    ("user.profile", "Профиль", "Profile"),
    ("user.audit", "События пользователя в журнале аудита", "The user's events in the audit log"),
    ("user.access", "Доступ", "Access"),
    ("user.reason", "Причина (в журнал аудита)", "Reason (kept in the audit log)"),
    ("user.block", "Заблокировать", "Block"),
    ("user.unblock", "Разблокировать", "Unblock"),
    ("user.sessions", "Сеансы", "Sessions"),
    ("user.no_sessions", "Открытых сеансов нет.", "No open sessions."),
    ("user.passkeys", "Ключи доступа", "Passkeys"),
    ("user.no_passkeys", "Ключей доступа нет.", "No passkeys."),
    ("user.grants", "Выданные доступы", "Grants"),
    ("user.no_grants", "Действующих доступов нет.", "No live grants."),
    ("user.edit", "Изменить", "Change"),
    ("user.set_password", "Задать пароль", "Set the password"),
    ("user.set_role", "Задать роль", "Set the role"),
    ("user.delete", "Удалить пользователя", "Remove the user"),
    ("session.signed_in", "Вход", "Signed in"),
    ("session.expires", "Истекает", "Expires"),
    ("session.methods", "Способы входа", "Methods"),
    ("session.clients", "Приложения", "Clients"),
    ("session.end", "Завершить", "End"),
    ("passkey.name", "Название", "Name"),
    ("passkey.created", "Добавлен", "Added"),
    ("passkey.last_used", "Последний вход", "Last used"),
    ("passkey.state", "Состояние", "State"),
    ("passkey.active", "Действует", "Active"),
    ("passkey.locked", "Заблокирован: возможна копия", "Locked: possibly copied"),
    ("passkey.never", "Ещё не использовался", "Not used yet"),
    ("passkey.remove", "Удалить", "Remove"),
    ("grant.client", "Приложение", "Client"),
    ("grant.scope", "Области доступа", "Scope"),
    ("grant.created", "Выдан", "Granted"),
    ("grant.revoke", "Отозвать", "Revoke"),
    // Clients.
    ("clients.title", "Клиенты", "Clients"),
    ("clients.new", "Новый клиент", "New client"),
    ("clients.create", "Зарегистрировать", "Register"),
    ("clients.none", "Клиентов нет.", "There are no clients."),
    ("clients.held", "Ждут одобрения", "Awaiting approval"),
    ("clients.all_held", "Показаны первые 50 — все ждущие одобрения", "The first 50 are shown: all awaiting approval"),
    (
        "clients.only_held",
        "Показаны только регистрации, ждущие одобрения.",
        "Only the registrations awaiting approval are shown.",
    ),
    ("clients.show_all", "Все клиенты", "All clients"),
    ("clients.none_held", "Ни одна регистрация не ждёт одобрения.", "No registration is awaiting approval."),
    ("client.id", "Идентификатор клиента", "Client id"),
    ("client.name", "Название", "Name"),
    ("client.name_ru", "Название по-русски", "Name in Russian"),
    ("client.name_en", "Название по-английски", "Name in English"),
    ("client.redirect_uris", "Адреса возврата", "Redirect URIs"),
    ("client.post_logout_uris", "Адреса после выхода", "Post-logout redirect URIs"),
    ("client.one_per_line", "по одному в строке", "one per line"),
    ("client.scope", "Области доступа", "Scope"),
    ("client.backchannel", "Адрес back-channel logout", "Back-channel logout URI"),
    ("client.consent", "Спрашивать согласие", "Ask for consent"),
    ("client.logout_revokes", "Выход отзывает доступы", "Logout revokes grants"),
    ("client.settings", "Настройки", "Settings"),
    ("client.created", "Зарегистрирован", "Registered"),
    ("client.secret", "Секрет клиента", "Client secret"),
    ("client.secret_blank", "пусто — сгенерировать", "blank: generate one"),
    (
        "client.secret_note",
        "Секрет хранится только в виде хеша; новый показывается один раз, старый сразу перестаёт действовать.",
        "The secret is kept only as a hash; a new one is shown once and the old one stops working at once.",
    ),
    ("client.new_secret", "Новый секрет", "New secret"),
    ("client.delete", "Удалить клиента", "Remove the client"),
    ("client.security", "Аутентификация и подписи", "Authentication and signing"),
    ("client.auth_method", "Способ аутентификации", "Authentication method"),
    ("client.jwks", "Открытые ключи (JWK Set)", "Public keys (JWK Set)"),
    (
        "client.jwks_note",
        "для private_key_jwt: JSON или пусто, если ключи по адресу",
        "for private_key_jwt: JSON, or blank when the keys are at an address",
    ),
    ("client.jwks_uri", "Адрес открытых ключей (jwks_uri)", "Address of the public keys (jwks_uri)"),
    ("client.assertion_alg", "Подпись утверждений клиента", "Client assertion signing"),
    ("client.assertion_any", "любая, которой подписывает его способ", "any its method signs with"),
    ("client.id_token_alg", "Подпись ID-токенов", "ID token signing"),
    ("client.access_token_alg", "Подпись токенов доступа", "Access token signing"),
    ("client.userinfo_alg", "Подпись ответов userinfo", "Userinfo signing"),
    ("client.introspection_alg", "Подпись ответов интроспекции", "Introspection answer signing"),
    ("client.alg_default", "по умолчанию сервера", "the server's default"),
    ("client.authorization_alg", "Подпись ответов авторизации (JARM)", "Authorization response signing (JARM)"),
    ("client.request_object_alg", "Подпись объектов запроса", "Request object signing"),
    ("client.request_object_any", "любой асимметричный", "any asymmetric"),
    ("client.profile", "Профиль безопасности", "Security profile"),
    ("client.profile_standard", "стандартный: только настройки клиента", "standard: the client's own settings"),
    ("client.profile_fapi2", "FAPI 2.0", "FAPI 2.0"),
    ("client.profile_fapi_ru", "ФАПИ.СЕК, усиленный", "ФАПИ.СЕК, advanced"),
    ("client.rotation", "Новый refresh-токен при каждом обновлении", "A new refresh token on each refresh"),
    ("client.rotation_default", "как в профиле", "as the profile says"),
    ("client.rotation_on", "да", "yes"),
    ("client.rotation_off", "нет", "no"),
    ("client.require_par", "Только переданные заранее запросы (PAR)", "Pushed authorization requests only (PAR)"),
    ("client.require_jar", "Только подписанные объекты запроса (JAR)", "Signed request objects only (JAR)"),
    ("client.dpop_bound", "Токены привязаны к ключу DPoP", "Tokens bound to a DPoP key"),
    ("client.certificate_bound", "Токены привязаны к сертификату TLS", "Tokens bound to the TLS certificate"),
    ("client.tls_subject", "Субъект сертификата для tls_client_auth", "Certificate subject for tls_client_auth"),
    ("client.tls_subject_none", "не задан", "none"),
    ("client.tls_subject_value", "Значение субъекта", "The subject's value"),
    ("client.self_registered", "зарегистрировался сам (RFC 7591)", "registered itself (RFC 7591)"),
    ("client.awaiting_approval", "Регистрация ждёт одобрения", "This registration awaits approval"),
    (
        "client.approval_note",
        "Пока оператор не одобрит клиента, он не может получить токены и начать вход пользователя. Отклонить — удалить регистрацию.",
        "Until an operator approves it, the client can neither get tokens nor start a customer's login. Rejecting removes the registration.",
    ),
    ("client.approve", "Одобрить", "Approve"),
    ("client.reject", "Отклонить", "Reject"),
    ("client.held_state", "ждёт одобрения", "awaiting approval"),
    ("secret.heading", "Секрет клиента", "The client's secret"),
    (
        "secret.note",
        "Скопируйте секрет сейчас: он показывается один раз.",
        "Copy the secret now: it is shown this once.",
    ),
    ("secret.done", "Готово, к клиенту", "Done: back to the client"),
    // Keys and audit.
    ("keys.title", "Ключи подписи", "Signing keys"),
    (
        "keys.note",
        "Новый ключ сразу подписывает токены; прежний публикуется, пока не истекут подписанные им токены.",
        "A new key signs tokens at once; the old one stays published until the tokens it signed expire.",
    ),
    ("keys.rotate", "Сменить ключ", "Rotate the key"),
    ("keys.retire", "Вывести алгоритм", "Retire the algorithm"),
    ("keys.algorithm", "Алгоритм", "Algorithm"),
    ("keys.default", "по умолчанию", "the default"),
    ("keys.not_configured", "нет в настройках", "not configured"),
    (
        "keys.retire_note",
        "Алгоритма нет в настройках узла. Выведенный ключ больше не подписывает, но публикуется, пока не истекут его токены; вывод не удастся, пока алгоритм выбран клиентами.",
        "The node's configuration no longer names this algorithm. A retired key signs nothing more and stays published until its tokens expire; retiring is refused while clients still choose the algorithm.",
    ),
    ("keys.kid", "Идентификатор (kid)", "Key id (kid)"),
    ("keys.state", "Состояние", "State"),
    ("keys.active", "действующий", "active"),
    ("keys.retired_state", "выведен", "retired"),
    ("keys.created", "Создан", "Created"),
    ("keys.retired", "Выведен", "Retired"),
    ("audit.title", "Журнал аудита", "Audit log"),
    ("audit.user", "Пользователь (id)", "User (id)"),
    ("audit.client", "Клиент", "Client"),
    ("audit.kind", "Событие", "Event"),
    ("audit.actor", "Кто", "Actor"),
    ("audit.from", "С даты", "From"),
    ("audit.to", "По дату", "To"),
    ("audit.at", "Время", "Time"),
    ("audit.detail", "Подробности", "Detail"),
    ("audit.none", "Событий нет.", "No events."),
    (
        "audit.bad_user",
        "Пользователь указывается идентификатором (UUID) со страницы пользователя.",
        "A user is named by the id (a UUID) on the user's page.",
    ),
    ("audit.bad_day", "Дата указывается как ГГГГ-ММ-ДД.", "A date is written YYYY-MM-DD."),
    // Merchants and reports.
    ("merchants.title", "Мерчанты", "Merchants"),
    ("merchants.none", "Мерчантов нет.", "There are no merchants."),
    ("merchant.id", "Мерчант", "Merchant"),
    ("merchant.public_id", "Публичный идентификатор", "Public id"),
    ("merchant.callback", "Адрес уведомлений", "Callback URL"),
    ("merchant.sbp_id", "Идентификатор в СБП", "SBP merchant id"),
    (
        "merchant.ids_rule",
        "Латинские буквы, цифры, «-», «_» и «.»: до 64 символов, идентификатор в СБП до 12.",
        "Latin letters, digits, '-', '_' and '.': up to 64 characters, the SBP id up to 12.",
    ),
    ("merchant.key", "API-ключ", "API key"),
    ("merchant.new_key", "Новый ключ", "New key"),
    ("merchants.new", "Новый мерчант", "New merchant"),
    ("merchants.create", "Зарегистрировать", "Register"),
    ("deliveries.title", "Доставки", "Deliveries"),
    ("deliveries.total", "Всего", "In all"),
    ("deliveries.none", "Доставок нет.", "No deliveries."),
    ("delivery.event", "Событие", "Event"),
    ("delivery.kind", "Тип", "Type"),
    ("delivery.status", "Статус", "Status"),
    ("delivery.attempts", "Попытки", "Attempts"),
    ("delivery.created", "Создана", "Created"),
    ("delivery.last_answer", "Последний ответ", "Last answer"),
    ("delivery.resend", "Отправить снова", "Resend"),
    ("reports.title", "Задачи отчётов", "Report tasks"),
    ("reports.cnum", "Компания (cnum)", "Company (cnum)"),
    ("reports.ask", "Укажите компанию, чтобы увидеть её задачи.", "Name a company to see its tasks."),
    ("reports.none", "Задач нет.", "No tasks."),
    ("reports.bad_cnum", "Компания указывается цифрами, от 1 до 20.", "A company is 1 to 20 digits."),
    ("task.id", "Задача", "Task"),
    ("task.type", "Тип", "Type"),
    ("task.agreement", "Договор", "Agreement"),
    ("task.period", "Период", "Period"),
    ("task.error", "Ошибка", "Error"),
    ("task.retry", "Повторить", "Retry"),
    ("permissions.title", "Модель прав", "Permission model"),
    ("permissions.revision", "Ревизия", "Revision"),
    ("permissions.companies", "Компании", "Companies"),
    ("permissions.catalog", "Объекты каталога", "Catalog entries"),
    ("permissions.roles", "Роли", "Roles"),
    ("permissions.employees", "Сотрудники", "Employees"),
    ("permissions.download", "Скачать текущую модель (JSON)", "Download the current model (JSON)"),
    (
        "permissions.document",
        "Документ (YAML или JSON) — вливается в текущую модель",
        "A document (YAML or JSON), merged into the current model",
    ),
    ("permissions.check", "Проверить", "Check"),
    ("permissions.apply", "Применить", "Apply"),
    ("permissions.checked", "Документ верен; применённым он даст:", "The document is valid; applied, it holds:"),
    ("permissions.problems", "Документ не применён; исправьте:", "The document was not applied; correct this:"),
    ("brokerage.title", "Брокерские данные", "Brokerage data"),
    ("brokerage.agreement", "Договор", "Agreement"),
    ("brokerage.company", "Компания (cnum)", "Company (cnum)"),
    ("brokerage.none", "Договоров нет.", "There are no agreements."),
    (
        "brokerage.document",
        "Документ (JSON): каждый договор в нём заменяется целиком",
        "A document (JSON): each agreement in it is replaced whole",
    ),
    ("brokerage.load", "Загрузить", "Load"),
    // Confirmations.
    ("confirm.title", "Подтверждение", "Confirmation"),
    ("confirm.note", "Пока ничего не изменено.", "Nothing has changed yet."),
    ("confirm.cancel", "Отмена", "Cancel"),
    (
        "confirm.block",
        "Заблокировать пользователя? Его сеансы завершатся, доступы будут отозваны.",
        "Block this user? Their sessions end and their grants are revoked.",
    ),
    ("confirm.unblock", "Разблокировать пользователя?", "Unblock this user?"),
    ("confirm.delete_user", "Удалить пользователя? Это нельзя отменить.", "Remove this user? This cannot be undone."),
    ("confirm.role", "Изменить роль оператора этого пользователя?", "Change this user's operator role?"),
    ("confirm.end_session", "Завершить сеанс этого пользователя?", "End this user's session?"),
    (
        "confirm.remove_passkey",
        "Удалить этот ключ доступа? Пользователь больше не сможет войти с ним.",
        "Remove this passkey? The user will no longer sign in with it.",
    ),
    ("confirm.revoke_grant", "Отозвать доступ этого пользователя?", "Revoke this user's grant?"),
    (
        "confirm.client_secret",
        "Выдать клиенту новый секрет? Прежний сразу перестанет действовать.",
        "Give this client a new secret? The old one stops working at once.",
    ),
    (
        "confirm.delete_client",
        "Удалить клиента? Его доступы и коды будут удалены.",
        "Remove this client? Its grants and codes go with it.",
    ),
    (
        "confirm.rotate_key",
        "Сменить ключ подписи? Сейчас действует ключ:",
        "Rotate the signing key? The active key is:",
    ),
    (
        "confirm.retire_key",
        "Вывести алгоритм? Его ключ перестанет подписывать:",
        "Retire the algorithm? Its key stops signing:",
    ),
    (
        "confirm.approve_client",
        "Одобрить регистрацию клиента? Он сможет получать токены и начинать вход пользователей:",
        "Approve this client's registration? It can then get tokens and start customers' logins:",
    ),
    (
        "confirm.merchant_key",
        "Выдать мерчанту новый API-ключ? Прежний сразу перестанет действовать, подписи уведомлений сменятся.",
        "Give this merchant a new API key? The old one stops working at once and notifications are signed with the new one.",
    ),
    (
        "confirm.permissions",
        "Влить документ в модель прав? Появится новая ревизия.",
        "Merge this document into the permission model? It makes a new revision.",
    ),
    (
        "confirm.brokerage",
        "Загрузить брокерские данные? Договоры из документа заменятся целиком.",
        "Load this brokerage data? The document's agreements are replaced whole.",
    ),
    ("confirm.resend", "Отправить это уведомление мерчанту снова?", "Send this notification to the merchant again?"),
    ("confirm.retry", "Повторить эту задачу отчёта?", "Retry this report task?"),
    // What an action did.
    ("done.created", "Создано.", "Created."),
    ("done.saved", "Сохранено.", "Saved."),
    ("done.password_set", "Пароль задан.", "The password is set."),
    ("done.blocked", "Пользователь заблокирован.", "The user is blocked."),
    ("done.unblocked", "Пользователь разблокирован.", "The user is unblocked."),
    ("done.deleted", "Удалено.", "Removed."),
    ("done.role_set", "Роль задана.", "The role is set."),
    ("done.session_ended", "Сеанс завершён.", "The session has ended."),
    ("done.passkey_removed", "Ключ доступа удалён.", "The passkey is removed."),
    ("done.grant_revoked", "Доступ отозван.", "The grant is revoked."),
    ("done.key_rotated", "Ключ подписи сменён.", "The signing key is rotated."),
    ("done.key_retired", "Алгоритм выведен.", "The algorithm is retired."),
    ("done.approved", "Клиент одобрен.", "The client is approved."),
    ("done.resent", "Уведомление поставлено в очередь.", "The notification is queued."),
    ("done.applied", "Модель прав изменена.", "The permission model is changed."),
    ("done.loaded", "Брокерские данные загружены.", "The brokerage data is loaded."),
    ("done.retried", "Задача поставлена в очередь снова.", "The task is queued again."),
    // Errors.
    ("error.heading", "Не выполнено", "Not done"),
    ("error.back", "Вернуться", "Go back"),
    ("error.invalid", "Ничего не изменено; исправьте:", "Nothing was changed; correct this:"),
    (
        "error.csrf",
        "Форма устарела. Обновите страницу и повторите.",
        "The form has expired. Reload the page and try again.",
    ),
    ("error.form", "Форма не прочитана.", "The form could not be read."),
    (
        "error.admin_only",
        "Это может сделать только оператор с ролью «администратор».",
        "Only an operator with the admin role may do this.",
    ),
    ("error.not_found", "Такой страницы в консоли нет.", "The console has no such page."),
    ("error.no_user", "Такого пользователя нет.", "There is no such user."),
    ("error.no_merchant", "Такого мерчанта нет.", "There is no such merchant."),
    (
        "error.unavailable",
        "Хранилище сейчас недоступно. Повторите через несколько секунд.",
        "The store is unavailable. Try again in a few seconds.",
    ),
    (
        "error.changed_meanwhile",
        "Пока вы редактировали, это изменил кто-то другой, и ваши изменения не сохранены. Откройте страницу снова, \
         проверьте текущие значения и внесите изменения ещё раз.",
        "Someone else changed this while you were editing, so your changes were not saved. Open the page again, \
         check what it holds now and make your changes there.",
    ),
    (
        "error.sign_in_lost",
        "Вход прерван или устарел. Войдите заново.",
        "The sign-in was interrupted or has expired. Sign in again.",
    ),
    ("error.sign_in_refused", "Вход не выполнен.", "The sign-in did not complete."),
    (
        "error.no_client",
        "Клиент консоли не зарегистрирован; перезапустите Portico.",
        "The console's client is not registered; restart Portico.",
    ),
    ("error.not_operator", "У этой учётной записи нет роли оператора.", "This account has no operator role."),
    ("error.sign_in_other", "Войти под другой учётной записью", "Sign in as someone else"),
];

#[cfg(test)]
mod tests {
    use super::TEXTS;

    /// Every text key a page or handler names (`l.s("…")`, a question, a
    /// button, a notice) is in the table, in both languages.
    #[test]
    fn every_key_the_console_uses_has_both_texts() {
        let mut used = Vec::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for dir in ["templates", "src"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
                for piece in text.split('"').skip(1).step_by(2) {
                    let prefixes = [
                        "nav.",
                        "role.",
                        "pager.",
                        "users.",
                        "user.",
                        "session.",
                        "grant.",
                        "clients.",
                        "client.",
                        "secret.",
                        "keys.",
                        "audit.",
                        "merchants.",
                        "merchant.",
                        "deliveries.",
                        "delivery.",
                        "reports.",
                        "task.",
                        "confirm.",
                        "error.",
                    ];
                    let looks_like_key = prefixes.iter().any(|p| piece.starts_with(p))
                        && piece.chars().all(|c| c.is_ascii_lowercase() || c == '.' || c == '_')
                        && !piece.ends_with(".html");
                    if looks_like_key {
                        used.push(piece.to_owned());
                    }
                }
            }
        }
        assert!(used.len() > 100, "keys were found: {}", used.len());
        for key in &used {
            let found = TEXTS.iter().find(|(k, _, _)| k == key);
            assert!(found.is_some_and(|(_, ru, en)| !ru.is_empty() && !en.is_empty()), "no texts for {key}");
        }
        let mut keys: Vec<&str> = TEXTS.iter().map(|(k, _, _)| *k).collect();
        keys.sort_unstable();
        let before = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), before, "a key is in the table twice");
    }
}
