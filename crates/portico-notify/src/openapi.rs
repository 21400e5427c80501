//! The merchant notification API's OpenAPI document: settings and
//! deliveries, with the merchant API key in `Authorization`.

use portico_model::notify::NotificationSettings;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::deliveries::{AttemptView, DeliveryPage, DeliveryView};
use crate::error::ErrorBody;

/// The merchant API key, in `Authorization` (the key itself, or `Bearer <key>`).
struct MerchantKey;

impl Modify for MerchantKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "merchantKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "The merchant API key (also the notifications' HMAC secret), with or without `Bearer `.",
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Portico merchant notifications",
        version = "1.0.0",
        description = "A merchant's notification settings and the deliveries of its notifications (spec part A)."
    ),
    paths(
        crate::settings::get_settings,
        crate::settings::put_settings,
        crate::deliveries::list,
        crate::deliveries::resend
    ),
    components(schemas(NotificationSettings, DeliveryPage, DeliveryView, AttemptView, ErrorBody)),
    modifiers(&MerchantKey),
    security(("merchantKey" = [])),
    tags((name = "notifications", description = "Merchant notifications"))
)]
pub struct NotificationsOpenApi;

/// The event intake of the internal API (internal token).
#[derive(OpenApi)]
#[openapi(
    paths(crate::intake::submit_payment, crate::intake::submit_refund, crate::intake::submit_subscription),
    tags((name = "notification events", description = "Events other bank systems submit for merchants"))
)]
pub struct IntakeApi;

/// The merchants' admin API (admin token).
#[derive(OpenApi)]
#[openapi(
    paths(
        crate::admin::list,
        crate::admin::create,
        crate::admin::rotate_key,
        crate::admin::deliveries,
        crate::admin::resend
    ),
    tags((name = "merchants", description = "Merchants and their API keys"))
)]
pub struct MerchantsAdminApi;
