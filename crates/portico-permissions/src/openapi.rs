//! The permissions API's OpenAPI document (0.3.0), assembled from the
//! handlers' paths on top of the types of [`crate::edge`].

use portico_api::openapi::TokenPairSecurity;
use portico_model::permissions::{AccPermission, AccPermissionName, ContractContext, PermissionV1, PermissionsContext};
use utoipa::OpenApi;

use crate::edge::{ActionFlags, CompanyFlags, CompanyNumber, EmployeeRoleRequest, PermissionGroup, PermissionTree};
use crate::error::{ErrorResponseDto, GenericError, UnauthorizedError};
use crate::role::EmployeeRoleResponse;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Portico user permissions",
        version = "0.3.0",
        description = "What an employee of a corporate client may do, per company, object and action."
    ),
    paths(
        crate::role::employee_role,
        crate::v1::permissions,
        crate::v1::permissions_by_object,
        crate::v2::permissions,
        crate::v2::by_object,
        crate::v2::by_object_and_company,
        crate::acc::by_company,
        crate::acc::by_user_and_company
    ),
    components(schemas(
        CompanyNumber,
        EmployeeRoleRequest,
        EmployeeRoleResponse,
        PermissionsContext,
        ContractContext,
        PermissionV1,
        AccPermission,
        AccPermissionName,
        PermissionTree,
        CompanyFlags,
        ActionFlags,
        PermissionGroup,
        ErrorResponseDto,
        GenericError,
        UnauthorizedError
    )),
    modifiers(&TokenPairSecurity),
    security(("accessToken" = [], "idToken" = [])),
    tags((name = "permissions", description = "User permissions"))
)]
pub struct PermissionsOpenApi;

/// The permission model's admin API (admin token).
#[derive(OpenApi)]
#[openapi(
    paths(crate::admin::export, crate::admin::apply),
    tags((name = "permission model", description = "Export and apply the permission model"))
)]
pub struct PermissionsAdminApi;
