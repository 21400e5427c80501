//! The HTTP edge of the permissions API as its document describes it: what
//! the endpoints read (headers, query, body) and the shapes of their
//! answers and errors. The v2 and ACC answers are maps whose keys come from
//! the permission model; their shapes are described here. The handlers
//! name these in their `#[utoipa::path]`; the document
//! ([`crate::openapi`]) is assembled on top, so nothing here depends on a
//! handler.

use portico_model::permissions::PermissionsContext;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, OneOfBuilder, Ref, Schema, Type};
use utoipa::{IntoParams, IntoResponses, PartialSchema, ToSchema};

use crate::error::{ErrorResponseDto, GenericError, UnauthorizedError};

/// The role request: the employee and the company.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EmployeeRoleRequest {
    pub user_id: uuid::Uuid,
    #[schema(example = "7700000001")]
    pub cnum: String,
}

/// `x-system-id`, required: the consumer service's id.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct SystemId {
    /// The consumer service's id.
    #[param(rename = "x-system-id", min_length = 1, example = "crm")]
    system_id: String,
}

/// `x-system-id`, optional on the deprecated v1 reads.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct OptionalSystemId {
    /// The consumer service's id.
    #[param(rename = "x-system-id", example = "crm")]
    system_id: Option<String>,
}

/// `cnum` of the v1 reads: the companies to report, repeated or comma-separated.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct CnumArray {
    /// Company numbers; all of the caller's companies when absent.
    #[param(explode = true, style = Form, value_type = Option<Vec<CompanyNumber>>, min_items = 1, max_items = 100)]
    cnum: Option<Vec<String>>,
}

/// One company number of a `cnum` array: up to 64 printable characters,
/// no white space around it, no comma (a comma separates values).
pub struct CompanyNumber;

impl utoipa::PartialSchema for CompanyNumber {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::request::MAX_VALUE))
            .pattern(Some(r"^[^,\s\x00-\x1f\x7f-\x9f]([^,\x00-\x1f\x7f-\x9f]*[^,\s\x00-\x1f\x7f-\x9f])?$"))
            .into()
    }
}

impl utoipa::ToSchema for CompanyNumber {}

/// The answer of the deprecated v1 reads.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum DeprecatedContext {
    /// The permissions context.
    #[response(status = 200, headers(
        ("Deprecation" = String, description = "RFC 9745: `@1767225600`"),
        ("Link" = String, description = "`</api/v2/permissions>; rel=\"successor-version\"`")
    ))]
    Context(PermissionsContext),
}

/// Every error of the caller's own permission reads (400, 401, 500).
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum LookupErrors {
    /// `header_is_missing`, `bad_request` (an unknown object, a bad parameter),
    /// `employee_not_found`, `role_not_found`.
    #[response(status = 400)]
    BadRequest(ErrorResponseDto),
    /// `Authorization` or `Id-Token` is missing or not valid.
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; `Bearer error=\"invalid_token\"` for a bad one; \
                `DPoP error=\"invalid_dpop_proof\"` (or `\"invalid_token\"`) with `algs` for a token sent with \
                the `DPoP` scheme (RFC 6750 §3.1, RFC 9449 §7.1)")))]
    Unauthorized(UnauthorizedError),
    /// The permission store failed; details only in the log. When the
    /// database is unavailable, with `Retry-After` and the message "the
    /// permission store is unavailable; try again later".
    #[response(status = 500, headers(("Retry-After" = u32, description = "Seconds to wait, when the database is unavailable.")))]
    Internal(GenericError),
}

/// 401.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum Unauthorized {
    /// `Authorization` or `Id-Token` is missing or not valid.
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; `Bearer error=\"invalid_token\"` for a bad one; \
                `DPoP error=\"invalid_dpop_proof\"` (or `\"invalid_token\"`) with `algs` for a token sent with \
                the `DPoP` scheme (RFC 6750 §3.1, RFC 9449 §7.1)")))]
    Unauthorized(UnauthorizedError),
}

/// 500.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum Internal {
    /// The permission store failed; details only in the log. When the
    /// database is unavailable, with `Retry-After` and the message "the
    /// permission store is unavailable; try again later".
    #[response(status = 500, headers(("Retry-After" = u32, description = "Seconds to wait, when the database is unavailable.")))]
    Internal(GenericError),
}

/// `{"<action>": true|false}`.
pub struct ActionFlags;

impl PartialSchema for ActionFlags {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(bool::schema()))
            .description(Some("Action name → allowed."))
            .into()
    }
}

impl ToSchema for ActionFlags {}

/// `{"<key>": {"<action>": true|false}}`.
pub struct CompanyFlags;

impl PartialSchema for CompanyFlags {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(Ref::from_schema_name("ActionFlags")))
            .description(Some("Key (company number, or ACC section) → action → allowed."))
            .into()
    }
}

impl ToSchema for CompanyFlags {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("ActionFlags".into(), ActionFlags::schema()));
    }
}

/// Nested groups ending in action flags.
pub struct PermissionGroup;

impl PartialSchema for PermissionGroup {
    fn schema() -> RefOr<Schema> {
        let value = OneOfBuilder::new().item(bool::schema()).item(Ref::from_schema_name("PermissionGroup"));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(Schema::OneOf(value.build())))))
            .description(Some("Sub-object or action name → a nested group, or allowed."))
            .into()
    }
}

impl ToSchema for PermissionGroup {}

/// `{"<cnum>": {"<object>": PermissionGroup}}`.
pub struct PermissionTree;

impl PartialSchema for PermissionTree {
    fn schema() -> RefOr<Schema> {
        let objects = ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(Ref::from_schema_name("PermissionGroup")));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(objects))
            .description(Some("Company number → object → nested groups → action → allowed."))
            .into()
    }
}

impl ToSchema for PermissionTree {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("PermissionGroup".into(), PermissionGroup::schema()));
    }
}
