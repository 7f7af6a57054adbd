//! What the app is built on (the store, the keys, the clock, where uploads wait), opened once per process
//! from the settings, so that no binary assembles them by hand.
//!
//! Owns where each comes from: the configured store; the keys from the dev key file
//! locally, from the Secrets Manager secret in Lambda (none without one). Tests that
//! swap a part build `Services` by hand. Knows nothing of routes or requests.

use std::sync::Arc;

use chrono::NaiveDate;

use crate::aws::AwsConfig;
use crate::clock::{Clock, SystemClock};
use crate::config::{Config, Runtime};
use crate::domain::Genome;
use crate::identity::{Jwts, KeyError, Keys};
use crate::imports::Importer;
use crate::mail::{MailDirectory, MailError, MailSender};
use crate::store::{Store, StoreError, UploadObjects, open_store, open_upload_objects};

/// What the app is built on: built once per cold start by the binary that runs it.
pub struct Services {
    pub store: Arc<dyn Store>,
    /// `None` when no keys are configured: every caller is anonymous and the
    /// account endpoints answer 503.
    pub keys: Option<Keys>,
    pub clock: Arc<dyn Clock>,
    /// Where uploaded files wait for their import.
    pub objects: Arc<dyn UploadObjects>,
    /// How mail leaves: SES deployed, a directory locally; `None` when this
    /// process sends none (a function without `MIROBODY_MAIL_FROM` or the `mail`
    /// feature): then no confirmation, reset or invitation mail goes out.
    pub mail: Option<Arc<dyn MailSender>>,
}

/// Why the services could not be opened. Shows the underlying message unchanged.
#[derive(Debug)]
pub enum StartupError {
    Store(StoreError),
    Keys(KeyError),
    Mail(MailError),
}

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartupError::Store(error) => error.fmt(f),
            StartupError::Keys(error) => error.fmt(f),
            StartupError::Mail(error) => write!(f, "MIROBODY_MAIL_DIR: {error}"),
        }
    }
}

impl std::error::Error for StartupError {}

impl From<StoreError> for StartupError {
    fn from(error: StoreError) -> Self {
        StartupError::Store(error)
    }
}

impl From<KeyError> for StartupError {
    fn from(error: KeyError) -> Self {
        StartupError::Keys(error)
    }
}

/// What `migrate` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// Readings moved from the per-reading layout.
    pub readings: u64,
    /// Users whose genotypes became their genome.
    pub genomes: usize,
    /// Readings the measures catalogue renamed, converted or moved.
    pub canonical: u64,
}

impl Services {
    /// The import runner over these services' store, upload bucket and clock.
    pub fn importer(&self) -> Importer {
        Importer::new(self.store.clone(), self.objects.clone(), self.clock.clone())
    }

    /// Opens the configured store, then loads the keys, with the system clock. The AWS
    /// clients among them share one SDK configuration, loaded once if any needs it.
    pub async fn open(config: &Config) -> Result<Services, StartupError> {
        let aws = AwsConfig::new();
        let store = open_store(config, &aws).await?;
        let keys = load_keys(config, &aws).await?;
        let objects = open_upload_objects(config, &aws).await?;
        let mail = open_mail(config, &aws).await?;
        Ok(Services {
            store,
            keys,
            clock: Arc::new(SystemClock),
            objects,
            mail,
        })
    }

    /// A session token for `user`, signed with the configured keys, without opening the
    /// store (the local server's `mint-token`). `None` without keys.
    pub async fn mint_token(
        config: &Config,
        user: &str,
        lifetime_secs: u64,
    ) -> Result<Option<String>, StartupError> {
        let keys = load_keys(config, &AwsConfig::new()).await?;
        Ok(keys.map(|keys| {
            Jwts::for_origin(&keys.jwt, &config.public_origin()).mint(
                user,
                lifetime_secs,
                SystemClock.now(),
            )
        }))
    }

    /// Loads the generated demo account's readings (from `first_day`) and genotypes
    /// for `user`; returns how many of each.
    pub async fn seed_demo(
        &self,
        user: &str,
        first_day: NaiveDate,
    ) -> Result<(usize, usize), StoreError> {
        let readings = crate::demo::readings(first_day);
        let genotypes = crate::demo::genotypes();
        self.store.put_readings(user, &readings).await?;
        let genome = Genome::from_genotypes(&genotypes)
            .ok_or_else(|| StoreError::Corrupt("seed_demo: demo genotypes".into()))?;
        self.store
            .replace_genome(user, &genome, "demo", self.clock.now())
            .await?;
        Ok((readings.len(), genotypes.len()))
    }

    /// Moves data stored in an older layout into the current one (DynamoDB's
    /// per-reading items and per-rsid genotype items; readings made canonical by
    /// the measures catalogue, rollups rebuilt). Safe to run again.
    pub async fn migrate_legacy_data(&self) -> Result<Migrated, StoreError> {
        let readings = self.store.migrate_legacy_readings().await?;
        let genomes = self
            .store
            .migrate_legacy_genotypes(self.clock.now())
            .await?;
        let canonical = self.store.migrate_measures().await?;
        Ok(Migrated {
            readings,
            genomes,
            canonical,
        })
    }
}

/// The mail directory locally; SES from `MIROBODY_MAIL_FROM` in Lambda (once per cold
/// start), or no mail without it.
async fn open_mail(
    config: &Config,
    aws: &AwsConfig,
) -> Result<Option<Arc<dyn MailSender>>, StartupError> {
    match config.runtime {
        Runtime::Local => {
            let directory =
                MailDirectory::open(config.local_mail_dir()).map_err(StartupError::Mail)?;
            Ok(Some(Arc::new(directory)))
        }
        Runtime::Lambda => {
            #[cfg(feature = "mail")]
            if let Some(from) = &config.mail_from {
                let ses = crate::mail::SesSender::from_config(
                    aws.shared().await,
                    from.clone(),
                    config.ses_configuration_set.clone(),
                );
                return Ok(Some(Arc::new(ses)));
            }
            Ok(None)
        }
    }
}

/// The dev key file under the data directory locally (created the first time); in
/// Lambda the keys secret, read once per cold start, or none without one.
async fn load_keys(config: &Config, aws: &AwsConfig) -> Result<Option<Keys>, KeyError> {
    match (config.runtime, &config.keys_secret) {
        (Runtime::Local, _) => Keys::dev(&config.data_dir).map(Some),
        (Runtime::Lambda, Some(secret)) => {
            let endpoint = config.secretsmanager_endpoint.as_deref();
            Keys::from_secrets_manager(aws.shared().await, secret, endpoint)
                .await
                .map(Some)
                // The log line names the setting the operator has to look at.
                .map_err(|e| KeyError(format!("MIROBODY_KEYS_SECRET: {}", e.0)))
        }
        (Runtime::Lambda, None) => Ok(None),
    }
}
