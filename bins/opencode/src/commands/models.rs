//! `opencode models [provider] [--verbose] [--refresh] [--all]`.
//!
//! Without a provider, only providers that can be used are listed (a credential in config,
//! `auth.json` or the environment, or a provider defined in config), as OpenCode does; `--all`
//! lists the whole catalog. Hidden models (alpha, unless `OPENCODE_ENABLE_EXPERIMENTAL_MODELS`)
//! are left out.

use std::io::Write;

use opencode_catalog::{Catalog, Model, Provider, Visibility, credentials};
use serde_json::json;

use super::emit;
use crate::cli::ModelsArgs;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, args: &ModelsArgs) -> Result<(), CliError> {
    if args.refresh {
        refresh(context);
    }
    let (catalog, _origin) = context.catalog()?;
    let providers = selected(context, &catalog, args)?;
    if providers.is_empty() {
        eprintln!("no provider has credentials; run `opencode auth login`, or `opencode models --all`");
    }
    let experimental = context.env.flag("OPENCODE_ENABLE_EXPERIMENTAL_MODELS");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for provider in providers {
        for model in provider.models.values() {
            if model.status.visibility(experimental) == Visibility::Hidden {
                continue;
            }
            emit(&mut out, format_args!("{}/{}\n", provider.id, model.id))?;
            if args.verbose {
                let details = serde_json::to_string_pretty(&details(&catalog, provider, model)).unwrap_or_default();
                emit(&mut out, format_args!("{details}\n"))?;
            }
        }
    }
    out.flush()
        .or_else(|err| if err.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(err) })
        .map_err(|err| CliError::Io(format!("cannot write output: {err}")))
}

fn refresh(context: &Context) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("warning: cannot refresh the catalog: {err}");
            return;
        }
    };
    match runtime.block_on(opencode_catalog::source::refresh(&context.paths, &context.env)) {
        Ok(Some(providers)) => eprintln!("models catalog refreshed: {providers} providers"),
        Ok(None) => eprintln!("warning: not refreshing: OPENCODE_DISABLE_MODELS_FETCH is set"),
        Err(err) => eprintln!("warning: {err}; listing the catalog already available"),
    }
}

fn selected<'a>(context: &Context, catalog: &'a Catalog, args: &ModelsArgs) -> Result<Vec<&'a Provider>, CliError> {
    if let Some(id) = &args.provider {
        let provider = catalog
            .provider(id)
            .ok_or_else(|| CliError::from(opencode_catalog::CatalogError::UnknownProvider { provider: id.clone() }))?;
        return Ok(vec![provider]);
    }
    if args.all {
        return Ok(catalog.providers().collect());
    }
    let stored = context.auth().entries().unwrap_or_else(|err| {
        eprintln!("warning: {err}");
        Default::default()
    });
    Ok(catalog
        .providers()
        .filter(|provider| {
            let auth = match stored.get(&provider.id) {
                Some(opencode_config::AuthEntry::Known(info)) => Some(info),
                _ => None,
            };
            provider.custom || credentials::resolve(provider, auth, &context.env).is_some()
        })
        .collect())
}

fn details(catalog: &Catalog, provider: &Provider, model: &Model) -> serde_json::Value {
    let info = &model.info;
    let route = match catalog.plan(&provider.id, &model.id) {
        Ok(plan) => json!({"adapter": plan.adapter, "protocol": plan.protocol}),
        Err(err) => json!({"unsupported": err.to_string()}),
    };
    let variants: Vec<String> =
        catalog.variants(&provider.id, &model.id).unwrap_or_default().into_iter().map(|v| v.name).collect();
    json!({
        "name": info.name,
        "status": model.status.as_str(),
        "limit": info.limit,
        "cost": info.cost,
        "capabilities": {
            "reasoning": info.reasoning,
            "tool_call": info.tool_call,
            "attachment": info.attachment,
            "temperature": info.temperature.unwrap_or(true),
            "modalities": info.modalities,
        },
        "variants": variants,
        "route": route,
    })
}
