//! `portico brokerage import|list`: the brokerage data reports are made from.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use portico_model::clock::{Clock as _, SystemClock};
use portico_server::Config;

#[derive(Subcommand)]
pub enum BrokerageCommand {
    /// Load a JSON document `{"agreements": [...]}` (format in docs/reports.md), all or nothing;
    /// each agreement named replaces the stored one whole.
    Import {
        file: PathBuf,
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
        BrokerageCommand::Import { file, dry_run } => {
            let text = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let document = match portico_reports::brokerage::parse(&text) {
                Ok(document) => document,
                Err(problems) => {
                    for problem in &problems {
                        eprintln!("  {}: {problem}", file.display());
                    }
                    anyhow::bail!("{} problem(s) in {}; nothing was changed", problems.len(), file.display());
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
            store.save_agreements(&document.agreements, SystemClock.now()).await.context("nothing was changed")?;
            println!("{} agreement(s) saved; new report tasks use them at once", document.agreements.len());
            Ok(())
        }
        BrokerageCommand::List => {
            for (number, cnum) in store.list_agreements().await? {
                println!("{number}\t{cnum}");
            }
            Ok(())
        }
    }
}
