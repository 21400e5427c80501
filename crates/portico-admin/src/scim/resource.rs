//! A Portico user as a SCIM `User` (RFC 7643 §4.1), and back.
//!
//! Portico's own fields are the truth: `userName` is the login, `active`
//! is "not blocked", the primary (else the first) e-mail and phone number
//! are the user's, and the name is `name.formatted` (else the given,
//! middle and family names, else `displayName`). Everything else the
//! provisioning system sends of the published schemas — `externalId`, the
//! parts of the name, every e-mail and phone as typed, the enterprise
//! extension — is kept beside the user and returned as sent, as long as it
//! still agrees with Portico's fields (after an operator changed the phone,
//! the phone is shown as Portico has it).

use portico_model::otp::normalize_phone;
use portico_model::user::User;
use serde_json::{Map, Value, json};

use super::schema::{CORE_USER, ENTERPRISE_ATTRIBUTES, ENTERPRISE_USER, MAX_TEXT, MAX_VALUES, NAME_PARTS};
use crate::service::ProvisionedUser;

/// Why a resource cannot be taken (RFC 7644 §3.12 `scimType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub scim_type: &'static str,
    pub detail: String,
}

impl Refusal {
    pub fn new(scim_type: &'static str, detail: impl Into<String>) -> Self {
        Self { scim_type, detail: detail.into() }
    }
}

fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned).filter(|s| !s.is_empty())
}

/// The primary (else the first) value of a multi-valued attribute.
fn primary_value(values: Option<&Value>) -> Option<String> {
    let values = values?.as_array()?;
    let primary = values.iter().find(|v| v.get("primary").and_then(Value::as_bool) == Some(true));
    text(primary.or(values.first())?.get("value"))
}

/// The name Portico shows, from what the provisioning system sent.
fn derived_name(kept: &Map<String, Value>) -> Option<String> {
    if let Some(name) = kept.get("name") {
        if let Some(formatted) = text(name.get("formatted")) {
            return Some(formatted);
        }
        let parts: Vec<String> =
            ["givenName", "middleName", "familyName"].iter().filter_map(|part| text(name.get(*part))).collect();
        if !parts.is_empty() {
            return Some(parts.join(" "));
        }
    }
    text(kept.get("displayName"))
}

/// The user as a SCIM resource at `location`.
pub fn render(user: &User, location: &str) -> Value {
    let empty = Map::new();
    let kept = user.provisioned.as_ref().and_then(Value::as_object).unwrap_or(&empty);
    let mut resource = Map::new();
    let mut schemas = vec![json!(CORE_USER)];
    if kept.contains_key(ENTERPRISE_USER) {
        schemas.push(json!(ENTERPRISE_USER));
    }
    resource.insert("schemas".into(), Value::Array(schemas));
    resource.insert("id".into(), json!(user.id.to_string()));
    if let Some(external) = kept.get("externalId") {
        resource.insert("externalId".into(), external.clone());
    }
    resource.insert("userName".into(), json!(user.login));
    let derived = derived_name(kept);
    if let Some(name) = kept.get("name").filter(|_| derived == user.name) {
        resource.insert("name".into(), name.clone());
    } else if let Some(name) = user.name.as_ref().filter(|name| derived.as_ref() != Some(name)) {
        resource.insert("name".into(), json!({"formatted": name}));
    }
    if let Some(display) = kept.get("displayName") {
        resource.insert("displayName".into(), display.clone());
    }
    // `active` is the provisioning system's own state: an operator's block
    // is not shown as `active: false` (nor lifted by `active: true`).
    if user.provisioned.is_none() || user.deactivated || kept.contains_key("active") {
        resource.insert("active".into(), json!(!user.deactivated));
    }
    let kept_email = primary_value(kept.get("emails"));
    if kept_email == user.email {
        if let Some(emails) = kept.get("emails") {
            resource.insert("emails".into(), emails.clone());
        }
    } else if let Some(email) = &user.email {
        resource.insert("emails".into(), json!([{"value": email, "primary": true}]));
    }
    let kept_phone = primary_value(kept.get("phoneNumbers")).and_then(|p| normalize_phone(&p));
    if kept_phone == user.phone {
        if let Some(phones) = kept.get("phoneNumbers") {
            resource.insert("phoneNumbers".into(), phones.clone());
        }
    } else if let Some(phone) = &user.phone {
        resource.insert("phoneNumbers".into(), json!([{"value": phone, "type": "mobile", "primary": true}]));
    }
    if let Some(enterprise) = kept.get(ENTERPRISE_USER) {
        resource.insert(ENTERPRISE_USER.into(), enterprise.clone());
    }
    let created = user.created_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    // The version is the user's revision, as the `ETag` answers it.
    let version = format!("\"{}\"", user.revision);
    let meta = json!({"resourceType": "User", "created": created, "location": location, "version": version});
    resource.insert("meta".into(), meta);
    Value::Object(resource)
}

/// `text` if it is within [`MAX_TEXT`] characters.
fn bounded(text: &str, name: &str) -> Result<Value, Refusal> {
    if text.chars().count() > MAX_TEXT {
        return Err(Refusal::new("invalidValue", format!("{name}: at most {MAX_TEXT} characters")));
    }
    Ok(json!(text))
}

fn string_or_absent(resource: &Map<String, Value>, name: &str) -> Result<Option<Value>, Refusal> {
    match resource.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(bounded(s, name)?)),
        Some(_) => Err(Refusal::new("invalidValue", format!("{name} must be a string"))),
    }
}

/// Keeps the sub-attributes Portico publishes of a complex value.
fn complex(value: &Value, name: &str, parts: &[&str]) -> Result<Value, Refusal> {
    let Some(object) = value.as_object() else {
        return Err(Refusal::new("invalidValue", format!("{name} must be an object")));
    };
    let mut kept = Map::new();
    for part in parts {
        match object.get(*part) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                kept.insert((*part).to_owned(), bounded(s, &format!("{name}.{part}"))?);
            }
            Some(_) => return Err(Refusal::new("invalidValue", format!("{name}.{part} must be a string"))),
        }
    }
    Ok(Value::Object(kept))
}

/// Keeps `value`, `type` and `primary` of each element; at most one primary.
fn multi_valued(value: &Value, name: &str) -> Result<Value, Refusal> {
    let Some(items) = value.as_array() else {
        return Err(Refusal::new("invalidValue", format!("{name} must be an array")));
    };
    if items.len() > MAX_VALUES {
        return Err(Refusal::new("invalidValue", format!("{name}: at most {MAX_VALUES} values")));
    }
    let mut kept = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let object =
            item.as_object().ok_or_else(|| Refusal::new("invalidValue", format!("{name}[{i}] must be an object")))?;
        let mut element = Map::new();
        match object.get("value") {
            Some(Value::String(s)) if !s.is_empty() => {
                element.insert("value".into(), bounded(s, &format!("{name}[{i}].value"))?);
            }
            _ => return Err(Refusal::new("invalidValue", format!("{name}[{i}].value must be a non-empty string"))),
        }
        if let Some(kind) = object.get("type").filter(|v| !v.is_null()) {
            let kind = kind
                .as_str()
                .ok_or_else(|| Refusal::new("invalidValue", format!("{name}[{i}].type must be a string")))?;
            element.insert("type".into(), bounded(kind, &format!("{name}[{i}].type"))?);
        }
        if let Some(primary) = object.get("primary").filter(|v| !v.is_null()) {
            let primary = primary
                .as_bool()
                .ok_or_else(|| Refusal::new("invalidValue", format!("{name}[{i}].primary must be a boolean")))?;
            element.insert("primary".into(), json!(primary));
        }
        kept.push(Value::Object(element));
    }
    let primaries = kept.iter().filter(|e| e.get("primary").and_then(Value::as_bool) == Some(true)).count();
    if primaries > 1 {
        return Err(Refusal::new("invalidValue", format!("{name}: at most one primary value")));
    }
    Ok(Value::Array(kept))
}

/// A resource as sent (POST, PUT, or what a PATCH leaves), read into the
/// user it states. Attributes outside the published schemas are ignored,
/// as are `id`, `meta` and `schemas`.
///
/// # Errors
/// `invalidSyntax` for a body that is not a resource, `invalidValue` for a
/// value of the wrong type.
pub fn parse(resource: &Value) -> Result<ProvisionedUser, Refusal> {
    let Some(resource) = resource.as_object() else {
        return Err(Refusal::new("invalidSyntax", "the body must be a JSON object"));
    };
    let login = match resource.get("userName") {
        Some(Value::String(login)) => login.clone(),
        _ => return Err(Refusal::new("invalidValue", "userName is required: the user's login")),
    };
    let password = match resource.get("password") {
        None | Some(Value::Null) => None,
        Some(Value::String(password)) => Some(password.clone()),
        Some(_) => return Err(Refusal::new("invalidValue", "password must be a string")),
    };
    let active = match resource.get("active") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(active)) => Some(*active),
        Some(_) => return Err(Refusal::new("invalidValue", "active must be true or false")),
    };
    let mut kept = Map::new();
    if let Some(external) = string_or_absent(resource, "externalId")? {
        kept.insert("externalId".into(), external);
    }
    if let Some(display) = string_or_absent(resource, "displayName")? {
        kept.insert("displayName".into(), display);
    }
    if let Some(name) = resource.get("name").filter(|v| !v.is_null()) {
        kept.insert("name".into(), complex(name, "name", &NAME_PARTS)?);
    }
    for attribute in ["emails", "phoneNumbers"] {
        if let Some(values) = resource.get(attribute).filter(|v| !v.is_null()) {
            kept.insert(attribute.into(), multi_valued(values, attribute)?);
        }
    }
    if let Some(enterprise) = resource.get(ENTERPRISE_USER).filter(|v| !v.is_null()) {
        kept.insert(ENTERPRISE_USER.into(), complex(enterprise, ENTERPRISE_USER, &ENTERPRISE_ATTRIBUTES)?);
    }
    if active.is_some() {
        kept.insert("active".into(), json!(true));
    }
    Ok(ProvisionedUser {
        login,
        password,
        phone: primary_value(kept.get("phoneNumbers")),
        email: primary_value(kept.get("emails")),
        name: derived_name(&kept),
        active: active.unwrap_or(true),
        attributes: Value::Object(kept),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use portico_model::ids::UserId;

    fn user(provisioned: Option<Value>) -> User {
        User {
            id: UserId::random(),
            login: "anna".into(),
            password_hash: String::new(),
            phone: Some("+79001112233".into()),
            email: Some("anna@example.com".into()),
            name: Some("Анна Смирнова".into()),
            phone_login_enabled: true,
            blocked: false,
            deactivated: false,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            provisioned,
            revision: 0,
        }
    }

    #[test]
    fn what_was_sent_comes_back_as_sent() {
        let sent = json!({
            "schemas": [CORE_USER, ENTERPRISE_USER],
            "externalId": "hr-17", "userName": "anna", "active": true, "password": "not returned",
            "name": {"givenName": "Анна", "familyName": "Смирнова"},
            "emails": [{"value": "anna@example.com", "type": "work", "primary": true}],
            "phoneNumbers": [{"value": "8 900 111-22-33", "type": "mobile"}],
            ENTERPRISE_USER: {"department": "Казначейство"}
        });
        let parsed = parse(&sent).unwrap();
        assert_eq!(parsed.phone.as_deref().and_then(normalize_phone).as_deref(), Some("+79001112233"));
        assert_eq!(parsed.name.as_deref(), Some("Анна Смирнова"));
        let rendered = render(&user(Some(parsed.attributes)), "https://p.example/scim/v2/Users/x");
        let mut expected = sent.clone();
        expected.as_object_mut().unwrap().remove("password");
        for key in ["schemas", "externalId", "userName", "active", "name", "emails", "phoneNumbers", ENTERPRISE_USER] {
            assert_eq!(rendered[key], expected[key], "{key}");
        }
        assert!(rendered.get("password").is_none());
    }

    #[test]
    fn portico_s_own_fields_win_over_what_was_kept() {
        let kept = parse(&json!({"userName": "anna", "phoneNumbers": [{"value": "+79009999999"}]})).unwrap();
        let rendered = render(&user(Some(kept.attributes)), "l");
        assert_eq!(rendered["phoneNumbers"], json!([{"value": "+79001112233", "type": "mobile", "primary": true}]));
        assert_eq!(rendered["name"], json!({"formatted": "Анна Смирнова"}));
        assert!(rendered.get("active").is_none(), "never sent and not deactivated");
        let mut deactivated = user(Some(json!({})));
        deactivated.deactivated = true;
        assert_eq!(render(&deactivated, "l")["active"], false);
        let mut blocked = user(Some(json!({"active": true})));
        blocked.blocked = true;
        assert_eq!(render(&blocked, "l")["active"], true, "an operator's block is not the provisioning system's");
    }

    #[test]
    fn values_of_the_wrong_type_are_refused() {
        for bad in [
            json!({"userName": 7}),
            json!({"userName": "a", "active": "yes"}),
            json!({"userName": "a", "emails": "a@b.c"}),
            json!({"userName": "a", "emails": [{"value": "a@b.c", "primary": true}, {"value": "d@e.f", "primary": true}]}),
            json!({"userName": "a", "name": {"givenName": 1}}),
        ] {
            assert_eq!(parse(&bad).unwrap_err().scim_type, "invalidValue", "{bad}");
        }
        assert_eq!(parse(&json!([])).unwrap_err().scim_type, "invalidSyntax");
    }
}
