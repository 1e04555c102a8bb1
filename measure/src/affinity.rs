//! Pinning threads.
