//! A sample brokerage agreement, made up deterministically: for the demo
//! data set, the tests and the benchmarks. Names are Cyrillic, amounts add
//! up, every account and instrument referred to exists.

use portico_model::reports::brokerage::{
    Account, Agreement, BankDetails, CashBalance, CashMovement, Direction, Fixed, Instrument, Party, Position, Side,
    Trade,
};
use time::{Date, Duration, Month};

/// What to make.
#[derive(Debug, Clone)]
pub struct Shape {
    pub number: &'static str,
    pub cnum: &'static str,
    pub client_name: &'static str,
    /// The period the data covers: `days` days up to and including `last`.
    pub last: Date,
    pub days: i64,
    pub trades: usize,
    pub cash_movements: usize,
}

impl Shape {
    /// The demo agreement: a year of trades and cash movements.
    pub fn demo() -> Self {
        Self {
            number: "БД-0001",
            cnum: "7700000001",
            client_name: "ООО «Ромашка»",
            last: Date::from_calendar_date(2026, Month::October, 31).unwrap_or(Date::MIN),
            days: 365,
            trades: 240,
            cash_movements: 96,
        }
    }
}

/// The first account of a sample agreement (roubles).
pub const ACCOUNT_RUB: &str = "40702810900000000001";
/// The second.
pub const ACCOUNT_RUB_2: &str = "40702810900000000002";

const INSTRUMENTS: [(&str, &str, &str); 6] = [
    ("SBER", "RU0009029540", "Сбербанк ао"),
    ("GAZP", "RU0007661625", "Газпром ао"),
    ("LKOH", "RU0009024277", "ЛУКОЙЛ ао"),
    ("GMKN", "RU0007288411", "ГМК «Норильский никель» ао"),
    ("MTSS", "RU0007775219", "МТС ао"),
    ("SU26238RMFS4", "RU000A1038V6", "ОФЗ 26238"),
];

const COUNTERPARTIES: [(&str, &str, &str); 4] = [
    ("ООО «Вектор»", "7701234567", "770101001"),
    ("АО «Северный ветер»", "7812345678", "781201001"),
    ("ИП Кузнецова Анна Сергеевна", "500100732259", ""),
    ("ПАО «Брокерский дом»", "7705000111", "770501001"),
];

fn bank() -> BankDetails {
    BankDetails {
        bic: "044525225".into(),
        name: "ПАО Сбербанк г. Москва".into(),
        correspondent_account: "30101810400000000225".into(),
    }
}

/// A small deterministic generator (SplitMix64).
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub fn agreement(shape: &Shape) -> Agreement {
    let mut numbers = Numbers(0x5EED);
    let owner = |account: &str| Party {
        name: shape.client_name.to_owned(),
        inn: format!("{:0>10}", &shape.cnum[shape.cnum.len().saturating_sub(10)..]),
        kpp: Some("770101001".into()),
        account: account.to_owned(),
        bank: bank(),
    };
    let accounts = [ACCOUNT_RUB, ACCOUNT_RUB_2]
        .iter()
        .map(|number| Account { number: (*number).to_owned(), currency: "RUB".into(), owner: owner(number) })
        .collect::<Vec<_>>();
    let instruments = INSTRUMENTS
        .iter()
        .map(|(ticker, isin, name)| Instrument {
            ticker: (*ticker).into(),
            isin: (*isin).into(),
            name: (*name).into(),
            currency: "RUB".into(),
        })
        .collect::<Vec<_>>();
    let first = shape.last - Duration::days(shape.days - 1);
    let day = |numbers: &mut Numbers| first + Duration::days(numbers.below(shape.days as u64) as i64);
    let mut trades = Vec::with_capacity(shape.trades);
    for i in 0..shape.trades {
        let (ticker, ..) = INSTRUMENTS[numbers.below(INSTRUMENTS.len() as u64) as usize];
        let date = day(&mut numbers);
        let quantity = 1 + numbers.below(500) as i64;
        let price = 10_000_000 + numbers.below(500_000_000) as i64; // 10 to 510 roubles, 6 places
        let amount = quantity * price / 10_000; // kopecks
        trades.push(Trade {
            id: format!("T{:06}", i + 1),
            account: accounts[i % 2].number.clone(),
            date,
            settlement_date: date + Duration::days(1),
            ticker: ticker.into(),
            side: if numbers.below(2) == 0 { Side::Buy } else { Side::Sell },
            quantity,
            price: Fixed(price),
            amount: Fixed(amount),
            fees: Fixed((amount / 2_000).max(1)),
        });
    }
    trades.sort_by(|a, b| (a.date, &a.id).cmp(&(b.date, &b.id)));
    let kinds = [
        ("DEPOSIT", Direction::In),
        ("WITHDRAWAL", Direction::Out),
        ("DIVIDEND", Direction::In),
        ("FEE", Direction::Out),
    ];
    let mut cash_movements = Vec::with_capacity(shape.cash_movements);
    for i in 0..shape.cash_movements {
        let (kind, direction) = kinds[i % kinds.len()];
        let (name, inn, kpp) = COUNTERPARTIES[numbers.below(COUNTERPARTIES.len() as u64) as usize];
        let date = day(&mut numbers);
        let amount = 100_000 + numbers.below(50_000_000) as i64;
        let purpose = match kind {
            "DEPOSIT" => format!("Пополнение брокерского счёта по договору {}. Без НДС", shape.number),
            "WITHDRAWAL" => format!("Вывод денежных средств по договору {}. Без НДС", shape.number),
            "DIVIDEND" => "Выплата дивидендов за 2025 год. НДС не облагается".to_owned(),
            _ => format!("Комиссия брокера по договору {}. Без НДС", shape.number),
        };
        cash_movements.push(CashMovement {
            id: format!("C{:06}", i + 1),
            account: accounts[i % 2].number.clone(),
            date,
            kind: kind.into(),
            direction,
            amount: Fixed(amount),
            currency: "RUB".into(),
            purpose,
            document_number: format!("{}", 1000 + i),
            counterparty: Party {
                name: name.into(),
                inn: inn.into(),
                kpp: (!kpp.is_empty()).then(|| kpp.to_owned()),
                account: format!("40702810{:012}", 100 + numbers.below(900)),
                bank: bank(),
            },
        });
    }
    cash_movements.sort_by(|a, b| (a.date, &a.id).cmp(&(b.date, &b.id)));
    let opening = first - Duration::days(1);
    let cash_balances = accounts
        .iter()
        .map(|a| CashBalance { account: a.number.clone(), date: opening, amount: Fixed(1_000_000_000) })
        .collect();
    // Positions: every instrument on both accounts the day before the
    // trades begin, and on the last day the same rolled forward by the
    // trades, so that the depository's figures and the trades agree.
    let mut positions = Vec::new();
    for account in &accounts {
        for (i, (ticker, ..)) in INSTRUMENTS.iter().enumerate() {
            let quantity = 20_000 + 1_000 * i as i64;
            let traded: i64 = trades
                .iter()
                .filter(|t| t.account == account.number && t.ticker == *ticker)
                .map(|t| if t.side == Side::Buy { t.quantity } else { -t.quantity })
                .sum();
            for (date, quantity) in [(opening, quantity), (shape.last, quantity + traded)] {
                positions.push(Position {
                    account: account.number.clone(),
                    date,
                    ticker: (*ticker).into(),
                    quantity,
                    value: Fixed(quantity * 15_000),
                });
            }
        }
    }
    Agreement {
        number: shape.number.into(),
        cnum: shape.cnum.into(),
        client_name: shape.client_name.into(),
        opened_on: first - Duration::days(30),
        accounts,
        instruments,
        trades,
        cash_movements,
        positions,
        cash_balances,
    }
}

/// A new task for the whole period of `shape`'s agreement (for the tests
/// and the benchmarks that generate without the API).
pub fn task(
    shape: &Shape,
    report_type: portico_model::reports::ReportType,
    file_types: Vec<portico_model::reports::FileType>,
    account: Option<&str>,
) -> portico_model::reports::ReportTask {
    let now = time::OffsetDateTime::now_utc();
    portico_model::reports::ReportTask {
        id: portico_model::ids::ReportTaskId::now_v7(),
        cnum: shape.cnum.into(),
        report_type,
        agreement_number: shape.number.into(),
        account: account.map(str::to_owned),
        period_from: shape.last - Duration::days(shape.days - 1),
        period_to: shape.last,
        handle_if_exists: true,
        file_types,
        status: portico_model::reports::TaskStatus::New,
        source: portico_model::reports::Source::PublicApiGateway,
        error: None,
        created_by: None,
        attempts: 0,
        lease_until: None,
        created_at: now,
        updated_at: now,
        files: Vec::new(),
        trace_parent: None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sample_agreement_is_valid() {
        let agreement = super::agreement(&super::Shape::demo());
        assert_eq!(agreement.problems(), Vec::<String>::new());
        assert_eq!(agreement.trades.len(), 240);
    }

    #[test]
    fn stored_texts_are_bounded_and_single_line() {
        let mut agreement = super::agreement(&super::Shape::demo());
        agreement.client_name = "Я".repeat(256);
        agreement.accounts[0].owner.bank.name = "Bank\nInjected=line".into();
        agreement.instruments[0].name = "x".repeat(1_000_000);
        agreement.trades[0].id = "t".repeat(65);
        agreement.cash_movements[0].purpose = "п".repeat(211);
        agreement.cash_movements[1].kind = String::new();
        agreement.cash_movements[2].document_number = "1\r2".into();
        let problems = agreement.problems();
        for place in [
            "clientName: 1 to 255",
            "accounts[0].owner.bank.name: 1 to 255",
            "instruments[0].name: 1 to 255",
            "trades[0].id: 1 to 64",
            "cashMovements[0].purpose: 1 to 210",
            "cashMovements[1].type: 1 to 64",
            "cashMovements[2].documentNumber: 1 to 64",
        ] {
            assert!(problems.iter().any(|p| p.starts_with(place)), "{place} not in {problems:?}");
        }
        assert_eq!(problems.len(), 7, "{problems:?}");
        // At the limits, accepted.
        agreement.client_name = "Я".repeat(255);
        agreement.accounts[0].owner.bank.name = "Банк".into();
        agreement.instruments[0].name = "x".repeat(255);
        agreement.trades[0].id = "t".repeat(64);
        agreement.cash_movements[0].purpose = "п".repeat(210);
        agreement.cash_movements[1].kind = "DEPOSIT".into();
        agreement.cash_movements[2].document_number = String::new();
        assert_eq!(agreement.problems(), Vec::<String>::new());
    }
}
