//! The guard of the password steps against guessing (docs/decisions.md,
//! "Guessing passwords and codes").
//!
//! Every password attempt is counted on throttle keys *before* the password
//! is checked, in one atomic statement per key, so that N attempts in
//! flight get N different counts and no more than the policy allows are
//! checked without a CAPTCHA or while a pause is due:
//!
//! - from a device trusted for the user (a login with a second factor was
//!   completed on it): only that device's key, `device:<user>:<device>`;
//!   strangers' failures elsewhere never slow the owner down there;
//! - from anywhere else: the account's key for untrusted devices,
//!   `account:<user>` (`login:<typed login>` for a login nobody has, so that
//!   known and unknown logins behave alike), and the client address's key,
//!   `address:<ip>`, with higher thresholds.
//!
//! On each key: from `captcha_after` failures on, an attempt needs a valid
//! CAPTCHA; from `delay_after` on, each failure pauses attempts on the key
//! for a delay that doubles from `first_delay` up to `max_delay`, and an
//! attempt that reaches that count holds the key until its outcome is known.
//! A success clears the account's (or the device's) key. A count that has
//! not moved for `memory` starts again. An attempt whose outcome is not
//! reported within `report_within` of its count (its node died, or the
//! database failed in between) counts no more: only failures that happened
//! pause anyone. An operator's block
//! (`user-is-blocked`) is another thing: it is not a count.
//!
//! One-time codes are guessed on keys of their own ([`before_code`]):
//! `code:<user>` from devices not trusted for the user, `code:<user>:<device>`
//! from a trusted one, and the address's key. A right password clears the
//! account's key, so a wrong code must not count there: whoever knows the
//! password would clear it before each new process. Only a right code
//! clears a code key. The code form has no CAPTCHA: a key past
//! `delay_after` pauses code entry, as a passkey's address is paused.
//!
//! Codes sent are counted the same way ([`before_send`]), on `send:<user>`
//! (`send:<user>:<device>` from a trusted device): from `send_delay_after`
//! codes on, each code sent pauses sending, so that nobody who knows a
//! user's phone number can have Portico send them code after code. A right
//! code clears the user's send key with the code key.
//!
//! Phone numbers typed on the `phone` step are counted on the address's
//! own key `phone:<ip>` ([`before_phone`]): a number nobody has is a
//! failure, a customer's number is taken back. From `address_captcha_after`
//! failures on, the step asks for a CAPTCHA in every process from the
//! address, so that nobody can learn which numbers are customers' by
//! starting process after process. It never pauses: the step has a
//! CAPTCHA, and many customers may share one address.

use std::net::IpAddr;

use portico_model::ids::UserId;
use portico_model::user::User;
use portico_storage::{CountAttempt, StorageError};
use time::{Duration, OffsetDateTime};

use crate::Identity;

/// The default of [`GuardPolicy::report_within`]: far more than a
/// password check (tens of milliseconds, queued behind others) and a
/// CAPTCHA verification take.
pub const REPORT_WITHIN: Duration = Duration::minutes(2);

/// Thresholds and delays of the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardPolicy {
    /// Failures on an account (or trusted device) after which a CAPTCHA is required.
    pub captcha_after: u32,
    /// Failures on an account (or trusted device) from which each failure pauses it.
    pub delay_after: u32,
    /// The first pause; each further failure doubles it.
    pub first_delay: Duration,
    /// The longest pause.
    pub max_delay: Duration,
    /// Failures from one client address after which a CAPTCHA is required.
    pub address_captcha_after: u32,
    /// Failures from one client address from which each failure pauses it.
    pub address_delay_after: u32,
    /// Codes sent to one user (untrusted devices) or trusted device from
    /// which each code sent pauses sending.
    pub send_delay_after: u32,
    /// A count that has not moved for this long starts again from zero.
    pub memory: Duration,
    /// How long a counted attempt may take to report its outcome; one
    /// never reported by then (its node died) counts no more.
    pub report_within: Duration,
}

impl Default for GuardPolicy {
    fn default() -> Self {
        Self {
            captcha_after: 3,
            delay_after: 5,
            first_delay: Duration::seconds(30),
            max_delay: Duration::hours(1),
            address_captcha_after: 10,
            address_delay_after: 30,
            send_delay_after: 10,
            memory: Duration::hours(24),
            report_within: REPORT_WITHIN,
        }
    }
}

impl GuardPolicy {
    /// The pause after a key's `count`-th failure, when `count` has reached
    /// `delay_after`: `first_delay`, doubled for each failure beyond it, at
    /// most `max_delay`.
    pub fn delay(&self, delay_after: u32, count: u32) -> Option<Duration> {
        let beyond = count.checked_sub(delay_after)?;
        let factor = 1_i32.checked_shl(beyond.min(30)).unwrap_or(i32::MAX);
        Some(self.first_delay.saturating_mul(factor).min(self.max_delay).max(self.first_delay.min(self.max_delay)))
    }
}

/// Who is trying a password: what the throttle keys are made of.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The user, when the typed login (or the process) names one.
    pub user: Option<&'a User>,
    /// The typed login, for an attempt on a login nobody has.
    pub principal: &'a str,
    /// The browser's device id, when the device is trusted for `user`.
    pub trusted_device: Option<&'a str>,
    /// The client's address.
    pub address: Option<IpAddr>,
}

/// One throttle key with its thresholds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    name: String,
    captcha_after: u32,
    delay_after: u32,
    /// Whether a success clears it (the account's or device's key; not the address's).
    cleared_by_success: bool,
}

impl Key {
    /// What the key counts, for the metrics: `account` (a user's, or an
    /// unknown login's), `device`, `address` or `code`.
    fn kind(&self) -> &'static str {
        match self.name.split_once(':').map(|(kind, _)| kind) {
            Some("device") => "device",
            Some("address") => "address",
            Some("code") => "code",
            Some("send") => "send",
            Some("phone") => "phone",
            _ => "account",
        }
    }

    /// Whether the key can ask for a CAPTCHA (`captcha_after` is
    /// `u32::MAX` on the keys of forms that have none).
    fn may_ask_for_captcha(&self) -> bool {
        self.captcha_after != u32::MAX
    }

    /// The client address's key: its failures of every kind count together.
    fn address(policy: &GuardPolicy, address: IpAddr, captcha_after: u32) -> Self {
        Self {
            name: format!("address:{address}"),
            captcha_after,
            delay_after: policy.address_delay_after,
            cleared_by_success: false,
        }
    }
}

fn keys(policy: &GuardPolicy, attempt: &Attempt<'_>) -> Vec<Key> {
    let key = |name: String, captcha_after, delay_after, cleared_by_success| Key {
        name,
        captcha_after,
        delay_after,
        cleared_by_success,
    };
    if let (Some(user), Some(device)) = (attempt.user, attempt.trusted_device) {
        return vec![key(format!("device:{}:{device}", user.id), policy.captcha_after, policy.delay_after, true)];
    }
    let account = match attempt.user {
        Some(user) => format!("account:{}", user.id),
        None => format!("login:{}", attempt.principal.to_lowercase()),
    };
    let mut keys = vec![key(account, policy.captcha_after, policy.delay_after, true)];
    keys.extend(attempt.address.map(|address| Key::address(policy, address, policy.address_captcha_after)));
    keys
}

/// The keys a one-time code is guessed on (see the module's summary).
fn code_keys(
    policy: &GuardPolicy,
    user: Option<UserId>,
    trusted_device: Option<&str>,
    address: Option<IpAddr>,
) -> Vec<Key> {
    let code =
        |name: String| Key { name, captcha_after: u32::MAX, delay_after: policy.delay_after, cleared_by_success: true };
    match (user, trusted_device) {
        (Some(user), Some(device)) => vec![code(format!("code:{user}:{device}"))],
        (user, _) => user
            .map(|user| code(format!("code:{user}")))
            .into_iter()
            .chain(address.map(|address| Key::address(policy, address, u32::MAX)))
            .collect(),
    }
}

/// The key a code sent to `user` is counted on (see the module's summary).
fn send_key(policy: &GuardPolicy, user: UserId, trusted_device: Option<&str>) -> Key {
    let name = match trusted_device {
        Some(device) => format!("send:{user}:{device}"),
        None => format!("send:{user}"),
    };
    Key { name, captcha_after: u32::MAX, delay_after: policy.send_delay_after, cleared_by_success: true }
}

/// The key phone numbers typed from `address` are counted on (see the
/// module's summary): a CAPTCHA from `address_captcha_after` failures on,
/// never a pause.
fn phone_key(policy: &GuardPolicy, address: IpAddr) -> Key {
    Key {
        name: format!("phone:{address}"),
        captcha_after: policy.address_captcha_after,
        delay_after: u32::MAX,
        cleared_by_success: false,
    }
}

/// Whether an attempt may check its password.
#[derive(Debug)]
pub enum Gate {
    /// Counted on every key: check the password, then report the outcome.
    Open(Counted),
    /// A pause is due on a key: nothing was counted or checked.
    Locked(OffsetDateTime),
    /// A CAPTCHA is required and was missing or not valid: nothing counted.
    Captcha,
}

/// The keys an open attempt was counted on, with its count on each, the
/// attempt's id (its outcome is reported under it) and the end of the hold
/// it set on a key it brought to `delay_after`.
#[derive(Debug)]
pub struct Counted {
    attempt: uuid::Uuid,
    keys: Vec<(Key, u32)>,
    hold_until: OffsetDateTime,
}

/// What a failed attempt leaves for the next one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AfterFailure {
    /// Attempts are paused until then.
    pub locked_until: Option<OffsetDateTime>,
    /// Failures left before a pause begins, when few are left (a warning).
    pub tries_before_pause: Option<u32>,
    /// Whether the next attempt needs a CAPTCHA.
    pub captcha_next: bool,
}

/// Failures left before a pause from which the page warns.
const WARN_WHEN_LEFT: u32 = 2;

/// Counts `attempt` on its keys, checking the CAPTCHA first when a key
/// already needs one, or afterwards when a parallel attempt took the last
/// free count. `captcha_token` is the form's `smart-token`.
///
/// # Errors
/// When storage fails.
pub async fn before_check(
    identity: &Identity,
    attempt: &Attempt<'_>,
    captcha_token: Option<&str>,
) -> Result<Gate, StorageError> {
    let gate = gate(identity, attempt, captcha_token).await?;
    let refused = match &gate {
        Gate::Open(_) => None,
        Gate::Locked(_) => Some("paused"),
        Gate::Captcha => Some("captcha"),
    };
    if let Some(reason) = refused {
        metrics::counter!("portico_login_guard_refusals_total", "reason" => reason).increment(1);
    }
    Ok(gate)
}

/// Counts a phone number typed from `address` on the address's phone key
/// (see the module's summary), checking the CAPTCHA (`captcha_token`, the
/// form's `smart-token`) when the key needs one, unless the step checked
/// one already (`captcha_passed`). An open gate is reported with [`failed`]
/// when nobody has the number, else with [`succeeded`] (taken back).
///
/// # Errors
/// When storage fails.
pub async fn before_phone(
    identity: &Identity,
    address: Option<IpAddr>,
    captcha_token: Option<&str>,
    captcha_passed: bool,
) -> Result<Gate, StorageError> {
    let keys = address.map(|address| phone_key(&identity.settings.guard, address)).into_iter().collect();
    let gate = gate_on(identity, keys, captcha_token, captcha_passed).await?;
    if matches!(gate, Gate::Captcha) {
        metrics::counter!("portico_login_guard_refusals_total", "reason" => "captcha").increment(1);
    }
    Ok(gate)
}

/// Whether the `phone` step's next submission from `address` will need a
/// CAPTCHA because of the address's phone key (for the page).
///
/// # Errors
/// When storage fails.
pub async fn phone_captcha_due(identity: &Identity, address: Option<IpAddr>) -> Result<bool, StorageError> {
    let keys: Vec<Key> = address.map(|address| phone_key(&identity.settings.guard, address)).into_iter().collect();
    captcha_due_on(identity, &keys).await
}

/// Counts a passkey answer on the client address's key only: the account
/// is unknown until the answer is checked, and a passkey cannot be guessed,
/// so only an address sending many bad answers is paused (with its password
/// attempts, which share the key). No CAPTCHA: a paused address waits.
///
/// # Errors
/// When storage fails.
pub async fn before_passkey(identity: &Identity, address: Option<IpAddr>) -> Result<Gate, StorageError> {
    let policy = &identity.settings.guard;
    let keys = address.map(|address| Key::address(policy, address, u32::MAX)).into_iter().collect();
    paused_only(identity, keys).await
}

/// Counts a guess of a one-time code by the process's `user` on the code's
/// keys (see the module's summary). No CAPTCHA: a paused key waits.
///
/// # Errors
/// When storage fails.
pub async fn before_code(
    identity: &Identity,
    user: Option<UserId>,
    trusted_device: Option<&str>,
    address: Option<IpAddr>,
) -> Result<Gate, StorageError> {
    paused_only(identity, code_keys(&identity.settings.guard, user, trusted_device, address)).await
}

/// Counts a code about to be sent to `user` (see the module's summary):
/// `Locked` when sending is paused, nothing counted. An open gate is
/// reported with [`sent`] once the code went out, or [`not_checked`] when
/// it could not be delivered.
///
/// # Errors
/// When storage fails.
pub async fn before_send(
    identity: &Identity,
    user: UserId,
    trusted_device: Option<&str>,
) -> Result<Gate, StorageError> {
    paused_only(identity, vec![send_key(&identity.settings.guard, user, trusted_device)]).await
}

/// A code counted by [`before_send`] went out: it stays counted, and
/// pauses sending from `send_delay_after` on.
///
/// # Errors
/// When storage fails.
pub async fn sent(identity: &Identity, counted: Counted) -> Result<(), StorageError> {
    failed(identity, counted).await.map(|_| ())
}

/// A right code, counted by [`before_code`]: as [`succeeded`], and the
/// sends to `user` (from `trusted_device`, when the code was asked for
/// there) start counting again, in the same write.
///
/// # Errors
/// When storage fails.
pub async fn code_succeeded(
    identity: &Identity,
    counted: Counted,
    user: Option<UserId>,
    trusted_device: Option<&str>,
) -> Result<(), StorageError> {
    let send = user.map(|user| send_key(&identity.settings.guard, user, trusted_device));
    settle_success(identity, counted, send.as_ref()).await
}

/// Counts an attempt on `keys`, none of which asks for a CAPTCHA.
async fn paused_only(identity: &Identity, keys: Vec<Key>) -> Result<Gate, StorageError> {
    let gate = gate_on(identity, keys, None, false).await?;
    if matches!(gate, Gate::Locked(_)) {
        metrics::counter!("portico_login_guard_refusals_total", "reason" => "paused").increment(1);
    }
    Ok(gate)
}

async fn gate(identity: &Identity, attempt: &Attempt<'_>, captcha_token: Option<&str>) -> Result<Gate, StorageError> {
    gate_on(identity, keys(&identity.settings.guard, attempt), captcha_token, false).await
}

/// Counts an attempt on `keys`; `captcha_passed` when the caller checked a
/// CAPTCHA of this request already (a token is good for one check).
async fn gate_on(
    identity: &Identity,
    keys: Vec<Key>,
    captcha_token: Option<&str>,
    captcha_passed: bool,
) -> Result<Gate, StorageError> {
    let policy = &identity.settings.guard;
    let now = identity.clock.now();
    let forget_before = now - policy.memory;
    // The keys are read first only when one of them may ask for a CAPTCHA,
    // so that an attempt without one is refused before anything is
    // counted. Otherwise the count itself refuses a paused or held key (and
    // the keys counted before it are taken back below): a read would only
    // add a round trip to every attempt.
    let mut captcha_needed = false;
    if keys.iter().any(Key::may_ask_for_captcha) {
        let names: Vec<&str> = keys.iter().map(|key| key.name.as_str()).collect();
        for (key, state) in keys.iter().zip(identity.store.throttles(&names, forget_before, now).await?) {
            if let Some(until) = state.locked_until.filter(|until| *until > now) {
                return Ok(Gate::Locked(until));
            }
            captcha_needed |= state.failures >= key.captcha_after;
        }
    }
    let mut captcha_passed = captcha_passed;
    if captcha_needed && !captcha_passed {
        if !captcha_valid(identity, captcha_token).await {
            return Ok(Gate::Captcha);
        }
        captcha_passed = true;
    }
    let hold_until = now + policy.first_delay;
    let mut counted = Counted { attempt: uuid::Uuid::new_v4(), keys: Vec::with_capacity(keys.len()), hold_until };
    for key in keys {
        let count = identity
            .store
            .count_attempt(CountAttempt {
                key: &key.name,
                attempt: counted.attempt,
                report_by: now + policy.report_within,
                now,
                forget_before,
                hold_from: key.delay_after,
                hold_until,
            })
            .await?;
        match count {
            Some(count) => counted.keys.push((key, count)),
            None => {
                // A parallel attempt holds the key: this one waits its turn.
                let until = identity.store.throttle(&key.name, forget_before, now).await?.locked_until;
                not_checked(identity, counted).await?;
                return Ok(Gate::Locked(until.unwrap_or(now + policy.first_delay)));
            }
        }
    }
    let over = counted.keys.iter().any(|(key, count)| *count > key.captcha_after);
    if over && !captcha_passed && !captcha_valid(identity, captcha_token).await {
        not_checked(identity, counted).await?;
        return Ok(Gate::Captcha);
    }
    Ok(Gate::Open(counted))
}

/// Whether `token` (a form's `smart-token`) is a valid CAPTCHA.
pub(crate) async fn captcha_valid(identity: &Identity, token: Option<&str>) -> bool {
    let token = token.unwrap_or("");
    !token.is_empty() && identity.captcha.verify(token, None).await
}

/// Takes back an attempt that was counted but not checked, with the holds
/// it set: an attempt that never reached its check must not pause anyone.
///
/// # Errors
/// When storage fails.
pub async fn not_checked(identity: &Identity, counted: Counted) -> Result<(), StorageError> {
    for (key, count) in &counted.keys {
        let held = (*count >= key.delay_after).then_some(counted.hold_until);
        identity.store.uncount_attempt(&key.name, counted.attempt, held).await?;
    }
    Ok(())
}

/// The password was wrong: pauses the keys whose count reached their
/// `delay_after`, and says what the next attempt faces.
///
/// # Errors
/// When storage fails.
pub async fn failed(identity: &Identity, counted: Counted) -> Result<AfterFailure, StorageError> {
    let policy = &identity.settings.guard;
    let now = identity.clock.now();
    let mut after = AfterFailure::default();
    for (key, count) in &counted.keys {
        identity.store.report_attempt(&key.name, counted.attempt).await?;
        if let Some(delay) = policy.delay(key.delay_after, *count) {
            let until = now + delay;
            identity.store.lock_throttle(&key.name, until).await?;
            metrics::counter!("portico_login_pauses_total", "key" => key.kind()).increment(1);
            after.locked_until = after.locked_until.max(Some(until));
        } else if key.cleared_by_success {
            let left = key.delay_after - count;
            if left <= WARN_WHEN_LEFT {
                after.tries_before_pause = Some(after.tries_before_pause.map_or(left, |l| l.min(left)));
            }
        }
        after.captcha_next |= *count >= key.captcha_after;
    }
    Ok(after)
}

/// The password was right: forgets the account's (or device's) count, and
/// takes this attempt back from the address's (a success is no failure,
/// but it does not excuse the address's other failures).
///
/// # Errors
/// When storage fails.
pub async fn succeeded(identity: &Identity, counted: Counted) -> Result<(), StorageError> {
    settle_success(identity, counted, None).await
}

/// A success of `counted`, clearing `also` with its own cleared keys.
async fn settle_success(identity: &Identity, counted: Counted, also: Option<&Key>) -> Result<(), StorageError> {
    let (cleared, taken_back): (Vec<&Key>, Vec<&Key>) =
        counted.keys.iter().map(|(key, _)| key).chain(also).partition(|key| key.cleared_by_success);
    let cleared: Vec<&str> = cleared.iter().map(|key| key.name.as_str()).collect();
    let taken_back: Vec<&str> = taken_back.iter().map(|key| key.name.as_str()).collect();
    identity.store.attempt_succeeded(counted.attempt, &cleared, &taken_back).await
}

/// Whether the next attempt of `attempt` will need a CAPTCHA (for the page,
/// so that it shows one whenever the server will demand it).
///
/// # Errors
/// When storage fails.
pub async fn captcha_due(identity: &Identity, attempt: &Attempt<'_>) -> Result<bool, StorageError> {
    captcha_due_on(identity, &keys(&identity.settings.guard, attempt)).await
}

async fn captcha_due_on(identity: &Identity, keys: &[Key]) -> Result<bool, StorageError> {
    if keys.is_empty() {
        return Ok(false);
    }
    let now = identity.clock.now();
    let forget_before = now - identity.settings.guard.memory;
    let names: Vec<&str> = keys.iter().map(|key| key.name.as_str()).collect();
    let states = identity.store.throttles(&names, forget_before, now).await?;
    Ok(keys.iter().zip(states).any(|(key, state)| state.failures >= key.captcha_after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_the_first_up_to_the_longest() {
        let policy = GuardPolicy::default();
        assert_eq!(policy.delay(5, 4), None, "no pause before delay_after");
        assert_eq!(policy.delay(5, 5), Some(Duration::seconds(30)));
        assert_eq!(policy.delay(5, 6), Some(Duration::minutes(1)));
        assert_eq!(policy.delay(5, 10), Some(Duration::minutes(16)));
        assert_eq!(policy.delay(5, 12), Some(Duration::hours(1)), "capped");
        assert_eq!(policy.delay(5, 400), Some(Duration::hours(1)), "no overflow");
    }

    #[test]
    fn a_trusted_device_has_its_own_key_and_no_address_key() {
        let policy = GuardPolicy::default();
        let user = User {
            id: portico_model::ids::UserId::random(),
            login: "ivan".into(),
            password_hash: String::new(),
            phone: None,
            email: None,
            name: None,
            phone_login_enabled: true,
            blocked: false,
            deactivated: false,
            created_at: OffsetDateTime::UNIX_EPOCH,
            provisioned: None,
            revision: 0,
        };
        let address = Some(IpAddr::from([192, 0, 2, 7]));
        let trusted =
            keys(&policy, &Attempt { user: Some(&user), principal: "ivan", trusted_device: Some("d1"), address });
        assert_eq!(trusted.len(), 1);
        assert_eq!(trusted[0].name, format!("device:{}:d1", user.id));
        let stranger = keys(&policy, &Attempt { user: Some(&user), principal: "ivan", trusted_device: None, address });
        let names: Vec<_> = stranger.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, [format!("account:{}", user.id).as_str(), "address:192.0.2.7"]);
        let unknown = keys(&policy, &Attempt { user: None, principal: "Nobody", trusted_device: None, address: None });
        assert_eq!(unknown[0].name, "login:nobody");
    }

    #[test]
    fn codes_are_guessed_on_keys_a_right_password_does_not_clear() {
        let policy = GuardPolicy::default();
        let user = portico_model::ids::UserId::random();
        let address = Some(IpAddr::from([192, 0, 2, 7]));
        let names = |keys: Vec<Key>| keys.into_iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(
            names(code_keys(&policy, Some(user), None, address)),
            [format!("code:{user}"), "address:192.0.2.7".into()]
        );
        assert_eq!(names(code_keys(&policy, Some(user), Some("d1"), address)), [format!("code:{user}:d1")]);
        assert_eq!(names(code_keys(&policy, None, None, address)), ["address:192.0.2.7"]);
        for key in code_keys(&policy, Some(user), None, address) {
            assert_eq!(key.captcha_after, u32::MAX, "the code form has no CAPTCHA: {}", key.name);
        }
        let code = &code_keys(&policy, Some(user), None, None)[0];
        assert_eq!((code.delay_after, code.kind()), (policy.delay_after, "code"));
        let send = send_key(&policy, user, None);
        assert_eq!(
            (send.name.as_str(), send.delay_after, send.kind()),
            (format!("send:{user}").as_str(), policy.send_delay_after, "send")
        );
        assert_eq!(send_key(&policy, user, Some("d1")).name, format!("send:{user}:d1"));
    }

    #[test]
    fn phone_numbers_count_per_address_towards_a_captcha_and_never_pause() {
        let policy = GuardPolicy::default();
        let key = phone_key(&policy, "192.0.2.7".parse().unwrap());
        assert_eq!((key.name.as_str(), key.kind()), ("phone:192.0.2.7", "phone"));
        assert_eq!(key.captcha_after, policy.address_captcha_after);
        assert!(!key.cleared_by_success, "a customer's number does not excuse the address's failures");
        assert_eq!(policy.delay(key.delay_after, 10_000), None, "never a pause");
    }
}
