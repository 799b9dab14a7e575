fn main() {
    println!("{}", compute(2));
}
