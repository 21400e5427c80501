//! The brokerage report as a spreadsheet (`SIMPLE_DOCUMENTARY`): sheets
//! «Отчёт» (the title block: broker, client, agreement, period), «Позиции»,
//! «Сделки», «Остатки», «Денежные средства» and «Комиссии», each with a bold
//! header row kept in view, dates, money and quantities as real numbers with
//! number formats (`dd.mm.yyyy`, `#,##0.00`), and totals.

use rust_xlsxwriter::{DocProperties, ExcelDateTime, Format, Workbook, Worksheet, XlsxError};
use time::{Date, OffsetDateTime};

use super::GenerateError;
use super::cash::kind_name;
use super::period::{Period, direction_name, ru_date, side_name};

struct Formats {
    header: Format,
    date: Format,
    money: Format,
    price: Format,
    quantity: Format,
    total: Format,
    total_money: Format,
}

fn formats() -> Formats {
    Formats {
        header: Format::new().set_bold().set_background_color(0xDDE7F5).set_text_wrap(),
        date: Format::new().set_num_format("dd.mm.yyyy"),
        money: Format::new().set_num_format("#,##0.00"),
        price: Format::new().set_num_format("#,##0.00####"),
        quantity: Format::new().set_num_format("#,##0"),
        total: Format::new().set_bold(),
        total_money: Format::new().set_bold().set_num_format("#,##0.00"),
    }
}

fn excel_date(date: Date) -> Result<ExcelDateTime, XlsxError> {
    ExcelDateTime::from_ymd(u16::try_from(date.year()).unwrap_or(1900), u8::from(date.month()), date.day())
}

fn header(sheet: &mut Worksheet, f: &Formats, columns: &[(&str, f64)]) -> Result<(), XlsxError> {
    for (i, (title, width)) in columns.iter().enumerate() {
        let col = u16::try_from(i).unwrap_or(u16::MAX);
        sheet.write_string_with_format(0, col, *title, &f.header)?;
        sheet.set_column_width(col, *width)?;
    }
    sheet.set_freeze_panes(1, 0)?;
    Ok(())
}

fn kopecks(value: i64) -> f64 {
    value as f64 / 100.0
}

pub fn render(period: &Period<'_>, created: OffsetDateTime) -> Result<Vec<u8>, GenerateError> {
    build(period, created).map_err(|e| GenerateError::Data(format!("the spreadsheet could not be written: {e}")))
}

fn build(period: &Period<'_>, created: OffsetDateTime) -> Result<Vec<u8>, XlsxError> {
    let f = formats();
    let mut workbook = Workbook::new();
    let agreement = period.agreement;
    let utc = created.to_offset(time::UtcOffset::UTC);
    let made = excel_date(utc.date())?.and_hms(u16::from(utc.hour()), utc.minute(), utc.second())?;
    workbook.set_properties(
        &DocProperties::new()
            .set_title(period.document_title())
            .set_subject(format!("{}, {} — {}", agreement.client_name, ru_date(period.from), ru_date(period.to)))
            .set_author(&period.broker.name)
            .set_company(&period.broker.name)
            .set_category("Брокерский отчёт")
            .set_creation_datetime(&made),
    );

    // The title sheet: the same block as the printed form's.
    let sheet = workbook.add_worksheet().set_name("Отчёт")?;
    sheet.set_column_width(0, 24.0)?;
    sheet.set_column_width(1, 90.0)?;
    sheet.write_string_with_format(0, 0, "Брокерский отчёт", &f.total)?;
    for (row, (label, value)) in (2..).zip(period.title(created)) {
        sheet.write_string_with_format(row, 0, label, &f.total)?;
        sheet.write_string(row, 1, value)?;
    }

    let sheet = workbook.add_worksheet().set_name("Позиции")?;
    header(
        sheet,
        &f,
        &[
            ("Позиция", 16.0),
            ("Дата", 12.0),
            ("Счёт", 24.0),
            ("Тикер", 14.0),
            ("ISIN", 15.0),
            ("Инструмент", 34.0),
            ("Количество", 12.0),
            ("Цена", 14.0),
            ("Оценка, руб.", 16.0),
            ("Количество по сделкам", 14.0),
        ],
    )?;
    // The start is the end of the day before the period: it is dated the
    // period's first day, as of its beginning.
    let opening = period.opening.iter().map(|h| ("на начало периода", period.from, h));
    let closing = period.closing.iter().map(|h| ("на конец периода", period.to, h));
    for (row, (when, date, holding)) in (1..).zip(opening.chain(closing)) {
        let name = period.instrument(holding.ticker).map_or("", |i| i.name.as_str());
        let isin = period.instrument(holding.ticker).map_or("", |i| i.isin.as_str());
        sheet.write_string(row, 0, when)?;
        sheet.write_datetime_with_format(row, 1, excel_date(date)?, &f.date)?;
        sheet.write_string(row, 2, holding.account)?;
        sheet.write_string(row, 3, holding.ticker)?;
        sheet.write_string(row, 4, isin)?;
        sheet.write_string(row, 5, name)?;
        sheet.write_number_with_format(row, 6, holding.quantity as f64, &f.quantity)?;
        if let Some(price) = holding.price {
            sheet.write_number_with_format(row, 7, price.to_f64(), &f.price)?;
        }
        match holding.value {
            Some(value) => sheet.write_number_with_format(row, 8, value.to_f64(), &f.money)?,
            None => sheet.write_string(row, 8, "нет цены")?,
        };
        if let Some(by_trades) = holding.by_trades {
            sheet.write_number_with_format(row, 9, by_trades as f64, &f.quantity)?;
        }
    }

    let sheet = workbook.add_worksheet().set_name("Сделки")?;
    header(
        sheet,
        &f,
        &[
            ("Дата", 12.0),
            ("Дата расчётов", 12.0),
            ("Номер", 10.0),
            ("Счёт", 24.0),
            ("Тикер", 14.0),
            ("Инструмент", 34.0),
            ("Операция", 11.0),
            ("Количество", 12.0),
            ("Цена", 14.0),
            ("Сумма, руб.", 16.0),
            ("Комиссия, руб.", 14.0),
        ],
    )?;
    let mut row = 1;
    for trade in &period.trades {
        let name = period.instrument(&trade.ticker).map_or("", |i| i.name.as_str());
        sheet.write_datetime_with_format(row, 0, excel_date(trade.date)?, &f.date)?;
        sheet.write_datetime_with_format(row, 1, excel_date(trade.settlement_date)?, &f.date)?;
        sheet.write_string(row, 2, &trade.id)?;
        sheet.write_string(row, 3, &trade.account)?;
        sheet.write_string(row, 4, &trade.ticker)?;
        sheet.write_string(row, 5, name)?;
        sheet.write_string(row, 6, side_name(trade.side))?;
        sheet.write_number_with_format(row, 7, trade.quantity as f64, &f.quantity)?;
        sheet.write_number_with_format(row, 8, trade.price.to_f64(), &f.price)?;
        sheet.write_number_with_format(row, 9, trade.amount.to_f64(), &f.money)?;
        sheet.write_number_with_format(row, 10, trade.fees.to_f64(), &f.money)?;
        row += 1;
    }
    let (bought, sold) = period.trade_totals();
    let fees: i64 = period.trades.iter().map(|t| t.fees.0).sum();
    sheet.write_string_with_format(row, 0, "Итого покупки", &f.total)?;
    sheet.write_number_with_format(row, 9, kopecks(bought), &f.total_money)?;
    sheet.write_string_with_format(row + 1, 0, "Итого продажи", &f.total)?;
    sheet.write_number_with_format(row + 1, 9, kopecks(sold), &f.total_money)?;
    sheet.write_string_with_format(row + 2, 0, "Итого комиссии по сделкам", &f.total)?;
    sheet.write_number_with_format(row + 2, 10, kopecks(fees), &f.total_money)?;

    let sheet = workbook.add_worksheet().set_name("Остатки")?;
    header(
        sheet,
        &f,
        &[
            ("Счёт", 24.0),
            ("Валюта", 8.0),
            ("Остаток на начало", 16.0),
            ("Зачислено", 16.0),
            ("Списано", 16.0),
            ("Оплата покупок", 16.0),
            ("Поступления от продаж", 16.0),
            ("Комиссии по сделкам", 16.0),
            ("Остаток на конец", 16.0),
        ],
    )?;
    for (row, a) in (1..).zip(&period.balances) {
        sheet.write_string(row, 0, a.account)?;
        sheet.write_string(row, 1, a.currency)?;
        for (col, amount) in (2..).zip([a.opening, a.received, a.paid, a.bought, a.sold, a.trade_fees, a.closing]) {
            sheet.write_number_with_format(row, col, kopecks(amount), &f.money)?;
        }
    }

    let sheet = workbook.add_worksheet().set_name("Денежные средства")?;
    header(
        sheet,
        &f,
        &[
            ("Дата", 12.0),
            ("Счёт", 24.0),
            ("Вид", 22.0),
            ("Направление", 13.0),
            ("Сумма", 16.0),
            ("Валюта", 8.0),
            ("Назначение", 50.0),
            ("Контрагент", 34.0),
            ("ИНН контрагента", 15.0),
        ],
    )?;
    let mut row = 1;
    for movement in &period.cash {
        sheet.write_datetime_with_format(row, 0, excel_date(movement.date)?, &f.date)?;
        sheet.write_string(row, 1, &movement.account)?;
        sheet.write_string(row, 2, kind_name(&movement.kind))?;
        sheet.write_string(row, 3, direction_name(movement.direction))?;
        sheet.write_number_with_format(row, 4, movement.amount.to_f64(), &f.money)?;
        sheet.write_string(row, 5, &movement.currency)?;
        sheet.write_string(row, 6, &movement.purpose)?;
        sheet.write_string(row, 7, &movement.counterparty.name)?;
        sheet.write_string(row, 8, &movement.counterparty.inn)?;
        row += 1;
    }
    let (received, paid) = period.cash_totals();
    sheet.write_string_with_format(row, 0, "Итого зачислено", &f.total)?;
    sheet.write_number_with_format(row, 4, kopecks(received), &f.total_money)?;
    sheet.write_string_with_format(row + 1, 0, "Итого списано", &f.total)?;
    sheet.write_number_with_format(row + 1, 4, kopecks(paid), &f.total_money)?;

    let sheet = workbook.add_worksheet().set_name("Комиссии")?;
    header(sheet, &f, &[("Дата", 12.0), ("Счёт", 24.0), ("Основание", 50.0), ("Сумма, руб.", 16.0)])?;
    let mut row = 1;
    let mut total = 0;
    for fee in period.fees() {
        sheet.write_datetime_with_format(row, 0, excel_date(fee.date)?, &f.date)?;
        sheet.write_string(row, 1, &fee.account)?;
        sheet.write_string(row, 2, &fee.what)?;
        sheet.write_number_with_format(row, 3, kopecks(fee.amount), &f.money)?;
        total += fee.amount;
        row += 1;
    }
    sheet.write_string_with_format(row, 0, "Итого комиссии", &f.total)?;
    sheet.write_number_with_format(row, 3, kopecks(total), &f.total_money)?;

    workbook.save_to_buffer()
}
