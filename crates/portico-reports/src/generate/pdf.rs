//! The brokerage report's printed form (`PRINTED_FORM`, and the base of
//! `FACSIMILE` and `QES`): an A4 PDF with real, selectable text in an
//! embedded font (DejaVu Sans, which covers Cyrillic), tables that break
//! across pages with their header repeated, totals, and «Страница N из M»
//! on every page.
//!
//! Layout and drawing are separate: the layout places every text and line
//! on numbered pages first (so the page count is known), then the pages
//! are drawn with `krilla`.

use std::sync::{Arc, LazyLock};

use krilla::Document;
use krilla::color::rgb;
use krilla::geom::{PathBuilder, Point, Size};
use krilla::metadata::Metadata;
use krilla::page::PageSettings;
use krilla::paint::{Fill, Stroke};
use krilla::text::{Font, GlyphId, KrillaGlyph};
use time::OffsetDateTime;

use super::GenerateError;
use super::cash::kind_name;
use super::period::{Period, ru_date, side_name};
use portico_model::reports::brokerage::{Direction, Price};

const REGULAR: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf");

/// A4 portrait, in points.
const WIDTH: f32 = 595.0;
const HEIGHT: f32 = 842.0;
const LEFT: f32 = 36.0;
const RIGHT: f32 = WIDTH - 36.0;
const TOP: f32 = 48.0;
/// The lowest baseline of the body; the footer sits below.
const BOTTOM: f32 = HEIGHT - 56.0;
const ROW: f32 = 13.0;
const BODY: f32 = 7.5;

/// Glyph advances for measuring text, per font.
struct Metrics {
    units_per_em: f32,
    face: ttf_parser::Face<'static>,
}

impl Metrics {
    fn new(data: &'static [u8]) -> Option<Self> {
        let face = ttf_parser::Face::parse(data, 0).ok()?;
        Some(Self { units_per_em: f32::from(face.units_per_em()), face })
    }

    /// The glyphs of `text`, one per character, with their advances (in
    /// em). Tabular text needs no shaping beyond that (no ligatures, no
    /// kerning), and this avoids parsing the font again for every cell.
    fn glyphs(&self, text: &str) -> Vec<KrillaGlyph> {
        text.char_indices()
            .map(|(at, c)| {
                let id = self.face.glyph_index(c).unwrap_or(ttf_parser::GlyphId(0));
                let advance = f32::from(self.face.glyph_hor_advance(id).unwrap_or(0)) / self.units_per_em;
                KrillaGlyph::new(GlyphId::new(u32::from(id.0)), advance, 0.0, 0.0, 0.0, at..at + c.len_utf8(), None)
            })
            .collect()
    }

    fn width(&self, text: &str, size: f32) -> f32 {
        let units: u32 = text
            .chars()
            .map(|c| self.face.glyph_index(c).and_then(|g| self.face.glyph_hor_advance(g)).unwrap_or(0))
            .map(u32::from)
            .sum();
        units as f32 * size / self.units_per_em
    }
}

struct Fonts {
    regular: Font,
    bold: Font,
    regular_metrics: Metrics,
    bold_metrics: Metrics,
}

static FONTS: LazyLock<Option<Fonts>> = LazyLock::new(|| {
    Some(Fonts {
        regular: Font::new(REGULAR.into(), 0)?,
        bold: Font::new(BOLD.into(), 0)?,
        regular_metrics: Metrics::new(REGULAR)?,
        bold_metrics: Metrics::new(BOLD)?,
    })
});

/// Something placed on a page.
#[derive(Debug, Clone)]
enum Mark {
    Text { x: f32, y: f32, size: f32, bold: bool, text: String },
    Line { x1: f32, y1: f32, x2: f32, y2: f32, width: f32 },
}

/// How a column aligns its cells.
#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

struct Column {
    title: &'static str,
    width: f32,
    align: Align,
}

const fn col(title: &'static str, width: f32, align: Align) -> Column {
    Column { title, width, align }
}

/// A laid-out cell: its x, its lines, how it aligns, its column's width.
type Cell = (f32, Vec<String>, Align, f32);

/// The lines a laid-out row takes (at least one).
fn lines_of(laid: &[Cell]) -> usize {
    laid.iter().map(|(_, lines, _, _)| lines.len()).max().unwrap_or(1).max(1)
}

/// The trades table (its figure columns widen to their figures, [`fitted`]).
/// Each trade's date cell holds the trade date and, under it, the
/// settlement date.
const TRADE_COLUMNS: [Column; 8] = [
    col("Дата, расчёты", 50.0, Align::Left),
    col("Номер", 50.0, Align::Left),
    col("Инструмент", 120.0, Align::Left),
    col("Операция", 50.0, Align::Left),
    col("Кол-во", 45.0, Align::Right),
    col("Цена", 60.0, Align::Right),
    col("Сумма, руб.", 75.0, Align::Right),
    col("Комиссия", 73.0, Align::Right),
];

/// `columns` with each right-aligned (figure) column at least as wide as its
/// widest figure (bold, as totals are), the width taken from the
/// left-aligned columns, widest first, whose text wraps instead. An amount
/// is never cut.
fn fitted<'a>(layout: &Layout<'_>, columns: &[Column], rows: impl Iterator<Item = &'a Vec<String>>) -> Vec<Column> {
    let mut widths: Vec<f32> = columns.iter().map(|c| c.width).collect();
    let mut needed = widths.clone();
    for row in rows {
        for ((column, cell), need) in columns.iter().zip(row).zip(&mut needed) {
            if matches!(column.align, Align::Right) {
                *need = need.max(layout.width(cell, BODY, true) + 6.0);
            }
        }
    }
    let mut deficit: f32 = 0.0;
    for (i, column) in columns.iter().enumerate() {
        if matches!(column.align, Align::Right) && needed[i] > widths[i] {
            deficit += needed[i] - widths[i];
            widths[i] = needed[i];
        }
    }
    // Take the room back from the text columns, widest first, keeping each
    // at least 40 pt wide.
    while deficit > 0.01 {
        let Some((widest, width)) = columns
            .iter()
            .enumerate()
            .filter(|(i, c)| matches!(c.align, Align::Left) && widths[*i] > 40.0)
            .map(|(i, _)| (i, widths[i]))
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            break;
        };
        let take = deficit.min(width - 40.0);
        widths[widest] -= take;
        deficit -= take;
    }
    columns.iter().zip(widths).map(|(c, width)| Column { title: c.title, width, align: c.align }).collect()
}

/// Places marks on pages, breaking pages as needed.
struct Layout<'f> {
    fonts: &'f Fonts,
    pages: Vec<Vec<Mark>>,
    /// The next baseline.
    y: f32,
}

impl<'f> Layout<'f> {
    fn new(fonts: &'f Fonts) -> Self {
        Self { fonts, pages: vec![Vec::new()], y: TOP }
    }

    fn width(&self, text: &str, size: f32, bold: bool) -> f32 {
        if bold { self.fonts.bold_metrics.width(text, size) } else { self.fonts.regular_metrics.width(text, size) }
    }

    /// `text` cut with `…` to fit `room` (only a single word wider than a
    /// whole column is ever cut; see [`Layout::wrap`]).
    fn fit(&self, text: &str, size: f32, bold: bool, room: f32) -> String {
        if self.width(text, size, bold) <= room {
            return text.to_owned();
        }
        let mut cut: String = text.to_owned();
        while !cut.is_empty() && self.width(&format!("{cut}…"), size, bold) > room {
            cut.pop();
        }
        format!("{}…", cut.trim_end())
    }

    /// `text` in lines that fit `room`, broken at spaces.
    fn wrap(&self, text: &str, size: f32, bold: bool, room: f32) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        let mut line = String::new();
        for word in text.split(' ').filter(|w| !w.is_empty()) {
            let candidate = if line.is_empty() { word.to_owned() } else { format!("{line} {word}") };
            if self.width(&candidate, size, bold) <= room || line.is_empty() {
                line = candidate;
            } else {
                lines.push(std::mem::take(&mut line));
                line = word.to_owned();
            }
        }
        lines.push(line);
        lines.into_iter().map(|l| self.fit(&l, size, bold, room)).collect()
    }

    fn text(&mut self, x: f32, size: f32, bold: bool, text: &str) {
        let y = self.y;
        self.page().push(Mark::Text { x, y, size, bold, text: text.to_owned() });
    }

    fn rule(&mut self, y: f32, width: f32) {
        self.page().push(Mark::Line { x1: LEFT, y1: y, x2: RIGHT, y2: y, width });
    }

    fn page(&mut self) -> &mut Vec<Mark> {
        if self.pages.is_empty() {
            self.pages.push(Vec::new());
        }
        let last = self.pages.len() - 1;
        &mut self.pages[last]
    }

    fn new_page(&mut self) {
        self.pages.push(Vec::new());
        self.y = TOP;
    }

    /// Makes room for `height` more, starting a page when it does not fit;
    /// returns whether a page was started.
    fn room(&mut self, height: f32) -> bool {
        if self.y + height > BOTTOM {
            self.new_page();
            return true;
        }
        false
    }

    fn heading(&mut self, text: &str) {
        self.room(ROW * 4.0);
        self.y += 10.0;
        self.text(LEFT, 10.5, true, text);
        self.y += ROW + 2.0;
    }

    /// Where each cell of a row goes: its lines (a left-aligned cell wraps;
    /// a right-aligned one, a figure, is never cut: columns are sized to
    /// their figures by [`fitted`]) and their x.
    fn lay_out(&self, columns: &[Column], cells: &[String], bold: bool) -> Vec<Cell> {
        let mut x = LEFT;
        let mut out = Vec::with_capacity(columns.len());
        for (i, (column, cell)) in columns.iter().zip(cells).enumerate() {
            // A left-aligned cell may run on over the empty cells after it
            // (the labels of totals).
            let spare: f32 = match column.align {
                Align::Left => columns[i + 1..]
                    .iter()
                    .zip(&cells[i + 1..])
                    .take_while(|(_, next)| next.is_empty())
                    .map(|(c, _)| c.width)
                    .sum(),
                Align::Right => 0.0,
            };
            let room = column.width + spare - 4.0;
            let lines = match column.align {
                Align::Left => self.wrap(cell, BODY, bold, room),
                Align::Right => vec![cell.clone()],
            };
            out.push((x, lines, column.align, column.width));
            x += column.width;
        }
        out
    }

    /// Draws a row laid out by [`Layout::lay_out`]; returns the lines it takes.
    fn draw(&mut self, laid: &[Cell], bold: bool) -> usize {
        let top = self.y;
        for (x, lines, align, width) in laid {
            for (n, line) in lines.iter().enumerate() {
                let at = match align {
                    Align::Left => x + 2.0,
                    Align::Right => x + width - 2.0 - self.width(line, BODY, bold),
                };
                self.y = top + n as f32 * ROW;
                self.text(at, BODY, bold, line);
            }
        }
        self.y = top;
        lines_of(laid)
    }

    /// Lays out and draws a row; returns the lines it takes.
    fn cells(&mut self, columns: &[Column], cells: &[String], bold: bool) -> usize {
        let laid = self.lay_out(columns, cells, bold);
        self.draw(&laid, bold)
    }

    fn header_row(&mut self, columns: &[Column]) {
        let titles: Vec<String> = columns.iter().map(|c| c.title.to_owned()).collect();
        let top = self.y - BODY - 2.0;
        self.rule(top, 0.6);
        let lines = self.cells(columns, &titles, true) as f32;
        self.rule(self.y + (lines - 1.0) * ROW + 3.5, 0.6);
        self.y += ROW * lines;
    }

    /// A table: the header, then the rows, the header repeated on every page
    /// the table continues on; then the totals, bold. The figures' columns
    /// are widened to their widest figure first ([`fitted`]).
    fn table(&mut self, columns: &[Column], rows: &[Vec<String>], totals: &[Vec<String>]) {
        let fitted = fitted(self, columns, rows.iter().chain(totals));
        let columns = fitted.as_slice();
        self.room(ROW * 3.0);
        self.header_row(columns);
        for row in rows.iter() {
            let laid = self.lay_out(columns, row, false);
            let lines = lines_of(&laid);
            if self.room(ROW * lines as f32) {
                self.header_row(columns);
            }
            self.draw(&laid, false);
            self.y += ROW * lines as f32;
        }
        if rows.is_empty() {
            self.text(LEFT + 2.0, BODY, false, "Нет данных за период");
            self.y += ROW;
        }
        for total in totals {
            let laid = self.lay_out(columns, total, true);
            let lines = lines_of(&laid);
            if self.room(ROW * lines as f32) {
                self.header_row(columns);
            }
            self.rule(self.y - BODY - 2.5, 0.4);
            self.draw(&laid, true);
            self.y += ROW * lines as f32;
        }
    }
}

/// Money as the printed forms write it: `1 234 567,89`.
pub fn money(kopecks: i64) -> String {
    let sign = if kopecks < 0 { "-" } else { "" };
    let abs = kopecks.unsigned_abs();
    format!("{sign}{},{:02}", grouped(&(abs / 100).to_string()), abs % 100)
}

/// A price as the printed forms write it, grouped like money, with four
/// decimals: `1 234,5678`.
pub fn price(price: Price) -> String {
    let text = price.format(4);
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let (sign, digits) = whole.strip_prefix('-').map_or(("", whole), |d| ("-", d));
    format!("{sign}{},{fraction}", grouped(digits))
}

/// Digits grouped by thousands with a space: `1 234 567`.
fn grouped(digits: &str) -> String {
    let (sign, digits) = digits.strip_prefix('-').map_or(("", digits), |d| ("-", d));
    let mut out = String::from(sign);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(digit);
    }
    out
}

/// Where the signature block of the last page stands (its top), so that a
/// facsimile can be placed over it.
#[derive(Debug, Clone, Copy)]
pub struct SignatureSpot {
    pub x: f32,
    pub y: f32,
}

/// An image for the last page: PNG bytes and its size on the page in points.
pub struct Stamp<'a> {
    pub png: &'a [u8],
    pub width: f32,
    pub height: f32,
}

/// The printed form; with `stamp`, the facsimile placed over the signature
/// block of the last page.
///
/// # Errors
/// When the fonts cannot be read or the PDF cannot be written.
pub fn render(
    period: &Period<'_>,
    created: OffsetDateTime,
    stamp: Option<&Stamp<'_>>,
) -> Result<Vec<u8>, GenerateError> {
    render_with_notice(period, created, stamp, None)
}

/// The printed form with `notice` as the title block's last line (the
/// demo signature's warning).
///
/// # Errors
/// As [`render`].
pub fn render_with_notice(
    period: &Period<'_>,
    created: OffsetDateTime,
    stamp: Option<&Stamp<'_>>,
    notice: Option<&str>,
) -> Result<Vec<u8>, GenerateError> {
    let fonts = FONTS.as_ref().ok_or_else(|| GenerateError::Data("the embedded fonts cannot be read".into()))?;
    let (pages, spot) = layout(fonts, period, created, notice);
    draw(fonts, period, &pages, spot, stamp)
}

fn layout(
    fonts: &Fonts,
    period: &Period<'_>,
    created: OffsetDateTime,
    notice: Option<&str>,
) -> (Vec<Vec<Mark>>, SignatureSpot) {
    let agreement = period.agreement;
    let mut l = Layout::new(fonts);
    l.text(LEFT, 15.0, true, "Брокерский отчёт");
    l.y += 20.0;
    for (label, value) in period.title(created) {
        let line = match label {
            "Лицензия" => value,
            "Договор" => format!("Договор {value}"),
            "Клиент" => format!("Клиент: {value} (код клиента {})", agreement.cnum),
            "Код клиента" => continue,
            _ => format!("{label}: {value}"),
        };
        for part in l.wrap(&line, 8.5, false, RIGHT - LEFT) {
            l.text(LEFT, 8.5, false, &part);
            l.y += ROW;
        }
    }
    for part in notice.map(|notice| l.wrap(notice, 8.5, true, RIGHT - LEFT)).unwrap_or_default() {
        l.text(LEFT, 8.5, true, &part);
        l.y += ROW;
    }

    let position_columns = [
        col("Счёт", 100.0, Align::Left),
        col("Тикер", 64.0, Align::Left),
        col("ISIN", 64.0, Align::Left),
        col("Инструмент", 132.0, Align::Left),
        col("Кол-во", 44.0, Align::Right),
        col("Цена", 48.0, Align::Right),
        col("Оценка, руб.", 71.0, Align::Right),
    ];
    for (title, holdings) in
        [("Позиции на начало периода", &period.opening), ("Позиции на конец периода", &period.closing)]
    {
        l.heading(title);
        let rows: Vec<Vec<String>> = holdings
            .iter()
            .map(|h| {
                let instrument = period.instrument(h.ticker);
                vec![
                    h.account.to_owned(),
                    h.ticker.to_owned(),
                    instrument.map(|i| i.isin.clone()).unwrap_or_default(),
                    instrument.map(|i| i.name.clone()).unwrap_or_default(),
                    grouped(&h.quantity.to_string()),
                    h.price.map_or_else(|| "нет цены".to_owned(), price),
                    h.value.map_or_else(|| "—".to_owned(), |v| money(v.0)),
                ]
            })
            .collect();
        let total: i64 = holdings.iter().filter_map(|h| h.value).map(|v| v.0).sum();
        let unvalued = holdings.iter().filter(|h| h.value.is_none() && h.quantity != 0).count();
        let mut totals = vec![vec![String::new(); position_columns.len()]];
        totals[0][0] = "Итого оценка".into();
        totals[0][position_columns.len() - 1] = money(total);
        l.table(&position_columns, &rows, &totals);
        if unvalued > 0 {
            l.room(ROW);
            let note = format!("Без оценки (нет цены на дату): позиций {unvalued}; в итог не вошли.");
            l.text(LEFT + 2.0, BODY, false, &note);
            l.y += ROW;
        }
        for h in holdings.iter().filter(|h| h.by_trades.is_some()) {
            let by_trades = h.by_trades.unwrap_or_default();
            l.room(ROW);
            l.text(
                LEFT + 2.0,
                BODY,
                false,
                &format!(
                    "{} на счёте {}: по данным депозитария {}, по сделкам {} (разница {:+}); показаны данные депозитария.",
                    h.ticker,
                    h.account,
                    h.quantity,
                    by_trades,
                    h.quantity - by_trades
                ),
            );
            l.y += ROW;
        }
    }

    l.heading("Сделки");
    let rows: Vec<Vec<String>> = period
        .trades
        .iter()
        .map(|t| {
            let name =
                period.instrument(&t.ticker).map_or_else(|| t.ticker.clone(), |i| format!("{} ({})", i.name, t.ticker));
            vec![
                format!("{} {}", ru_date(t.date), ru_date(t.settlement_date)),
                t.id.clone(),
                name,
                side_name(t.side).into(),
                grouped(&t.quantity.to_string()),
                price(t.price),
                money(t.amount.0),
                money(t.fees.0),
            ]
        })
        .collect();
    let (bought, sold) = period.trade_totals();
    let fees: i64 = period.trades.iter().map(|t| t.fees.0).sum();
    let total_row = |label: &str, column: usize, amount: i64| {
        let mut row = vec![String::new(); TRADE_COLUMNS.len()];
        row[0] = label.to_owned();
        row[column] = money(amount);
        row
    };
    let totals = vec![
        total_row("Итого покупки", 6, bought),
        total_row("Итого продажи", 6, sold),
        total_row("Итого комиссии по сделкам", 7, fees),
    ];
    l.table(&TRADE_COLUMNS, &rows, &totals);

    l.heading("Денежные средства");
    let balance_columns =
        [col("Счёт", 110.0, Align::Left), col("Статья", 293.0, Align::Left), col("Сумма", 120.0, Align::Right)];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for a in &period.balances {
        let account = format!("{} ({})", a.account, a.currency);
        for (n, (what, amount)) in [
            ("Остаток на начало периода", a.opening),
            ("Зачислено", a.received),
            ("Списано", -a.paid),
            ("Оплата купленных ценных бумаг", -a.bought),
            ("Поступления от продажи ценных бумаг", a.sold),
            ("Комиссии по сделкам", -a.trade_fees),
            ("Остаток на конец периода", a.closing),
        ]
        .into_iter()
        .enumerate()
        {
            rows.push(vec![if n == 0 { account.clone() } else { String::new() }, what.to_owned(), money(amount)]);
        }
    }
    l.table(&balance_columns, &rows, &[]);

    l.heading("Движение денежных средств");
    let cash_columns = [
        col("Дата", 50.0, Align::Left),
        col("Счёт", 100.0, Align::Left),
        col("Операция", 80.0, Align::Left),
        col("Сумма, руб.", 75.0, Align::Right),
        col("Назначение", 218.0, Align::Left),
    ];
    let rows: Vec<Vec<String>> = period
        .cash
        .iter()
        .map(|c| {
            let signed = match c.direction {
                Direction::In => c.amount.0,
                Direction::Out => -c.amount.0,
            };
            vec![ru_date(c.date), c.account.clone(), kind_name(&c.kind).into_owned(), money(signed), c.purpose.clone()]
        })
        .collect();
    let (received, paid) = period.cash_totals();
    let blank = String::new;
    let totals = vec![
        vec!["Итого зачислено".into(), blank(), blank(), money(received), blank()],
        vec!["Итого списано".into(), blank(), blank(), money(-paid), blank()],
    ];
    l.table(&cash_columns, &rows, &totals);

    l.heading("Комиссии");
    let fee_columns =
        [col("Дата", 50.0, Align::Left), col("Основание", 373.0, Align::Left), col("Сумма, руб.", 100.0, Align::Right)];
    let fee_list = period.fees();
    let rows: Vec<Vec<String>> =
        fee_list.iter().map(|f| vec![ru_date(f.date), f.what.clone(), money(f.amount)]).collect();
    let total: i64 = fee_list.iter().map(|f| f.amount).sum();
    l.table(&fee_columns, &rows, &[vec!["Итого комиссии".into(), blank(), money(total)]]);

    // The signature block, kept whole on the last page.
    l.room(110.0);
    l.y += 24.0;
    let spot = SignatureSpot { x: LEFT + 175.0, y: l.y - 42.0 };
    l.text(LEFT, 8.5, false, &period.broker.signatory_title);
    l.text(LEFT + 250.0, 8.5, false, "____________________");
    l.text(LEFT + 400.0, 8.5, false, &format!("/ {} /", period.broker.signatory));
    l.y += ROW;
    l.text(LEFT, 8.5, false, "М. П.");
    l.y += ROW;
    (l.pages, spot)
}

fn black() -> Fill {
    Fill { paint: rgb::Color::new(0, 0, 0).into(), ..Default::default() }
}

fn draw(
    fonts: &Fonts,
    period: &Period<'_>,
    pages: &[Vec<Mark>],
    spot: SignatureSpot,
    stamp: Option<&Stamp<'_>>,
) -> Result<Vec<u8>, GenerateError> {
    let failed = |what: &str| GenerateError::Data(format!("the PDF could not be written: {what}"));
    let mut document = Document::new();
    document.set_metadata(
        Metadata::new()
            .title(period.document_title())
            .creator("Portico".to_owned())
            .authors(vec![period.broker.name.clone()])
            .language("ru".to_owned()),
    );
    let total = pages.len();
    let settings = PageSettings::from_wh(WIDTH, HEIGHT).ok_or_else(|| failed("page size"))?;
    for (index, marks) in pages.iter().enumerate() {
        let mut page = document.start_page_with(settings.clone());
        let mut surface = page.surface();
        let footer = format!("Страница {} из {total}", index + 1);
        let footer_x = RIGHT - fonts.regular_metrics.width(&footer, 7.0);
        let footer_mark = Mark::Text { x: footer_x, y: HEIGHT - 30.0, size: 7.0, bold: false, text: footer };
        let number = format!("Договор № {}", period.agreement.number);
        let number_mark = Mark::Text { x: LEFT, y: HEIGHT - 30.0, size: 7.0, bold: false, text: number };
        for mark in marks.iter().chain([&footer_mark, &number_mark]) {
            match mark {
                Mark::Text { x, y, size, bold, text } => {
                    surface.set_stroke(None);
                    surface.set_fill(Some(black()));
                    let (font, metrics) = if *bold {
                        (&fonts.bold, &fonts.bold_metrics)
                    } else {
                        (&fonts.regular, &fonts.regular_metrics)
                    };
                    let glyphs = metrics.glyphs(text);
                    surface.draw_glyphs(Point::from_xy(*x, *y), &glyphs, font.clone(), text, *size, false);
                }
                Mark::Line { x1, y1, x2, y2, width } => {
                    let mut path = PathBuilder::new();
                    path.move_to(*x1, *y1);
                    path.line_to(*x2, *y2);
                    if let Some(path) = path.finish() {
                        surface.set_fill(None);
                        surface.set_stroke(Some(Stroke {
                            paint: rgb::Color::new(90, 90, 90).into(),
                            width: *width,
                            ..Default::default()
                        }));
                        surface.draw_path(&path);
                    }
                }
            }
        }
        if index + 1 == total
            && let Some(stamp) = stamp
        {
            let image = krilla::image::Image::from_png(Arc::new(stamp.png.to_vec()).into(), true)
                .map_err(|e| failed(&format!("the facsimile image: {e}")))?;
            let size = Size::from_wh(stamp.width, stamp.height).ok_or_else(|| failed("facsimile size"))?;
            surface.push_transform(&krilla::geom::Transform::from_translate(spot.x, spot.y));
            surface.draw_image(image, size);
            surface.pop();
        }
        surface.finish();
        page.finish();
    }
    document.finish().map_err(|e| failed(&format!("{e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(layout: &Layout<'_>) -> Vec<String> {
        layout
            .pages
            .iter()
            .flatten()
            .filter_map(|mark| match mark {
                Mark::Text { text, .. } => Some(text.clone()),
                Mark::Line { .. } => None,
            })
            .collect()
    }

    #[test]
    fn amounts_are_never_cut_and_long_names_wrap() {
        let fonts = FONTS.as_ref().expect("the bundled fonts");
        let mut layout = Layout::new(fonts);
        // The trades table, with the figures of a 10,000-trade year that
        // used to be cut (`1 297 498 838,…`).
        let columns = TRADE_COLUMNS;
        let name = "Публичное акционерное общество «Газпром» обыкновенные (GAZP)";
        let row = |amount: i64, fees: i64| {
            vec![
                "01.02.2026 03.02.2026".to_owned(),
                "T-000001".to_owned(),
                name.to_owned(),
                "Покупка".to_owned(),
                "1000000".to_owned(),
                price(Price::from(1_234_567_890_000)),
                money(amount),
                money(fees),
            ]
        };
        let rows = vec![row(123_456_789_012, 123_456_789)];
        let blank = String::new;
        let totals = vec![vec![
            "Итого покупки".to_owned(),
            blank(),
            blank(),
            blank(),
            blank(),
            blank(),
            money(129_749_883_812_345),
            money(149_789_851_234),
        ]];
        layout.table(&columns, &rows, &totals);
        let texts = texts(&layout);
        for amount in [money(123_456_789_012), money(123_456_789), money(129_749_883_812_345), money(149_789_851_234)] {
            assert!(texts.contains(&amount), "{amount} whole in {texts:?}");
        }
        assert!(!texts.iter().any(|t| t.contains('…')), "nothing cut: {texts:?}");
        let name_lines: Vec<&String> = texts.iter().filter(|t| name.contains(t.as_str()) && !t.is_empty()).collect();
        assert!(name_lines.len() > 1, "the name wraps: {texts:?}");
        assert_eq!(name_lines.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(" "), name);
    }

    #[test]
    fn money_is_grouped_by_thousands_with_a_decimal_comma() {
        assert_eq!(money(123_456_789), "1 234 567,89");
        assert_eq!(money(-5), "-0,05");
        assert_eq!(money(-123_456_789), "-1 234 567,89");
        assert_eq!(money(100_000), "1 000,00");
    }

    #[test]
    fn prices_are_grouped_like_money_with_four_decimals() {
        assert_eq!(price(Price::from(1_234_567_890_000)), "1 234 567,8900");
        assert_eq!(price(Price::from(301_767_294)), "301,7673");
        assert_eq!(price(Price::from(-12_345_000_000)), "-12 345,0000");
        assert_eq!(grouped("-1234"), "-1 234");
    }
}
