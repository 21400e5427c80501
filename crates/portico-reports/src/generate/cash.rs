//! Cash on the brokerage accounts over a period: for each account (in its
//! currency), the balance at the start, what came in and went out, and the
//! balance at the end, which reconcile: opening + every movement = closing.
//!
//! The balance at the end of a day is the account's latest recorded balance
//! on or before it, moved on by the cash movements after it up to that day
//! and by the trades settled after it up to that day: a purchase takes its
//! amount, a sale brings its amount, and each trade's fee is taken, all on
//! the settlement date (cash moves when a trade settles; holdings count
//! from the trade date, see [`super::holdings`]). The start of a period is
//! the end of the day before it.

use std::borrow::Cow;

use portico_model::reports::brokerage::{Agreement, CashMovement, Direction, Side, Trade};
use time::{Date, Duration};

/// One account's cash over the period (kopecks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CashAccount<'a> {
    pub account: &'a str,
    pub currency: &'a str,
    pub opening: i64,
    /// Movements in (deposits, dividends, coupons, …).
    pub received: i64,
    /// Movements out (withdrawals, fees, taxes, …).
    pub paid: i64,
    /// Purchases settled in the period.
    pub bought: i64,
    /// Sales settled in the period.
    pub sold: i64,
    /// Fees of the trades settled in the period.
    pub trade_fees: i64,
    pub closing: i64,
}

/// Each account's cash (only `account`'s when given) over `from..=to`.
pub fn accounts<'a>(agreement: &'a Agreement, account: Option<&str>, from: Date, to: Date) -> Vec<CashAccount<'a>> {
    agreement
        .accounts
        .iter()
        .filter(|a| account.is_none_or(|only| only == a.number))
        .map(|a| {
            let opening = balance(agreement, &a.number, from - Duration::days(1));
            let movements = || agreement.cash_movements.iter().filter(|m| m.account == a.number);
            let settled = || {
                agreement
                    .trades
                    .iter()
                    .filter(|t| t.account == a.number && t.settlement_date >= from && t.settlement_date <= to)
            };
            let in_period = |m: &&CashMovement| m.date >= from && m.date <= to;
            let sum_moves =
                |d: Direction| movements().filter(in_period).filter(|m| m.direction == d).map(|m| m.amount.0).sum();
            let sum_trades = |s: Side| settled().filter(|t| t.side == s).map(|t| t.amount.0).sum();
            let (received, paid) = (sum_moves(Direction::In), sum_moves(Direction::Out));
            let (bought, sold) = (sum_trades(Side::Buy), sum_trades(Side::Sell));
            let trade_fees: i64 = settled().map(|t| t.fees.0).sum();
            CashAccount {
                account: &a.number,
                currency: &a.currency,
                opening,
                received,
                paid,
                bought,
                sold,
                trade_fees,
                closing: opening + received - paid - bought + sold - trade_fees,
            }
        })
        .collect()
}

/// The balance of `account` at the end of `date` (kopecks).
pub fn balance(agreement: &Agreement, account: &str, date: Date) -> i64 {
    let base = agreement.cash_balances.iter().filter(|b| b.account == account && b.date <= date).max_by_key(|b| b.date);
    let after = |d: Date| base.is_none_or(|b| d > b.date) && d <= date;
    let moved: i64 = agreement
        .cash_movements
        .iter()
        .filter(|m| m.account == account && after(m.date))
        .map(|m| match m.direction {
            Direction::In => m.amount.0,
            Direction::Out => -m.amount.0,
        })
        .sum();
    let traded: i64 =
        agreement.trades.iter().filter(|t| t.account == account && after(t.settlement_date)).map(settlement).sum();
    base.map_or(0, |b| b.amount.0) + moved + traded
}

/// What a trade does to cash when it settles (kopecks).
fn settlement(trade: &Trade) -> i64 {
    match trade.side {
        Side::Buy => -trade.amount.0 - trade.fees.0,
        Side::Sell => trade.amount.0 - trade.fees.0,
    }
}

/// A movement's kind as the report names it; a kind Portico does not know
/// is shown as the data gave it.
pub fn kind_name(kind: &str) -> Cow<'_, str> {
    Cow::Borrowed(match kind {
        "DEPOSIT" => "Зачисление средств",
        "WITHDRAWAL" => "Вывод средств",
        "DIVIDEND" => "Дивиденды",
        "COUPON" => "Купон",
        "REDEMPTION" => "Погашение",
        "FEE" => "Комиссия брокера",
        "TAX" => "Удержан налог (НДФЛ)",
        "INTEREST" => "Проценты",
        "TRANSFER" => "Перевод между счетами",
        other => return Cow::Owned(other.to_owned()),
    })
}
