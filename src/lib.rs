//! hazardserve library.
