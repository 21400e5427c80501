//! The part of an agreement's data a brokerage report shows: one period,
//! optionally one account. Shared by the spreadsheet and the printed forms.

use portico_model::reports::brokerage::{Agreement, CashMovement, Direction, Instrument, Side, Trade};
use time::{Date, Duration};

use super::broker::Broker;
use super::cash::{self, CashAccount};
use super::holdings::{self, Holding};

pub struct Period<'a> {
    pub agreement: &'a Agreement,
    /// Who issues the report.
    pub broker: &'a Broker,
    /// Only this account's data, when the task names one.
    pub account: Option<&'a str>,
    pub from: Date,
    pub to: Date,
    /// Trades of the period, by date.
    pub trades: Vec<&'a Trade>,
    pub cash: Vec<&'a CashMovement>,
    /// Holdings at the period's start (the end of the day before it) and
    /// at its end: snapshots rolled forward by the trades ([`holdings`]).
    pub opening: Vec<Holding<'a>>,
    pub closing: Vec<Holding<'a>>,
    /// Each account's cash at the start and end and what moved it ([`cash`]).
    pub balances: Vec<CashAccount<'a>>,
}

/// One fee: of a trade or a fee movement.
pub struct Fee {
    pub date: Date,
    pub what: String,
    pub account: String,
    /// Kopecks.
    pub amount: i64,
}

impl<'a> Period<'a> {
    pub fn new(agreement: &'a Agreement, broker: &'a Broker, account: Option<&'a str>, from: Date, to: Date) -> Self {
        let mine = |a: &str| account.is_none_or(|only| only == a);
        let mut trades: Vec<&Trade> =
            agreement.trades.iter().filter(|t| mine(&t.account) && t.date >= from && t.date <= to).collect();
        trades.sort_by(|a, b| (a.date, &a.id).cmp(&(b.date, &b.id)));
        let mut cash: Vec<&CashMovement> =
            agreement.cash_movements.iter().filter(|c| mine(&c.account) && c.date >= from && c.date <= to).collect();
        cash.sort_by(|a, b| (a.date, &a.id).cmp(&(b.date, &b.id)));
        let opening = holdings::at(agreement, account, from - Duration::days(1));
        let closing = holdings::at(agreement, account, to);
        let balances = cash::accounts(agreement, account, from, to);
        Self { agreement, broker, account, from, to, opening, closing, balances, trades, cash }
    }

    /// The document's title (its properties in the PDF and the spreadsheet).
    pub fn document_title(&self) -> String {
        format!("Брокерский отчёт по договору {}", self.agreement.number)
    }

    /// The title block of every brokerage report, label and value: the
    /// broker, the client, the agreement, the period, when it was made (in
    /// the broker's time zone).
    pub fn title(&self, created: time::OffsetDateTime) -> Vec<(&'static str, String)> {
        let (a, b) = (self.agreement, self.broker);
        let mut lines = vec![
            ("Брокер", b.name.clone()),
            ("Лицензия", b.licence()),
            ("ИНН / ОГРН брокера", format!("{} / {}", b.inn, b.ogrn)),
            ("Адрес брокера", b.address.clone()),
            ("Клиент", a.client_name.clone()),
            ("Код клиента", a.cnum.clone()),
            ("Договор", format!("на брокерское обслуживание № {} от {}", a.number, ru_date(a.opened_on))),
        ];
        if let Some(account) = self.account {
            lines.push(("Счёт", account.to_owned()));
        }
        lines.push(("Период", format!("с {} по {}", ru_date(self.from), ru_date(self.to))));
        lines.push(("Сформирован", b.local_time(created)));
        lines
    }

    pub fn instrument(&self, ticker: &str) -> Option<&'a Instrument> {
        self.agreement.instrument(ticker)
    }

    /// Trade fees and fee movements, by date.
    pub fn fees(&self) -> Vec<Fee> {
        let mut fees: Vec<Fee> = self
            .trades
            .iter()
            .filter(|t| t.fees.0 != 0)
            .map(|t| Fee {
                date: t.date,
                what: format!("Комиссия по сделке {}", t.id),
                account: t.account.clone(),
                amount: t.fees.0,
            })
            .collect();
        fees.extend(self.cash.iter().filter(|c| c.kind == "FEE" && c.direction == Direction::Out).map(|c| Fee {
            date: c.date,
            what: c.purpose.clone(),
            account: c.account.clone(),
            amount: c.amount.0,
        }));
        fees.sort_by_key(|f| f.date);
        fees
    }

    /// Totals of the trades: bought, sold (kopecks).
    pub fn trade_totals(&self) -> (i64, i64) {
        let sum = |side: Side| self.trades.iter().filter(|t| t.side == side).map(|t| t.amount.0).sum();
        (sum(Side::Buy), sum(Side::Sell))
    }

    /// Totals of the cash movements: in, out (kopecks).
    pub fn cash_totals(&self) -> (i64, i64) {
        let sum = |d: Direction| self.cash.iter().filter(|c| c.direction == d).map(|c| c.amount.0).sum();
        (sum(Direction::In), sum(Direction::Out))
    }
}

pub fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "Покупка",
        Side::Sell => "Продажа",
    }
}

pub fn direction_name(direction: Direction) -> &'static str {
    match direction {
        Direction::In => "Зачисление",
        Direction::Out => "Списание",
    }
}

/// `dd.mm.yyyy`.
pub fn ru_date(date: Date) -> String {
    format!("{:02}.{:02}.{:04}", date.day(), u8::from(date.month()), date.year())
}
