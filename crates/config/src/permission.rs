//! OpenCode's `permission` syntax. Key order is preserved because evaluation is last-match-wins.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// What to do when a permission is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionAction {
    Ask,
    Allow,
    Deny,
}

/// `"permission": "allow"` (meaning `{"*": "allow"}`) or `{ "<permission>": <rule>, ... }` in user order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PermissionConfig {
    All(PermissionAction),
    Keyed(IndexMap<String, PermissionRule>),
}

/// One permission key's rule: an action for every pattern, or `{ "<glob pattern>": action }` in user order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PermissionRule {
    Action(PermissionAction),
    Patterns(IndexMap<String, PermissionAction>),
}

impl PermissionConfig {
    /// The rules as ordered `(permission, pattern, action)` triples, exactly as written.
    pub fn rules(&self) -> Vec<(String, String, PermissionAction)> {
        match self {
            Self::All(action) => vec![("*".to_owned(), "*".to_owned(), *action)],
            Self::Keyed(keys) => keys
                .iter()
                .flat_map(|(permission, rule)| match rule {
                    PermissionRule::Action(action) => vec![(permission.clone(), "*".to_owned(), *action)],
                    PermissionRule::Patterns(patterns) => patterns
                        .iter()
                        .map(|(pattern, action)| (permission.clone(), pattern.clone(), *action))
                        .collect(),
                })
                .collect(),
        }
    }

    /// Later configuration wins per key; keys keep their first position, as OpenCode's deep merge does.
    pub fn merged_with(self, later: Self) -> Self {
        match (self, later) {
            (Self::Keyed(mut base), Self::Keyed(over)) => {
                for (key, rule) in over {
                    let merged = match (base.shift_remove(&key), rule) {
                        (Some(PermissionRule::Patterns(mut a)), PermissionRule::Patterns(b)) => {
                            a.extend(b);
                            PermissionRule::Patterns(a)
                        }
                        (_, rule) => rule,
                    };
                    base.insert(key, merged);
                }
                Self::Keyed(base)
            }
            (_, later) => later,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_shapes_in_order() {
        let config: PermissionConfig =
            serde_json::from_str(r#"{"edit":"deny","bash":{"*":"ask","git status":"allow"},"read":{"*.env":"ask"}}"#)
                .unwrap();
        let rules = config.rules();
        assert_eq!(rules[0], ("edit".into(), "*".into(), PermissionAction::Deny));
        assert_eq!(rules[1], ("bash".into(), "*".into(), PermissionAction::Ask));
        assert_eq!(rules[2], ("bash".into(), "git status".into(), PermissionAction::Allow));
        assert_eq!(rules[3], ("read".into(), "*.env".into(), PermissionAction::Ask));
        let all: PermissionConfig = serde_json::from_str(r#""allow""#).unwrap();
        assert_eq!(all.rules(), vec![("*".into(), "*".into(), PermissionAction::Allow)]);
    }
}
