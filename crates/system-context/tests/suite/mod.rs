mod builtins;
mod compose;
mod epoch;
mod instructions;
mod reconcile;
mod support;
