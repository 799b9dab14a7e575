//! `cargo xtask <task>`: developer tasks.
fn main() {
    println!("usage: cargo xtask bench");
}
