//! `portico brokerage import|list`: the brokerage data reports are made from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use portico_model::audit::Actor;
use portico_model::clock::{Clock as _, SystemClock};
use portico_reports::brokerage::{Document, csv};
use portico_server::Config;

#[derive(Subcommand)]
pub enum BrokerageCommand {
    /// Load a JSON document `{"agreements": [...]}`, or CSV tables (format in docs/reports.md),
    /// all or nothing. A JSON agreement replaces the stored one whole; a CSV table replaces
    /// that table of each agreement it has rows for.
    Import {
        /// One JSON document, or one or more CSV files (`.csv`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Check the document without saving it.
        #[arg(long)]
        dry_run: bool,
    },
    /// List the agreements with their companies.
    List,
}

pub async fn run(config: &Config, command: BrokerageCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    match command {
        BrokerageCommand::Import { files, dry_run } => {
            let document = match read_document(&*store, &files).await? {
                Ok(document) => document,
                Err(problems) => {
                    for problem in &problems {
                        eprintln!("  {problem}");
                    }
                    anyhow::bail!("{} problem(s) found; nothing was changed", problems.len());
                }
            };
            for agreement in &document.agreements {
                eprintln!(
                    "  {} ({}): {} accounts, {} trades, {} cash movements, {} positions",
                    agreement.number,
                    agreement.cnum,
                    agreement.accounts.len(),
                    agreement.trades.len(),
                    agreement.cash_movements.len(),
                    agreement.positions.len()
                );
            }
            if dry_run {
                println!("the document is valid; nothing saved (dry run)");
                return Ok(());
            }
            let now = SystemClock.now();
            store.save_agreements(&document.agreements, now).await.context("nothing was changed")?;
            let numbers: Vec<String> = document.agreements.iter().map(|a| a.number.clone()).collect();
            portico_reports::brokerage::record_load(store.as_ref(), now, &Actor::Cli, &numbers).await;
            println!("{} agreement(s) saved; new report tasks use them at once", document.agreements.len());
            Ok(())
        }
        BrokerageCommand::List => {
            for (number, cnum) in store.list_agreements(portico_storage::KeyPage::ALL).await? {
                println!("{number}\t{cnum}");
            }
            Ok(())
        }
    }
}

/// The import document from one JSON file or from CSV tables applied to the
/// stored agreements; problems name the file and place.
async fn read_document(
    store: &dyn portico_storage::Storage,
    files: &[PathBuf],
) -> anyhow::Result<Result<Document, Vec<String>>> {
    let is_csv = |path: &PathBuf| path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let mut contents = Vec::new();
    for path in files {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        contents.push((path.display().to_string(), bytes));
    }
    if let [(name, bytes)] = contents.as_slice()
        && !is_csv(&files[0])
    {
        let located = |problems: Vec<String>| problems.into_iter().map(|p| format!("{name}: {p}")).collect();
        return Ok(portico_reports::brokerage::parse(bytes).map_err(located));
    }
    if let Some(other) = files.iter().find(|path| !is_csv(path)) {
        anyhow::bail!("{}: give one JSON document, or CSV files (named *.csv) only", other.display());
    }
    let mut tables = Vec::new();
    let mut problems = Vec::new();
    for (name, bytes) in &contents {
        match csv::read(name, bytes) {
            Ok(table) => tables.push(table),
            Err(found) => problems.extend(found),
        }
    }
    if !problems.is_empty() {
        return Ok(Err(problems));
    }
    let mut stored = BTreeMap::new();
    for number in tables.iter().flat_map(csv::Table::agreements) {
        if !stored.contains_key(number)
            && let Some(agreement) = store.find_agreement(number).await?
        {
            stored.insert(number.to_owned(), agreement);
        }
    }
    Ok(csv::apply(&tables, stored))
}
