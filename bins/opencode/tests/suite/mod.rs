mod auth;
mod crash;
mod debug_config;
mod models;
mod run;
mod serve;
mod sessions;
mod support;
