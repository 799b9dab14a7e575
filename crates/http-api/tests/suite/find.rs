//! `/find` (text search) and `/find/symbol` (no language server: always empty).

use pretty_assertions::assert_eq;
use serde_json::json;

use super::directory_query;
use super::start;

#[tokio::test]
async fn find_returns_ripgrep_shaped_matches_relative_to_the_instance() {
    let t = start().await;
    std::fs::create_dir_all(t.dir.join("src")).unwrap();
    std::fs::write(t.dir.join("src/lib.rs"), "fn main() {}\nlet needle = 1; // needle\n").unwrap();
    std::fs::write(t.dir.join("other.txt"), "nothing here\n").unwrap();

    let (status, found) = t.get(&format!("/find?pattern=need%5Cw%2B&{}", directory_query(&t.dir))).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found,
        json!([{
            "path": { "text": "src/lib.rs" },
            "lines": { "text": "let needle = 1; // needle\n" },
            "line_number": 2,
            "absolute_offset": 13,
            "submatches": [
                { "match": { "text": "needle" }, "start": 4, "end": 10 },
                { "match": { "text": "needle" }, "start": 19, "end": 25 }
            ]
        }])
    );
    assert_eq!(t.get("/find?pattern=absent_word_xyz").await, (200, json!([])));
    assert_eq!(t.get("/find").await.0, 400);
    assert_eq!(t.get("/find?pattern=%28unclosed").await.0, 400);
}

#[tokio::test]
async fn find_symbol_is_empty_without_a_language_server() {
    let t = start().await;
    assert_eq!(t.get("/find/symbol?query=main").await, (200, json!([])));
}
