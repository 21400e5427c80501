//! `portico merchants add|list|rotate-key`.

use anyhow::Context as _;
use clap::Subcommand;
use portico_model::audit::Actor;
use portico_model::clock::SystemClock;
use portico_model::notify::MerchantIds;
use portico_notify::admin::MerchantKeeper;
use portico_server::Config;
use portico_server::secret::InstanceSecret;
use portico_storage::StorageError;

#[derive(Subcommand)]
pub enum MerchantCommand {
    /// Register a merchant; prints its API key once.
    Add {
        #[arg(long)]
        merchant_id: String,
        /// The id notifications name the merchant by (`publicId`).
        #[arg(long)]
        public_id: String,
        /// The merchant's id in the fast payment system (up to 12 characters).
        #[arg(long)]
        sbp_merchant_id: String,
    },
    /// List merchants and their callback addresses.
    List,
    /// Give a merchant a new API key (the old one stops working at once); prints it once.
    RotateKey {
        #[arg(long)]
        merchant_id: String,
    },
}

pub async fn run(config: &Config, command: MerchantCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    let secret = InstanceSecret::load(config)?;
    let sealer = secret.sealer();
    let keeper = MerchantKeeper { store: store.as_ref(), sealer: &sealer, clock: &SystemClock };
    match command {
        MerchantCommand::Add { merchant_id, public_id, sbp_merchant_id } => {
            let ids = MerchantIds { merchant_id: merchant_id.clone(), public_id, sbp_merchant_id };
            portico_notify::merchants::check_ids(&ids)?;
            let key = match portico_notify::admin::register_merchant(&keeper, &Actor::Cli, ids).await {
                Err(StorageError::Conflict(_)) => {
                    anyhow::bail!("a merchant with this merchant id, public id or key already exists")
                }
                other => other.context("cannot store the merchant")?,
            };
            println!("merchant {merchant_id} added");
            println!("API key (shown once, hand it to the merchant): {key}");
        }
        MerchantCommand::List => {
            for merchant in store.list_merchants(portico_storage::KeyPage::ALL).await? {
                let callback = merchant.settings.as_ref().map_or("(no settings yet)", |s| s.callback_url.as_str());
                println!(
                    "{}\tpublic {}\tSBP {}\t{callback}",
                    merchant.ids.merchant_id, merchant.ids.public_id, merchant.ids.sbp_merchant_id
                );
            }
        }
        MerchantCommand::RotateKey { merchant_id } => {
            match portico_notify::admin::rotate_merchant_key(&keeper, &Actor::Cli, &merchant_id).await? {
                Some(key) => {
                    println!("merchant {merchant_id} has a new API key; the old one no longer works");
                    println!("API key (shown once): {key}");
                }
                None => anyhow::bail!("there is no merchant {merchant_id:?}"),
            }
        }
    }
    Ok(())
}
