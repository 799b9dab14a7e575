fn main() {
    let total = compute(1);
    println!("{total}");
}
