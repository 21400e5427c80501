//! The brokerage data reports are made from: per agreement, its accounts,
//! the instruments it traded, trades, cash movements and positions.
//!
//! Stored and replaced whole per agreement (an import names the agreements
//! it brings; each is swapped in one transaction), read whole by a report.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::Date;
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr, Schema};

// Dates are written `2026-11-22`.
time::serde::format_description!(pub ymd, Date, "[year]-[month]-[day]");

/// A fixed-point decimal with `SCALE` decimal places, written in JSON as a
/// string (`"2501.00"`), so that no amount passes through a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fixed<const SCALE: u32>(pub i64);

/// Money: two decimal places (kopecks).
pub type Money = Fixed<2>;
/// A price: up to six decimal places.
pub type Price = Fixed<6>;

impl<const SCALE: u32> Fixed<SCALE> {
    const ONE: i64 = 10_i64.pow(SCALE);

    /// The value as a float, for spreadsheets.
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / Self::ONE as f64
    }

    /// Written with exactly `places` decimals (`places` ≤ `SCALE`), rounding
    /// half away from zero.
    pub fn format(self, places: u32) -> String {
        let places = places.min(SCALE);
        let drop = 10_i64.pow(SCALE - places);
        let rounded = if self.0 >= 0 { (self.0 + drop / 2) / drop } else { (self.0 - drop / 2) / drop };
        let one = 10_i64.pow(places);
        let sign = if rounded < 0 { "-" } else { "" };
        let abs = rounded.unsigned_abs();
        if places == 0 {
            format!("{sign}{abs}")
        } else {
            format!("{sign}{}.{:0width$}", abs / one as u64, abs % one as u64, width = places as usize)
        }
    }

    pub fn checked_add(self, other: Self) -> Option<Self> {
        self.0.checked_add(other.0).map(Self)
    }
}

impl<const SCALE: u32> From<i64> for Fixed<SCALE> {
    /// From the value in its smallest units (kopecks for [`Money`]).
    fn from(units: i64) -> Self {
        Self(units)
    }
}

impl<const SCALE: u32> fmt::Display for Fixed<SCALE> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format(SCALE))
    }
}

impl<const SCALE: u32> FromStr for Fixed<SCALE> {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a decimal with at most {SCALE} places (e.g. \"1500.25\")");
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) || fraction.len() > SCALE as usize {
            return Err(bad());
        }
        if digits.contains('.') && fraction.is_empty() {
            return Err(bad());
        }
        let whole: i64 = whole.parse().map_err(|_| bad())?;
        let padded = format!("{fraction:0<width$}", width = SCALE as usize);
        let fraction: i64 = if SCALE == 0 { 0 } else { padded.parse().map_err(|_| bad())? };
        let value = whole.checked_mul(Self::ONE).and_then(|w| w.checked_add(fraction)).ok_or_else(bad)?;
        Ok(Self(if negative { -value } else { value }))
    }
}

impl<const SCALE: u32> Serialize for Fixed<SCALE> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<const SCALE: u32> utoipa::PartialSchema for Fixed<SCALE> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^-?[0-9]+(\\.[0-9]{{1,{SCALE}}})?$")))
            .description(Some(format!("A decimal with at most {SCALE} places, as a string.")))
            .examples([Self(150_025 * 10_i64.pow(SCALE) / 100).to_string()])
            .into()
    }
}

impl<const SCALE: u32> ToSchema for Fixed<SCALE> {
    fn name() -> std::borrow::Cow<'static, str> {
        match SCALE {
            2 => "Money".into(),
            6 => "Price".into(),
            _ => format!("Decimal{SCALE}").into(),
        }
    }
}

/// The schema of a `ymd` date field: `2026-11-22`.
fn ymd_schema() -> Schema {
    ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::Date))).into()
}

impl<'de, const SCALE: u32> Deserialize<'de> for Fixed<SCALE> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A bank's details, as a payment document names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BankDetails {
    /// БИК, nine digits.
    pub bic: String,
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// Корреспондентский счёт, twenty digits.
    pub correspondent_account: String,
}

/// A party to a cash movement: the client or its counterparty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Party {
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// ИНН: ten digits (organisations) or twelve (individuals).
    pub inn: String,
    #[serde(default)]
    pub kpp: Option<String>,
    /// Расчётный счёт, twenty digits.
    pub account: String,
    pub bank: BankDetails,
}

/// An account of an agreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Account {
    pub number: String,
    pub currency: String,
    /// The client as the owner of this account (payer or payee in statements).
    pub owner: Party,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instrument {
    #[schema(min_length = 1, max_length = 64)]
    pub ticker: String,
    pub isin: String,
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    pub currency: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Side {
    Buy,
    Sell,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Trade {
    #[schema(min_length = 1, max_length = 64)]
    pub id: String,
    pub account: String,
    #[serde(with = "ymd")]
    #[schema(schema_with = ymd_schema)]
    pub date: Date,
    #[serde(with = "ymd")]
    #[schema(schema_with = ymd_schema)]
    pub settlement_date: Date,
    pub ticker: String,
    pub side: Side,
    pub quantity: i64,
    pub price: Price,
    pub amount: Money,
    pub fees: Money,
}

/// Money in or out of an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Direction {
    In,
    Out,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CashMovement {
    #[schema(min_length = 1, max_length = 64)]
    pub id: String,
    pub account: String,
    #[serde(with = "ymd")]
    #[schema(schema_with = ymd_schema)]
    pub date: Date,
    /// What kind of movement: `DEPOSIT`, `WITHDRAWAL`, `DIVIDEND`, `COUPON`, `FEE`, `TAX`, ...
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 64)]
    pub kind: String,
    pub direction: Direction,
    /// Always positive; `direction` says which way.
    pub amount: Money,
    pub currency: String,
    /// Назначение платежа.
    #[schema(min_length = 1, max_length = 210)]
    pub purpose: String,
    /// The payment document's number.
    #[schema(max_length = 64)]
    pub document_number: String,
    pub counterparty: Party,
}

/// Holdings of one instrument on one account at a date.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Position {
    pub account: String,
    #[serde(with = "ymd")]
    #[schema(schema_with = ymd_schema)]
    pub date: Date,
    pub ticker: String,
    pub quantity: i64,
    /// Market value at the date.
    pub value: Money,
}

/// Cash on an account at a date (the statement's opening balance comes
/// from the latest one on or before the period's start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CashBalance {
    pub account: String,
    #[serde(with = "ymd")]
    #[schema(schema_with = ymd_schema)]
    pub date: Date,
    pub amount: Money,
}

/// Everything about one brokerage agreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Agreement {
    pub number: String,
    /// The client company.
    pub cnum: String,
    #[schema(min_length = 1, max_length = 255)]
    pub client_name: String,
    #[serde(with = "ymd")]
    #[schema(schema_with = ymd_schema)]
    pub opened_on: Date,
    pub accounts: Vec<Account>,
    #[serde(default)]
    pub instruments: Vec<Instrument>,
    #[serde(default)]
    pub trades: Vec<Trade>,
    #[serde(default)]
    pub cash_movements: Vec<CashMovement>,
    #[serde(default)]
    pub positions: Vec<Position>,
    #[serde(default)]
    pub cash_balances: Vec<CashBalance>,
}

impl Agreement {
    pub fn account(&self, number: &str) -> Option<&Account> {
        self.accounts.iter().find(|a| a.number == number)
    }

    pub fn instrument(&self, ticker: &str) -> Option<&Instrument> {
        self.instruments.iter().find(|i| i.ticker == ticker)
    }

    /// Every problem of the data, each naming its place (`trades[3].ticker`).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut need = |ok: bool, place: String, what: &str| {
            if !ok {
                problems.push(format!("{place}: {what}"));
            }
        };
        need(!self.number.trim().is_empty() && self.number.len() <= 64, "number".into(), "1 to 64 characters");
        need(is_digits(&self.cnum, 1..=20), "cnum".into(), "1 to 20 digits");
        need(is_text(&self.client_name, MAX_NAME), "clientName".into(), NAME_RULE);
        need(!self.accounts.is_empty(), "accounts".into(), "at least one account");
        for (i, account) in self.accounts.iter().enumerate() {
            need(is_digits(&account.number, 20..=20), format!("accounts[{i}].number"), "20 digits");
            need(is_currency(&account.currency), format!("accounts[{i}].currency"), "three capital letters");
            party_problems(&account.owner, &format!("accounts[{i}].owner"), &mut need);
        }
        let accounts: std::collections::HashSet<&str> = self.accounts.iter().map(|a| a.number.as_str()).collect();
        let tickers: std::collections::HashSet<&str> = self.instruments.iter().map(|i| i.ticker.as_str()).collect();
        let has_account = |n: &str| accounts.contains(n);
        let has_instrument = |t: &str| tickers.contains(t);
        for (i, instrument) in self.instruments.iter().enumerate() {
            need(is_text(&instrument.ticker, MAX_CODE), format!("instruments[{i}].ticker"), CODE_RULE);
            need(instrument.isin.len() == 12, format!("instruments[{i}].isin"), "12 characters");
            need(is_text(&instrument.name, MAX_NAME), format!("instruments[{i}].name"), NAME_RULE);
            need(is_currency(&instrument.currency), format!("instruments[{i}].currency"), "three capital letters");
        }
        for (i, t) in self.trades.iter().enumerate() {
            need(is_text(&t.id, MAX_CODE), format!("trades[{i}].id"), CODE_RULE);
            need(has_account(&t.account), format!("trades[{i}].account"), "an account of this agreement");
            need(has_instrument(&t.ticker), format!("trades[{i}].ticker"), "an instrument listed in instruments");
            need(t.quantity > 0, format!("trades[{i}].quantity"), "greater than 0");
            need(t.settlement_date >= t.date, format!("trades[{i}].settlementDate"), "on or after date");
            need(t.fees.0 >= 0, format!("trades[{i}].fees"), "not negative");
        }
        for (i, c) in self.cash_movements.iter().enumerate() {
            need(has_account(&c.account), format!("cashMovements[{i}].account"), "an account of this agreement");
            need(c.amount.0 > 0, format!("cashMovements[{i}].amount"), "greater than 0");
            need(is_currency(&c.currency), format!("cashMovements[{i}].currency"), "three capital letters");
            need(is_text(&c.id, MAX_CODE), format!("cashMovements[{i}].id"), CODE_RULE);
            need(is_text(&c.kind, MAX_CODE), format!("cashMovements[{i}].type"), CODE_RULE);
            need(is_text(&c.purpose, MAX_PURPOSE), format!("cashMovements[{i}].purpose"), PURPOSE_RULE);
            let number = &c.document_number;
            need(
                number.is_empty() || is_text(number, MAX_CODE),
                format!("cashMovements[{i}].documentNumber"),
                CODE_RULE,
            );
            party_problems(&c.counterparty, &format!("cashMovements[{i}].counterparty"), &mut need);
        }
        for (i, p) in self.positions.iter().enumerate() {
            need(has_account(&p.account), format!("positions[{i}].account"), "an account of this agreement");
            need(has_instrument(&p.ticker), format!("positions[{i}].ticker"), "an instrument listed in instruments");
        }
        for (i, b) in self.cash_balances.iter().enumerate() {
            need(has_account(&b.account), format!("cashBalances[{i}].account"), "an account of this agreement");
        }
        problems
    }
}

fn party_problems(party: &Party, place: &str, need: &mut impl FnMut(bool, String, &str)) {
    need(is_text(&party.name, MAX_NAME), format!("{place}.name"), NAME_RULE);
    need(is_text(&party.bank.name, MAX_NAME), format!("{place}.bank.name"), NAME_RULE);
    need(is_digits(&party.inn, 10..=10) || is_digits(&party.inn, 12..=12), format!("{place}.inn"), "10 or 12 digits");
    if let Some(kpp) = &party.kpp {
        need(is_digits(kpp, 9..=9), format!("{place}.kpp"), "9 digits");
    }
    need(is_digits(&party.account, 20..=20), format!("{place}.account"), "20 digits");
    need(is_digits(&party.bank.bic, 9..=9), format!("{place}.bank.bic"), "9 digits");
    need(
        is_digits(&party.bank.correspondent_account, 20..=20),
        format!("{place}.bank.correspondentAccount"),
        "20 digits",
    );
}

/// Names (of the client, a party, a bank, an instrument): at most this
/// many characters.
pub const MAX_NAME: usize = 255;
/// Identifiers and codes (a trade's id, a ticker, a movement's type, a
/// document number).
pub const MAX_CODE: usize = 64;
/// A payment's purpose: at most the 210 characters of a Russian payment
/// order's «Назначение платежа».
pub const MAX_PURPOSE: usize = 210;
const NAME_RULE: &str = "1 to 255 characters, no control characters";
const CODE_RULE: &str = "1 to 64 characters, no control characters";
const PURPOSE_RULE: &str = "1 to 210 characters, no control characters";

/// Text that is not blank, holds at most `max` characters and no control
/// characters (it goes into line-based 1C files, spreadsheets and PDFs).
fn is_text(text: &str, max: usize) -> bool {
    !text.trim().is_empty() && text.chars().count() <= max && !text.chars().any(char::is_control)
}

fn is_digits(text: &str, length: std::ops::RangeInclusive<usize>) -> bool {
    length.contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

fn is_currency(text: &str) -> bool {
    text.len() == 3 && text.bytes().all(|b| b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_reads_and_writes_exactly() {
        assert_eq!("1500.25".parse::<Money>(), Ok(Fixed(150_025)));
        assert_eq!("-0.5".parse::<Money>(), Ok(Fixed(-50)));
        assert_eq!("7".parse::<Money>(), Ok(Fixed(700)));
        assert_eq!(Fixed::<2>(150_025).to_string(), "1500.25");
        assert_eq!(Fixed::<2>(-5).to_string(), "-0.05");
        assert_eq!("250.123456".parse::<Price>().unwrap().format(2), "250.12");
        assert_eq!("0.125".parse::<Price>().unwrap().format(2), "0.13", "half away from zero");
        for bad in ["", "1.", ".5", "1.234", "1e3", "1,5", "--1", "99999999999999999999"] {
            assert!(bad.parse::<Money>().is_err(), "{bad}");
        }
    }
}
