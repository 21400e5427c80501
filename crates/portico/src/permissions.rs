//! `portico permissions import|export`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Subcommand;
use portico_model::audit::Actor;
use portico_model::clock::SystemClock;
use portico_permissions::service::{ApplyError, PermissionService, parse_document};
use portico_server::Config;

#[derive(Subcommand)]
pub enum PermissionCommand {
    /// Apply a YAML or JSON permission document (companies, catalog, roles,
    /// employees), all or nothing. The format is described in docs/permissions.md.
    Import {
        /// The document; `.json` is read as JSON, anything else as YAML.
        file: PathBuf,
        /// Check the document against the current model without saving it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Print the whole permission model as a JSON document (users by id).
    Export,
}

pub async fn run(config: &Config, command: PermissionCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    match command {
        PermissionCommand::Import { file, dry_run } => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let yaml = file.extension().is_none_or(|ext| !ext.eq_ignore_ascii_case("json"));
            let doc = parse_document(&text, yaml).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            eprintln!(
                "read {}: {} companies, {} catalog entries, {} roles, {} employees",
                file.display(),
                doc.companies.len(),
                doc.catalog.len(),
                doc.roles.len(),
                doc.employees.len()
            );
            let service = PermissionService::new(Arc::clone(&store));
            let outcome = if dry_run {
                service.check(&doc).await
            } else {
                portico_permissions::admin::apply_by(&service, store.as_ref(), &SystemClock, &Actor::Cli, &doc).await
            };
            match outcome {
                Ok(summary) if dry_run => {
                    println!("the document is valid; nothing saved (dry run, model revision {})", summary.revision);
                    Ok(())
                }
                Ok(summary) => {
                    println!("permission model saved as revision {}; running servers use it at once", summary.revision);
                    Ok(())
                }
                Err(ApplyError::Invalid(problems)) => {
                    for problem in &problems {
                        eprintln!("  {}: {problem}", file.display());
                    }
                    anyhow::bail!("{} problem(s) in {}; nothing was changed", problems.len(), file.display())
                }
                Err(ApplyError::Storage(e)) => Err(e).context("nothing was changed"),
            }
        }
        PermissionCommand::Export => {
            let model = store.load_permissions().await?;
            println!("{}", serde_json::to_string_pretty(&model.to_document())?);
            Ok(())
        }
    }
}
