//! The bank statement for 1C: a `1CClientBankExchange` file, format version
//! 1.03, in Windows-1251 with CRLF line ends, as 1C:Enterprise's
//! "Обмен с банком" loads it: the header, one `СекцияРасчСчет` with the
//! opening balance, the totals in and out and the closing balance, one
//! `СекцияДокумент` per cash movement of the period with payer and payee
//! details, and `КонецФайла`.

use portico_model::reports::brokerage::{Account, Agreement, Direction, Money, Party};
use time::{Date, OffsetDateTime};

use super::GenerateError;

/// `dd.mm.yyyy`, as the format writes dates.
fn date(date: Date) -> String {
    format!("{:02}.{:02}.{:04}", date.day(), u8::from(date.month()), date.year())
}

/// The statement of `account` for `from..=to`, encoded in Windows-1251.
///
/// # Errors
/// When a sum does not fit.
pub fn render(
    agreement: &Agreement,
    account: &Account,
    from: Date,
    to: Date,
    // When it was made, in the broker's time zone (1C reads local time).
    now: OffsetDateTime,
) -> Result<Vec<u8>, GenerateError> {
    let overflow = || GenerateError::Data("the statement's sums are too large".into());
    let mut movements: Vec<_> = agreement.cash_movements.iter().filter(|m| m.account == account.number).collect();
    movements.sort_by(|a, b| (a.date, &a.document_number).cmp(&(b.date, &b.document_number)));
    let signed = |m: &&portico_model::reports::brokerage::CashMovement| match m.direction {
        Direction::In => m.amount.0,
        Direction::Out => -m.amount.0,
    };
    // The opening balance: the last balance recorded before the period,
    // moved on by what happened after it and before the period.
    let base =
        agreement.cash_balances.iter().filter(|b| b.account == account.number && b.date < from).max_by_key(|b| b.date);
    let mut opening = base.map_or(0, |b| b.amount.0);
    for m in movements.iter().filter(|m| m.date < from && base.is_none_or(|b| m.date > b.date)) {
        opening = opening.checked_add(signed(m)).ok_or_else(overflow)?;
    }
    let in_period: Vec<_> = movements.iter().filter(|m| m.date >= from && m.date <= to).collect();
    let mut received: i64 = 0;
    let mut spent: i64 = 0;
    for m in &in_period {
        match m.direction {
            Direction::In => received = received.checked_add(m.amount.0).ok_or_else(overflow)?,
            Direction::Out => spent = spent.checked_add(m.amount.0).ok_or_else(overflow)?,
        }
    }
    let closing = opening.checked_add(received).and_then(|v| v.checked_sub(spent)).ok_or_else(overflow)?;

    let mut lines: Vec<String> = vec![
        "1CClientBankExchange".into(),
        "ВерсияФормата=1.03".into(),
        "Кодировка=Windows".into(),
        "Отправитель=Portico".into(),
        "Получатель=".into(),
        format!("ДатаСоздания={}", date(now.date())),
        format!("ВремяСоздания={:02}:{:02}:{:02}", now.hour(), now.minute(), now.second()),
        format!("ДатаНачала={}", date(from)),
        format!("ДатаКонца={}", date(to)),
        format!("РасчСчет={}", account.number),
        "Документ=Платежное поручение".into(),
        "СекцияРасчСчет".into(),
        format!("ДатаНачала={}", date(from)),
        format!("ДатаКонца={}", date(to)),
        format!("РасчСчет={}", account.number),
        format!("НачальныйОстаток={}", Money::from(opening)),
        format!("ВсегоПоступило={}", Money::from(received)),
        format!("ВсегоСписано={}", Money::from(spent)),
        format!("КонечныйОстаток={}", Money::from(closing)),
        "КонецРасчСчет".into(),
    ];
    for m in in_period {
        let (payer, payee) = match m.direction {
            Direction::In => (&m.counterparty, &account.owner),
            Direction::Out => (&account.owner, &m.counterparty),
        };
        lines.push("СекцияДокумент=Платежное поручение".into());
        lines.push(format!("Номер={}", m.document_number));
        lines.push(format!("Дата={}", date(m.date)));
        lines.push(format!("Сумма={}", m.amount));
        party(&mut lines, "Плательщик", payer);
        party(&mut lines, "Получатель", payee);
        lines.push("ВидОплаты=01".into());
        lines.push("Очередность=5".into());
        lines.push(format!("НазначениеПлатежа={}", one_line(&m.purpose)));
        match m.direction {
            Direction::In => lines.push(format!("ДатаПоступило={}", date(m.date))),
            Direction::Out => lines.push(format!("ДатаСписано={}", date(m.date))),
        }
        lines.push("КонецДокумента".into());
    }
    lines.push("КонецФайла".into());
    let mut text = lines.join("\r\n");
    text.push_str("\r\n");
    Ok(windows_1251(&text))
}

/// The payer's or payee's lines; `role` is `Плательщик` or `Получатель`.
fn party(lines: &mut Vec<String>, role: &str, party: &Party) {
    let name = one_line(&party.name);
    lines.push(format!("{role}Счет={}", party.account));
    lines.push(format!("{role}=ИНН {} {name}", party.inn));
    lines.push(format!("{role}ИНН={}", party.inn));
    lines.push(format!("{role}КПП={}", party.kpp.as_deref().unwrap_or("")));
    lines.push(format!("{role}1={name}"));
    lines.push(format!("{role}РасчСчет={}", party.account));
    lines.push(format!("{role}Банк1={}", one_line(&party.bank.name)));
    lines.push(format!("{role}БИК={}", party.bank.bic));
    lines.push(format!("{role}Корсчет={}", party.bank.correspondent_account));
}

/// Values are single lines: line breaks become spaces.
fn one_line(text: &str) -> String {
    text.split(['\r', '\n']).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Windows-1251; a character it cannot hold becomes `?`.
fn windows_1251(text: &str) -> Vec<u8> {
    let (bytes, _, unmappable) = encoding_rs::WINDOWS_1251.encode(text);
    if !unmappable {
        return bytes.into_owned();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut buffer = [0u8; 4];
    for c in text.chars() {
        let (bytes, _, unmappable) = encoding_rs::WINDOWS_1251.encode(c.encode_utf8(&mut buffer));
        if unmappable { out.push(b'?') } else { out.extend_from_slice(&bytes) }
    }
    out
}
