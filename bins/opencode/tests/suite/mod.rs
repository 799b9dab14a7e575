mod auth;
mod debug_config;
mod models;
mod run;
mod support;
