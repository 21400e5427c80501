//! The consent rule, in one place: which scopes a user consents to, when
//! the consent step is due, and what a code carries after it.

use crate::scope::ScopeSet;

/// The scope groups a request asks consent for: every scope but `openid`.
pub fn groups(scope: &ScopeSet) -> Vec<String> {
    scope.iter().filter(|s| *s != "openid").map(str::to_owned).collect()
}

/// Whether a request can need consent at all: the client requires it and
/// asks for at least one group. Only then is the user's record read.
pub fn asked(require_consent: bool, scope: &ScopeSet) -> bool {
    require_consent && scope.iter().any(|s| s != "openid")
}

/// Whether the consent step is due for a request that [`asked`]: always
/// when `forced` (`prompt=consent`), else when a group is not in the
/// user's `granted` record.
pub fn due(scope: &ScopeSet, forced: bool, granted: &[String]) -> bool {
    forced || groups(scope).iter().any(|g| !granted.contains(g))
}

/// The scope a code carries: the request's, narrowed to `openid` and the
/// groups granted on the consent step when there was one.
pub fn granted_scope(requested: &ScopeSet, granted: Option<&[String]>) -> String {
    match granted {
        None => requested.to_string(),
        Some(granted) => {
            requested.iter().filter(|s| *s == "openid" || granted.iter().any(|g| g == s)).collect::<Vec<_>>().join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(text: &str) -> ScopeSet {
        ScopeSet::parse(text).unwrap()
    }

    #[test]
    fn consent_is_asked_for_groups_of_clients_that_require_it_and_due_until_all_are_granted() {
        assert!(!asked(false, &scope("openid profile")), "the client does not require consent");
        assert!(!asked(true, &scope("openid")), "openid alone is no group");
        assert!(asked(true, &scope("openid profile email")));
        let granted = ["profile".to_owned()];
        assert!(due(&scope("openid profile email"), false, &granted), "email is not granted");
        assert!(!due(&scope("openid profile"), false, &granted), "all granted");
        assert!(due(&scope("openid profile"), true, &granted), "prompt=consent");
        assert_eq!(granted_scope(&scope("openid profile email"), Some(&granted)), "openid profile");
        assert_eq!(granted_scope(&scope("openid email"), None), "openid email");
    }
}
