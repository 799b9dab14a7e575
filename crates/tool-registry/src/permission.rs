//! Permission rules: OpenCode's `{permission, pattern, action}` triples, evaluated last-match-wins.
//!
//! A [`Ruleset`] is an ordered list. [`Ruleset::evaluate`] finds the last rule whose permission and
//! pattern both wildcard-match (`*` any run of characters, `?` one character, and a trailing ` *`
//! also matching nothing, so `git status *` covers `git status`); nothing matching means `ask`.

use opencode_config::PermissionAction;
use opencode_config::PermissionConfig;
use serde::Deserialize;
use serde::Serialize;

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub permission: String,
    pub pattern: String,
    pub action: PermissionAction,
}

/// Rules in evaluation order: later rules win.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ruleset(pub Vec<Rule>);

impl Rule {
    pub fn new(permission: impl Into<String>, pattern: impl Into<String>, action: PermissionAction) -> Self {
        Self { permission: permission.into(), pattern: pattern.into(), action }
    }
}

impl Ruleset {
    /// Rules from configuration, with `~/` and `$HOME` expanded in patterns.
    pub fn from_config(config: &PermissionConfig, home: Option<&str>) -> Self {
        Self(
            config
                .rules()
                .into_iter()
                .map(|(permission, pattern, action)| Rule { permission, pattern: expand_home(&pattern, home), action })
                .collect(),
        )
    }

    /// Appends `later`'s rules, which then win over these.
    pub fn merged(mut self, later: &Ruleset) -> Self {
        self.0.extend(later.0.iter().cloned());
        self
    }

    pub fn push(&mut self, rule: Rule) {
        self.0.push(rule);
    }

    /// The action of the last matching rule, or `ask`.
    pub fn evaluate(&self, permission: &str, pattern: &str) -> PermissionAction {
        self.last_match(permission, pattern).map_or(PermissionAction::Ask, |rule| rule.action)
    }

    /// The last rule matching both permission and pattern.
    pub fn last_match(&self, permission: &str, pattern: &str) -> Option<&Rule> {
        self.0.iter().rev().find(|rule| wildcard(permission, &rule.permission) && wildcard(pattern, &rule.pattern))
    }

    /// Whether a tool is hidden from the model: the last rule for its permission is `"*": deny`.
    /// `edit`, `write`, `apply_patch` and `patch` share the `edit` permission.
    pub fn hides_tool(&self, tool: &str) -> bool {
        let permission = permission_of_tool(tool);
        self.0
            .iter()
            .rev()
            .find(|rule| wildcard(permission, &rule.permission))
            .is_some_and(|rule| rule.pattern == "*" && rule.action == PermissionAction::Deny)
    }
}

/// The permission key a tool is checked under.
pub fn permission_of_tool(tool: &str) -> &str {
    match tool {
        "edit" | "write" | "apply_patch" | "patch" | "multiedit" => "edit",
        other => other,
    }
}

/// OpenCode's wildcard match: `*` any run (including `/`), `?` one character, the rest literal;
/// a pattern ending in ` *` also matches without that suffix. Backslashes count as `/`.
pub fn wildcard(text: &str, pattern: &str) -> bool {
    let text: Vec<char> = text.chars().map(|c| if c == '\\' { '/' } else { c }).collect();
    let pattern: Vec<char> = pattern.chars().map(|c| if c == '\\' { '/' } else { c }).collect();
    if let Some(prefix) = pattern.strip_suffix(&[' ', '*'])
        && glob_chars(&text, prefix)
    {
        return true;
    }
    glob_chars(&text, &pattern)
}

/// Iterative glob with single-star backtracking: linear in practice, never exponential.
fn glob_chars(text: &[char], pattern: &[char]) -> bool {
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || (pattern[p] != '*' && pattern[p] == text[t])) {
            t += 1;
            p += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

fn expand_home(pattern: &str, home: Option<&str>) -> String {
    let Some(home) = home else { return pattern.to_owned() };
    if let Some(rest) = pattern.strip_prefix("~/") {
        return format!("{}/{rest}", home.trim_end_matches('/'));
    }
    if let Some(rest) = pattern.strip_prefix("$HOME") {
        return format!("{}{rest}", home.trim_end_matches('/'));
    }
    pattern.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionAction::*;

    #[test]
    fn wildcard_follows_opencode() {
        assert!(wildcard("src/a/b.rs", "*"));
        assert!(wildcard("src/a/b.rs", "src/*.rs"));
        assert!(wildcard("git status", "git status *"));
        assert!(wildcard("git status --short", "git status *"));
        assert!(!wildcard("git statusx", "git status *"));
        assert!(wildcard(".env", "*.env"));
        assert!(!wildcard(".env.example", "*.env"));
        assert!(wildcard("a?c", "a?c"));
        assert!(wildcard("C:\\x", "C:/*"));
        assert!(!wildcard("abc", "abd"));
    }

    #[test]
    fn last_match_wins_and_default_is_ask() {
        let rules =
            Ruleset(vec![Rule::new("*", "*", Allow), Rule::new("bash", "*", Ask), Rule::new("bash", "ls *", Allow)]);
        assert_eq!(rules.evaluate("bash", "ls -la"), Allow);
        assert_eq!(rules.evaluate("bash", "rm -rf /"), Ask);
        assert_eq!(rules.evaluate("read", "x"), Allow);
        assert_eq!(Ruleset::default().evaluate("read", "x"), Ask);
    }

    #[test]
    fn tools_denied_by_star_are_hidden() {
        let rules =
            Ruleset(vec![Rule::new("*", "*", Allow), Rule::new("edit", "*", Deny), Rule::new("bash", "rm *", Deny)]);
        assert!(rules.hides_tool("write"));
        assert!(rules.hides_tool("apply_patch"));
        assert!(!rules.hides_tool("bash"));
        assert!(!rules.hides_tool("read"));
    }

    #[test]
    fn home_is_expanded() {
        let config: PermissionConfig = serde_json::from_str(r#"{"read":{"~/secret/*":"deny"}}"#).unwrap();
        let rules = Ruleset::from_config(&config, Some("/home/u"));
        assert_eq!(rules.0[0].pattern, "/home/u/secret/*");
    }
}
