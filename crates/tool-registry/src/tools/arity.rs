//! OpenCode's command arity table: how many leading words name a command (`git commit`,
//! `npm run build`), so an `always` approval covers that command with any arguments.

/// The words that name the command: the longest known prefix's arity, else the first word.
pub fn prefix<S: AsRef<str>>(words: &[S]) -> Vec<&str> {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    for length in (1..=words.len()).rev() {
        let key = words[..length].join(" ");
        if let Some(arity) = arity(&key) {
            return words[..arity.min(words.len())].to_vec();
        }
    }
    words.into_iter().take(1).collect()
}

/// The `always` pattern of a command: its prefix and ` *` (`git commit *`).
pub fn always_pattern<S: AsRef<str>>(words: &[S]) -> String {
    format!("{} *", prefix(words).join(" "))
}

fn arity(command: &str) -> Option<usize> {
    ARITY.binary_search_by(|(key, _)| key.cmp(&command)).ok().map(|index| ARITY[index].1)
}

/// Sorted by command for binary search (checked by a test).
const ARITY: &[(&str, usize)] = &[
    ("aws", 3),
    ("az", 3),
    ("bazel", 2),
    ("brew", 2),
    ("bun", 2),
    ("bun run", 3),
    ("bun x", 3),
    ("cargo", 2),
    ("cargo add", 3),
    ("cargo run", 3),
    ("cat", 1),
    ("cd", 1),
    ("cdk", 2),
    ("cf", 2),
    ("chmod", 1),
    ("chown", 1),
    ("cmake", 2),
    ("composer", 2),
    ("consul", 2),
    ("consul kv", 3),
    ("cp", 1),
    ("crictl", 2),
    ("deno", 2),
    ("deno task", 3),
    ("docker", 2),
    ("docker builder", 3),
    ("docker compose", 3),
    ("docker container", 3),
    ("docker image", 3),
    ("docker network", 3),
    ("docker volume", 3),
    ("doctl", 3),
    ("echo", 1),
    ("eksctl", 2),
    ("eksctl create", 3),
    ("env", 1),
    ("export", 1),
    ("firebase", 2),
    ("flyctl", 2),
    ("gcloud", 3),
    ("gh", 3),
    ("git", 2),
    ("git config", 3),
    ("git remote", 3),
    ("git stash", 3),
    ("go", 2),
    ("gradle", 2),
    ("grep", 1),
    ("helm", 2),
    ("heroku", 2),
    ("hugo", 2),
    ("ip", 2),
    ("ip addr", 3),
    ("ip link", 3),
    ("ip netns", 3),
    ("ip route", 3),
    ("kill", 1),
    ("killall", 1),
    ("kind", 2),
    ("kind create", 3),
    ("kubectl", 2),
    ("kubectl kustomize", 3),
    ("kubectl rollout", 3),
    ("kustomize", 2),
    ("ln", 1),
    ("ls", 1),
    ("make", 2),
    ("mc", 2),
    ("mc admin", 3),
    ("minikube", 2),
    ("mkdir", 1),
    ("mongosh", 2),
    ("mv", 1),
    ("mvn", 2),
    ("mysql", 2),
    ("ng", 2),
    ("npm", 2),
    ("npm exec", 3),
    ("npm init", 3),
    ("npm run", 3),
    ("npm view", 3),
    ("nvm", 2),
    ("nx", 2),
    ("openssl", 2),
    ("openssl req", 3),
    ("openssl x509", 3),
    ("pip", 2),
    ("pipenv", 2),
    ("pnpm", 2),
    ("pnpm dlx", 3),
    ("pnpm exec", 3),
    ("pnpm run", 3),
    ("podman", 2),
    ("podman container", 3),
    ("podman image", 3),
    ("poetry", 2),
    ("ps", 1),
    ("psql", 2),
    ("pulumi", 2),
    ("pulumi stack", 3),
    ("pwd", 1),
    ("pyenv", 2),
    ("python", 2),
    ("rake", 2),
    ("rbenv", 2),
    ("redis-cli", 2),
    ("rm", 1),
    ("rmdir", 1),
    ("rustup", 2),
    ("serverless", 2),
    ("sfdx", 3),
    ("skaffold", 2),
    ("sleep", 1),
    ("sls", 2),
    ("source", 1),
    ("sst", 2),
    ("swift", 2),
    ("systemctl", 2),
    ("tail", 1),
    ("terraform", 2),
    ("terraform workspace", 3),
    ("tmux", 2),
    ("touch", 1),
    ("turbo", 2),
    ("ufw", 2),
    ("unset", 1),
    ("vault", 2),
    ("vault auth", 3),
    ("vault kv", 3),
    ("vercel", 2),
    ("volta", 2),
    ("which", 1),
    ("wp", 2),
    ("yarn", 2),
    ("yarn dlx", 3),
    ("yarn run", 3),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted() {
        assert!(ARITY.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    #[test]
    fn prefixes_follow_the_table() {
        assert_eq!(always_pattern(&["git", "commit", "-m", "x"]), "git commit *");
        assert_eq!(always_pattern(&["npm", "run", "build", "--", "--watch"]), "npm run build *");
        assert_eq!(always_pattern(&["npm", "install"]), "npm install *");
        assert_eq!(always_pattern(&["docker", "compose", "up", "-d"]), "docker compose up *");
        assert_eq!(always_pattern(&["ls", "-la"]), "ls *");
        assert_eq!(always_pattern(&["./run.sh", "x"]), "./run.sh *");
        assert_eq!(always_pattern(&["git"]), "git *");
    }
}
