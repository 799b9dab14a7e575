mod auth;
mod crash;
mod debug_config;
mod models;
mod run;
mod sessions;
mod support;
