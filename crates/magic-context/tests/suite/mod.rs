#[path = "../../benches/support/sessions.rs"]
#[allow(dead_code, reason = "shared with the benchmark, which uses all of it")]
pub mod sessions;

mod cache;
mod plugin;
mod support;
mod transform;
