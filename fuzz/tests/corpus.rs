//! The seed corpora replayed through their targets without AFL++: every
//! target has seeds, and none crashes on them (AFL++ refuses to start on
//! a seed that crashes).

use std::path::Path;

#[test]
fn every_target_has_seeds_and_passes_them() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, target) in kubecache_fuzz::TARGETS {
        let n = kubecache_fuzz::replay(*target, &[corpus.join(name)])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(n > 0, "{name} has no seeds");
    }
}
