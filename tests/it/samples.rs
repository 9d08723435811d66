//! The bundled samples are exactly what the generator makes.

use hazardserve::synth;

#[test]
fn committed_samples_match_the_generator() {
    let root = crate::common::samples();
    for f in synth::traces::all(synth::DEFAULT_SEED) {
        let path = root.join(&f.rel);
        let on_disk = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run `hazardserve synth traces`)", path.display()));
        assert!(
            on_disk == f.content,
            "{} differs from the generator output; regenerate with `hazardserve synth traces`",
            f.rel
        );
    }
}

#[test]
fn samples_are_small() {
    let total: u64 = synth::traces::all(synth::DEFAULT_SEED)
        .iter()
        .map(|f| f.content.len() as u64)
        .sum();
    assert!(total < 1_000_000, "{total} bytes");
}

/// The committed positive-control fleet and its laws are what `synth traces --fleet
/// two-class` writes (defaults: 12 nodes, 2 days, source `two-class`, the default seed).
#[test]
fn committed_control_fleet_matches_the_generator() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/controls/two-class");
    let files = synth::Fleet::TwoClass.files(&synth::FleetOptions::default(), synth::DEFAULT_SEED);
    assert_eq!(files.len(), 2);
    for f in files {
        let path = dir.join(&f.rel);
        let on_disk = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run `hazardserve synth traces --fleet two-class --out traces/controls/two-class`)", path.display()));
        assert!(
            on_disk == f.content,
            "{} differs from the generator output; regenerate with `hazardserve synth traces --fleet two-class --out traces/controls/two-class`",
            f.rel
        );
    }
}
