//! Where the catalog comes from: `OPENCODE_MODELS_PATH`, else the refresh cache in the cache dir,
//! else the snapshot bundled in the binary (so a fresh, offline machine has a catalog).
//!
//! Loading never touches the network. A refresh downloads `https://models.dev/api.json` (or
//! `OPENCODE_MODELS_URL`), checks that it parses, and replaces the cache atomically; it runs on a
//! background thread at startup when the cache is older than an hour, so it never blocks, and
//! `OPENCODE_DISABLE_MODELS_FETCH` turns it off.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use opencode_config::{Env, Paths};

use crate::models_dev::{self, ApiJson, RawApiJson};
use crate::{Catalog, CatalogError};

/// The bundled models.dev snapshot, gzip-compressed.
pub const SNAPSHOT_GZ: &[u8] = include_bytes!("../data/models-dev.json.gz");

/// Where the bundled snapshot came from (source, version, date).
pub const SNAPSHOT_SOURCE: &str = include_str!("../data/SOURCE");

/// The default catalog URL.
pub const DEFAULT_MODELS_URL: &str = "https://models.dev/api.json";

/// The cache is refreshed in the background when older than this.
pub const REFRESH_AFTER: Duration = Duration::from_secs(60 * 60);

/// Where a loaded catalog came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogOrigin {
    Bundled,
    Cache(PathBuf),
    File(PathBuf),
}

impl std::fmt::Display for CatalogOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bundled => f.write_str("bundled snapshot"),
            Self::Cache(path) | Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The bundled snapshot's JSON.
pub fn bundled_json() -> Result<Vec<u8>, CatalogError> {
    let mut out = Vec::with_capacity(SNAPSHOT_GZ.len() * 12);
    flate2::read::GzDecoder::new(SNAPSHOT_GZ)
        .read_to_end(&mut out)
        .map_err(|err| CatalogError::Load { origin: "bundled snapshot".into(), message: err.to_string() })?;
    Ok(out)
}

/// The bundled snapshot, parsed.
pub fn bundled() -> Result<ApiJson, CatalogError> {
    models_dev::parse(&bundled_json()?).map_err(|err| load_error(&CatalogOrigin::Bundled, &err.to_string()))
}

/// The bundled snapshot with each provider's models left as raw JSON.
pub(crate) fn bundled_raw() -> Result<RawApiJson, CatalogError> {
    models_dev::parse_raw(&bundled_json()?).map_err(|err| load_error(&CatalogOrigin::Bundled, &err.to_string()))
}

/// The best catalog available without the network: `OPENCODE_MODELS_PATH`, the cache, else the
/// bundled snapshot (read on demand). A source that fails to parse is skipped (its error is returned
/// alongside).
pub fn load(paths: &Paths, env: &Env) -> Result<(Catalog, CatalogOrigin, Vec<CatalogError>), CatalogError> {
    let mut problems = Vec::new();
    let candidates = env
        .get("OPENCODE_MODELS_PATH")
        .map(|path| CatalogOrigin::File(PathBuf::from(path)))
        .into_iter()
        .chain(std::iter::once(CatalogOrigin::Cache(paths.models_cache())));
    for origin in candidates {
        let (CatalogOrigin::File(path) | CatalogOrigin::Cache(path)) = &origin else { continue };
        match std::fs::read(path) {
            Ok(bytes) => match models_dev::parse(&bytes) {
                Ok(api) if !api.is_empty() => return Ok((Catalog::from_models_dev(api), origin, problems)),
                Ok(_) => problems.push(load_error(&origin, "no providers")),
                Err(err) => problems.push(load_error(&origin, &err.to_string())),
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && matches!(origin, CatalogOrigin::Cache(_)) => {}
            Err(err) => problems.push(load_error(&origin, &err.to_string())),
        }
    }
    Ok((Catalog::bundled()?, CatalogOrigin::Bundled, problems))
}

/// The URL a refresh downloads: `OPENCODE_MODELS_URL` (a base like `https://models.dev`, or a full
/// `.json` URL), else models.dev.
pub fn models_url(env: &Env) -> String {
    match env.get("OPENCODE_MODELS_URL") {
        Some(url) if url.ends_with(".json") => url.to_owned(),
        Some(url) => format!("{}/api.json", url.trim_end_matches('/')),
        None => DEFAULT_MODELS_URL.to_owned(),
    }
}

/// Whether the cache exists and is younger than [`REFRESH_AFTER`].
pub fn cache_is_fresh(paths: &Paths) -> bool {
    std::fs::metadata(paths.models_cache())
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|age| age < REFRESH_AFTER)
}

/// Downloads the catalog and replaces the cache. `Ok(None)` when fetching is disabled; otherwise the
/// number of providers downloaded.
pub async fn refresh(paths: &Paths, env: &Env) -> Result<Option<usize>, CatalogError> {
    if env.flag("OPENCODE_DISABLE_MODELS_FETCH") {
        return Ok(None);
    }
    let url = models_url(env);
    let fail = |message: String| CatalogError::Load { origin: url.clone(), message };
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .user_agent(concat!("opencode/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|err| fail(err.to_string()))?;
    let response = client.get(&url).send().await.map_err(|err| fail(err.to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("HTTP {}", response.status())));
    }
    let bytes = response.bytes().await.map_err(|err| fail(err.to_string()))?;
    let api = models_dev::parse(&bytes).map_err(|err| fail(format!("not a models.dev catalog: {err}")))?;
    if api.is_empty() {
        return Err(fail("the catalog lists no providers".into()));
    }
    let cache = paths.models_cache();
    opencode_config::write_private(&cache, &bytes)
        .map_err(|err| CatalogError::Load { origin: cache.display().to_string(), message: err.to_string() })?;
    Ok(Some(api.len()))
}

/// Starts a refresh on a background thread when fetching is enabled and the cache is stale.
/// The caller never waits for it; a failure only means the next start tries again.
pub fn refresh_in_background(paths: &Paths, env: &Env) -> Option<std::thread::JoinHandle<()>> {
    if env.flag("OPENCODE_DISABLE_MODELS_FETCH") || cache_is_fresh(paths) {
        return None;
    }
    let (paths, env) = (paths.clone(), env.clone());
    std::thread::Builder::new()
        .name("models-refresh".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            if let Err(err) = runtime.block_on(refresh(&paths, &env)) {
                tracing::debug!(error = %err, "background models refresh failed");
            }
        })
        .ok()
}

fn load_error(origin: &CatalogOrigin, message: &str) -> CatalogError {
    CatalogError::Load { origin: origin.to_string(), message: message.to_owned() }
}
