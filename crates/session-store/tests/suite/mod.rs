mod concurrency;
mod crash;
mod history;
mod open;
mod runtime;
mod sessions;
mod support;
