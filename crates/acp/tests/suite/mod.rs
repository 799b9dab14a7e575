mod bad_input;
mod permissions;
mod prompt;
mod sessions;
mod support;
