//! `themeViewData`: what the bank shows around the login form, from the
//! configuration file (`[theme]`), whose keys are the view data's own
//! camelCase names (`passwordResetEnabled`, `supportDrawer`, ...).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Theme {
    pub password_reset_enabled: bool,
    pub support_drawer: Option<PerLanguage<Drawer>>,
    /// Messages shown above the form; `null` in the view data when there are none.
    pub system_messages: Option<PerLanguage<Vec<SystemMessage>>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerLanguage<T> {
    pub ru: Option<T>,
    pub en: Option<T>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Drawer {
    pub title: Option<String>,
    pub description: Option<String>,
    pub chat_button_text: Option<String>,
    pub info_banner_text: Option<String>,
    pub sections: Option<Vec<DrawerSection>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DrawerSection {
    pub title: Option<String>,
    pub subtitle: Option<String>,
    pub items: Option<Vec<DrawerItem>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DrawerItem {
    pub icon: Option<String>,
    pub title: Option<String>,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
