//! Brokerage data as CSV: one table per file, the way back offices export
//! it. A file's first line names its columns; which table it holds follows
//! from them. Column names are the JSON document's field names, nested ones
//! joined with dots (`counterparty.bank.bic`), and every row names its
//! agreement in the column `agreement`, so one file may serve several
//! agreements and the two formats never drift apart: a row becomes the same
//! JSON object the JSON import reads.
//!
//! An import applies tables to agreements: each agreement with rows in a
//! table gets exactly those rows for that table (two files of one table add
//! up), tables the import does not bring stay as stored, and an agreement
//! that is not stored yet needs its row in an `agreements` table. The result
//! is checked whole, as a JSON import is, before anything is saved.

use std::collections::{BTreeMap, BTreeSet};

use portico_model::reports::brokerage::Agreement;
use serde_json::{Map, Value};

use super::Document;

/// The tables of a CSV import, with their columns (`?` marks optional ones).
const TABLES: &[(&str, &[&str])] = &[
    ("agreements", &["agreement", "cnum", "clientName", "openedOn"]),
    (
        "accounts",
        &[
            "agreement",
            "number",
            "currency",
            "owner.name",
            "owner.inn",
            "owner.kpp?",
            "owner.account",
            "owner.bank.bic",
            "owner.bank.name",
            "owner.bank.correspondentAccount",
        ],
    ),
    ("instruments", &["agreement", "ticker", "isin", "name", "currency"]),
    (
        "trades",
        &[
            "agreement",
            "id",
            "account",
            "date",
            "settlementDate",
            "ticker",
            "side",
            "quantity",
            "price",
            "amount",
            "fees",
        ],
    ),
    (
        "cashMovements",
        &[
            "agreement",
            "id",
            "account",
            "date",
            "type",
            "direction",
            "amount",
            "currency",
            "purpose",
            "documentNumber",
            "counterparty.name",
            "counterparty.inn",
            "counterparty.kpp?",
            "counterparty.account",
            "counterparty.bank.bic",
            "counterparty.bank.name",
            "counterparty.bank.correspondentAccount",
        ],
    ),
    ("positions", &["agreement", "account", "date", "ticker", "quantity", "value"]),
    ("cashBalances", &["agreement", "account", "date", "amount"]),
];

/// Columns whose cells are whole numbers in the JSON form.
const INTEGER_COLUMNS: &[&str] = &["quantity"];

/// One CSV file, read: its table and its rows as JSON objects.
#[derive(Debug)]
pub struct Table {
    file: String,
    /// The table's name, as in [`TABLES`] and the JSON document.
    pub name: &'static str,
    /// `(line, agreement number, the row without its agreement)`.
    rows: Vec<(u64, String, Value)>,
}

impl Table {
    /// The agreements this file has rows for.
    pub fn agreements(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().map(|(_, agreement, _)| agreement.as_str())
    }
}

/// Reads one CSV file (UTF-8, a byte-order mark allowed; comma or semicolon
/// separated, as the header line shows). `file` names it in problems.
///
/// # Errors
/// Every problem found, each naming the file, line and column.
pub fn read(file: &str, bytes: &[u8]) -> Result<Table, Vec<String>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // The reader counts a CRLF record's line from its LF: read LF lines so
    // that problems name the line a spreadsheet shows.
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let line = bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
            return Err(vec![format!("{file}: line {line}: not UTF-8 (save the file as UTF-8)")]);
        }
    };
    let lf = text.replace("\r\n", "\n");
    let bytes = lf.as_bytes();
    let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let delimiter = if !first_line.contains(&b',') && first_line.contains(&b';') { b';' } else { b',' };
    let mut reader = ::csv::ReaderBuilder::new().delimiter(delimiter).from_reader(bytes);
    let header: Vec<String> = match reader.headers() {
        Ok(header) => header.iter().map(|h| h.trim().to_owned()).collect(),
        Err(e) => return Err(vec![format!("{file}: {}", plain(&e))]),
    };
    let name = table_of(file, &header)?;
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                problems.push(format!("{file}: {}", plain(&e)));
                continue;
            }
        };
        let line = record.position().map_or(0, ::csv::Position::line);
        let mut agreement = String::new();
        let mut row = Map::new();
        for (column, cell) in header.iter().zip(record.iter()) {
            let cell = cell.trim();
            if column == "agreement" {
                agreement = cell.to_owned();
            } else if !cell.is_empty() {
                insert(&mut row, column, cell);
            }
        }
        if agreement.is_empty() {
            problems.push(format!("{file} line {line}, column agreement: the agreement number is missing"));
        }
        rows.push((line, agreement, Value::Object(row)));
    }
    if rows.is_empty() && problems.is_empty() {
        problems.push(format!("{file}: the header is followed by no rows"));
    }
    if problems.is_empty() { Ok(Table { file: file.to_owned(), name, rows }) } else { Err(problems) }
}

/// Applies `tables` to the agreements they name; `stored` holds the stored
/// agreement of each number named that exists.
///
/// # Errors
/// Every problem, each naming the file and line (or the agreement) it is in.
pub fn apply(tables: &[Table], stored: BTreeMap<String, Agreement>) -> Result<Document, Vec<String>> {
    let mut problems = Vec::new();
    let numbers: BTreeSet<&str> = tables.iter().flat_map(Table::agreements).collect();
    let mut agreements = Vec::new();
    // Where each item of each agreement's collection came from: (file, line).
    let mut origins: BTreeMap<(&str, &str), Vec<(&str, u64)>> = BTreeMap::new();
    for number in numbers {
        let headers: Vec<(&Table, &(u64, String, Value))> = tables
            .iter()
            .filter(|t| t.name == "agreements")
            .flat_map(|t| t.rows.iter().filter(|r| r.1 == number).map(move |r| (t, r)))
            .collect();
        let mut document = match (stored.get(number), headers.as_slice()) {
            (_, [(_, (_, _, row))]) => {
                let mut document = stored.get(number).map_or_else(
                    || serde_json::json!({"accounts": []}),
                    |a| serde_json::to_value(a).expect("an agreement is JSON"),
                );
                for (key, value) in row.as_object().expect("rows are objects") {
                    document[key] = value.clone();
                }
                document
            }
            (Some(agreement), []) => serde_json::to_value(agreement).expect("an agreement is JSON"),
            (None, []) => {
                problems.push(format!(
                    "agreement {number}: not stored yet; add its row to an agreements table \
                     (agreement,cnum,clientName,openedOn)"
                ));
                continue;
            }
            (_, [..]) => {
                let lines: Vec<String> = headers.iter().map(|(t, r)| format!("{} line {}", t.file, r.0)).collect();
                problems.push(format!("agreement {number}: given more than once ({})", lines.join(", ")));
                continue;
            }
        };
        document["number"] = Value::String(number.to_owned());
        for (name, _) in &TABLES[1..] {
            let mut items = Vec::new();
            let mut from = Vec::new();
            for table in tables.iter().filter(|t| t.name == *name) {
                for (line, _, row) in table.rows.iter().filter(|r| r.1 == number) {
                    items.push(row.clone());
                    from.push((table.file.as_str(), *line));
                }
            }
            if !from.is_empty() {
                document[*name] = Value::Array(items);
                origins.insert((number, name), from);
            }
        }
        match serde_path_to_error::deserialize::<_, Agreement>(document) {
            Ok(agreement) => {
                let own = agreement.problems().into_iter().map(|p| place(number, &p, &origins));
                problems.extend(own);
                agreements.push(agreement);
            }
            Err(e) => problems.push(place(number, &format!("{}: {}", e.path(), e.inner()), &origins)),
        }
    }
    if problems.is_empty() { Ok(Document { agreements }) } else { Err(problems) }
}

/// The table whose columns hold every column of `header`: the smallest one
/// when several do. Names what is missing or unknown when none fits.
fn table_of(file: &str, header: &[String]) -> Result<&'static str, Vec<String>> {
    let known = |columns: &[&str], column: &str| columns.iter().any(|c| c.trim_end_matches('?') == column);
    for (i, column) in header.iter().enumerate() {
        if header[..i].contains(column) {
            return Err(vec![format!("{file}: the column {column} is named twice")]);
        }
    }
    let fits = TABLES
        .iter()
        .filter(|(_, columns)| header.iter().all(|h| known(columns, h)))
        .min_by_key(|(_, columns)| columns.len());
    let Some((name, columns)) = fits else {
        let (name, columns) = TABLES
            .iter()
            .max_by_key(|(_, columns)| header.iter().filter(|h| known(columns, h)).count())
            .expect("tables are listed");
        let unknown: Vec<&str> = header.iter().filter(|h| !known(columns, h)).map(String::as_str).collect();
        return Err(vec![format!(
            "{file}: the header fits no table; closest is {name} ({}), which has no column {}",
            columns.join(","),
            unknown.join(", ")
        )]);
    };
    let missing: Vec<&str> =
        columns.iter().filter(|c| !c.ends_with('?') && !header.iter().any(|h| h == *c)).copied().collect();
    if missing.is_empty() {
        Ok(name)
    } else {
        Err(vec![format!("{file}: a {name} table needs the column(s) {}", missing.join(", "))])
    }
}

/// Sets `a.b.c` in `row` to the cell, as a number for integer columns.
fn insert(row: &mut Map<String, Value>, column: &str, cell: &str) {
    let (head, rest) = column.split_once('.').unwrap_or((column, ""));
    if rest.is_empty() {
        let value = match cell.parse::<i64>() {
            Ok(n) if INTEGER_COLUMNS.contains(&head) => Value::from(n),
            _ => Value::String(cell.to_owned()),
        };
        row.insert(head.to_owned(), value);
    } else if let Value::Object(inner) = row.entry(head).or_insert_with(|| Value::Object(Map::new())) {
        insert(inner, rest, cell);
    }
}

/// `trades[3].ticker: ...` becomes `trades.csv line 5, column ticker: ...`
/// when the trade came from a file; other problems name the agreement.
fn place(number: &str, problem: &str, origins: &BTreeMap<(&str, &str), Vec<(&str, u64)>>) -> String {
    let located = problem.split_once('[').and_then(|(table, rest)| {
        let (index, rest) = rest.split_once(']')?;
        let (file, line) = origins.get(&(number, table))?.get(index.parse::<usize>().ok()?)?;
        let (column, what) = rest.strip_prefix('.').unwrap_or(rest).split_once(": ")?;
        let column = if column.is_empty() { String::new() } else { format!(", column {column}") };
        Some(format!("{file} line {line}{column} (agreement {number}): {what}"))
    });
    located.unwrap_or_else(|| format!("agreement {number}: {problem}"))
}

/// A CSV error without the reader's internal byte positions.
fn plain(error: &::csv::Error) -> String {
    match error.kind() {
        ::csv::ErrorKind::UnequalLengths { pos, expected_len, len } => format!(
            "line {}: {len} cells where the header has {expected_len}",
            pos.as_ref().map_or(0, ::csv::Position::line)
        ),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRADES: &str = "agreement,id,account,date,settlementDate,ticker,side,quantity,price,amount,fees\n";

    #[test]
    fn the_header_names_the_table_and_rows_become_json_objects() {
        let file = "\u{feff}agreement;account;date;amount\r\nБД-1;40702810900000000001;2026-01-01;12.50\r\n";
        let table = read("balances.csv", file.as_bytes()).unwrap();
        assert_eq!(table.name, "cashBalances", "the smallest table with every column");
        assert_eq!(table.rows[0].0, 2, "lines counted as a spreadsheet shows them");
        assert_eq!(table.rows[0].1, "БД-1");
        assert_eq!(
            table.rows[0].2,
            serde_json::json!({"account": "40702810900000000001", "date": "2026-01-01", "amount": "12.50"})
        );
        let movement = "agreement,counterparty.bank.bic,quantity\nБД-1,044525225,7\n";
        let mut row = Map::new();
        insert(&mut row, "counterparty.bank.bic", "044525225");
        insert(&mut row, "quantity", "7");
        assert_eq!(
            Value::Object(row),
            serde_json::json!({"counterparty": {"bank": {"bic": "044525225"}}, "quantity": 7})
        );
        let error = read("odd.csv", movement.as_bytes()).unwrap_err();
        assert!(error[0].contains("odd.csv: the header fits no table"), "{error:?}");
    }

    #[test]
    fn a_file_in_another_encoding_is_refused_naming_its_line() {
        let (cp1251, _, _) =
            encoding_rs::WINDOWS_1251.encode("agreement,account,date,amount\r\nБД-1,1,2026-01-01,1.00\r\n");
        assert_eq!(read("b.csv", &cp1251).unwrap_err(), ["b.csv: line 2: not UTF-8 (save the file as UTF-8)"]);
    }

    #[test]
    fn header_problems_name_the_missing_and_unknown_columns() {
        let missing =
            read("t.csv", b"agreement,id,account,date,ticker,side,quantity,price,amount,fees\nA,1,2,3,4,5,6,7,8,9\n");
        assert_eq!(missing.unwrap_err(), ["t.csv: a trades table needs the column(s) settlementDate"]);
        let unknown = read("t.csv", TRADES.replace("fees", "fee").as_bytes()).unwrap_err();
        assert!(unknown[0].contains("closest is trades") && unknown[0].ends_with("no column fee"), "{unknown:?}");
        let twice = read("t.csv", b"agreement,amount,amount\n").unwrap_err();
        assert_eq!(twice, ["t.csv: the column amount is named twice"]);
        let short = read("t.csv", format!("{TRADES}A,1\n").as_bytes()).unwrap_err();
        assert_eq!(short, ["t.csv: line 2: 2 cells where the header has 11"]);
        let empty = read("t.csv", TRADES.as_bytes()).unwrap_err();
        assert_eq!(empty, ["t.csv: the header is followed by no rows"]);
    }

    #[test]
    fn problems_of_applied_rows_name_the_file_line_and_column() {
        let sample = crate::sample::agreement(&crate::sample::Shape::demo());
        let rows = format!(
            "{TRADES}{n},T1,{a},2026-01-05,2026-01-06,SBER,BUY,10,250.5,2505.00,1.25\n\
             {n},T2,{a},2026-01-05,2026-01-06,NOPE,BUY,10,250.5,2505.00,1.25\n\
             {n},T3,{a},2026-01-05,2026-01-06,SBER,BUY,10,2.50.5,2505.00,1.25\n",
            n = sample.number,
            a = crate::sample::ACCOUNT_RUB
        );
        let table = read("trades.csv", rows.as_bytes()).unwrap();
        let stored = BTreeMap::from([(sample.number.clone(), sample.clone())]);
        let problems = apply(std::slice::from_ref(&table), stored.clone()).unwrap_err();
        assert_eq!(problems.len(), 1, "a value that does not parse stops at the first: {problems:?}");
        assert!(problems[0].starts_with("trades.csv line 4, column price (agreement БД-0001): "), "{problems:?}");

        let rows = rows.lines().take(3).collect::<Vec<_>>().join("\n");
        let table = read("trades.csv", rows.as_bytes()).unwrap();
        let problems = apply(std::slice::from_ref(&table), stored.clone()).unwrap_err();
        assert_eq!(
            problems,
            ["trades.csv line 3, column ticker (agreement БД-0001): an instrument listed in instruments"]
        );

        let good = rows.lines().take(2).collect::<Vec<_>>().join("\n");
        let table = read("trades.csv", good.as_bytes()).unwrap();
        let document = apply(std::slice::from_ref(&table), stored).unwrap();
        let applied = &document.agreements[0];
        assert_eq!(applied.trades.len(), 1, "the table replaces the agreement's trades");
        assert_eq!(applied.trades[0].price.to_string(), "250.500000");
        assert_eq!(applied.cash_movements, sample.cash_movements, "tables not brought stay as stored");
    }

    #[test]
    fn a_new_agreement_needs_its_row_in_an_agreements_table() {
        let balances =
            read("b.csv", b"agreement,account,date,amount\nNEW-1,40702810900000000001,2026-01-01,1.00\n").unwrap();
        let problems = apply(std::slice::from_ref(&balances), BTreeMap::new()).unwrap_err();
        assert!(problems[0].starts_with("agreement NEW-1: not stored yet"), "{problems:?}");
        let header =
            read("a.csv", "agreement,cnum,clientName,openedOn\nNEW-1,7700000009,АО «Новый»,2026-01-01\n".as_bytes())
                .unwrap();
        let problems = apply(&[header, balances], BTreeMap::new()).unwrap_err();
        assert_eq!(
            problems,
            [
                "agreement NEW-1: accounts: at least one account",
                "b.csv line 2, column account (agreement NEW-1): an account of this agreement"
            ]
        );
    }
}
