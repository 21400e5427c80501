//! `themeViewData`: what the bank shows around the login form, from the
//! configuration file (`[theme]`), whose keys are the view data's own
//! camelCase names (`passwordResetEnabled`, `supportDrawer`, ...).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = ThemeViewDataDTO)]
pub struct Theme {
    pub password_reset_enabled: bool,
    /// A drawer per language.
    #[schema(schema_with = per_language::<Drawer>)]
    pub support_drawer: Option<PerLanguage<Drawer>>,
    /// Messages shown above the form, per language; `null` in the view data when there are none.
    #[schema(schema_with = per_language::<Vec<SystemMessage>>)]
    pub system_messages: Option<PerLanguage<Vec<SystemMessage>>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerLanguage<T> {
    pub ru: Option<T>,
    pub en: Option<T>,
}

/// The schema of an `Option<PerLanguage<T>>`: null, or an object whose
/// `ru` and `en` are each null or a `T`.
fn per_language<T: utoipa::PartialSchema>() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, OneOfBuilder, Type};
    let value = || OneOfBuilder::new().item(ObjectBuilder::new().schema_type(Type::Null)).item(T::schema());
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("ru", value())
                .property("en", value())
                .required("ru")
                .required("en")
                .additional_properties(Some(AdditionalProperties::<utoipa::openapi::Schema>::FreeForm(false))),
        )
        .build()
        .into()
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Drawer {
    pub title: Option<String>,
    pub description: Option<String>,
    pub chat_button_text: Option<String>,
    pub info_banner_text: Option<String>,
    pub sections: Option<Vec<DrawerSection>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DrawerSection {
    pub title: Option<String>,
    pub subtitle: Option<String>,
    pub items: Option<Vec<DrawerItem>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DrawerItem {
    pub icon: Option<String>,
    pub title: Option<String>,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemMessage {
    pub id: Uuid,
    pub title: Option<String>,
    pub message: Option<String>,
}

impl Theme {
    /// The view data's `themeViewData`: `systemMessages` is `null` when no
    /// language has a message.
    pub fn view(&self) -> Theme {
        let mut view = self.clone();
        let empty = |m: &Option<Vec<SystemMessage>>| m.as_ref().is_none_or(Vec::is_empty);
        if view.system_messages.as_ref().is_some_and(|m| empty(&m.ru) && empty(&m.en)) {
            view.system_messages = None;
        }
        view
    }
}
