//! `replay --decision-log FILE`: each run's first decisions with everything they read, as
//! JSON lines, so that another implementation of the policy (the Python package's
//! `HazardAwarePolicy`) can take them again and be held to the same choices and costs.
//!
//! The file holds, per run of the grid that made decisions, one `run` line and then one
//! `decision` line per logged decision:
//!
//! * `{"run": {"policy", "window", "seed", "param", "params", "curves"}}`: the policy's
//!   constants ([`crate::policy::Params`]) and the curves the run's decisions name, by index
//!   ([`crate::survival::curve::CurveSpec`]; `null`: a curve without a spec);
//! * `{"decision": {"policy", "window", "seed", "param", "time_us", "queueing",
//!   "explanation", "inputs"}}`: the decision's explanation, every candidate priced, and its
//!   inputs ([`crate::policy::record::DecisionInputs`]: the request, the nodes visited, the
//!   forecast's questions and answers).
//!
//! Non-finite numbers in the inputs are the strings `"inf"`, `"-inf"` and `"nan"`. The file
//! is written beside its destination and renamed into place once whole.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::error::ScenarioError;
use crate::replay::{RunOutput, RunSpec};

/// A decision log being written.
pub struct DecisionLog {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<File>,
    specs: Vec<RunSpec>,
}

impl DecisionLog {
    /// Starts a log for the runs of `specs` at `path` (written to a temporary file beside it).
    pub fn create(path: &Path, specs: Vec<RunSpec>) -> Result<DecisionLog, ScenarioError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "decisions".into());
        let tmp = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = File::create(&tmp).map_err(|cause| ScenarioError::DecisionLog {
            path: path.to_path_buf(),
            cause,
        })?;
        Ok(DecisionLog {
            path: path.to_path_buf(),
            tmp,
            out: BufWriter::new(file),
            specs,
        })
    }

    fn error(&self, cause: std::io::Error) -> ScenarioError {
        ScenarioError::DecisionLog {
            path: self.path.clone(),
            cause,
        }
    }

    /// Appends run `o`'s decisions (nothing for a run without any).
    pub fn write(&mut self, o: &RunOutput) -> Result<(), ScenarioError> {
        if o.decisions.is_empty() {
            return Ok(());
        }
        let params = self
            .specs
            .iter()
            .find(|s| {
                s.policy == o.policy
                    && s.window_index == o.window
                    && s.seed == o.seed
                    && s.param_index == o.param
            })
            .map(|s| s.params);
        let key = json!({
            "policy": o.policy,
            "window": o.window,
            "seed": o.seed,
            "param": o.param,
        });
        let mut run = key.clone();
        run["params"] = json!(params);
        run["curves"] = json!(o.decision_curves);
        let mut lines = vec![json!({ "run": run })];
        for d in &o.decisions {
            let mut line = key.clone();
            line["time_us"] = json!(d.time_us);
            line["queueing"] = json!(d.queueing);
            line["explanation"] = json!(d.explanation);
            line["inputs"] = json!(d.inputs);
            lines.push(json!({ "decision": line }));
        }
        for l in lines {
            serde_json::to_writer(&mut self.out, &l).map_err(|e| self.error(e.into()))?;
            self.out.write_all(b"\n").map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    /// Flushes the log and renames it into place.
    pub fn finish(mut self) -> Result<PathBuf, ScenarioError> {
        self.out.flush().map_err(|e| self.error(e))?;
        self.out.get_ref().sync_all().map_err(|e| self.error(e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| self.error(e))?;
        Ok(self.path.clone())
    }
}

impl Drop for DecisionLog {
    /// A log never finished (an error, an interrupted run) leaves no partial file.
    fn drop(&mut self) {
        if self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
