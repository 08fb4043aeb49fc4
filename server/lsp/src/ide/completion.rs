//! Completion and signature help: what may be typed where.
