//! What the process tests share: `portico worker` as a real child process.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};

use portico_model::notify::{
    Delivery, EventKind, Kopecks, MerchantIds, NotificationSettings, OperationTypes, PaymentEvent, PaymentMethod,
    StoredEvent,
};
use portico_tests::TestApp;
use time::OffsetDateTime;

/// Merchant `ids`, made at `now` with its callback at `callback_url`: its API key.
pub async fn merchant(app: &TestApp, ids: &MerchantIds, callback_url: String, now: OffsetDateTime) -> String {
    let key =
        portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids.clone(), now).await.unwrap();
    let settings = NotificationSettings { callback_url, operation_types: OperationTypes::default() };
    app.store.save_notification_settings(&ids.merchant_id, &settings).await.unwrap();
    key
}

/// A successful payment of `amount` kopecks for `order` (event `ev-{order}`)
/// to merchant `merchant_id`, stored with its delivery due at `now`.
pub async fn payment_due(
    app: &TestApp,
    merchant_id: &str,
    order: &str,
    transaction_id: i64,
    amount: i64,
    now: OffsetDateTime,
) {
    let payment = PaymentEvent {
        payment_id: format!("pay-{order}"),
        transaction_id,
        order_id: order.to_owned(),
        amount: Kopecks(amount),
        currency: "RUB".into(),
        status: "SUCCESS".into(),
        status_date: now,
        payment_method: PaymentMethod::Sbp,
        sbp_transaction_id: None,
        qr_id: None,
        comment: None,
        additional_info: None,
        extra: serde_json::Map::new(),
        created_at: now,
    };
    let event = StoredEvent {
        event_id: format!("ev-{order}"),
        merchant_id: merchant_id.to_owned(),
        kind: EventKind::Payment,
        payload: serde_json::to_value(payment).unwrap(),
        received_at: now,
        trace_parent: None,
    };
    let delivery = Delivery::new(event.event_id.clone(), merchant_id.to_owned(), now);
    app.store.record_event(&event, &delivery).await.unwrap();
}

/// `portico serve --demo` on a free loopback port with its data in `dir`
/// and `settings` as environment variables: its log (`info`) on a piped
/// stderr, its banner on a piped stdout.
pub fn serve_demo(dir: &std::path::Path, settings: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_portico"))
        .args(["serve", "--demo"])
        .env_clear()
        .env("PORTICO_DATA_DIR", dir)
        .env("PORTICO_LISTEN", "127.0.0.1:0")
        .env("PORTICO_LOG", "info")
        .envs(settings.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start portico serve")
}

/// A `portico worker` process, killed and reaped when dropped.
pub struct Worker(Child);

impl Worker {
    /// Starts `portico worker` on the app's database and data folder, with
    /// `settings` as environment variables.
    pub fn start(app: &TestApp, settings: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_portico"));
        command
            .arg("worker")
            .env_clear()
            .env("PORTICO_DATABASE_URL", app.config.database_url.as_deref().unwrap())
            .env("PORTICO_DATA_DIR", &app.config.data_dir)
            .env("PORTICO_LOG", "warn");
        for (name, value) in settings {
            command.env(name, value);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start portico worker");
        Self(child)
    }

    /// SIGKILL: no chance to finish anything.
    pub fn kill(&mut self) {
        self.0.kill().expect("SIGKILL the worker");
        self.0.wait().expect("reap the worker");
    }

    pub fn is_running(&mut self) -> bool {
        self.0.try_wait().expect("worker status").is_none()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
