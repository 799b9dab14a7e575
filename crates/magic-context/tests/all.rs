//! The single integration-test binary of `opencode-magic-context`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly by design")]

mod suite;
