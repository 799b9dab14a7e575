//! The single integration-test binary of `opencode-plugin-host`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly by design")]

mod suite;
