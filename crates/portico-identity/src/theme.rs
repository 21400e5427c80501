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
    /// The bank's name in the pages' header, per language (branding; not
    /// in the view data).
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub bank_name: Option<PerLanguage<String>>,
    /// An SVG or PNG file shown beside the name.
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub logo: Option<std::path::PathBuf>,
    /// `#rrggbb`: buttons and links in the light scheme (white text on it).
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub accent_color: Option<String>,
    /// `#rrggbb`: buttons and links in the dark scheme (dark text on it).
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub accent_color_dark: Option<String>,
    /// How to reach the bank, under the form, per language.
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub support_contacts: Option<PerLanguage<String>>,
    /// A security reminder under the form, per language.
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub security_notice: Option<PerLanguage<String>>,
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

/// The lowest contrast the accent colour must keep with its button text
/// (WCAG 2.x AA for normal text).
const MIN_CONTRAST: f64 = 4.5;

/// What the pages show of the bank, made once from the [`Theme`]: the
/// logo read, the colours checked.
#[derive(Debug, Clone)]
pub struct Branding {
    pub bank_name: PerLanguage<String>,
    /// The logo's bytes and content type.
    pub logo: (Vec<u8>, &'static str),
    /// `/login/assets/theme.css`: the accent colours.
    pub css: String,
    pub support_contacts: Option<PerLanguage<String>>,
    pub security_notice: Option<PerLanguage<String>>,
}

/// Portico's own mark, for a theme without a logo: a neutral monogram.
const DEFAULT_LOGO: &str = include_str!("../assets/logo.svg");

impl Default for Branding {
    fn default() -> Self {
        Theme::default().branding().expect("the default theme is valid")
    }
}

impl Branding {
    /// The bank's name in `locale`, or the other language's.
    pub fn name(&self, locale: portico_model::login::Locale) -> &str {
        pick(locale, &self.bank_name).unwrap_or("Portico")
    }

    /// What a page in `locale` shows of the bank, and, on the login steps,
    /// `client`: the line that names the application asking.
    pub fn view(&self, locale: portico_model::login::Locale, client: Option<String>) -> BrandView<'_> {
        BrandView {
            bank: self.name(locale),
            client,
            support: self.support_contacts.as_ref().and_then(|s| pick(locale, s)),
            notice: self.security_notice.as_ref().and_then(|s| pick(locale, s)),
        }
    }
}

/// The bank around a page: its header and footer.
#[derive(Debug, Clone)]
pub struct BrandView<'a> {
    pub bank: &'a str,
    /// "To continue to …": the client's display name, in a sentence.
    pub client: Option<String>,
    pub support: Option<&'a str>,
    pub notice: Option<&'a str>,
}

/// `value` in `locale`, else in the other language.
pub fn pick<T: AsRef<str>>(locale: portico_model::login::Locale, value: &PerLanguage<T>) -> Option<&str> {
    let (first, second) = match locale {
        portico_model::login::Locale::Ru => (&value.ru, &value.en),
        portico_model::login::Locale::En => (&value.en, &value.ru),
    };
    first.as_ref().or(second.as_ref()).map(AsRef::as_ref)
}

/// A `#rrggbb` colour as red, green and blue in 0..=255.
fn parse_color(value: &str) -> Option<[u8; 3]> {
    let hex = value.strip_prefix('#').filter(|h| h.len() == 6 && h.bytes().all(|b| b.is_ascii_hexdigit()))?;
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some([channel(0)?, channel(2)?, channel(4)?])
}

/// WCAG 2.x contrast ratio of two colours.
fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let luminance = |c: [u8; 3]| {
        let linear = |v: u8| {
            let v = f64::from(v) / 255.0;
            if v <= 0.039_28 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * linear(c[0]) + 0.7152 * linear(c[1]) + 0.0722 * linear(c[2])
    };
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

impl Theme {
    /// The branding of this theme: reads the logo and checks the colours.
    ///
    /// # Errors
    /// A message naming the setting and what to do: a logo that cannot be
    /// read or is neither SVG nor PNG, a colour that is not `#rrggbb`, or
    /// one too pale (light) or too dark (dark) for its button text.
    pub fn branding(&self) -> Result<Branding, String> {
        let logo = match &self.logo {
            None => (DEFAULT_LOGO.as_bytes().to_vec(), "image/svg+xml"),
            Some(path) => {
                let bytes =
                    std::fs::read(path).map_err(|e| format!("theme.logo: cannot read {}: {e}", path.display()))?;
                let kind = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
                    "image/png"
                } else if std::str::from_utf8(&bytes).is_ok_and(|text| text.contains("<svg")) {
                    "image/svg+xml"
                } else {
                    return Err(format!("theme.logo: {} is neither an SVG nor a PNG image", path.display()));
                };
                (bytes, kind)
            }
        };
        let mut css = String::from("/* The bank's colours, from [theme]. */\n");
        for (name, value, text, scheme) in [
            ("accentColor", &self.accent_color, [255, 255, 255], None),
            ("accentColorDark", &self.accent_color_dark, [13, 21, 36], Some("dark")),
        ] {
            let Some(value) = value else { continue };
            let color = parse_color(value)
                .ok_or_else(|| format!("theme.{name}: {value:?} is not a colour; write it as #rrggbb"))?;
            let ratio = contrast(color, text);
            if ratio < MIN_CONTRAST {
                let which = if scheme.is_some() { "lighter" } else { "darker" };
                return Err(format!(
                    "theme.{name}: {value} has a contrast of {ratio:.1}:1 with its button text; \
                     choose a {which} colour (at least {MIN_CONTRAST}:1)"
                ));
            }
            let rule = format!(":root {{ --accent: {value}; }}\n");
            match scheme {
                None => css.push_str(&rule),
                Some(scheme) => css.push_str(&format!("@media (prefers-color-scheme: {scheme}) {{ {rule} }}\n")),
            }
        }
        Ok(Branding {
            bank_name: self.bank_name.clone().unwrap_or_else(|| PerLanguage { ru: Some("Portico".into()), en: None }),
            logo,
            css,
            support_contacts: self.support_contacts.clone(),
            security_notice: self.security_notice.clone(),
        })
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn theme(accent: Option<&str>, dark: Option<&str>) -> Theme {
        Theme {
            accent_color: accent.map(str::to_owned),
            accent_color_dark: dark.map(str::to_owned),
            ..Theme::default()
        }
    }

    #[test]
    fn colours_become_the_accent_of_each_scheme() {
        let css = theme(Some("#0b5d1e"), Some("#9fd8a8")).branding().unwrap().css;
        assert!(css.contains(":root { --accent: #0b5d1e; }"), "{css}");
        assert!(css.contains("@media (prefers-color-scheme: dark) { :root { --accent: #9fd8a8; }"), "{css}");
        assert_eq!(Theme::default().branding().unwrap().logo.1, "image/svg+xml", "Portico's mark");
    }

    #[test]
    fn colours_that_are_not_colours_or_too_faint_for_their_text_are_refused_with_what_to_do() {
        let error = theme(Some("blue"), None).branding().unwrap_err();
        assert_eq!(error, "theme.accentColor: \"blue\" is not a colour; write it as #rrggbb");
        let error = theme(Some("#ffd400"), None).branding().unwrap_err();
        assert!(error.starts_with("theme.accentColor: #ffd400 has a contrast of 1.4:1"), "{error}");
        assert!(error.ends_with("choose a darker colour (at least 4.5:1)"), "{error}");
        let error = theme(None, Some("#1f3a6b")).branding().unwrap_err();
        assert!(error.contains("choose a lighter colour"), "{error}");
    }

    #[test]
    fn a_logo_must_be_an_svg_or_a_png() {
        let dir = std::env::temp_dir().join(format!("portico-logo-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("logo.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\nrest").unwrap();
        let text = dir.join("logo.txt");
        std::fs::write(&text, b"hello").unwrap();
        let with = |path: &std::path::Path| Theme { logo: Some(path.to_owned()), ..Theme::default() }.branding();
        assert_eq!(with(&png).unwrap().logo.1, "image/png");
        assert!(with(&text).unwrap_err().ends_with("is neither an SVG nor a PNG image"));
        assert!(with(&dir.join("missing.svg")).unwrap_err().starts_with("theme.logo: cannot read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_bank_is_named_in_the_pages_language_or_the_other() {
        let theme = Theme {
            bank_name: Some(PerLanguage { ru: Some("Банк".into()), en: None }),
            security_notice: Some(PerLanguage { ru: None, en: Some("Never share codes".into()) }),
            ..Theme::default()
        };
        let branding = theme.branding().unwrap();
        let view = branding.view(portico_model::login::Locale::En, None);
        assert_eq!((view.bank, view.notice, view.support), ("Банк", Some("Never share codes"), None));
    }
}
