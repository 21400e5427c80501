//! The payload of each version, and its check string.
//!
//! Each renderer first writes the values once as text (amounts with
//! [`Kopecks`]'s two decimals, dates as RFC 3339 with the event's offset),
//! then builds the JSON body from those texts (numbers embedded raw) and
//! joins the same texts with `|` for the check string in the order of the
//! spec's template. Template names without a prefix resolve inside the
//! payload's main object (`transaction` for payment v2, `refund` for refund
//! v1); `publicId`, which those bodies do not carry, is the merchant's.

use serde::Serialize;
use serde_json::value::RawValue;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use portico_model::notify::{
    MerchantIds, PaymentEvent, PaymentMethod, PaymentVersion, RefundEvent, RefundVersion, SubscriptionEvent,
    SubscriptionVersion,
};

/// A body to send and the string its signature is computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub body: String,
    pub check: String,
}

#[derive(Debug, thiserror::Error)]
#[error("the notification cannot be rendered: {0}")]
pub struct RenderError(String);

fn date(value: OffsetDateTime) -> Result<String, RenderError> {
    value.format(&Rfc3339).map_err(|e| RenderError(e.to_string()))
}

fn number(text: &str) -> Result<Box<RawValue>, RenderError> {
    RawValue::from_string(text.to_owned()).map_err(|e| RenderError(e.to_string()))
}

fn json<T: Serialize>(value: &T) -> Result<String, RenderError> {
    serde_json::to_string(value).map_err(|e| RenderError(e.to_string()))
}

/// `{"event": ..., "data": ...}`.
#[derive(Serialize)]
struct Envelope<T> {
    event: &'static str,
    data: T,
}

#[derive(Serialize)]
struct Status<'a> {
    value: &'a str,
    date: &'a str,
}

/// A payment in the version the merchant chose.
///
/// # Errors
/// Only for a date that cannot be written (out of RFC 3339's range).
pub fn payment(version: PaymentVersion, merchant: &MerchantIds, event: &PaymentEvent) -> Result<Rendered, RenderError> {
    let amount = event.amount.to_string();
    let status_date = date(event.status_date)?;
    let status = Status { value: &event.status, date: &status_date };
    match version {
        PaymentVersion::V3 => {
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Data<'a> {
                id: &'a str,
                public_id: &'a str,
                amount: Box<RawValue>,
                order: Order<'a>,
                status: Status<'a>,
                payment_method: &'static str,
                parameters: Parameters<'a>,
            }
            #[derive(Serialize)]
            struct Order<'a> {
                id: &'a str,
            }
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Parameters<'a> {
                #[serde(skip_serializing_if = "Option::is_none")]
                sbp_transaction_id: Option<&'a str>,
                #[serde(skip_serializing_if = "Option::is_none")]
                qr_id: Option<&'a str>,
            }
            let body = Envelope {
                event: "PAYMENT",
                data: Data {
                    id: &event.payment_id,
                    public_id: &merchant.public_id,
                    amount: number(&amount)?,
                    order: Order { id: &event.order_id },
                    status,
                    payment_method: match event.payment_method {
                        PaymentMethod::Sbp => "SBP",
                        PaymentMethod::Acquiring => "ACQUIRING",
                    },
                    parameters: Parameters {
                        sbp_transaction_id: event.sbp_transaction_id.as_deref(),
                        qr_id: event.qr_id.as_deref(),
                    },
                },
            };
            let check = [amount.as_str(), &merchant.public_id, &event.order_id, &event.status, &status_date].join("|");
            Ok(Rendered { body: json(&body)?, check })
        }
        PaymentVersion::V2 => {
            #[derive(Serialize)]
            struct Body<'a> {
                event: &'static str,
                transaction: Transaction<'a>,
            }
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Transaction<'a> {
                id: i64,
                order_id: &'a str,
                status: Status<'a>,
                payment_method: &'static str,
                payment_params: PaymentParams<'a>,
                amount: Box<RawValue>,
                #[serde(skip_serializing_if = "Option::is_none")]
                comment: Option<&'a str>,
                extra: &'a serde_json::Map<String, serde_json::Value>,
            }
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct PaymentParams<'a> {
                #[serde(skip_serializing_if = "Option::is_none")]
                qr_id: Option<&'a str>,
            }
            let body = Body {
                event: "payment",
                transaction: Transaction {
                    id: event.transaction_id,
                    order_id: &event.order_id,
                    status,
                    payment_method: match event.payment_method {
                        PaymentMethod::Sbp => "sbp",
                        PaymentMethod::Acquiring => "acquiring",
                    },
                    payment_params: PaymentParams { qr_id: event.qr_id.as_deref() },
                    amount: number(&amount)?,
                    comment: event.comment.as_deref(),
                    extra: &event.extra,
                },
            };
            let check = [amount.as_str(), &merchant.public_id, &event.order_id, &event.status, &status_date].join("|");
            Ok(Rendered { body: json(&body)?, check })
        }
        PaymentVersion::V1 => {
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Body<'a> {
                transaction_id: i64,
                #[serde(skip_serializing_if = "Option::is_none")]
                qr_id: Option<&'a str>,
                sbp_merchant_id: &'a str,
                merchant_id: &'a str,
                amount: Box<RawValue>,
                currency: &'a str,
                transaction_date: &'a str,
                payment_status: &'a str,
                #[serde(skip_serializing_if = "Option::is_none")]
                additional_info: Option<&'a str>,
                order: &'a str,
                create_date: &'a str,
                extra: &'a serde_json::Map<String, serde_json::Value>,
            }
            let created = date(event.created_at)?;
            let body = Body {
                transaction_id: event.transaction_id,
                qr_id: event.qr_id.as_deref(),
                sbp_merchant_id: &merchant.sbp_merchant_id,
                merchant_id: &merchant.merchant_id,
                amount: number(&amount)?,
                currency: &event.currency,
                transaction_date: &status_date,
                payment_status: &event.status,
                additional_info: event.additional_info.as_deref(),
                order: &event.order_id,
                create_date: &created,
                extra: &event.extra,
            };
            let check =
                [amount.as_str(), &merchant.sbp_merchant_id, &event.order_id, &event.status, &status_date].join("|");
            Ok(Rendered { body: json(&body)?, check })
        }
    }
}

/// A refund (v1, the only version).
///
/// # Errors
/// Only for a date that cannot be written.
pub fn refund(_version: RefundVersion, merchant: &MerchantIds, event: &RefundEvent) -> Result<Rendered, RenderError> {
    #[derive(Serialize)]
    struct Body<'a> {
        refund: Refund<'a>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Refund<'a> {
        id: &'a str,
        sbp: Sbp<'a>,
        amount: Box<RawValue>,
        status: Status<'a>,
        payment_params: PaymentParams<'a>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Sbp<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        sbp_transaction_id: Option<&'a str>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct PaymentParams<'a> {
        transaction_id: i64,
        order_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        qr_id: Option<&'a str>,
    }
    let amount = event.amount.to_string();
    let status_date = date(event.status_date)?;
    let body = Body {
        refund: Refund {
            id: &event.refund_id,
            sbp: Sbp { sbp_transaction_id: event.sbp_transaction_id.as_deref() },
            amount: number(&amount)?,
            status: Status { value: &event.status, date: &status_date },
            payment_params: PaymentParams {
                transaction_id: event.transaction_id,
                order_id: &event.order_id,
                qr_id: event.qr_id.as_deref(),
            },
        },
    };
    let check = [amount.as_str(), &merchant.public_id, &event.refund_id, &event.status, &status_date].join("|");
    Ok(Rendered { body: json(&body)?, check })
}

/// A subscription in the version the merchant chose.
///
/// # Errors
/// Only for a date that cannot be written.
pub fn subscription(
    version: SubscriptionVersion,
    merchant: &MerchantIds,
    event: &SubscriptionEvent,
) -> Result<Rendered, RenderError> {
    let status_date = date(event.status_date)?;
    let status = Status { value: &event.status, date: &status_date };
    let body = match version {
        SubscriptionVersion::V2 => {
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Data<'a> {
                public_id: &'a str,
                id: &'a str,
                status: Status<'a>,
                purpose: Option<&'a str>,
                payment_method: Option<&'a str>,
                payment_system: Option<&'a str>,
                card_number: Option<&'a str>,
                expiration_date: Option<&'a str>,
            }
            json(&Envelope {
                event: "SUBSCRIPTION",
                data: Data {
                    public_id: &merchant.public_id,
                    id: &event.subscription_id,
                    status,
                    purpose: event.purpose.as_deref(),
                    payment_method: event.payment_method.as_deref(),
                    payment_system: event.payment_system.as_deref(),
                    card_number: event.card_number.as_deref(),
                    expiration_date: event.expiration_date.as_deref(),
                },
            })?
        }
        SubscriptionVersion::V1 => {
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Data<'a> {
                id: &'a str,
                public_id: &'a str,
                bank: Bank<'a>,
                status: Status<'a>,
                qr: Qr<'a>,
            }
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Bank<'a> {
                name: Option<&'a str>,
                member_id: Option<&'a str>,
            }
            #[derive(Serialize)]
            struct Qr<'a> {
                id: Option<&'a str>,
            }
            json(&Envelope {
                event: "SUBSCRIPTION",
                data: Data {
                    id: &event.subscription_id,
                    public_id: &merchant.public_id,
                    bank: Bank { name: event.bank_name.as_deref(), member_id: event.bank_member_id.as_deref() },
                    status,
                    qr: Qr { id: event.qr_id.as_deref() },
                },
            })?
        }
    };
    let check = [merchant.public_id.as_str(), &event.subscription_id, &event.status, &status_date].join("|");
    Ok(Rendered { body, check })
}

#[cfg(test)]
mod tests;
