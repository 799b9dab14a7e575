//! The single integration-test binary of `opencode-tool-registry`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly by design")]

mod suite;
