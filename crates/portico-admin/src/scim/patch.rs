//! `PATCH /Users/{id}` (RFC 7644 §3.5.2): the operations are applied, in
//! order, to the user as SCIM shows them, and the result replaces the user
//! as a `PUT` would — so a patch obeys every rule a replacement does, and
//! a refused one changes nothing.
//!
//! Paths: an attribute (`emails`), a part of the name (`name.givenName`),
//! either with the core schema's URN, and the enterprise extension or one
//! of its attributes by URN. Value filters (`emails[type eq "work"]`) are
//! refused with `invalidPath`.

use serde_json::{Map, Value, json};

use super::resource::Refusal;
use super::schema::{CORE_USER, ENTERPRISE_ATTRIBUTES, ENTERPRISE_USER, NAME_PARTS, PATCH_OP};

const ATTRIBUTES: [&str; 8] =
    ["externalId", "userName", "name", "displayName", "active", "password", "emails", "phoneNumbers"];
const MULTI_VALUED: [&str; 2] = ["emails", "phoneNumbers"];

/// Where an operation points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A core attribute, and maybe one of its sub-attributes.
    Core(&'static str, Option<&'static str>),
    /// The enterprise extension, or one of its attributes.
    Enterprise(Option<&'static str>),
}

fn known(list: &[&'static str], name: &str) -> Option<&'static str> {
    list.iter().copied().find(|known| known.eq_ignore_ascii_case(name))
}

fn target(path: &str) -> Result<Target, Refusal> {
    let invalid = |why: &str| Refusal::new("invalidPath", format!("{path:?}: {why}"));
    if path.contains('[') {
        return Err(invalid("value filters in paths are not supported; send the whole attribute"));
    }
    let lower = path.to_ascii_lowercase();
    let enterprise = ENTERPRISE_USER.to_ascii_lowercase();
    if lower == enterprise {
        return Ok(Target::Enterprise(None));
    }
    if let Some(rest) = lower.strip_prefix(&format!("{enterprise}:")) {
        let attribute = known(&ENTERPRISE_ATTRIBUTES, rest).ok_or_else(|| invalid("no such enterprise attribute"))?;
        return Ok(Target::Enterprise(Some(attribute)));
    }
    let core = format!("{}:", CORE_USER.to_ascii_lowercase());
    let rest = if lower.starts_with(&core) { &path[core.len()..] } else { path };
    let (attribute, sub) = match rest.split_once('.') {
        Some((attribute, sub)) => (attribute, Some(sub)),
        None => (rest, None),
    };
    let attribute = known(&ATTRIBUTES, attribute).ok_or_else(|| invalid("no such attribute"))?;
    let sub = match sub {
        None => None,
        Some(sub) if attribute == "name" => {
            Some(known(&NAME_PARTS, sub).ok_or_else(|| invalid("no such part of the name"))?)
        }
        Some(_) => return Err(invalid("only name has parts a path may name")),
    };
    Ok(Target::Core(attribute, sub))
}

fn object<'a>(resource: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = resource.entry(key.to_owned()).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("made an object above")
}

/// Adds `value` to a multi-valued attribute; a new primary value takes
/// the place of the old one.
fn append(resource: &mut Map<String, Value>, attribute: &str, value: Value) {
    let added = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    let new_primary = added.iter().any(|v| v.get("primary").and_then(Value::as_bool) == Some(true));
    let slot = resource.entry(attribute.to_owned()).or_insert_with(|| json!([]));
    if !slot.is_array() {
        *slot = json!([]);
    }
    let items = slot.as_array_mut().expect("made an array above");
    if new_primary {
        for item in items.iter_mut() {
            if let Some(item) = item.as_object_mut() {
                item.remove("primary");
            }
        }
    }
    items.extend(added);
}

fn merge(into: &mut Map<String, Value>, value: Value, name: &str) -> Result<(), Refusal> {
    let Value::Object(parts) = value else {
        return Err(Refusal::new("invalidValue", format!("{name}: the value must be an object")));
    };
    into.extend(parts);
    Ok(())
}

fn set(resource: &mut Map<String, Value>, target: &Target, value: Value, add: bool) -> Result<(), Refusal> {
    match target {
        Target::Core(attribute, None) if MULTI_VALUED.contains(attribute) && add => append(resource, attribute, value),
        Target::Core("name", None) => merge(object(resource, "name"), value, "name")?,
        Target::Core(attribute, None) => {
            resource.insert((*attribute).to_owned(), value);
        }
        Target::Core(attribute, Some(sub)) => {
            object(resource, attribute).insert((*sub).to_owned(), value);
        }
        Target::Enterprise(None) => merge(object(resource, ENTERPRISE_USER), value, ENTERPRISE_USER)?,
        Target::Enterprise(Some(attribute)) => {
            object(resource, ENTERPRISE_USER).insert((*attribute).to_owned(), value);
        }
    }
    Ok(())
}

fn remove(resource: &mut Map<String, Value>, target: &Target) {
    match target {
        Target::Core(attribute, None) => {
            resource.remove(*attribute);
        }
        Target::Core(attribute, Some(sub)) => {
            if let Some(parts) = resource.get_mut(*attribute).and_then(Value::as_object_mut) {
                parts.remove(*sub);
            }
        }
        Target::Enterprise(None) => {
            resource.remove(ENTERPRISE_USER);
        }
        Target::Enterprise(Some(attribute)) => {
            if let Some(parts) = resource.get_mut(ENTERPRISE_USER).and_then(Value::as_object_mut) {
                parts.remove(*attribute);
            }
        }
    }
}

/// `resource` after the operations of the `PatchOp` message `body`.
///
/// # Errors
/// `invalidSyntax` for a message that is not a `PatchOp`, `invalidPath`,
/// `noTarget` (a `remove` without a path), `invalidValue`.
pub fn apply(resource: Value, body: &Value) -> Result<Value, Refusal> {
    let Value::Object(mut resource) = resource else {
        return Err(Refusal::new("invalidSyntax", "the resource is not an object"));
    };
    let schemas = body.get("schemas").and_then(Value::as_array);
    if !schemas.is_some_and(|s| s.iter().any(|s| s == PATCH_OP)) {
        return Err(Refusal::new("invalidSyntax", format!("a PATCH body is a message with schemas [{PATCH_OP:?}]")));
    }
    let Some(operations) = body.get("Operations").and_then(Value::as_array) else {
        return Err(Refusal::new("invalidSyntax", "Operations: an array of operations"));
    };
    if operations.len() > super::schema::MAX_OPERATIONS {
        let detail = format!("Operations: at most {} in one PATCH", super::schema::MAX_OPERATIONS);
        return Err(Refusal::new("invalidValue", detail));
    }
    for (i, operation) in operations.iter().enumerate() {
        let op = operation.get("op").and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
        let path = match operation.get("path") {
            None | Some(Value::Null) => None,
            Some(Value::String(path)) => Some(target(path)?),
            Some(_) => return Err(Refusal::new("invalidPath", format!("Operations[{i}].path must be a string"))),
        };
        let value = operation.get("value").cloned();
        match (op.as_str(), path, value) {
            ("remove", Some(target), _) => remove(&mut resource, &target),
            ("remove", None, _) => {
                return Err(Refusal::new("noTarget", format!("Operations[{i}]: remove needs a path")));
            }
            ("add" | "replace", Some(target), Some(value)) => set(&mut resource, &target, value, op == "add")?,
            ("add" | "replace", None, Some(Value::Object(values))) => {
                for (name, value) in values {
                    let target = target(&name)?;
                    set(&mut resource, &target, value, op == "add")?;
                }
            }
            ("add" | "replace", _, _) => {
                return Err(Refusal::new("invalidValue", format!("Operations[{i}]: {op} needs a value")));
            }
            (other, _, _) => {
                let detail = format!("Operations[{i}].op {other:?}: add, replace or remove");
                return Err(Refusal::new("invalidSyntax", detail));
            }
        }
    }
    Ok(Value::Object(resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(operations: Value) -> Value {
        json!({"schemas": [PATCH_OP], "Operations": operations})
    }

    #[test]
    fn operations_apply_in_order_to_attributes_parts_and_the_extension() {
        let resource = json!({"userName": "anna", "emails": [{"value": "a@x.ru", "primary": true}], "name": {"givenName": "Анна"}});
        let patched = apply(
            resource,
            &patch(json!([
                {"op": "add", "path": "emails", "value": [{"value": "b@x.ru", "primary": true}]},
                {"op": "Replace", "path": "name.familyName", "value": "Смирнова"},
                {"op": "replace", "value": {"active": false, "displayName": "Анна С."}},
                {"op": "add", "path": format!("{ENTERPRISE_USER}:department"), "value": "Казначейство"},
                {"op": "remove", "path": format!("{CORE_USER}:name.givenName")}
            ])),
        )
        .unwrap();
        assert_eq!(patched["emails"], json!([{"value": "a@x.ru"}, {"value": "b@x.ru", "primary": true}]));
        assert_eq!(patched["name"], json!({"familyName": "Смирнова"}));
        assert_eq!((patched["active"].clone(), patched["displayName"].clone()), (json!(false), json!("Анна С.")));
        assert_eq!(patched[ENTERPRISE_USER], json!({"department": "Казначейство"}));
    }

    #[test]
    fn what_is_outside_the_subset_is_refused_by_its_scim_type() {
        let resource = json!({"userName": "anna"});
        let cases = [
            (patch(json!([{"op": "remove"}])), "noTarget"),
            (patch(json!([{"op": "add", "path": "emails[type eq \"work\"].value", "value": "x"}])), "invalidPath"),
            (patch(json!([{"op": "add", "path": "title", "value": "x"}])), "invalidPath"),
            (patch(json!([{"op": "move", "path": "userName"}])), "invalidSyntax"),
            (patch(json!([{"op": "add", "path": "userName"}])), "invalidValue"),
            (json!({"Operations": []}), "invalidSyntax"),
        ];
        for (body, scim_type) in cases {
            assert_eq!(apply(resource.clone(), &body).unwrap_err().scim_type, scim_type, "{body}");
        }
    }
}
