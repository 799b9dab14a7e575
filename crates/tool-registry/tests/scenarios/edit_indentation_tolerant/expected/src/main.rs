fn main() {
    let x = 3;
    println!("{x}!");
}
