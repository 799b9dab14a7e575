//! `opencode-catalog`: which models exist, how to reach them, what they cost.
//!
//! - **Ingestion.** models.dev's `api.json` ([`models_dev`]) from a bundled snapshot, the refresh
//!   cache or a file ([`source`]); custom providers and models from config merged over it
//!   ([`Catalog::with_config`]).
//! - **Routing.** A model resolves to an `opencode-llm` [`Route`](opencode_llm::Route) by its `npm`
//!   package ([`route`]); every OpenAI-compatible provider works from data alone; what cannot be
//!   routed is a clear [`CatalogError::Unsupported`].
//! - **Options.** Legacy and AI-SDK shaped options are partitioned into Model Request Options,
//!   Generation Controls and compatibility body fields ([`options`]).
//! - **Status, variants, cost, credentials** ([`status`], [`cost`], [`credentials`]).
//!
//! ```no_run
//! # fn run() -> Result<(), opencode_catalog::CatalogError> {
//! use opencode_catalog::Catalog;
//! let catalog = Catalog::bundled()?;
//! let env = opencode_config::Env::from_process();
//! let resolved = catalog.resolve("anthropic", "claude-sonnet-4-5", Some("high"), None, &env)?;
//! println!("{} via {}", resolved.api_id, resolved.plan.protocol);
//! # Ok(())
//! # }
//! ```

mod catalog;
pub mod cost;
pub mod credentials;
mod error;
mod lazy;
pub mod models_dev;
pub mod options;
pub mod route;
pub mod source;
pub mod status;

pub use catalog::{Catalog, Model, Models, Provider, ResolvedModel};
pub use credentials::{Credential, CredentialOrigin};
pub use error::CatalogError;
pub use lazy::LazyCatalog;
pub use options::ModelOptions;
pub use route::RoutePlan;
pub use status::{ModelStatus, Variant, Visibility};

impl Catalog {
    /// The catalog of the bundled snapshot alone (each provider's models parsed on first access).
    pub fn bundled() -> Result<Self, CatalogError> {
        Ok(Self::from_raw(source::bundled_raw()?))
    }
}
