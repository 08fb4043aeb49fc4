//! What the integration tests of the analysis share.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use op2_analysis::Loader;

/// Serves files from memory, by path; tests may change them between
/// analyses.
#[derive(Clone, Debug, Default)]
pub struct MemoryLoader(pub BTreeMap<PathBuf, Arc<str>>);

impl Loader for MemoryLoader {
    fn load(&self, path: &Path) -> Result<Arc<str>, String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| format!("no such file `{}`", path.display()))
    }
}
