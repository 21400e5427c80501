//! Each version's body, check string and signature, pinned against values
//! written out by hand (the signatures computed independently with
//! Python's `hmac` module).

use serde_json::json;
use time::macros::datetime;

use super::*;
use portico_model::notify::Kopecks;

const KEY: &[u8] = b"merchant-key-0123456789";

fn merchant() -> MerchantIds {
    MerchantIds { merchant_id: "m-1".into(), public_id: "pub-42".into(), sbp_merchant_id: "MA0000000042".into() }
}

fn payment_event() -> PaymentEvent {
    PaymentEvent {
        payment_id: "pay-1".into(),
        transaction_id: 9_001,
        order_id: "order-7".into(),
        amount: Kopecks(150_050),
        currency: "RUB".into(),
        status: "SUCCESS".into(),
        status_date: datetime!(2026-11-22 13:45:00 +03:00),
        payment_method: PaymentMethod::Sbp,
        sbp_transaction_id: Some("A1234".into()),
        qr_id: Some("QR0001".into()),
        comment: Some("Заказ 7".into()),
        additional_info: Some("info".into()),
        extra: serde_json::from_value(json!({"shop": "main"})).unwrap(),
        created_at: datetime!(2026-11-22 13:45:01 +03:00),
    }
}

fn value(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap()
}

#[test]
fn payment_v3() {
    let r = payment(PaymentVersion::V3, &merchant(), &payment_event()).unwrap();
    assert_eq!(
        r.body,
        r#"{"event":"PAYMENT","data":{"id":"pay-1","publicId":"pub-42","amount":1500.50,"order":{"id":"order-7"},"status":{"value":"SUCCESS","date":"2026-11-22T13:45:00+03:00"},"paymentMethod":"SBP","parameters":{"sbpTransactionId":"A1234","qrId":"QR0001"}}}"#
    );
    assert_eq!(r.check, "1500.50|pub-42|order-7|SUCCESS|2026-11-22T13:45:00+03:00");
    assert_eq!(crate::sign(KEY, &r.check), "1e12556faedcd2a91f4df08bbbed48baec8e6eead516c9cc83e5377889f2e8e7");
}

#[test]
fn payment_v2() {
    let r = payment(PaymentVersion::V2, &merchant(), &payment_event()).unwrap();
    assert_eq!(
        r.body,
        r#"{"event":"payment","transaction":{"id":9001,"orderId":"order-7","status":{"value":"SUCCESS","date":"2026-11-22T13:45:00+03:00"},"paymentMethod":"sbp","paymentParams":{"qrId":"QR0001"},"amount":1500.50,"comment":"Заказ 7","extra":{"shop":"main"}}}"#
    );
    // amount and order resolve inside `transaction`; publicId is the merchant's.
    assert_eq!(r.check, "1500.50|pub-42|order-7|SUCCESS|2026-11-22T13:45:00+03:00");
    assert_eq!(crate::sign(KEY, &r.check), "1e12556faedcd2a91f4df08bbbed48baec8e6eead516c9cc83e5377889f2e8e7");
}

#[test]
fn payment_v1() {
    let r = payment(PaymentVersion::V1, &merchant(), &payment_event()).unwrap();
    assert_eq!(
        r.body,
        r#"{"transactionId":9001,"qrId":"QR0001","sbpMerchantId":"MA0000000042","merchantId":"m-1","amount":1500.50,"currency":"RUB","transactionDate":"2026-11-22T13:45:00+03:00","paymentStatus":"SUCCESS","additionalInfo":"info","order":"order-7","createDate":"2026-11-22T13:45:01+03:00","extra":{"shop":"main"}}"#
    );
    assert_eq!(r.check, "1500.50|MA0000000042|order-7|SUCCESS|2026-11-22T13:45:00+03:00");
    assert_eq!(crate::sign(KEY, &r.check), "5a54d48a536bcb892dabbcbade1682beff5cb160a8c4ce3520067e15736db2c4");
}

#[test]
fn refund_v1() {
    let event = RefundEvent {
        refund_id: "refund-3".into(),
        sbp_transaction_id: Some("B777".into()),
        amount: Kopecks(9_905),
        status: "COMPLETED".into(),
        status_date: datetime!(2026-11-23 09:00:00 UTC),
        transaction_id: 9_001,
        order_id: "order-7".into(),
        qr_id: None,
    };
    let r = refund(RefundVersion::V1, &merchant(), &event).unwrap();
    assert_eq!(
        r.body,
        r#"{"refund":{"id":"refund-3","sbp":{"sbpTransactionId":"B777"},"amount":99.05,"status":{"value":"COMPLETED","date":"2026-11-23T09:00:00Z"},"paymentParams":{"transactionId":9001,"orderId":"order-7"}}}"#
    );
    assert_eq!(r.check, "99.05|pub-42|refund-3|COMPLETED|2026-11-23T09:00:00Z");
    assert_eq!(crate::sign(KEY, &r.check), "8abac7369cbfe9f980145e99d8d67bd18314a78356b255197a03ff81dbdfb9a7");
}

fn subscription_event() -> SubscriptionEvent {
    SubscriptionEvent {
        subscription_id: "sub-9".into(),
        status: "SUBSCRIBED".into(),
        status_date: datetime!(2026-11-24 10:30:00 +03:00),
        purpose: Some("Подписка".into()),
        payment_method: Some("ACQUIRING".into()),
        payment_system: Some("MIR".into()),
        card_number: Some("220220******1234".into()),
        expiration_date: Some("2028-11".into()),
        bank_name: Some("Банк".into()),
        bank_member_id: Some("100000000001".into()),
        qr_id: Some("QR0009".into()),
    }
}

#[test]
fn subscription_v2() {
    let r = subscription(SubscriptionVersion::V2, &merchant(), &subscription_event()).unwrap();
    assert_eq!(
        r.body,
        r#"{"event":"SUBSCRIPTION","data":{"publicId":"pub-42","id":"sub-9","status":{"value":"SUBSCRIBED","date":"2026-11-24T10:30:00+03:00"},"purpose":"Подписка","paymentMethod":"ACQUIRING","paymentSystem":"MIR","cardNumber":"220220******1234","expirationDate":"2028-11"}}"#
    );
    assert_eq!(r.check, "pub-42|sub-9|SUBSCRIBED|2026-11-24T10:30:00+03:00");
    assert_eq!(crate::sign(KEY, &r.check), "99bb21ee81ae27d899bb068effd4bc7cb8c20a3630c6978e54ba78a9a3ad3d14");
}

#[test]
fn subscription_v1() {
    let r = subscription(SubscriptionVersion::V1, &merchant(), &subscription_event()).unwrap();
    assert_eq!(
        r.body,
        r#"{"event":"SUBSCRIPTION","data":{"id":"sub-9","publicId":"pub-42","bank":{"name":"Банк","memberId":"100000000001"},"status":{"value":"SUBSCRIBED","date":"2026-11-24T10:30:00+03:00"},"qr":{"id":"QR0009"}}}"#
    );
    assert_eq!(r.check, "pub-42|sub-9|SUBSCRIBED|2026-11-24T10:30:00+03:00");
    assert_eq!(crate::sign(KEY, &r.check), "99bb21ee81ae27d899bb068effd4bc7cb8c20a3630c6978e54ba78a9a3ad3d14");
}

#[test]
fn amounts_are_written_the_same_in_body_and_check_string() {
    for (kopecks, text) in [(0, "0.00"), (5, "0.05"), (100, "1.00"), (-2_550, "-25.50"), (123_456_789, "1234567.89")] {
        let event = PaymentEvent { amount: Kopecks(kopecks), ..payment_event() };
        let r = payment(PaymentVersion::V3, &merchant(), &event).unwrap();
        assert!(r.body.contains(&format!("\"amount\":{text},")), "{}", r.body);
        assert!(r.check.starts_with(&format!("{text}|")));
        assert_eq!((value(&r.body)["data"]["amount"].as_f64().unwrap() * 100.0).round() as i64, kopecks);
    }
}
