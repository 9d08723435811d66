//! A slice of a sweep: the cells whose axes have given values (`--where KEY=VALUE`, repeatable),
//! for running part of a grid (`sweep --grid G --where ...`) and for reporting part of a stored
//! sweep (`report --sweep ID --where ...`).

/// `KEY=VALUE` pairs a cell's axes must all have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AxisFilter(pub Vec<(String, String)>);

impl AxisFilter {
    /// Parses one `KEY=VALUE` (a clap value parser).
    pub fn parse_pair(s: &str) -> Result<(String, String), String> {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(format!("{s:?}: use KEY=VALUE, e.g. hardware.link=10gbe")),
        }
    }

    /// Whether there is nothing to filter on.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether cells with these axis keys can match: every filtered key is one of them.
    pub fn check_keys<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<(), String> {
        for (k, _) in &self.0 {
            if !keys.clone().into_iter().any(|x| x == k) {
                let all: Vec<&str> = keys.into_iter().collect();
                return Err(format!("no axis {k:?} (the axes: {})", all.join(", ")));
            }
        }
        Ok(())
    }

    /// Whether a cell with these `(axis key, value)` pairs is in the slice.
    pub fn keeps<'a>(&self, axes: impl IntoIterator<Item = (&'a str, String)> + Clone) -> bool {
        self.0
            .iter()
            .all(|(k, v)| axes.clone().into_iter().any(|(ck, cv)| ck == k && cv == *v))
    }

    /// The cells of `cells` in the slice, `axes` giving each cell's `(axis key, value)` pairs:
    /// an error naming the axes when a filtered key is not one of them, or when no cell is left.
    pub fn apply<T>(
        &self,
        cells: Vec<T>,
        axes: impl Fn(&T) -> Vec<(String, String)>,
    ) -> Result<Vec<T>, String> {
        if self.is_empty() {
            return Ok(cells);
        }
        if let Some(first) = cells.first() {
            let a = axes(first);
            self.check_keys(a.iter().map(|(k, _)| k.as_str()))?;
        }
        let kept: Vec<T> = cells
            .into_iter()
            .filter(|c| {
                let a = axes(c);
                self.keeps(a.iter().map(|(k, v)| (k.as_str(), v.clone())))
            })
            .collect();
        if kept.is_empty() {
            return Err(format!("no cell has {}", self.text()));
        }
        Ok(kept)
    }

    /// Whether `key` is fixed by the filter.
    pub fn fixes(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    /// `KEY=VALUE, ...`, sorted and without repeats, for messages and content keys (the same
    /// slice however its flags were ordered).
    pub fn text(&self) -> String {
        let mut pairs: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        pairs.sort();
        pairs.dedup();
        pairs.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_cells_with_every_value_and_names_unknown_axes() {
        let f = AxisFilter(vec![
            AxisFilter::parse_pair("a=1").unwrap(),
            AxisFilter::parse_pair("b=x+y").unwrap(),
        ]);
        let cell = |a: &str, b: &str| vec![("a", a.to_string()), ("b", b.to_string())];
        assert!(f.keeps(cell("1", "x+y")));
        assert!(!f.keeps(cell("2", "x+y")));
        assert!(!f.keeps(cell("1", "x")));
        assert!(f.check_keys(["a", "b", "c"]).is_ok());
        let e = f.check_keys(["a", "c"]).unwrap_err();
        assert!(e.contains("no axis \"b\"") && e.contains("a, c"), "{e}");
        assert!(AxisFilter::parse_pair("=1").is_err());
        assert!(AxisFilter::parse_pair("novalue").is_err());
        assert_eq!(
            AxisFilter::parse_pair("k=").unwrap(),
            ("k".into(), String::new())
        );
    }
}
