//! Names one process of a scenario can use (its regions), where a fork
//! child sees what its parent had at the fork without a copy: a scenario
//! with many regions and many forks stays linear to check.

use std::collections::HashMap;

/// A name → value map of one process; a child's map holds what the child
/// added and refers to its parent's for the rest. Its parent's steps wait
/// while the child's are walked, so the reference stays valid and
/// unchanged.
pub struct ScopedMap<'p, V> {
    own: HashMap<String, V>,
    parent: Option<&'p ScopedMap<'p, V>>,
}

impl<V> Default for ScopedMap<'_, V> {
    fn default() -> Self {
        ScopedMap {
            own: HashMap::new(),
            parent: None,
        }
    }
}

impl<'p, V> ScopedMap<'p, V> {
    /// The map of a child forked by the process that has this one.
    pub fn child(&'p self) -> ScopedMap<'p, V> {
        ScopedMap {
            own: HashMap::new(),
            parent: Some(self),
        }
    }

    /// The value of `name`: this process's own, else its parent's.
    pub fn get(&self, name: &str) -> Option<&V> {
        match self.own.get(name) {
            Some(v) => Some(v),
            None => self.parent.and_then(|p| p.get(name)),
        }
    }

    pub fn insert(&mut self, name: String, value: V) {
        self.own.insert(name, value);
    }

    /// Every name, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.own.keys().map(String::as_str).collect();
        if let Some(p) = self.parent {
            names.extend(p.names());
        }
        names.sort_unstable();
        names.dedup();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::ScopedMap;

    #[test]
    fn a_child_sees_its_parent_and_shadows_it_alone() {
        let mut parent = ScopedMap::default();
        parent.insert("a".to_string(), 1);
        {
            let mut child = parent.child();
            assert_eq!(child.get("a"), Some(&1));
            child.insert("a".to_string(), 2);
            child.insert("b".to_string(), 3);
            assert_eq!((child.get("a"), child.get("b")), (Some(&2), Some(&3)));
            assert_eq!(child.names(), ["a", "b"]);
        }
        assert_eq!((parent.get("a"), parent.get("b")), (Some(&1), None));
        assert_eq!(parent.names(), ["a"]);
    }
}
