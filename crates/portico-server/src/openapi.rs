//! The published API descriptions: OpenAPI 3.1 documents made from the
//! handlers' own annotations and types, one per interface, served at
//! `/openapi/<name>.json`, listed at `/openapi/index.json`, and read by
//! the API reference page at `/openapi/` (Swagger UI, vendored in
//! `assets/swagger-ui`). The same documents are committed under
//! `docs/openapi/`, and a test fails when they drift.

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::OpenApi as _;

/// A published document.
pub struct Document {
    /// Its file name without `.json`.
    pub name: &'static str,
    pub api: utoipa::openapi::OpenApi,
}

/// Every published document, made once.
pub fn documents() -> &'static [Document] {
    static DOCUMENTS: LazyLock<Vec<Document>> = LazyLock::new(|| {
        vec![
            Document { name: "identity", api: identity() },
            Document { name: "internal", api: internal() },
            Document { name: "notifications", api: portico_notify::openapi::NotificationsOpenApi::openapi() },
            Document { name: "permissions", api: portico_permissions::openapi::PermissionsOpenApi::openapi() },
            Document { name: "reports", api: portico_reports::openapi::ReportsApi::openapi() },
        ]
    });
    &DOCUMENTS
}

/// The identity document: the OAuth and login endpoints, with dynamic
/// client registration (served by the admin area).
fn identity() -> utoipa::openapi::OpenApi {
    let mut document = portico_identity::openapi::IdentityOpenApi::openapi();
    document.merge(portico_admin::openapi::RegistrationApiDoc::openapi());
    document
}

/// The internal and admin APIs: what the bank's own systems (internal
/// token) and operators (admin token) call. Made from the areas' own
/// documents.
fn internal() -> utoipa::openapi::OpenApi {
    use utoipa::openapi::{InfoBuilder, OpenApiBuilder};

    let info = InfoBuilder::new()
        .title("Portico internal and admin APIs")
        .version("1.0.0")
        .description(Some(
            "For the bank's own systems, with the internal token (`internal_token`): notification events, \
             brokerage data, the report operations of the bank's channels. For operators, with an admin token \
             (`admin_tokens`, `admin_token`): clients, users and their sessions, signing keys, the audit log, \
             merchants, brokerage data, the permission model. Each API is off while its token \
             is not configured.",
        ))
        .build();
    let mut document = OpenApiBuilder::new().info(info).build();
    document.merge(portico_notify::openapi::IntakeApi::openapi());
    document.merge(portico_reports::openapi::BrokerageIntakeApi::openapi());
    document.merge(portico_reports::openapi::ReportsAdminApi::openapi());
    document.merge(portico_reports::openapi::bank_channel());
    document.merge(portico_admin::openapi::AdminApiDoc::openapi());
    document.merge(portico_notify::openapi::MerchantsAdminApi::openapi());
    document.merge(portico_permissions::openapi::PermissionsAdminApi::openapi());
    portico_api::openapi::add_security(&mut document);
    document
}

impl Document {
    /// The document as committed and served: pretty JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.api).unwrap_or_default();
        text.push('\n');
        text
    }
}

const PAGE: &str = include_str!("../assets/openapi.html");
const PAGE_JS: &str = include_str!("../assets/openapi-reference.js");
const UI_JS: &str = include_str!("../assets/swagger-ui/swagger-ui-bundle.js");
const UI_PRESET: &str = include_str!("../assets/swagger-ui/swagger-ui-standalone-preset.js");
const UI_CSS: &str = include_str!("../assets/swagger-ui/swagger-ui.css");

/// The reference page's policy: Swagger UI sets inline styles and shows
/// inline SVG images; everything else comes from Portico itself.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

pub fn router() -> Router {
    Router::new()
        .route("/openapi", get(|| async { axum::response::Redirect::permanent("/openapi/") }))
        .route("/openapi/", get(page))
        .route("/openapi/index.json", get(index))
        .route("/openapi/assets/{file}", get(asset))
        .route("/openapi/{file}", get(document))
}

fn with_type(content_type: &'static str, cache: bool, body: impl IntoResponse) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if cache {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    }
    (headers, body).into_response()
}

async fn page() -> Response {
    let mut response = with_type("text/html; charset=utf-8", false, PAGE);
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    response
}

async fn index() -> Response {
    let list: Vec<serde_json::Value> = documents()
        .iter()
        .map(|d| {
            serde_json::json!({
                "name": d.name,
                "title": d.api.info.title,
                "version": d.api.info.version,
                "url": format!("/openapi/{}.json", d.name),
            })
        })
        .collect();
    axum::Json(list).into_response()
}

async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "swagger-ui-bundle.js" => with_type("text/javascript; charset=utf-8", true, UI_JS),
        "swagger-ui-standalone-preset.js" => with_type("text/javascript; charset=utf-8", true, UI_PRESET),
        "swagger-ui.css" => with_type("text/css; charset=utf-8", true, UI_CSS),
        "reference.js" => with_type("text/javascript; charset=utf-8", false, PAGE_JS),
        _ => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

async fn document(Path(file): Path<String>) -> Response {
    let found = file.strip_suffix(".json").and_then(|name| documents().iter().find(|d| d.name == name));
    match found {
        Some(document) => with_type("application/json", false, document.to_json()),
        None => {
            let names: Vec<String> = documents().iter().map(|d| format!("/openapi/{}.json", d.name)).collect();
            (StatusCode::NOT_FOUND, format!("no such document; published: {}", names.join(", "))).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/openapi` in the repository.
    fn committed_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi")
    }

    #[test]
    fn the_committed_documents_are_the_ones_the_code_makes() {
        let regenerate = "regenerate them with `cargo run -p portico -- openapi docs/openapi` and commit the result";
        let dir = committed_dir();
        for document in documents() {
            let path = dir.join(format!("{}.json", document.name));
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == document.to_json(),
                "docs/openapi/{}.json differs from what the code describes: {regenerate}",
                document.name
            );
        }
        let names: Vec<String> = documents().iter().map(|d| format!("{}.json", d.name)).collect();
        for entry in std::fs::read_dir(&dir).expect("docs/openapi") {
            let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
            assert!(names.contains(&name), "docs/openapi/{name} is no published document: remove it, or {regenerate}");
        }
    }

    #[test]
    fn every_document_is_openapi_3_1_with_the_specs_operation_ids() {
        let mut ids = Vec::new();
        for document in documents() {
            let json: serde_json::Value = serde_json::from_str(&document.to_json()).expect("JSON");
            assert_eq!(json["openapi"], "3.1.0", "{}", document.name);
            for operations in json["paths"].as_object().expect("paths").values() {
                for operation in operations.as_object().expect("operations").values() {
                    ids.push(operation["operationId"].as_str().expect("an operationId").to_owned());
                }
            }
        }
        let spec = [
            "authorize",
            "token",
            "revokeToken",
            "getJwks",
            "tokenLiveness",
            "getLoginPage",
            "submitLoginStep",
            "restartLogin",
            "updateLoginAuthMethod",
            "updateLoginLocale",
            "updateLoginOtpMethod",
            "getErrorPage",
            "createReportTask",
            "getReportTasks",
            "getReportTask",
            "getReportTypes",
            "downloadReportFile",
            "employeeRole",
            "permissionsV1Legacy",
            "permissionsV1LegacyByObj",
            "permissionsV2",
            "permissionsV2ByObj",
            "permissionsV2ByObjAndCnum",
            "getAccPermissionsByCnum",
            "getAccPermissionsByUserIdAndCnum",
            "getNotificationSettings",
            "putNotificationSettings",
            "getNotificationDeliveries",
            "resendNotificationDelivery",
            "submitPaymentEvent",
            "submitRefundEvent",
            "submitSubscriptionEvent",
            "submitBrokerageData",
            "loadBrokerageData",
            "listBrokerageAgreements",
            "bankCreateReportTask",
            "bankGetReportTasks",
            "bankGetReportTask",
            "bankGetReportTypes",
            "bankDownloadReportFile",
            "listMerchants",
            "createMerchant",
            "rotateMerchantKey",
            "exportPermissions",
            "applyPermissions",
        ];
        for id in spec {
            assert!(ids.iter().any(|i| i == id), "{id} is not described: {ids:?}");
        }
    }

    #[test]
    fn the_specs_dto_names_are_schema_names() {
        let mut names = Vec::new();
        for document in documents() {
            let json: serde_json::Value = serde_json::from_str(&document.to_json()).expect("JSON");
            names.extend(json["components"]["schemas"].as_object().expect("schemas").keys().cloned());
        }
        for name in [
            "TokenResponseDTO",
            "OAuth2ErrorDTO",
            "PublicJwksResponseDTO",
            "LoginViewDataDTO",
            "ErrorPageDataDTO",
            "ReportTask",
            "ReportFile",
            "ReportTaskType",
            "ReportTaskCreateRequest",
            "ErrorResponse",
            "EmployeeRoleResponse",
            "ErrorResponseDTO",
        ] {
            assert!(names.iter().any(|n| n == name), "no schema {name}: {names:?}");
        }
    }
}
