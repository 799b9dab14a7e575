mod everything;
mod scripted;
mod support;
