//! What `/scim/v2` says about itself (RFC 7643 §5–§7): the service
//! provider's configuration, the `User` resource type and the two schemas,
//! each listing only the attributes Portico keeps.

use serde_json::{Value, json};

pub const CORE_USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const ENTERPRISE_USER: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
/// Portico's read-only extension: a user's passkeys.
pub const PASSKEYS: &str = "urn:portico:params:scim:schemas:extension:passkeys:1.0:User";
pub const LIST_RESPONSE: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const SEARCH_REQUEST: &str = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";
pub const ERROR: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// Results per page at most.
pub const MAX_RESULTS: u32 = 200;
/// Values a multi-valued attribute (`emails`, `phoneNumbers`) may hold.
pub const MAX_VALUES: usize = 10;
/// Characters any text value kept for the provisioning system may hold.
pub const MAX_TEXT: usize = 1024;
/// Characters of a filter, and the clauses it may join with `and`.
pub const MAX_FILTER_CHARS: usize = 1000;
pub const MAX_FILTER_CLAUSES: usize = 10;
/// Names an `attributes` or `excludedAttributes` list may hold.
pub const MAX_ATTRIBUTE_NAMES: usize = 50;
/// Operations one PATCH may carry.
pub const MAX_OPERATIONS: usize = 50;

pub fn service_provider_config(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": MAX_RESULTS},
        "changePassword": {"supported": true},
        "sort": {"supported": false},
        "etag": {"supported": true},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "The SCIM token (scim_token, PORTICO_SCIM_TOKEN) as Authorization: Bearer <token>.",
            "primary": true
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{base}/ServiceProviderConfig")}
    })
}

pub fn user_resource_type(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
        "id": "User",
        "name": "User",
        "endpoint": "/Users",
        "description": "A Portico user: userName is the login, active is not blocked.",
        "schema": CORE_USER,
        "schemaExtensions": [{"schema": ENTERPRISE_USER, "required": false}, {"schema": PASSKEYS, "required": false}],
        "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User")}
    })
}

fn attribute(name: &str, description: &str) -> Value {
    json!({
        "name": name, "type": "string", "multiValued": false, "description": description,
        "required": false, "caseExact": false, "mutability": "readWrite", "returned": "default",
        "uniqueness": "none"
    })
}

fn multi_valued(name: &str, description: &str, kinds: &[&str]) -> Value {
    json!({
        "name": name, "type": "complex", "multiValued": true, "description": description,
        "required": false, "mutability": "readWrite", "returned": "default", "uniqueness": "none",
        "subAttributes": [
            attribute("value", "The value; the primary one (or the first) is Portico's."),
            {
                "name": "type", "type": "string", "multiValued": false, "description": "What kind it is.",
                "required": false, "caseExact": false, "canonicalValues": kinds,
                "mutability": "readWrite", "returned": "default", "uniqueness": "none"
            },
            {
                "name": "primary", "type": "boolean", "multiValued": false,
                "description": "The one Portico uses.", "required": false,
                "mutability": "readWrite", "returned": "default"
            }
        ]
    })
}

pub fn core_user_schema(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": CORE_USER,
        "name": "User",
        "description": "User Account",
        "attributes": [
            {
                "name": "userName", "type": "string", "multiValued": false,
                "description": "The login typed on the login page: 1 to 64 characters, without spaces; \
                                compared, for uniqueness, sign-in and filters, as its PRECIS UsernameCaseMapped \
                                form (IVAN is ivan).",
                "required": true, "caseExact": false, "mutability": "readWrite", "returned": "default",
                "uniqueness": "server"
            },
            {
                "name": "name", "type": "complex", "multiValued": false,
                "description": "The user's name; Portico shows the formatted one (else given, middle and family names).",
                "required": false, "mutability": "readWrite", "returned": "default", "uniqueness": "none",
                "subAttributes": [
                    attribute("formatted", "The full name."),
                    attribute("familyName", "The family name."),
                    attribute("givenName", "The given name."),
                    attribute("middleName", "The middle name.")
                ]
            },
            attribute("displayName", "The name to show, when there is no name."),
            {
                "name": "active", "type": "boolean", "multiValued": false,
                "description": "false blocks the user: their sessions end, their tokens stop working, no login succeeds.",
                "required": false, "mutability": "readWrite", "returned": "default"
            },
            {
                "name": "password", "type": "string", "multiValued": false,
                "description": "10 to 256 characters, not the login; never returned.",
                "required": false, "caseExact": true, "mutability": "writeOnly", "returned": "never",
                "uniqueness": "none"
            },
            multi_valued("emails", "E-mail addresses.", &["work", "home", "other"]),
            multi_valued("phoneNumbers", "Phone numbers; the primary one signs in and receives codes.", &["mobile", "work", "home", "other"])
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{CORE_USER}")}
    })
}

pub fn enterprise_user_schema(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": ENTERPRISE_USER,
        "name": "EnterpriseUser",
        "description": "Enterprise User; kept for the provisioning system as sent.",
        "attributes": [
            attribute("employeeNumber", "The employee's number."),
            attribute("costCenter", "The cost center."),
            attribute("organization", "The organization."),
            attribute("division", "The division."),
            attribute("department", "The department.")
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{ENTERPRISE_USER}")}
    })
}

fn read_only(name: &str, kind: &str, description: &str) -> Value {
    json!({
        "name": name, "type": kind, "multiValued": false, "description": description,
        "required": false, "caseExact": true, "mutability": "readOnly", "returned": "default",
        "uniqueness": "none"
    })
}

/// Portico's extension: the user's passkeys, read only (an operator removes
/// one through the admin API or the console), returned by default.
pub fn passkeys_schema(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": PASSKEYS,
        "name": "Passkeys",
        "description": "The user's passkeys (WebAuthn credentials); read only.",
        "attributes": [{
            "name": "passkeys", "type": "complex", "multiValued": true,
            "description": "The user's passkeys, oldest first.",
            "required": false, "mutability": "readOnly", "returned": "default", "uniqueness": "none",
            "subAttributes": [
                read_only("value", "string", "Portico's id of the passkey (as the admin API names it)."),
                read_only("display", "string", "The passkey's name."),
                read_only("created", "dateTime", "When it was created."),
                read_only("lastUsed", "dateTime", "When it last signed the user in."),
                read_only("locked", "boolean", "Locked after a signature counter that did not advance: it signs nobody in.")
            ]
        }],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{PASSKEYS}")}
    })
}

/// The extension's value for `passkeys`.
pub fn passkeys_value(passkeys: &[portico_model::passkey::Passkey]) -> Value {
    let time = |at: time::OffsetDateTime| at.format(&time::format_description::well_known::Rfc3339).ok();
    let values: Vec<Value> = passkeys
        .iter()
        .map(|p| {
            json!({
                "value": p.id.to_string(), "display": p.name, "created": time(p.created_at),
                "lastUsed": p.last_used_at.and_then(time), "locked": p.locked_at.is_some()
            })
        })
        .collect();
    // An unassigned attribute is left out (RFC 7643 §2.5).
    if values.is_empty() { json!({}) } else { json!({ "passkeys": values }) }
}

/// The attributes of the enterprise extension Portico keeps.
pub const ENTERPRISE_ATTRIBUTES: [&str; 5] = ["employeeNumber", "costCenter", "organization", "division", "department"];

/// The sub-attributes of `name` Portico keeps.
pub const NAME_PARTS: [&str; 4] = ["formatted", "familyName", "givenName", "middleName"];

/// A list response (RFC 7644 §3.4.2).
pub fn list(resources: Vec<Value>, total: u64, start_index: u32) -> Value {
    json!({
        "schemas": [LIST_RESPONSE],
        "totalResults": total,
        "startIndex": start_index,
        "itemsPerPage": resources.len(),
        "Resources": resources
    })
}
