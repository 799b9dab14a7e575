//! The catalog: models.dev providers and models with config's custom providers and models merged
//! over them, ready for lookup and routing.

use std::ops::Deref;
use std::sync::OnceLock;

use indexmap::IndexMap;
use opencode_config::{AuthInfo, Config, Env, ProviderOptionsConfig};
use opencode_llm::Route;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::models_dev::{ApiJson, ModelInfo, ProviderInfo, RawApiJson};
use crate::options::{self, ModelOptions};
use crate::route::{self, RoutePlan};
use crate::status::{self, ModelStatus, Variant};
use crate::{CatalogError, Credential, credentials};

/// Every known provider and model.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    providers: IndexMap<String, Provider>,
}

/// A provider as the catalog knows it (models.dev data with config applied).
#[derive(Debug, Clone, Default)]
pub struct Provider {
    pub id: String,
    pub name: String,
    pub env: Vec<String>,
    pub npm: Option<String>,
    pub api: Option<String>,
    pub doc: Option<String>,
    /// `provider.<id>.options` from config (key, base URL, pass-through options).
    pub options: ProviderOptionsConfig,
    /// Whether the provider came from config only (not in models.dev).
    pub custom: bool,
    pub models: Models,
}

/// A provider's models by id (use it as the map it derefs to). From the bundled snapshot the map is
/// parsed from raw JSON on first access, so a run pays only for the providers it touches.
#[derive(Debug, Clone, Default)]
pub struct Models {
    parsed: OnceLock<IndexMap<String, Model>>,
    /// The provider id and its models.dev `models` JSON, until parsed.
    raw: Option<(String, Box<RawValue>)>,
}

/// One model as the catalog knows it.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// The id within its provider (what `provider/model` names; may contain `/`).
    pub id: String,
    pub provider: String,
    /// The id sent to the provider (config may alias a model to another API id).
    pub api_id: String,
    pub info: ModelInfo,
    pub status: ModelStatus,
}

/// A model ready to be called: its route and its partitioned options.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    pub provider: String,
    pub model: String,
    /// The model id to put in `LlmRequest::model`.
    pub api_id: String,
    pub plan: RoutePlan,
    pub route: Route,
    pub options: ModelOptions,
    /// Where the credential came from, if one was found before sending.
    pub credential: Option<Credential>,
}

impl Catalog {
    /// A catalog of exactly these models.dev providers.
    pub fn from_models_dev(api: ApiJson) -> Self {
        Self::build(api, |id, models| Models::from(models_of(id, models)))
    }

    /// A catalog whose providers' models are parsed on first access.
    pub(crate) fn from_raw(api: RawApiJson) -> Self {
        Self::build(api, Models::raw)
    }

    fn build<M>(api: IndexMap<String, ProviderInfo<M>>, models: impl Fn(&str, M) -> Models) -> Self {
        let providers = api
            .into_iter()
            .map(|(id, info)| {
                let provider = Provider::from_info(&id, info, &models);
                (id, provider)
            })
            .collect();
        Self { providers }
    }

    /// Applies config: custom providers and models merged over the catalog, model white/blacklists,
    /// and `enabled_providers` / `disabled_providers`.
    pub fn with_config(mut self, config: &Config) -> Result<Self, CatalogError> {
        for (id, over) in &config.provider {
            let provider = self.providers.entry(id.clone()).or_insert_with(|| Provider {
                id: id.clone(),
                name: id.clone(),
                custom: true,
                ..Provider::default()
            });
            provider.apply_config(over)?;
        }
        self.providers.retain(|id, _| config.provider_enabled(id));
        Ok(self)
    }

    pub fn providers(&self) -> impl Iterator<Item = &Provider> {
        self.providers.values()
    }

    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.get(id)
    }

    /// The model `provider/model`, or an error saying which part is unknown.
    pub fn model(&self, provider: &str, model: &str) -> Result<&Model, CatalogError> {
        let Some(entry) = self.providers.get(provider) else {
            return Err(CatalogError::UnknownProvider { provider: provider.to_owned() });
        };
        entry
            .models
            .get(model)
            .ok_or_else(|| CatalogError::UnknownModel { provider: provider.to_owned(), model: model.to_owned() })
    }

    /// Looks up `provider/model` (the model part may contain further `/`).
    pub fn lookup(&self, reference: &str) -> Result<&Model, CatalogError> {
        let Some((provider, model)) = reference.split_once('/') else {
            return Err(CatalogError::BadReference { reference: reference.to_owned() });
        };
        self.model(provider, model)
    }

    /// How `provider/model` would be reached, without looking at credentials.
    pub fn plan(&self, provider: &str, model: &str) -> Result<RoutePlan, CatalogError> {
        let found = self.model(provider, model)?;
        route::plan(&self.providers[provider], found)
    }

    /// Resolves a model (and optional variant) into a route plus options. `auth` is the provider's
    /// `auth.json` entry, if any; an `oauth` entry selects the provider's signed-in route (refresh
    /// it first: [`opencode_config::CredentialRefresher`]).
    pub fn resolve(
        &self,
        provider: &str,
        model: &str,
        variant: Option<&str>,
        auth: Option<&AuthInfo>,
        env: &Env,
    ) -> Result<ResolvedModel, CatalogError> {
        let found = self.model(provider, model)?;
        let entry = &self.providers[provider];
        let plan = route::plan(entry, found)?;
        let credential = credentials::resolve(entry, auth, env);
        // Environment keys stay environment lookups in the route (read when sending).
        let key = credential
            .as_ref()
            .filter(|credential| !matches!(credential.origin, crate::CredentialOrigin::Env(_)))
            .map(|credential| credential.value.clone());
        let sign_in = credential.as_ref().and_then(|credential| credential.sign_in.clone());
        let route = route::build(&plan, entry, key, sign_in, env)?;
        let variant = match variant {
            Some(name) => Some(self.variant(found, &plan, name)?),
            None => None,
        };
        let options = options::for_model(entry, found, &plan, variant.as_ref());
        Ok(ResolvedModel {
            provider: provider.to_owned(),
            model: model.to_owned(),
            api_id: found.api_id.clone(),
            plan,
            route,
            options,
            credential,
        })
    }

    /// The model's variants (reasoning effort levels and the like), for pickers.
    pub fn variants(&self, provider: &str, model: &str) -> Result<Vec<Variant>, CatalogError> {
        let found = self.model(provider, model)?;
        let plan = route::plan(&self.providers[provider], found)?;
        Ok(status::variants(found, &plan))
    }

    fn variant(&self, model: &Model, plan: &RoutePlan, name: &str) -> Result<Variant, CatalogError> {
        let all = status::variants(model, plan);
        let known: Vec<String> = all.iter().map(|variant| variant.name.clone()).collect();
        all.into_iter().find(|variant| variant.name == name).ok_or_else(|| CatalogError::UnknownVariant {
            model: format!("{}/{}", model.provider, model.id),
            variant: name.to_owned(),
            known: known.join(", "),
        })
    }

    /// Number of models over all providers.
    pub fn model_count(&self) -> usize {
        self.providers.values().map(|provider| provider.models.len()).sum()
    }
}

impl ResolvedModel {
    /// Whether the route is a subscription sign-in (Claude Pro/Max, ChatGPT, Copilot), whose use
    /// costs nothing per token.
    pub fn signed_in(&self) -> bool {
        self.credential.as_ref().is_some_and(|credential| credential.sign_in.is_some())
            && route::SIGN_IN_ADAPTERS.contains(&self.plan.adapter)
    }
}

impl Provider {
    fn from_info<M>(id: &str, info: ProviderInfo<M>, models: impl Fn(&str, M) -> Models) -> Self {
        Self {
            id: id.to_owned(),
            name: info.name,
            env: info.env,
            npm: info.npm,
            api: info.api,
            doc: info.doc,
            options: ProviderOptionsConfig::default(),
            custom: false,
            models: models(id, info.models),
        }
    }

    fn apply_config(&mut self, over: &opencode_config::ProviderConfig) -> Result<(), CatalogError> {
        if let Some(name) = &over.name {
            self.name.clone_from(name);
        }
        if over.npm.is_some() {
            self.npm.clone_from(&over.npm);
        }
        if over.api.is_some() {
            self.api.clone_from(&over.api);
        }
        if !over.env.is_empty() {
            self.env.clone_from(&over.env);
        }
        let mut options = serde_json::to_value(&self.options).unwrap_or(Value::Null);
        if let Ok(more) = serde_json::to_value(&over.options) {
            merge(&mut options, more);
        }
        self.options = serde_json::from_value(options).unwrap_or_else(|_| over.options.clone());
        let mut models = std::mem::take(&mut self.models).into_map();
        for (model_id, partial) in &over.models {
            self.apply_model(&mut models, model_id, partial)?;
        }
        if !over.whitelist.is_empty() {
            models.retain(|id, _| over.whitelist.contains(id));
        }
        models.retain(|id, _| !over.blacklist.contains(id));
        self.models = models.into();
        Ok(())
    }

    /// Merges a partial models.dev-shaped model from config over the catalog's (or adds it).
    fn apply_model(
        &self,
        models: &mut IndexMap<String, Model>,
        model_id: &str,
        partial: &Map<String, Value>,
    ) -> Result<(), CatalogError> {
        let mut value = match models.get(model_id) {
            Some(existing) => serde_json::to_value(&existing.info).unwrap_or(Value::Null),
            None => serde_json::json!({"id": model_id, "name": model_id, "tool_call": true, "temperature": true}),
        };
        merge(&mut value, Value::Object(partial.clone()));
        let info: ModelInfo = serde_json::from_value(value).map_err(|err| CatalogError::InvalidModelConfig {
            provider: self.id.clone(),
            model: model_id.to_owned(),
            message: err.to_string(),
        })?;
        models.insert(model_id.to_owned(), Model::new(&self.id, model_id, info));
        Ok(())
    }
}

impl Model {
    fn new(provider: &str, id: &str, info: ModelInfo) -> Self {
        // Config may point a model entry at another API id (`"id": "real-model-name"`).
        let api_id = if info.id.is_empty() { id.to_owned() } else { info.id.clone() };
        let status = ModelStatus::from_models_dev(info.status.as_deref());
        Self { id: id.to_owned(), provider: provider.to_owned(), api_id, info, status }
    }

    /// `provider/model`.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }
}

impl Models {
    fn raw(provider: &str, json: Option<Box<RawValue>>) -> Self {
        Self { parsed: OnceLock::new(), raw: json.map(|json| (provider.to_owned(), json)) }
    }

    fn into_map(self) -> IndexMap<String, Model> {
        let Self { parsed, raw } = self;
        parsed.into_inner().unwrap_or_else(|| parse_models(raw.as_ref()))
    }
}

impl From<IndexMap<String, Model>> for Models {
    fn from(models: IndexMap<String, Model>) -> Self {
        Self { parsed: OnceLock::from(models), raw: None }
    }
}

impl Deref for Models {
    type Target = IndexMap<String, Model>;

    fn deref(&self) -> &Self::Target {
        self.parsed.get_or_init(|| parse_models(self.raw.as_ref()))
    }
}

/// Parses a provider's raw `models` JSON. Only the bundled snapshot is loaded this way and the
/// tests parse it whole, so a failure means a damaged build: it is logged and the provider has no
/// models rather than failing every later lookup.
fn parse_models(raw: Option<&(String, Box<RawValue>)>) -> IndexMap<String, Model> {
    let Some((provider, json)) = raw else { return IndexMap::new() };
    match serde_json::from_str(json.get()) {
        Ok(models) => models_of(provider, models),
        Err(err) => {
            tracing::warn!(provider = %provider, error = %err, "the bundled catalog's models do not parse");
            IndexMap::new()
        }
    }
}

fn models_of(provider: &str, models: IndexMap<String, ModelInfo>) -> IndexMap<String, Model> {
    models
        .into_iter()
        .map(|(id, info)| {
            let model = Model::new(provider, &id, info);
            (id, model)
        })
        .collect()
}

fn merge(into: &mut Value, over: Value) {
    match (into, over) {
        (Value::Object(into), Value::Object(over)) => {
            for (key, value) in over {
                match into.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, over) => *into = over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_models_are_parsed_on_first_access() {
        let json = RawValue::from_string(r#"{"m1": {"id": "m1", "name": "One"}}"#.to_owned()).unwrap();
        let models = Models::raw("p", Some(json));
        assert!(models.parsed.get().is_none());
        assert_eq!(models.keys().collect::<Vec<_>>(), ["m1"]);
        assert_eq!((models["m1"].provider.as_str(), models["m1"].info.name.as_str()), ("p", "One"));
    }

    #[test]
    fn raw_models_that_do_not_parse_leave_the_provider_empty() {
        let json = RawValue::from_string(r#"{"m1": {"limit": "big"}}"#.to_owned()).unwrap();
        assert!(Models::raw("p", Some(json)).is_empty());
        assert!(Models::raw("p", None).is_empty());
    }
}
