//! Tool naming as OpenCode does it: `<server>_<tool>`, each part sanitised to `[a-zA-Z0-9_-]`.

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    part.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The registry name of tool `tool` of server `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{}_{}", sanitize(server), sanitize(tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_per_part() {
        assert_eq!(tool_name("everything", "get-sum"), "everything_get-sum");
        assert_eq!(tool_name("my server", "read.file"), "my_server_read_file");
        assert_eq!(tool_name("gh", "créer"), "gh_cr_er");
    }
}
