//! The broker a brokerage report is issued by (configuration
//! `reports.broker`): its details on the title of every report and the
//! time zone the generation time is written in.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The broker's details.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Broker {
    /// Full name (`АО «Брокер»`).
    pub name: String,
    /// Licence of a professional securities market participant for
    /// brokerage: number and date of issue (`dd.mm.yyyy` or `yyyy-mm-dd`).
    pub licence_number: String,
    pub licence_date: String,
    pub inn: String,
    pub ogrn: String,
    pub address: String,
    /// Who signs the reports, and as whom.
    pub signatory: String,
    pub signatory_title: String,
    /// IANA time zone the generation time is written in.
    pub time_zone: String,
}

impl Default for Broker {
    /// The demo broker (made-up details); production sets its own.
    fn default() -> Self {
        Self {
            name: "АО «Портико Брокер» (демонстрация)".into(),
            licence_number: "045-00000-100000".into(),
            licence_date: "15.01.2020".into(),
            inn: "7700000000".into(),
            ogrn: "1027700000000".into(),
            address: "123112, г. Москва, Пресненская наб., д. 1".into(),
            signatory: "Портиков П. П.".into(),
            signatory_title: "Уполномоченное лицо брокера".into(),
            time_zone: "Europe/Moscow".into(),
        }
    }
}

impl Broker {
    /// The configured time zone.
    ///
    /// # Errors
    /// When the name is not a zone of the bundled time zone database.
    pub fn zone(&self) -> Result<jiff::tz::TimeZone, String> {
        jiff::tz::TimeZone::get(&self.time_zone).map_err(|_| {
            format!("{:?} is not a time zone name of the IANA database (for example \"Europe/Moscow\")", self.time_zone)
        })
    }

    /// Every problem of the details, each naming its field (checked at start).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (field, value) in [
            ("name", &self.name),
            ("licence_number", &self.licence_number),
            ("licence_date", &self.licence_date),
            ("signatory", &self.signatory),
            ("signatory_title", &self.signatory_title),
        ] {
            if value.trim().is_empty() {
                problems.push(format!("reports.broker.{field}: must not be empty"));
            }
        }
        let digits = |v: &str, n: &[usize]| n.contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit());
        if !digits(&self.inn, &[10, 12]) {
            problems.push("reports.broker.inn: 10 or 12 digits".into());
        }
        if !digits(&self.ogrn, &[13, 15]) {
            problems.push("reports.broker.ogrn: 13 or 15 digits".into());
        }
        if let Err(e) = self.zone() {
            problems.push(format!("reports.broker.time_zone: {e}"));
        }
        problems
    }

    /// `at` in the broker's time zone: `26.11.2026 03:15 (MSK)`; in UTC
    /// when the zone is unknown (the configuration check refuses that).
    pub fn local_time(&self, at: OffsetDateTime) -> String {
        let zone = self.zone().unwrap_or(jiff::tz::TimeZone::UTC);
        match jiff::Timestamp::from_second(at.unix_timestamp()) {
            Ok(timestamp) => timestamp.to_zoned(zone).strftime("%d.%m.%Y %H:%M (%Z)").to_string(),
            Err(_) => at.to_string(),
        }
    }

    /// `at` as a time with the broker's zone's offset on that instant (UTC
    /// when the zone is unknown).
    pub fn local(&self, at: OffsetDateTime) -> OffsetDateTime {
        let zone = self.zone().unwrap_or(jiff::tz::TimeZone::UTC);
        let offset = jiff::Timestamp::from_second(at.unix_timestamp())
            .map(|timestamp| zone.to_offset(timestamp).seconds())
            .ok()
            .and_then(|seconds| time::UtcOffset::from_whole_seconds(seconds).ok())
            .unwrap_or(time::UtcOffset::UTC);
        at.to_offset(offset)
    }

    /// The licence as the title writes it.
    pub fn licence(&self) -> String {
        format!(
            "Лицензия на осуществление брокерской деятельности № {} от {}",
            self.licence_number,
            ru_date_text(&self.licence_date)
        )
    }
}

/// `2020-01-15` written `15.01.2020`; any other text as it is.
fn ru_date_text(text: &str) -> String {
    match time::Date::parse(text, time::macros::format_description!("[year]-[month]-[day]")) {
        Ok(date) => super::period::ru_date(date),
        Err(_) => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generation_time_is_written_in_the_brokers_zone() {
        let at = time::macros::datetime!(2026-11-26 00:15 UTC);
        assert_eq!(Broker::default().local_time(at), "26.11.2026 03:15 (MSK)");
        let vladivostok = Broker { time_zone: "Asia/Vladivostok".into(), ..Broker::default() };
        assert_eq!(vladivostok.local_time(at), "26.11.2026 10:15 (+10)");
        let local = Broker::default().local(time::macros::datetime!(2026-11-25 22:30 UTC));
        assert_eq!((local.date(), local.hour(), local.minute()), (time::macros::date!(2026 - 11 - 26), 1, 30));
    }

    #[test]
    fn details_are_checked_each_with_its_field() {
        assert_eq!(Broker::default().problems(), Vec::<String>::new());
        let bad = Broker { inn: "12".into(), time_zone: "Mars/Olympus".into(), name: " ".into(), ..Broker::default() };
        let problems = bad.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("reports.broker.time_zone: \"Mars/Olympus\"")), "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("reports.broker.inn")), "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("reports.broker.name")), "{problems:?}");
    }

    #[test]
    fn a_licence_date_in_iso_form_is_written_the_russian_way() {
        let broker = Broker { licence_date: "2020-01-15".into(), ..Broker::default() };
        assert!(broker.licence().ends_with("от 15.01.2020"), "{}", broker.licence());
    }
}
