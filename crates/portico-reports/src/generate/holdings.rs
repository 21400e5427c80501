//! Holdings at a date, as the report shows them at the period's start and
//! end.
//!
//! The holdings at the end of a day are the latest positions snapshot of
//! the account on or before that day, rolled forward by the account's
//! trades made after the snapshot up to and including the day (by trade
//! date: a trade counts from the day it is made, even when it settles
//! later). The start of a period is the end of the day before it.
//!
//! A snapshot is the depository's record and wins: when the trades since
//! the snapshot before it give another quantity, the holding keeps the
//! snapshot's and carries the trades' figure in [`Holding::by_trades`],
//! which the report shows beside it.
//!
//! A holding is valued at the latest price known on its day: the unit value
//! of the snapshot or the price of the latest trade in the instrument,
//! whichever is later (the snapshot when both are of one day).

use std::collections::BTreeMap;

use portico_model::reports::brokerage::{Agreement, Money, Position, Price, Side, Trade};
use time::Date;

/// One instrument on one account at a date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding<'a> {
    pub account: &'a str,
    pub ticker: &'a str,
    pub quantity: i64,
    /// The unit price of the valuation, when one is known.
    pub price: Option<Price>,
    /// `quantity` at `price`; `None` when no price is known on the day (the
    /// report says so instead of showing a figure).
    pub value: Option<Money>,
    /// The quantity the trades give where the snapshot says otherwise.
    pub by_trades: Option<i64>,
}

/// The holdings of `agreement` (only `account`'s when given) at the end of
/// `date`, by account and ticker; instruments with nothing held and nothing
/// in dispute are left out.
pub fn at<'a>(agreement: &'a Agreement, account: Option<&str>, date: Date) -> Vec<Holding<'a>> {
    let mut holdings = Vec::new();
    for acc in agreement.accounts.iter().filter(|a| account.is_none_or(|only| only == a.number)) {
        let snapshots: Vec<&Position> =
            agreement.positions.iter().filter(|p| p.account == acc.number && p.date <= date).collect();
        let mut dates: Vec<Date> = snapshots.iter().map(|p| p.date).collect();
        dates.sort_unstable();
        dates.dedup();
        let base_date = dates.last().copied();
        let snapshot = |at: Option<Date>| -> BTreeMap<&'a str, i64> {
            let mut map = BTreeMap::new();
            for p in snapshots.iter().filter(|p| Some(p.date) == at) {
                *map.entry(p.ticker.as_str()).or_insert(0) += p.quantity;
            }
            map
        };
        let trades_between = |after: Option<Date>, until: Date| {
            agreement
                .trades
                .iter()
                .filter(move |t| t.account == acc.number && after.is_none_or(|a| t.date > a) && t.date <= until)
        };
        let mut quantities = snapshot(base_date);
        for trade in trades_between(base_date, date) {
            *quantities.entry(trade.ticker.as_str()).or_insert(0) += signed(trade);
        }
        // The base snapshot against the one before it and the trades between.
        let mut disputed: BTreeMap<&str, i64> = BTreeMap::new();
        if let (Some(base), Some(previous)) = (base_date, dates.len().checked_sub(2).map(|i| dates[i])) {
            let mut computed = snapshot(Some(previous));
            for trade in trades_between(Some(previous), base) {
                *computed.entry(trade.ticker.as_str()).or_insert(0) += signed(trade);
            }
            let recorded = snapshot(Some(base));
            for ticker in computed.keys().chain(recorded.keys()) {
                let (c, r) = (computed.get(ticker).copied().unwrap_or(0), recorded.get(ticker).copied().unwrap_or(0));
                if c != r {
                    disputed.insert(ticker, c - r);
                }
            }
        }
        for (ticker, quantity) in quantities {
            let by_trades = disputed.get(ticker).map(|difference| quantity + difference);
            if quantity == 0 && by_trades.is_none() {
                continue;
            }
            let (price, value) = valuation(agreement, &snapshots, base_date, ticker, quantity, date);
            holdings.push(Holding { account: &acc.number, ticker, quantity, price, value, by_trades });
        }
        for (ticker, difference) in disputed {
            if !holdings.iter().any(|h| h.account == acc.number && h.ticker == ticker) {
                let (price, value) = valuation(agreement, &snapshots, base_date, ticker, 0, date);
                holdings.push(Holding {
                    account: &acc.number,
                    ticker,
                    quantity: 0,
                    price,
                    value,
                    by_trades: Some(difference),
                });
            }
        }
    }
    holdings.sort_by(|a, b| (a.account, a.ticker).cmp(&(b.account, b.ticker)));
    holdings
}

fn signed(trade: &Trade) -> i64 {
    match trade.side {
        Side::Buy => trade.quantity,
        Side::Sell => -trade.quantity,
    }
}

/// The unit price and value of `quantity` of `ticker` at the end of `date`
/// (neither when no price is known then).
fn valuation(
    agreement: &Agreement,
    snapshots: &[&Position],
    base_date: Option<Date>,
    ticker: &str,
    quantity: i64,
    date: Date,
) -> (Option<Price>, Option<Money>) {
    let recorded = snapshots.iter().find(|p| Some(p.date) == base_date && p.ticker == ticker && p.quantity != 0);
    let traded =
        agreement.trades.iter().filter(|t| t.ticker == ticker && t.date <= date).max_by_key(|t| (t.date, &t.id));
    match (recorded, traded) {
        (Some(p), t) if t.is_none_or(|t| t.date <= p.date) => {
            if p.quantity == quantity {
                return (Some(unit_price(p)), Some(p.value));
            }
            let price = unit_price(p);
            (Some(price), Some(value_of(quantity, price)))
        }
        (_, Some(t)) => (Some(t.price), Some(value_of(quantity, t.price))),
        _ => (None, None),
    }
}

/// A snapshot's value per unit (six places).
fn unit_price(p: &Position) -> Price {
    Price::from((i128::from(p.value.0) * 10_000 / i128::from(p.quantity)) as i64)
}

/// `quantity` at `price`, to the kopeck (half away from zero).
fn value_of(quantity: i64, price: Price) -> Money {
    let micro = i128::from(quantity) * i128::from(price.0);
    let kopecks = (micro + micro.signum() * 5_000) / 10_000;
    Money::from(i64::try_from(kopecks).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use portico_model::reports::brokerage::{Fixed, Position, Side, Trade};
    use time::macros::date;

    use super::*;
    use crate::sample::{ACCOUNT_RUB, ACCOUNT_RUB_2, Shape, agreement};

    fn snapshot(account: &str, date: Date, ticker: &str, quantity: i64, value_roubles: i64) -> Position {
        Position { account: account.into(), date, ticker: ticker.into(), quantity, value: Fixed(value_roubles * 100) }
    }

    fn trade(
        id: &str,
        account: &str,
        date: Date,
        ticker: &str,
        side: Side,
        quantity: i64,
        price_roubles: i64,
    ) -> Trade {
        Trade {
            id: id.into(),
            account: account.into(),
            date,
            settlement_date: date.next_day().unwrap(),
            ticker: ticker.into(),
            side,
            quantity,
            price: Fixed(price_roubles * 1_000_000),
            amount: Fixed(quantity * price_roubles * 100),
            fees: Fixed(0),
        }
    }

    /// An agreement with GAZP 3619 on the first account at the end of 2025
    /// (worth 150 roubles each), a sale of 200 in February and a purchase
    /// of 100 in March at 160, and a trade on the other account.
    fn data() -> Agreement {
        let mut a = agreement(&Shape::demo());
        a.positions = vec![snapshot(ACCOUNT_RUB, date!(2025 - 12 - 31), "GAZP", 3619, 3619 * 150)];
        a.trades = vec![
            trade("T1", ACCOUNT_RUB, date!(2026 - 02 - 10), "GAZP", Side::Sell, 200, 155),
            trade("T2", ACCOUNT_RUB, date!(2026 - 03 - 20), "GAZP", Side::Buy, 100, 160),
            trade("T3", ACCOUNT_RUB_2, date!(2026 - 03 - 21), "GAZP", Side::Buy, 7, 161),
        ];
        a
    }

    fn quantities(holdings: &[Holding<'_>]) -> Vec<(String, String, i64, Option<i64>)> {
        holdings.iter().map(|h| (h.account.to_owned(), h.ticker.to_owned(), h.quantity, h.by_trades)).collect()
    }

    #[test]
    fn the_end_of_a_period_is_the_snapshot_rolled_forward_by_the_trades() {
        let a = data();
        let end = at(&a, Some(ACCOUNT_RUB), date!(2026 - 06 - 30));
        assert_eq!(quantities(&end), [(ACCOUNT_RUB.into(), "GAZP".into(), 3519, None)]);
        let both = at(&a, None, date!(2026 - 06 - 30));
        assert_eq!(
            quantities(&both),
            [(ACCOUNT_RUB.into(), "GAZP".into(), 3519, None), (ACCOUNT_RUB_2.into(), "GAZP".into(), 7, None)],
            "each account rolls forward by its own trades"
        );
    }

    #[test]
    fn the_start_of_a_later_period_counts_the_trades_before_it() {
        let a = data();
        // A report for April starts at the end of 31 March: both trades in.
        assert_eq!(quantities(&at(&a, Some(ACCOUNT_RUB), date!(2026 - 03 - 31)))[0].2, 3519);
        // One for February starts at the end of 31 January: none yet.
        assert_eq!(quantities(&at(&a, Some(ACCOUNT_RUB), date!(2026 - 01 - 31)))[0].2, 3619);
        // A trade counts from the end of its own day.
        assert_eq!(quantities(&at(&a, Some(ACCOUNT_RUB), date!(2026 - 02 - 10)))[0].2, 3419);
        assert_eq!(quantities(&at(&a, Some(ACCOUNT_RUB), date!(2026 - 02 - 09)))[0].2, 3619);
    }

    #[test]
    fn a_snapshot_that_disagrees_with_the_trades_wins_and_the_trades_figure_is_kept_beside_it() {
        let mut a = data();
        a.positions.push(snapshot(ACCOUNT_RUB, date!(2026 - 06 - 30), "GAZP", 3600, 3600 * 170));
        a.trades.push(trade("T4", ACCOUNT_RUB, date!(2026 - 07 - 02), "GAZP", Side::Buy, 10, 171));
        let end = at(&a, Some(ACCOUNT_RUB), date!(2026 - 06 - 30));
        assert_eq!(quantities(&end), [(ACCOUNT_RUB.into(), "GAZP".into(), 3600, Some(3519))]);
        assert_eq!(end[0].value, Some(Fixed(3600 * 170 * 100)), "the snapshot's own value");
        let later = at(&a, Some(ACCOUNT_RUB), date!(2026 - 07 - 15));
        assert_eq!(quantities(&later), [(ACCOUNT_RUB.into(), "GAZP".into(), 3610, Some(3529))]);
        // An instrument the snapshot leaves out while the trades say it is held.
        a.positions.retain(|p| p.date != date!(2026 - 06 - 30));
        a.positions.push(snapshot(ACCOUNT_RUB, date!(2026 - 06 - 30), "SBER", 5, 5 * 300));
        let end = at(&a, Some(ACCOUNT_RUB), date!(2026 - 06 - 30));
        assert_eq!(
            quantities(&end),
            [(ACCOUNT_RUB.into(), "GAZP".into(), 0, Some(3519)), (ACCOUNT_RUB.into(), "SBER".into(), 5, Some(0))]
        );
    }

    #[test]
    fn holdings_are_valued_at_the_latest_price_of_their_day() {
        let a = data();
        let january = at(&a, Some(ACCOUNT_RUB), date!(2026 - 01 - 31));
        assert_eq!(january[0].price, Some(Fixed(150_000_000)), "the snapshot's unit value");
        assert_eq!(january[0].value, Some(Fixed(3619 * 150 * 100)));
        let june = at(&a, Some(ACCOUNT_RUB), date!(2026 - 06 - 30));
        assert_eq!(june[0].price, Some(Fixed(161_000_000)), "the latest trade in the instrument, on any account");
        assert_eq!(june[0].value, Some(Fixed(3519 * 161 * 100)));
    }

    #[test]
    fn a_holding_without_a_known_price_has_no_value_rather_than_a_made_up_one() {
        let mut a = data();
        // NEWCO: 5 in the first snapshot, left out of the second, never
        // traded: in dispute, and no price is known for it on any day.
        a.positions.push(snapshot(ACCOUNT_RUB_2, date!(2025 - 12 - 31), "NEWCO", 5, 0));
        a.positions.retain(|p| p.ticker != "NEWCO" || p.quantity != 0);
        a.positions.push(snapshot(ACCOUNT_RUB_2, date!(2026 - 03 - 31), "GAZP", 7, 7 * 160));
        let held = at(&a, Some(ACCOUNT_RUB_2), date!(2026 - 04 - 30));
        let newco = held.iter().find(|h| h.ticker == "NEWCO").expect("shown, being in dispute");
        assert_eq!((newco.quantity, newco.by_trades), (0, Some(5)));
        assert_eq!((newco.price, newco.value), (None, None), "no price, so no value either");
    }

    #[test]
    fn an_instrument_sold_out_is_left_out() {
        let mut a = data();
        a.trades.push(trade("T5", ACCOUNT_RUB, date!(2026 - 04 - 01), "GAZP", Side::Sell, 3519, 150));
        assert!(at(&a, Some(ACCOUNT_RUB), date!(2026 - 06 - 30)).is_empty());
        assert_eq!(at(&a, Some(ACCOUNT_RUB), date!(2026 - 03 - 31)).len(), 1);
    }
}
