//! The public availability traces this project knows, and which adapter (with which options)
//! reads each part of them. `hazardserve ingest-public DIR` ingests them all; the tests and the
//! ingest benchmark use the same list.

use hazardserve_ingest::adapters::{
    add_remove, fta, gce_operations, probe_csv, skynomad_rounds, stunner, tick_json,
};
use hazardserve_ingest::{Format, Options, Polarity};

/// One source to ingest from the public traces directory.
#[derive(Debug, Clone, Copy)]
pub struct PublicSource {
    /// Source name in the store.
    pub source: &'static str,
    /// Paths relative to the traces directory (files or directories).
    pub paths: &'static [&'static str],
    /// The adapter.
    pub format: Format,
    /// Polarity of binary series, where needed.
    pub polarity: Option<Polarity>,
    /// k-of-N threshold for count series.
    pub threshold: Option<u32>,
    /// Tick width override for files whose header is wrong.
    pub gap_seconds: Option<f64>,
}

impl PublicSource {
    /// The adapter options of this source.
    pub fn options(&self) -> Options {
        Options {
            polarity: self.polarity,
            threshold: self.threshold,
            gap_seconds: self.gap_seconds,
            ..Options::default()
        }
    }
}

const fn src(source: &'static str, paths: &'static [&'static str], format: Format) -> PublicSource {
    PublicSource {
        source,
        paths,
        format,
        polarity: None,
        threshold: None,
        gap_seconds: None,
    }
}

const AVAILABLE: Option<Polarity> = Some(Polarity::Available);

/// Every public trace and how to read it (see `traces/SOURCES.md` and the traces MANIFEST).
/// Files of the traces directory that no entry reads: `MANIFEST.md` and `SHA256SUMS`.
pub const PUBLIC_SOURCES: &[PublicSource] = &[
    PublicSource {
        polarity: AVAILABLE,
        ..src(
            "cbl-availability-1node",
            &["cantbelate-spot-traces/availability/1-node"],
            tick_json::FORMAT,
        )
    },
    // Count series of a 16-instance group: up while at least one instance is obtainable.
    PublicSource {
        threshold: Some(1),
        ..src(
            "cbl-availability-16node",
            &["cantbelate-spot-traces/availability/16-node"],
            tick_json::FORMAT,
        )
    },
    PublicSource {
        polarity: AVAILABLE,
        ..src(
            "cbl-preemption-1node",
            &["cantbelate-spot-traces/preemption/1-node"],
            tick_json::FORMAT,
        )
    },
    PublicSource {
        threshold: Some(1),
        ..src(
            "cbl-preemption-4node",
            &["cantbelate-spot-traces/preemption/4-node"],
            tick_json::FORMAT,
        )
    },
    src(
        "cbl-raw-probes",
        &["cantbelate-raw-probes"],
        probe_csv::FORMAT,
    ),
    src(
        "skynomad-h100",
        &["skynomad/data/h100_16_runs"],
        skynomad_rounds::FORMAT,
    ),
    src(
        "skynomad-v100",
        &["skynomad/data/real/availability/2023-02-15/processed"],
        probe_csv::FORMAT,
    ),
    PublicSource {
        polarity: Some(Polarity::Unavailable),
        ..src(
            "skynomad-converted",
            &["skynomad/data/converted_multi_region_aligned_h100_16_merged.tar.gz"],
            tick_json::FORMAT,
        )
    },
    // GCP1 asia-northeast1-a holds only 0/1 values: a binary series, 1 = obtainable.
    PublicSource {
        threshold: Some(1),
        polarity: AVAILABLE,
        ..src(
            "spothedge-counts",
            &[
                "spothedge/data/AWS1",
                "spothedge/data/AWS2",
                "spothedge/data/GCP1",
            ],
            tick_json::FORMAT,
        )
    },
    // The AWS3 header says 300 s; the timestamped source shows 195 s.
    PublicSource {
        polarity: AVAILABLE,
        gap_seconds: Some(195.0),
        ..src(
            "spothedge-aws3",
            &["spothedge/data/AWS3"],
            tick_json::FORMAT,
        )
    },
    src(
        "gce-preemptible",
        &["gcp-preemptible-scispot/data"],
        gce_operations::FORMAT,
    ),
    src(
        "bamboo-events",
        &["bamboo/traces/p3-trace.csv", "bamboo/traces/g4dn-trace.csv"],
        add_remove::FORMAT,
    ),
    PublicSource {
        threshold: Some(1),
        ..src("bamboo-counts", &["bamboo/doc/data"], probe_csv::FORMAT)
    },
    // Wall-clock timestamps, unlike the elapsed-time figure data: a source of its own.
    PublicSource {
        threshold: Some(1),
        ..src(
            "bamboo-gcloud",
            &["bamboo/traces/gcloud"],
            probe_csv::FORMAT,
        )
    },
    src(
        "parcae-p3",
        &["parcae/liveput/traces/p3trace.csv"],
        add_remove::FORMAT,
    ),
    PublicSource {
        threshold: Some(1),
        ..src(
            "parcae-counts",
            &["parcae/aws/traces/p3.csv"],
            probe_csv::FORMAT,
        )
    },
    src("spotserve", &["spotserve"], add_remove::FORMAT),
    src(
        "stunner-80",
        &["stunner-smartphone/res/trace/peersim_session_80.txt"],
        stunner::FORMAT,
    ),
    src(
        "stunner-100",
        &["stunner-smartphone/res/trace/peersim_session_100.txt"],
        stunner::FORMAT,
    ),
    src("fta-lanl05", &["fta-lanl05"], fta::FORMAT),
    src("fta-sample", &["fta-format-sample"], fta::FORMAT),
];
