#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly by design")]

mod suite;
